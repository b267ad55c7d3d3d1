"""A kernel's parallel loops cut out into thread workers, run by a launcher compiled once.

The kernels are written with `prange` loops (codegen/cpu/loop.py, dot.py), which read
plainly and are what `xe.export` compiles serially. For the JIT, each `for t in
prange(n):` of a kernel becomes a thread worker (codegen/cpu/launch.py): a C function of its
own holding the loop's body, compiled serially, and in the kernel a `launch` of it over the
threads, with what the body reads from the kernel put in an argument block:

    @thread_worker("xe_thread_<digest>", FASTMATH)
    def softmax_rows_thread(worker_2, args):
        p0 = array_at(args, 0, np.float32, 2, "C")
        ...the loop's body...

A worker reads from the kernel its arrays and numbers; their types come from the kernel's
parameters (their shapes are known) and from the lines that made them before the loop
(`TYPED` below, the vocabulary the CPU's loops write). A kernel whose loop reads anything
else keeps its `prange` (`outline` returns None): slower to compile, the same answer.
"""
from __future__ import annotations

import ast
import re
import textwrap

from .sizes import code_key

# Lines making an array before a parallel loop, whose type a worker can be told: pattern ->
# (its element type, or the group naming it; its dimensions, or the group of its shape).
_NP = r"(np\.\w+)"
TYPED = [
    (re.compile(rf"stack_empty\({_NP}, \d+\)"), (1, 1)),
    (re.compile(rf"stack_empty\({_NP}, \d+\)\.reshape\(\(([\d, ]*)\)\)"), (1, "2")),
    (re.compile(rf"np\.empty\(\(([\w, ]*)\), dtype={_NP}\)"), (2, "1")),
    (re.compile(r"block_counter\(\)"), ("np.int64", 1)),
    (re.compile(r"claims\(.*\)"), ("np.int64", 1)),
]
# A number: one call of a NumPy scalar type, `np.float32(acc_1)`.
_SCALAR = re.compile(r"(np\.(?:float(?:32|64)|u?int(?:8|16|32|64)|bool_|complex(?:64|128)))"
                     r"\([\w.\-+ ]*\)")


def runs_on_threads(source: str) -> bool:
    """Whether generated source has a parallel loop: a `prange`, or a launch of thread
    workers (what `outline` makes of one)."""
    return "prange(" in source or "launch(worker_address(" in source


def _dims(text: str) -> int:
    """How many dimensions a shape's text `a, b` (or `a,`, or empty) has."""
    return len([d for d in text.split(",") if d.strip()])


def _typed(value: str, known: dict) -> tuple | None:
    """The type of what `value` (a line's right side) makes: ("array", dtype, ndim,
    layout) or ("scalar", dtype), or None if it is not one the worker can be told."""
    # A product's operand (cpu/dot.py): a parameter made contiguous, perhaps transposed
    # first, perhaps reshaped to (batch, rows, columns), perhaps transposed after.
    m = re.fullmatch(r"contiguous\((?:np\.transpose\()?(\w+)(?:, \([\d, ]*\)\))?\)"
                     r"(?:\.reshape\(\(([\w, ]*)\)\))?(\.T|\.transpose\([\d, ]*\))?", value)
    if m:
        base = known.get(m.group(1))
        if base is None or base[0] != "array":
            return None
        ndim = _dims(m.group(2)) if m.group(2) is not None else base[2]
        if not m.group(3):
            return ("array", base[1], ndim, "C")
        return ("array", base[1], ndim, "F" if m.group(3) == ".T" and ndim == 2 else "A")
    m = re.fullmatch(r"as_matrix\((.*), \w+, \w+\)", value)  # a vector as a matrix (dot.py)
    if m:
        base = known.get(m.group(1)) or _typed(m.group(1), known)
        return ("array", base[1], 2, "C") if base and base[0] == "array" else None
    m = re.fullmatch(r"(\w+)\.reshape\(\(([\w, ]*)\)\)", value)  # a C array's view
    if m:
        base = known.get(m.group(1))
        return (("array", base[1], _dims(m.group(2)), "C") if base and base[0] == "array"
                and base[3] == "C" else None)
    m = re.fullmatch(r"packed_b\((\w+), work\)", value)  # B packed in the kernel's scratch
    if m:
        base = known.get(m.group(1))
        return ("array", base[1], 1, "C") if base and base[0] == "array" else None
    m = _SCALAR.fullmatch(value)
    if m:
        return ("scalar", m.group(1))
    if re.fullmatch(r"\w+\.shape\[\d+\]", value):  # a size (codegen/cpu/sizes.py)
        return ("scalar", "np.int64")
    m = re.fullmatch(r"(\w+)\[\(\)\]", value)
    if m:
        base = known.get(m.group(1))
        return ("scalar", base[1]) if base and base[0] == "array" and base[2] == 0 else None
    for pattern, (dtype, ndim) in TYPED:
        m = pattern.fullmatch(value)
        if m:
            return ("array", m.group(dtype) if isinstance(dtype, int) else dtype,
                    _dims(m.group(int(ndim))) if isinstance(ndim, str) else ndim, "C")
    return None


def _spec(t: tuple) -> str:
    """What `put` is told the worker reads: "float32 2 C", or "float32" for a number."""
    dtype = {"np.bool_": "bool"}.get(t[1], t[1].removeprefix("np."))
    return f"{dtype} {t[2]} {t[3]}" if t[0] == "array" else dtype


def _slots(types_: list[tuple]) -> list[int]:
    """Where each value starts in the argument block, then where the block ends: an array
    takes its address, shape and strides, a number one slot."""
    at = [0]
    for t in types_:
        at.append(at[-1] + (1 + 2 * t[2] if t[0] == "array" else 1))
    return at


def _names(nodes, ctx) -> set[str]:
    return {n.id for node in nodes for n in ast.walk(node)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ctx)}


def _is_prange(node) -> bool:
    return (isinstance(node, ast.For) and isinstance(node.iter, ast.Call)
            and isinstance(node.iter.func, ast.Name) and node.iter.func.id == "prange"
            and isinstance(node.target, ast.Name))


def outline(source: str, name: str, arguments: dict[str, tuple]) -> str | None:
    """`source` (one kernel's function, with `prange` loops) with each parallel loop a
    thread worker launched from a serial kernel; None where a loop reads a value whose type
    is not known here. `arguments` are the kernel's parameters: name -> ("array", dtype,
    ndim, "C")."""
    lines = source.splitlines()
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    loops = [n for n in ast.walk(func) if _is_prange(n)]
    if not loops or any(_is_prange(m) for loop in loops for b in loop.body
                        for m in ast.walk(b)):
        return None
    known: dict[str, tuple] = dict(arguments)
    inside = {id(n) for loop in loops for b in loop.body for n in ast.walk(b)}
    for node in ast.walk(func):
        if id(node) in inside:
            continue
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            typed = _typed(ast.get_source_segment(source, node.value) or "", known)
            if typed is not None:
                known.setdefault(node.targets[0].id, typed)
        elif isinstance(node, ast.For) and not _is_prange(node) and \
                isinstance(node.target, ast.Name):
            counted = ast.get_source_segment(source, node.iter) or ""
            known.setdefault(node.target.id, ("scalar", "np.uint64" if "np.uint64" in counted
                                              else "np.int64"))
    # The kernel's own names: its arguments and what it assigns outside the loops' bodies.
    outer = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)
             and isinstance(n.ctx, ast.Store) and id(n) not in inside} | set(arguments)
    workers, edits = [], []
    for k, loop in enumerate(sorted(loops, key=lambda n: n.lineno)):
        reads = _names(loop.body, ast.Load) - _names(loop.body, ast.Store) - {loop.target.id}
        shared = sorted(reads & outer, key=lambda v: (v not in arguments, v))
        if any(v not in known for v in shared) or (_names(loop.body, ast.Store) & outer):
            return None
        worker = f"{name}_thread" if len(loops) == 1 else f"{name}_thread{k}"
        slots = _slots([known[v] for v in shared])
        unpack = [f"{v} = array_at(args, {at}, {t[1]}, {t[2]}, \"{t[3]}\")" if t[0] == "array"
                  else f"{v} = scalar_at(args, {at}, {t[1]})"
                  for v, t, at in zip(shared, (known[v] for v in shared), slots)]
        body = textwrap.dedent("\n".join(lines[loop.body[0].lineno - 1:loop.end_lineno]))
        text = "\n".join([f"def {worker}({loop.target.id}, args):",
                          f'    """A thread\'s share of {name}\'s parallel loop."""']
                         + [f"    {u}" for u in unpack]
                         + textwrap.indent(body, "    ").splitlines())
        # Named by its code alone, as its comments name the shapes (codegen/cpu/sizes.py).
        symbol = "xe_thread_" + code_key(text)
        workers.append(f'@thread_worker("{symbol}", FASTMATH)\n{text}\n')
        pad = " " * loop.col_offset
        block = f"args_{k}" if len(loops) > 1 else "args"
        count = ast.get_source_segment(source, loop.iter.args[0])
        new = [f"{pad}{block} = stack_empty(np.int64, {max(slots[-1] if slots else 0, 1)})"
               "  # what its threads read"]
        new += [f"{pad}put({block}, {at}, {v}, \"{_spec(known[v])}\")"
                for v, at in zip(shared, slots)]
        new.append(f"{pad}launch(worker_address(\"{symbol}\"), {count}, {block})  # "
                   f"each thread runs {worker}")
        edits.append((loop.lineno - 1, loop.end_lineno, new))
    for start, end, new in sorted(edits, reverse=True):
        lines[start:end] = new
    head = func.decorator_list[0].lineno - 1
    lines[head] = lines[head].replace("parallel=True", "parallel=False")
    return "\n".join(workers) + "\n\n" + "\n".join(lines) + "\n"
