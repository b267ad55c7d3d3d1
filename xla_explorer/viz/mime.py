"""The JupyterLab extension's contract: an Exploration as versioned JSON.

The front end is one mime renderer behind this contract (application/vnd.xla-explorer.v1+json);
xla_explorer/viz/schema/v1.json describes every key, and the tests validate what `payload`
writes against it. Other front ends (classic notebook, VS Code, nbviewer, GitHub) do not know
the mime type and show the `text/html` entry of the bundle (`viz/display.py`) instead.

Everything here reads recorded stages; nothing re-runs a pass.
"""
from __future__ import annotations

import json
import math
from importlib import resources

from ..runtime import jax_env
from .diff import diff
from .graphviz import to_dot
from .panel_views import arena_note_of

MIME_TYPE = "application/vnd.xla-explorer.v1+json"
VERSION = 1


def schema() -> dict:
    """The JSON Schema (draft 2020-12) of `payload`, as packaged with xla_explorer."""
    text = resources.files("xla_explorer.viz").joinpath(f"schema/v{VERSION}.json").read_text(
        encoding="utf-8")
    return json.loads(text)


def validate(data: dict) -> None:
    """Raise jsonschema.ValidationError when `data` does not follow the schema (needs the
    `jsonschema` package, which Jupyter installs)."""
    import jsonschema

    jsonschema.Draft202012Validator(schema()).validate(data)


def payload(ex, bench=None) -> dict:
    """Everything the extension shows of `ex` (and of `bench`, a BenchResult), as plain JSON."""
    return {
        "version": VERSION,
        "module": ex.module.name,
        "backend": ex.backend,
        "autocluster": bool(ex.autocluster),
        "stages": stages(ex),
        "decisions": decisions(ex),
        "clusters": clusters(ex),
        "fusions": [fusion(f) for f in ex.fusions],
        "buffers": buffers(ex.buffers, arena_note_of(ex)),
        "kernels": dict(ex.kernels),
        "driver": ex.driver,
        "bench": bench_dict(bench),
        "traffic": traffic(ex),
        "xla": xla(ex),
    }


# -- the parts ---------------------------------------------------------------------------------


def stage_diffs(ex) -> list:
    """diff(previous stage, stage) for every stage; None for the first (nothing before it)."""
    return [None] + [diff(a.module, b.module) for a, b in zip(ex.stages, ex.stages[1:])]


def stages(ex) -> list[dict]:
    out = []
    for i, (stage, d) in enumerate(zip(ex.stages, stage_diffs(ex))):
        changed = d.changed if d is not None else frozenset()
        out.append({
            "index": i,
            "name": stage.name,
            "changed": bool(stage.changed),
            "seconds": float(stage.seconds),
            "notes": [str(n) for n in stage.notes],
            "hlo": stage.module.to_text(),
            "dot": to_dot(stage.module, changed=changed),
            "changed_nodes": sorted(changed),
            "added": sorted(d.added) if d is not None else [],
            "removed": sorted(d.removed) if d is not None else [],
            "rewritten": sorted(d.rewritten) if d is not None else [],
        })
    return out


def decisions(ex) -> list[dict]:
    """Every fusion decision with the stage that recorded it (ex.decisions' order)."""
    from ..passes.kinds import Decision

    out = []
    for s, stage in enumerate(ex.stages):
        for note in stage.notes:
            if isinstance(note, Decision):
                out.append({"index": len(out), "producer": note.producer,
                            "consumer": note.consumer, "fused": bool(note.fused),
                            "reason": note.reason, "rule": note.rule, "stage": stage.name,
                            "stage_index": s})
    return out


def clusters(ex) -> dict:
    c = ex.clusters
    return {"compiled": [{"name": k.name, "instructions": list(k.instructions)}
                         for k in c.compiled],
            "eager": [{"name": e.name, "op": e.op, "reason": e.reason,
                       "source_line": int(e.source_line or 0)} for e in c.eager]}


def fusion(f) -> dict:
    return {"name": f.name, "kind": f.kind, "row": bool(f.row),
            "instructions": list(f.instructions), "outputs": list(f.outputs),
            "reasons": list(f.reasons)}


def buffers(a, arena_note: str = "") -> dict | None:
    if a is None:
        return None
    return {**a.to_dict(), "peak_bytes": a.peak_bytes, "lower_bound_bytes": a.lower_bound_bytes,
            "temporary_bytes": a.temporary_bytes, "steps": a.steps, "report": a.report(),
            "arena_note": arena_note}


def bench_dict(b) -> dict | None:
    if b is None:
        return None

    def timing(t):
        return {"median": t.median, "q1": t.q1, "q3": t.q3, "peak_bytes": int(t.peak_bytes)}

    return {"name": b.name, "eager": timing(b.eager), "compiled": timing(b.compiled),
            "speedup": _finite(b.speedup if b.compiled.median > 0 else math.inf),
            "repeat": int(b.repeat), "arena_bytes": int(b.arena_bytes),
            "predicted_peak_bytes": int(b.predicted_peak_bytes),
            "compile_seconds": _finite(b.compile_seconds),
            "compiled_held_bytes": int(b.compiled_held_bytes),
            "memory_verdict": b.memory_verdict, "spread_note": b.spread_note}


def traffic(ex) -> dict | None:
    """Bytes moved, computed (`ex.traffic.to_dict()`), or None for an Exploration that does
    not compute them."""
    t = getattr(ex, "traffic", None)
    return None if t is None else t.to_dict()


def xla(ex) -> dict:
    """The XLA tab: whether jax is here to compare with (and how to get it), and the last
    `ex.compare_xla()`, or None before one."""
    comparison = getattr(ex, "last_xla", None)
    return {"jax": jax_env.jax_available(), "install": jax_env.INSTALL,
            "comparison": None if comparison is None else comparison.to_dict()}


def _finite(x) -> float | None:
    """JSON has no inf or NaN: a number that is not finite is null."""
    return float(x) if x is not None and math.isfinite(x) else None
