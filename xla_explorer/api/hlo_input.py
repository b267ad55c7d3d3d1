"""`explore_hlo`: the pipeline and explorer on HLO text with no Python function: ours, what
JAX prints (`jax.jit(f).lower(*args).as_text(dialect="hlo")`) and XLA's
`module_*.before_optimizations.txt` dump files.

What the text holds that no backend runs (a conditional, a convolution, bfloat16, dynamic
dimensions, sharding annotations) is refused before the pipeline runs, as an
UnsupportedOpError naming the instruction and its line in the text, so a reader finds it.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Sequence

import numpy as np

from ..backends import get_backend
from ..errors import CompileError, UnsupportedOpError
from ..ir.module import (Computation, Instruction, Module, called_by, known_trip_count,
                         root_last)
from ..ir.ops import OPS
from ..ir.parser import parse_hlo
from .exploration import Exploration


class HloExploration(Exploration):
    """An Exploration of HLO text: `source` (the file it was read from, or None), `parsed`
    (the module as the text wrote it, before its calls were inlined), `lines` (each
    instruction's line in the text) and `seed` (what the inputs were made from; None when
    they were given)."""

    source: Path | None = None
    parsed: Module | None = None
    lines: dict[str, int] | None = None
    seed: int | None = None

    def __repr__(self) -> str:
        made = f", inputs made from seed {self.seed}" if self.seed is not None else ""
        return super().__repr__()[:-1] + made + ">"


def explore_hlo(text_or_path, *args, backend: str = "cpu", seed: int = 0,
                autocluster: bool = False) -> HloExploration:
    """The backend's pipeline on a module of HLO text (or a file of it: a `pathlib.Path`, or
    a str naming a file that exists). `args` are what `run`, `check` and `bench` use; without
    them, one input per entry parameter is made by `numpy.random.default_rng(seed)`
    (`inputs_from_seed`), and the seed is kept in `ex.seed` and the repr. `check` compares
    the compiled program with the reference interpreter on the module as read (stage 0)."""
    text, source = read_hlo(text_or_path)
    where = source.name if source is not None else "the HLO text"
    lines = instruction_lines(text)
    _refuse_types(text, where, source)
    parsed = parse_hlo(text)
    module = inline_calls(parsed)
    target = get_backend(backend)
    _refuse_ops(parsed, text.split("\n"), lines, where, source,
                compiles=target.needs_assignment)
    params = module.entry.parameters
    if args:
        _check_args(params, args, lines, where)
        made_from = None
    else:
        args = tuple(inputs_from_seed(module, seed))
        made_from = seed
    try:
        ex = HloExploration.from_module(module, backend, args, autocluster=autocluster)
    except CompileError as e:
        raise _located(e, lines, where, source) from None
    assert isinstance(ex, HloExploration)
    ex.source, ex.parsed, ex.lines, ex.seed = source, parsed, lines, made_from
    return ex


def read_hlo(text_or_path) -> tuple[str, Path | None]:
    """The text, and the file it came from (None for text given as a str)."""
    if isinstance(text_or_path, Path):
        return text_or_path.read_text(), text_or_path
    if not isinstance(text_or_path, str):
        raise TypeError(f"explore_hlo takes HLO text or a path, not {type(text_or_path).__name__}")
    if "\n" not in text_or_path and len(text_or_path) < 4096:
        try:
            path = Path(text_or_path)
            if path.is_file():
                return path.read_text(), path
        except OSError:  # not a name the file system takes: text, then
            pass
    return text_or_path, None


_DEFINES = re.compile(r"^\s*(?:ROOT\s+)?%?([A-Za-z_][\w.\-]*)\s*=")


def instruction_lines(text: str) -> dict[str, int]:
    """Each instruction's (first) line number in the text, 1-based, as the parser counts."""
    lines: dict[str, int] = {}
    for n, line in enumerate(text.split("\n"), 1):
        m = _DEFINES.match(line)
        if m and not line.lstrip().startswith("HloModule"):
            lines.setdefault(m.group(1), n)
    return lines


def inputs_from_seed(module: Module, seed: int = 0) -> list[np.ndarray]:
    """One array per entry parameter, in parameter order, from `default_rng(seed)`: floats
    standard normal, signed integers in [-5, 5], unsigned in [0, 10], bools fair coins."""
    rng = np.random.default_rng(seed)
    out = []
    for p in module.entry.parameters:
        if p.shape.is_tuple:
            raise UnsupportedOpError(f"parameter {p.name} is a tuple ({p.shape}); inputs are "
                                     "made for arrays only", op=p.name,
                                     hint="Pass the arguments yourself: explore_hlo(text, *args)")
        dt, dims = p.dtype, p.dims
        if dt.kind == "f":
            a = rng.standard_normal(dims).astype(dt)
        elif dt.kind == "b":
            a = rng.random(dims) < 0.5
        elif dt.kind == "u":
            a = rng.integers(0, 11, dims).astype(dt)
        else:
            a = rng.integers(-5, 6, dims).astype(dt)
        out.append(np.asarray(a))
    return out


def inline_calls(module: Module) -> Module:
    """The module with every `call` replaced by the instructions of the computation it calls,
    as XLA's CallInliner does first thing: JAX wraps each jax.numpy function it lowers
    (argmax, var) in a call, and a backend fuses what it sees in one computation."""
    insts = [i for c in module.all_computations for i in c]
    targets = {i.attr("to_apply") for i in insts if i.opcode == "call"}
    if not targets:
        return module
    # A computation also called as a reducer (or a loop's body) stays, beside its copies.
    targets -= {name for i in insts if i.opcode != "call" for name in i.callees()}
    used = {i.name for c in module.all_computations if c.name not in targets for i in c}
    done: dict[str, Computation] = {}

    def fresh(name: str) -> str:
        if name in used:
            k = 1
            while f"{name}.{k}" in used:
                k += 1
            name = f"{name}.{k}"
        used.add(name)
        return name

    def inlined(comp: Computation, rename: bool) -> Computation:
        """`comp` with its calls inlined; with `rename`, each instruction a name unused yet
        (the copy goes into another computation, where the names must stay unique)."""
        new: dict[int, Instruction] = {}
        order: list[Instruction] = []
        for inst in comp.instructions:
            ops = tuple(new[id(o)] for o in inst.operands)
            if inst.opcode == "call":
                callee = done.get(inst.attr("to_apply"))
                if callee is None:
                    callee = done[inst.attr("to_apply")] = inlined(
                        module.computation(inst.attr("to_apply")), rename=False)
                new[id(inst)] = _splice(callee, ops, order, fresh)
                continue
            name = fresh(inst.name) if rename else inst.name
            copy = inst if ops == inst.operands and name == inst.name else \
                inst.replace(operands=ops, name=name)
            new[id(inst)] = copy
            order.append(copy)
        # A root that was a call of a computation returning its parameter is an earlier
        # value: root_last moves it to the end.
        return root_last(comp.name, order, new[id(comp.root)])

    entry = inlined(module.entry, rename=False)
    others = [inlined(c, rename=False) for c in module.computations if c.name not in targets]
    out = module.replace(entry=entry, computations=tuple(others))
    kept = called_by(out, [i for c in (entry, *others) for i in c])
    return out.replace(computations=tuple(c for c in others if c in kept))


def _splice(callee: Computation, ops, order: list, fresh) -> Instruction:
    """The callee's instructions copied into `order` with its parameters replaced by `ops`;
    returns what stands for its root."""
    new: dict[int, Instruction] = {}
    for inst in callee.instructions:
        if inst.opcode == "parameter":
            new[id(inst)] = ops[inst.parameter_number]
            continue
        copy = inst.replace(name=fresh(inst.name),
                            operands=tuple(new[id(o)] for o in inst.operands))
        new[id(inst)] = copy
        order.append(copy)
    return new[id(callee.root)]


# Element types XLA has and NumPy does not, with what to use instead.
_TYPES = {"bf16": "bfloat16", "f8e4m3fn": "float8", "f8e5m2": "float8", "f8e4m3": "float8",
          "f8e4m3fnuz": "float8", "f8e5m2fnuz": "float8", "c64": "complex64",
          "c128": "complex128", "s4": "int4", "u4": "uint4", "token": "token"}
_TYPE_USE = re.compile(r"\b(" + "|".join(sorted(_TYPES, key=len, reverse=True)) + r")\[")
_DYNAMIC = re.compile(r"\b[a-z]+\d*\[[^\]]*(<=|\?)[^\]]*\]")


def _refuse_types(text: str, where: str, source: Path | None) -> None:
    """bfloat16 and other types NumPy lacks, and dynamic dimensions, are refused before
    parsing: the parser would stop at them too, but a reader wants to hear what to do."""
    for n, line in enumerate(text.split("\n"), 1):
        m = _DEFINES.match(line)
        if not m or line.lstrip().startswith("HloModule"):
            continue
        name = m.group(1)
        t = _TYPE_USE.search(line, m.end())
        if t:
            kind = _TYPES[t.group(1)]
            hint = ("Lower the program with float32 values (jnp.float32 arguments, or "
                    "x.astype(jnp.float32) where it casts): NumPy, and so the explorer, has "
                    "no bfloat16" if kind == "bfloat16" else
                    "Use one of the explorer's types: bool, integers, float16/32/64")
            raise _error(f"{name} has element type {t.group(1)} ({kind}), which is not "
                         f"supported", name, n, t.start() + 1, where, source, hint)
        d = _DYNAMIC.search(line, m.end())
        if d:
            raise _error(f"{name} has a dynamic shape {d.group(0)}, which is not supported: "
                         "every dimension must be a fixed size", name, n, d.start() + 1, where,
                         source, "Lower the program for concrete shapes (jax.jit with arrays, "
                                 "not symbolic shapes from jax.export)")


_OP_HINTS = {
    "conditional": "A conditional runs one of its branches: write it as both branches "
                   "computed and a select (jnp.where), which every backend runs",
    "convolution": "There is no convolution op here: write it as a sum of shifted slices "
                   "times weights, or as a dot of the windows (an im2col)",
}
_SHARDING_CALLS = ("Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape")


def _refuse_ops(module: Module, text_lines: list[str], lines: dict, where: str,
                source: Path | None, compiles: bool) -> None:
    """Opcodes no backend runs and sharding annotations everywhere; on a backend that
    compiles, a while loop whose trip count the text does not say (JAX's fori_loop)."""
    for comp in module.all_computations:
        for inst in comp.instructions:
            line = lines.get(inst.name)
            text = text_lines[line - 1] if line is not None else ""
            if inst.opcode not in OPS:
                raise _error(f"{inst.name} is a {inst.opcode}, which the explorer does not "
                             "run", inst.name, line, _column(text, f" {inst.opcode}(", 1),
                             where, source, _OP_HINTS.get(inst.opcode, "Rewrite the program without it"))
            target = str(inst.attr("custom_call_target", ""))
            if inst.attr("sharding") is not None or target.startswith("xla.sdy") \
                    or target in _SHARDING_CALLS:
                raise _error(f"{inst.name} carries a sharding annotation "
                             f"({inst.attr('sharding') or target}): the explorer compiles for "
                             "one device and does not partition programs", inst.name, line,
                             _column(text, "sharding=") or _column(text, "custom-call("),
                             where, source,
                             "Lower the function without in_shardings/out_shardings or "
                             "sharding constraints, for one device")
            if compiles and inst.opcode == "while" and known_trip_count(inst) is None:
                raise _error(f"{inst.name} is a while loop whose trip count the text does not "
                             "say (backend_config={\"known_trip_count\":{\"n\":\"N\"}}, as XLA "
                             "adds in its own passes): a compiling backend cannot compile it",
                             inst.name, line, _column(text, " while(", 1), where, source,
                             "Run it with backend='interpreter', which runs while loops one "
                             "step at a time")


def _column(line: str, needle: str, skip: int = 0) -> int | None:
    """Where `needle` (less its first `skip` characters) starts in `line`, 1-based, as the
    parser counts columns; None if it is not there."""
    at = line.find(needle)
    return at + skip + 1 if at >= 0 else None


def _error(message: str, name: str, line: int | None, column: int | None, where: str,
           source: Path | None, hint: str) -> UnsupportedOpError:
    at = "" if line is None else f" (line {line}" + (f", column {column}" if column else "") + \
        f" of {where})"
    return UnsupportedOpError(message + at, op=name, hint=hint or None,
                              source_file=str(source) if source is not None else None,
                              source_line=line)


def _located(e: CompileError, lines: dict, where: str, source: Path | None) -> CompileError:
    """A backend's refusal, with the line of the first instruction it names."""
    for word in re.findall(r"[A-Za-z_][\w.\-]*", e.message):
        if word in lines:
            return _error(e.message, word, lines[word], None, where, source, e.hint or "")
    return e


def _check_args(params: Sequence[Instruction], args: Sequence, lines: dict, where: str) -> None:
    """A TypeError naming the parameter (and its line) that an argument does not fit."""
    if len(args) != len(params):
        raise TypeError(f"the entry computation takes {len(params)} parameters "
                        f"({', '.join(p.name for p in params)}), given {len(args)} arguments")
    for p, a in zip(params, args):
        a = np.asarray(a)
        if p.shape.is_tuple or a.shape != p.dims or a.dtype != p.dtype:
            raise TypeError(f"parameter {p.name} (line {lines.get(p.name)} of {where}) is "
                            f"{p.shape}; the argument is {a.dtype}{list(a.shape)}")
