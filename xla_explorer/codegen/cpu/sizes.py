"""A kernel's sizes read from its arrays and its constants passed in, so that a new shape
(or an edited constant) reuses the compiled kernel.

XLA compiles a program again for every new shape, and so did we: a kernel's loops were
written over its sizes as numbers (`for i in range(512)`), and a new shape was a new kernel
for Numba to compile (0.05-0.7 s each). Here each number in a kernel's code that equals one
of its arrays' sizes becomes a name read from that array at the top of the kernel:

    size0 = p0.shape[1]  # a size: the same kernel serves every shape that gives the same code
    for i in range(size0):

The change cannot alter what the kernel computes: `size0` is, at this shape, the number it
replaces. And a kernel is compiled once per *code* (`code_key`: comments and docstrings
left out, as they name the shapes): two shapes share a compiled kernel only where their
generated code, sizes named so, is the same text, which then computes each shape's answer.
A number that happens to equal a size (a slice's end, a block count) becomes the name as
well; at a shape where it does not, the code differs and is compiled on its own.

A scalar float constant that is only added, multiplied, compared or selected is likewise an
argument of the kernel (`k0`; `Elemental.numbers` makes it one), and the driver, whose
offsets and shapes in the arena change with the shapes, reads them and the constants it
passes from two arrays (`lift_numbers`): its code is the same at every shape too.

Left as numbers, where a number buys speed or Numba needs one: sizes of at most `SMALL`
anywhere, and up to `SHORT_LOOP` as an innermost loop's bounds; a divisor (`i // 512`, a
multiply and a shift where `i // size0` is a division); and every number on a line whose
call needs a constant (an array made on the stack, an argument block's slots, a thread
count).
"""
from __future__ import annotations

import ast
import hashlib
import io
import re
import tokenize

# Sizes up to this stay numbers everywhere: a batch of 8, three channels.
SMALL = 16
# ... and up to this as the bounds of an innermost loop. A loop of a known short trip count
# is vectorized to its last element (LLVM adds a narrower vector loop for the rest; a count
# read at run time leaves up to 15 elements to a scalar loop: a row of 100 summed that way
# was 20% less accurate on average than NumPy's, and its tail the slower part). Past a
# float32 sum's block (cpu/rows.py) the tail is a small part.
SHORT_LOOP = 128
# Calls whose arguments Numba must know as it compiles: their lines keep their numbers.
_CONSTANT_CALLS = re.compile(r"\b(stack_empty|local_array|array_at|scalar_at|put|prange)\(")
BINDING = "  # a size, read here: a new shape with the same code reuses this kernel"


def generalize(source: str, arrays: list[tuple[str, tuple[int, ...]]]) -> str:
    """`source`, one generated function (decorator, `def`, docstring, body), with each number
    in its code equal to a size of `arrays` (its array parameters: name, dimensions) read
    from that array's shape instead. The names are bound after the docstring."""
    names: dict[int, str] = {}
    bindings = []
    for array, dims in arrays:
        for axis, size in enumerate(dims):
            if size > SMALL and size not in names:
                names[size] = f"size{len(names)}"
                bindings.append(f"{names[size]} = {array}.shape[{axis}]")
    if not names:
        return source
    lines = source.splitlines()
    short = _innermost_bounds(source)
    edits: dict[int, list] = {}  # line -> [(column, width, name)]
    for tok, size, after in _size_numbers(source):
        row, col = tok.start
        trip_count = any(r == row and c0 <= col < c1 for r, c0, c1 in short)
        if size not in names or _CONSTANT_CALLS.search(lines[row - 1]) \
                or after in ("//", "%") or (trip_count and size <= SHORT_LOOP):
            continue
        edits.setdefault(row - 1, []).append((col, len(tok.string), names[size]))
    used = {name for line in edits.values() for _, _, name in line}
    for row, line in edits.items():
        lines[row] = _replaced(lines[row], line)
    if not used:
        return "\n".join(lines) + "\n"
    func = ast.parse(source).body[0]
    assert isinstance(func, ast.FunctionDef)
    first = func.body[0]
    at = first.end_lineno if _is_docstring(first) else first.lineno - 1
    indent = " " * first.col_offset
    bound = [f"{indent}{b}{BINDING}" for b in bindings if b.split(" = ")[0] in used]
    return "\n".join(lines[:at] + bound + lines[at:]) + "\n"


def lift_numbers(body: list[str], ints: str, floats: str) -> tuple[list[str], list, list]:
    """The lines `body` of a function with the numbers of their code read from arrays
    instead: each integer literal from `ints`, each float made a NumPy float
    (`np.float32(0.01)`, a constant a kernel takes) from `floats` (float64, which holds a
    float32 exactly); and the integers and floats, in order. A driver whose offsets, shapes
    and constants change with the program, and whose code then does not."""
    lines = list(body)
    texts: dict[str, list[str]] = {ints: [], floats: []}  # each number once, by its text
    edits: dict[int, list] = {}
    tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline))
    for k, tok in enumerate(tokens):
        if tok.type != tokenize.NUMBER:
            continue
        start, text = tok.start, tok.string
        if re.fullmatch(r"\d+", text):
            into = ints
        elif tokens[k + 1].string != ")":
            continue
        elif [t.string for t in tokens[max(k - 4, 0):k]] in _FLOAT_OF:
            into = floats
        elif [t.string for t in tokens[max(k - 5, 0):k]] in [f + ["-"] for f in _FLOAT_OF]:
            into, start, text = floats, tokens[k - 1].start, "-" + text
        else:
            continue
        if text not in texts[into]:
            texts[into].append(text)
        width = tok.end[1] - start[1]
        edits.setdefault(start[0] - 1, []).append(
            (start[1], width, f"{into}[{texts[into].index(text)}]"))
    for row, line in edits.items():
        lines[row] = _replaced(lines[row], line)
    return lines, [int(t) for t in texts[ints]], [float(t) for t in texts[floats]]


def _replaced(text: str, edits: list) -> str:
    """`text` with each (column, width, name) of `edits` put in: right to left, so that
    the columns of the others hold."""
    for col, width, name in sorted(edits, reverse=True):
        text = text[:col] + name + text[col + width:]
    return text


def stack_length(n: int, most: int) -> int:
    """How long to make an array on the stack that holds `n` elements (at most `most`):
    `n` itself up to 64 (a parallel loop's partial sums, one a block), else a power of two,
    at least 1024. Its length is a constant of the code, so rows of 512 and of 640 elements
    share a kernel; the stack costs nothing to hold more, and at most twice as much."""
    if n <= 64:
        return n
    return min(max(1024, 1 << (n - 1).bit_length()), max(n, most))


def _size_numbers(source: str):
    """(token, its value, the token before it) for each number in `source`'s code (not in
    comments or strings) that could be a size: an integer literal, or a whole float made a
    float of a NumPy type (`np.float32(512.0)`, a mean's divisor; `np.float32(size1)` is the
    same number, where the float holds the size exactly)."""
    tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    for k, tok in enumerate(tokens):
        if tok.type != tokenize.NUMBER:
            continue
        before = tokens[k - 1].string if k else ""
        if re.fullmatch(r"\d+", tok.string):
            yield tok, int(tok.string), before
        elif re.fullmatch(r"\d+\.0", tok.string) and k + 1 < len(tokens) \
                and tokens[k + 1].string == ")" \
                and [t.string for t in tokens[max(k - 4, 0):k]] in _FLOAT_OF:
            yield tok, int(float(tok.string)), before


def _innermost_bounds(source: str) -> list[tuple[int, int, int]]:
    """(line, first column, end column) of the `range(...)` of each loop with no loop inside
    it: where a number is a vectorized loop's trip count."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and not any(
                isinstance(n, (ast.For, ast.While)) for b in node.body for n in ast.walk(b)):
            it = node.iter
            if it.lineno == it.end_lineno:
                spans.append((it.lineno, it.col_offset, it.end_col_offset))
    return spans


_FLOAT_OF = [["np", ".", "float32", "("], ["np", ".", "float64", "("]]


def _is_docstring(node) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str))


def code_key(source: str, header: str = "") -> str:
    """A digest of `source`'s code alone, its syntax tree without docstrings (comments are
    not in it), and of `header` as it is: generated kernels name their shapes in both, and
    two shapes whose code is the same share what Numba compiled for it. The header (a
    file's imports) counts whole, comments too: the digest of the helpers its kernels
    inline is a comment there, and new helpers must not find the old machine code."""
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.Module)) and node.body \
                and _is_docstring(node.body[0]):
            node.body = node.body[1:] or [ast.Pass()]
    return hashlib.sha256((header + ast.dump(tree)).encode()).hexdigest()[:20]
