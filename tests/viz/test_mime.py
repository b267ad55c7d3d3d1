"""The JupyterLab extension's contract: the payload, its JSON Schema, and the mime bundle.

Every payload the tests make is validated against the packaged schema, and its numbers are
compared with the objects they came from (the stages, ex.buffers, the BenchResult).
"""
import copy
import dataclasses
import json

import jsonschema
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.passes.pipeline import default_passes
from xla_explorer.viz import display, mime
from xla_explorer.viz.diff import diff
from xla_explorer.viz.graphviz import to_dot

from .programs import dense, layernorm, softmax

# -- programs ---------------------------------------------------------------------------------


def unique_scaled(x):
    return np.unique(x) * 2.0 + x.sum()


def leaky(x):
    return np.where(x < 0.5, x * 2, x)  # `<` in the kernel source: escaping matters


def heat_loop(u):  # a while loop (xe.fori_loop): its body drawn in the loop's cluster
    return xe.fori_loop(0, 12, lambda i, u: u + np.float32(0.25) * (
        np.roll(u, 1) - 2 * u + np.roll(u, -1)), u)


def explorations() -> dict:
    """The programs the viewer tests share (tests/viz/test_html.py uses them too)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((16, 32)).astype(np.float32)
    w = rng.standard_normal((32, 8)).astype(np.float32)
    b = rng.standard_normal(8).astype(np.float32)
    u = np.array([3.0, 1.0, 3.0, 2.0, 5.0])
    return {
        "softmax-cpu": xe.explore(softmax, x, backend="cpu"),
        "layernorm-cpu": xe.explore(layernorm, x, backend="cpu"),
        "dense-cpu": xe.explore(dense, x, w, b, backend="cpu"),
        "dense-interpreter": xe.explore(dense, x, w, b, backend="interpreter"),
        "leaky-cpu": xe.explore(leaky, x, backend="cpu"),
        "unique-autocluster": xe.explore(unique_scaled, u, autocluster=True),
        "unique-autocluster-cpu": xe.explore(unique_scaled, u, backend="cpu", autocluster=True),
        "heat-loop-cpu": xe.explore(heat_loop, x[0], backend="cpu"),
    }


PROGRAMS = ["softmax-cpu", "layernorm-cpu", "dense-cpu", "dense-interpreter", "leaky-cpu",
            "unique-autocluster", "unique-autocluster-cpu", "heat-loop-cpu"]


@pytest.fixture(scope="module")
def programs():
    return explorations()


@pytest.fixture(scope="module")
def payloads(programs):
    return {name: mime.payload(ex) for name, ex in programs.items()}


@pytest.fixture(scope="module")
def benched(programs):
    ex = programs["softmax-cpu"]
    return ex, ex.bench(repeat=3)


@pytest.fixture(scope="module")
def validator():
    schema = mime.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


# -- the schema -------------------------------------------------------------------------------


def test_the_schema_is_packaged_and_is_draft_2020_12():
    from importlib import resources

    path = resources.files("xla_explorer.viz").joinpath("schema/v1.json")
    assert path.is_file()
    schema = json.loads(path.read_text(encoding="utf-8"))
    assert schema == mime.schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["title"] == mime.MIME_TYPE == "application/vnd.xla-explorer.v1+json"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_the_schema_documents_every_key():
    """The extension is written against the schema: every property says what it is, itself
    or through the definition it refers to."""
    schema = mime.schema()

    def described(node):
        if "description" in node:
            return True
        ref = node.get("$ref", "")
        return ref.startswith("#/$defs/") and "description" in schema["$defs"][ref[8:]]

    def walk(node, where):
        if isinstance(node, dict):
            for key, sub in node.get("properties", {}).items():
                assert described(sub), f"{where}.{key} has no description"
            for key, sub in node.items():
                walk(sub, f"{where}.{key}")
        elif isinstance(node, list):
            for i, sub in enumerate(node):
                walk(sub, f"{where}[{i}]")

    walk(schema, "$")


# Keys added to v1 after bundles were first saved: optional, so those bundles stay valid.
OPTIONAL_KEYS = {"traffic", "driver", "xla"}


def test_top_level_keys_are_required_and_closed():
    schema = mime.schema()
    assert set(schema["required"]) == set(schema["properties"]) - OPTIONAL_KEYS
    assert schema["additionalProperties"] is False


# -- payloads ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", PROGRAMS)
def test_payload_validates_and_is_plain_json(name, payloads, validator):
    p = payloads[name]
    validator.validate(p)
    text = json.dumps(p, allow_nan=False)
    assert json.loads(text) == p
    mime.validate(json.loads(text))


@pytest.mark.parametrize("name", PROGRAMS)
def test_stages_are_the_recorded_stages(name, programs, payloads):
    ex, p = programs[name], payloads[name]
    assert p["module"] == ex.module.name and p["backend"] == ex.backend
    assert p["autocluster"] == ex.autocluster
    assert [s["name"] for s in p["stages"]] == [s.name for s in ex.stages]
    for i, (s, stage) in enumerate(zip(p["stages"], ex.stages)):
        assert s["index"] == i
        assert s["changed"] == stage.changed
        assert s["seconds"] == stage.seconds
        assert s["hlo"] == ex.hlo(i, metadata=True)
        assert s["notes"] == [str(n) for n in stage.notes]


@pytest.mark.parametrize("name", PROGRAMS)
def test_changed_nodes_are_the_diff_of_consecutive_stages(name, programs, payloads):
    ex, p = programs[name], payloads[name]
    first = p["stages"][0]
    assert first["changed_nodes"] == first["added"] == first["removed"] == first["rewritten"] == []
    assert first["dot"] == to_dot(ex.stages[0].module)
    for before, after, s in zip(ex.stages, ex.stages[1:], p["stages"][1:]):
        d = diff(before.module, after.module)
        assert s["changed_nodes"] == sorted(d.changed)
        assert (s["added"], s["removed"], s["rewritten"]) == (
            sorted(d.added), sorted(d.removed), sorted(d.rewritten))
        assert s["dot"] == to_dot(after.module, changed=d.changed)
    # Something is highlighted somewhere: fusion at least adds its fusions. (A while loop's
    # body is optimised as a program of its own: the loop alone fuses with nothing.)
    fused = any(i.opcode == "fusion" for i in ex.module.entry.instructions)
    assert any(s["changed_nodes"] for s in p["stages"]) == fused


@pytest.mark.parametrize("name", PROGRAMS)
def test_decisions_clusters_fusions_and_kernels_are_the_explorations(name, programs, payloads):
    ex, p = programs[name], payloads[name]
    assert [(d["producer"], d["consumer"], d["fused"], d["reason"]) for d in p["decisions"]] == [
        (d.producer, d.consumer, d.fused, d.reason) for d in ex.decisions]
    assert [d["index"] for d in p["decisions"]] == list(range(len(ex.decisions)))
    for d in p["decisions"]:
        assert p["stages"][d["stage_index"]]["name"] == d["stage"]
        assert d["reason"] in p["stages"][d["stage_index"]]["notes"]
    assert p["clusters"]["compiled"] == [
        {"name": c.name, "instructions": list(c.instructions)} for c in ex.clusters.compiled]
    assert [e["name"] for e in p["clusters"]["eager"]] == [e.name for e in ex.clusters.eager]
    assert [(f["name"], f["kind"], f["row"], f["instructions"], f["outputs"]) for f in
            p["fusions"]] == [(f.name, f.kind, f.row, list(f.instructions), list(f.outputs))
                              for f in ex.fusions]
    assert p["kernels"] == ex.kernels


def test_kernels_are_there_for_cpu_and_absent_for_the_interpreter(payloads):
    assert payloads["dense-cpu"]["kernels"]
    assert payloads["dense-interpreter"]["kernels"] == {}
    assert payloads["dense-cpu"]["fusions"] == payloads["dense-interpreter"]["fusions"]


def test_an_autoclustered_program_lists_what_runs_eagerly(payloads):
    for name in ("unique-autocluster", "unique-autocluster-cpu"):
        p = payloads[name]
        assert p["autocluster"] is True
        (eager,) = p["clusters"]["eager"]
        assert eager["op"] == "numpy.unique" and eager["source_line"] > 0
        assert "not compilable" in eager["reason"]
        assert p["clusters"]["compiled"]
    assert all("/" in k for k in payloads["unique-autocluster-cpu"]["kernels"])


@pytest.mark.parametrize("name", PROGRAMS)
def test_buffer_numbers_are_ex_buffers(name, programs, payloads):
    a, got = programs[name].buffers, payloads[name]["buffers"]
    assert got["peak_bytes"] == a.peak_bytes
    assert got["lower_bound_bytes"] == a.lower_bound_bytes
    assert got["fragmentation_bytes"] == a.fragmentation_bytes == a.peak_bytes - a.lower_bound_bytes
    assert got["temporary_bytes"] == a.temporary_bytes
    assert got["steps"] == a.steps and got["report"] == a.report()
    assert [(x["offset"], x["size"], x["live_range"], x["values"]) for x in got["allocations"]] == [
        (x.offset, x.size, list(x.live_range), [v.name for v in x.values]) for x in a.allocations]
    assert {k: v for k, v in got.items() if k in a.to_dict()} == a.to_dict()


def test_without_buffer_assignment_buffers_is_null(validator):
    ex = xe.explore(softmax, np.ones((2, 4), np.float32), passes=default_passes()[:-1])
    assert ex.buffers is None
    p = mime.payload(ex)
    assert p["buffers"] is None and p["bench"] is None
    validator.validate(p)


def test_a_bench_result_is_carried_with_its_numbers(benched, validator):
    ex, b = benched
    p = mime.payload(ex, b)
    validator.validate(p)
    got = p["bench"]
    for key in ("eager", "compiled"):
        t = getattr(b, key)
        assert got[key] == {"median": t.median, "q1": t.q1, "q3": t.q3,
                            "peak_bytes": t.peak_bytes}
    assert got["speedup"] == b.speedup
    assert got["repeat"] == b.repeat == 3
    assert got["predicted_peak_bytes"] == b.predicted_peak_bytes
    assert got["arena_bytes"] == b.arena_bytes
    assert got["compile_seconds"] == b.compile_seconds
    json.dumps(p, allow_nan=False)


def test_a_speedup_that_is_not_finite_is_null(benched, validator):
    ex, b = benched
    instant = dataclasses.replace(b, compiled=dataclasses.replace(b.compiled, median=0.0, q1=0.0,
                                                                  q3=0.0))
    p = mime.payload(ex, instant)
    assert p["bench"]["speedup"] is None
    validator.validate(p)
    json.dumps(p, allow_nan=False)


# -- traffic: bytes moved, computed (another part of the package computes them) ---------------


class WithTraffic:
    """An exploration that computes bytes moved: `ex.traffic.to_dict()` as the contract says."""

    def __init__(self, ex, data):
        self._ex, self.traffic = ex, type("Traffic", (), {"to_dict": lambda _: data})()

    def __getattr__(self, name):
        return getattr(self._ex, name)


TRAFFIC = {"computed": True,
           "eager": {"read_bytes": 3 * 2048, "write_bytes": 2 * 2048,
                     "ops": [{"name": "subtract.3", "read_bytes": 2048, "write_bytes": 2048},
                             {"name": "exponential.4", "read_bytes": 4096,
                              "write_bytes": 2048}]},
           "fused": {"read_bytes": 2048, "write_bytes": 2048,
                     "kernels": [{"name": "row_fusion.9", "read_bytes": 2048,
                                  "write_bytes": 2048}]}}


def test_traffic_is_null_for_an_exploration_that_does_not_compute_it(programs, payloads):
    for name, ex in programs.items():
        if getattr(ex, "traffic", None) is None:
            assert payloads[name]["traffic"] is None


def test_traffic_is_carried_when_computed_and_may_be_absent(programs, validator):
    p = mime.payload(WithTraffic(programs["softmax-cpu"], copy.deepcopy(TRAFFIC)))
    assert p["traffic"] == TRAFFIC
    validator.validate(p)
    json.dumps(p, allow_nan=False)
    del p["traffic"]  # a bundle saved before the key existed
    validator.validate(p)


@pytest.mark.parametrize("case", ["measured", "negative", "no kernels", "extra key"])
def test_broken_traffic_fails_validation(case, programs, validator):
    t = copy.deepcopy(TRAFFIC)
    {"measured": lambda: t.update(computed=False),
     "negative": lambda: t["eager"].update(read_bytes=-1),
     "no kernels": lambda: t["fused"].pop("kernels"),
     "extra key": lambda: t["fused"]["kernels"][0].update(seconds=1.0)}[case]()
    p = mime.payload(WithTraffic(programs["softmax-cpu"], t))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(p)


# -- the bundle -------------------------------------------------------------------------------


def test_repr_mimebundle_has_the_json_and_the_html_fallback(programs):
    ex = programs["softmax-cpu"]
    bundle = ex._repr_mimebundle_()
    assert set(bundle) == {mime.MIME_TYPE, "text/html"}
    assert bundle[mime.MIME_TYPE] == mime.payload(ex, ex.last_bench)  # benched or not
    html = bundle["text/html"]
    assert html.startswith('<div class="xe-report">') and "<script" not in html
    assert "softmax" in html
    json.dumps(bundle)


def test_bundle_carries_a_bench(benched):
    ex, b = benched
    bundle = display.bundle(ex, b)
    assert bundle[mime.MIME_TYPE]["bench"]["speedup"] == b.speedup
    assert f"{b.speedup:.2f}×" in bundle["text/html"]


# -- the schema can fail ----------------------------------------------------------------------


# Each breaks the contract in one place.
BROKEN = {
    "no stages": lambda q: q.pop("stages"),
    "no buffers key": lambda q: q.pop("buffers"),
    "an unknown key": lambda q: q.update(extra=1),
    "version 2": lambda q: q.update(version=2),
    "stages empty": lambda q: q.update(stages=[]),
    "a stage without hlo": lambda q: q["stages"][0].pop("hlo"),
    "changed as a string": lambda q: q["stages"][1].update(changed="yes"),
    "changed_nodes repeated": lambda q: q["stages"][1].update(changed_nodes=["a", "a"]),
    "a fusion of an unknown kind": lambda q: q["fusions"][0].update(kind="kScatter"),
    "a decision without reason": lambda q: q["decisions"][0].pop("reason"),
    "negative peak": lambda q: q["buffers"].update(peak_bytes=-1),
    "a live range of three": lambda q: q["buffers"]["allocations"].append(
        {"index": 9, "offset": 0, "size": 64, "live_range": [0, 1, 2], "values": ["x"]}),
    "a kernel that is not text": lambda q: q["kernels"].update(k=1),
    "an eager op without reason": lambda q: q["clusters"]["eager"].append(
        {"name": "u", "op": "numpy.unique", "source_line": 1}),
    "a bench without timings": lambda q: q.update(bench={"speedup": 2.0}),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_broken_payload_fails_validation(case, payloads, validator):
    p = copy.deepcopy(payloads["unique-autocluster-cpu"])
    assert p["decisions"] and p["fusions"] and len(p["stages"]) > 1
    validator.validate(p)
    BROKEN[case](p)
    with pytest.raises(jsonschema.ValidationError):
        validator.validate(p)
    with pytest.raises(jsonschema.ValidationError):
        mime.validate(p)
