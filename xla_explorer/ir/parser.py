"""Reads HLO text: what `printer` writes (exactly: `parse_hlo(t).to_text() == t`), and what
JAX and XLA print (`jax.jit(f).lower(...).as_text(dialect="hlo")` and `.compile().as_text()`):
`%` sigils, layouts, computation signatures, stack-frame tables, backend configs.

Line-oriented, as XLA prints: one instruction a line, a computation's `{` on its header line.
Values the explorer does not model (layouts, stack frames) are dropped; attributes it does not
know are kept verbatim.
"""
from __future__ import annotations

import re

import numpy as np

from ..errors import HloParseError
from .module import COMPUTATION_ATTRS, Computation, Instruction, Metadata, Module
from .printer import INT_ATTRS, INT_LIST_ATTRS, QUOTED_ATTRS
from .shape import HLO_DTYPES, Shape, TupleShape

_NAME = r"%?([A-Za-z_][\w.\-]*)"
_COMPUTATION = re.compile(rf"^(ENTRY\s+)?{_NAME}\s*(\(.*\)\s*->\s*.*?)?\s*\{{\s*$")
_INSTRUCTION = re.compile(rf"^(ROOT\s+)?{_NAME}\s*=\s*(.*)$")
# Tables XLA prints between the header and the computations (stack frames for metadata).
_TABLES = frozenset({"FileNames", "FunctionNames", "FileLocations", "StackFrames"})
# A /* comment */ (XLA prints `/*index=5*/` in long operand lists), or a quoted string, which
# is kept whole: a source path or op name may contain "/*".
_COMMENT_OR_STRING = re.compile(r'/\*.*?\*/|"(?:[^"\\]|\\.)*"')


def _strip_comments(line: str) -> str:
    return _COMMENT_OR_STRING.sub(lambda m: "" if m.group(0).startswith("/*") else m.group(0), line)


_SPACES = re.compile(r"\s+")
_WORD = re.compile(r"[%\w.\-]+")
_ARRAY_SHAPE = re.compile(r"([a-z]+\d*)\[([^\]]*)\]")
_STOPS: dict[str, re.Pattern] = {}


def _stops(stop: str) -> re.Pattern:
    """The characters `_Cursor.balanced` must look at: brackets, quotes, escapes and `stop`."""
    pattern = _STOPS.get(stop)
    if pattern is None:
        pattern = _STOPS[stop] = re.compile("[" + re.escape('{}[]()"\\' + stop) + "]")
    return pattern


class _Cursor:
    """A position in one line, with the few token readers HLO needs."""

    def __init__(self, text: str, line_no: int):
        self.s, self.i, self.line_no = text, 0, line_no

    def error(self, message: str) -> HloParseError:
        return HloParseError(f"{message} (at column {self.i + 1})", self.line_no, self.s)

    def ws(self):
        s, i = self.s, self.i
        if i < len(s) and s[i].isspace():
            self.i = _SPACES.match(s, i).end()

    def peek(self) -> str:
        self.ws()
        return self.s[self.i] if self.i < len(self.s) else ""

    def expect(self, ch: str):
        if self.peek() != ch:
            raise self.error(f"expected {ch!r}")
        self.i += 1

    def word(self) -> str:
        self.ws()
        m = _WORD.match(self.s, self.i)
        if not m:
            raise self.error("expected a name")
        self.i = m.end()
        return m.group(0)

    def balanced(self, stop: str = ",") -> str:
        """Text up to `stop` at nesting depth 0, minding brackets and quoted strings."""
        self.ws()
        s, start, depth, quote = self.s, self.i, 0, False
        find = _stops(stop).search  # jumps over the plain text between the characters that count
        i = start
        while (m := find(s, i)) is not None:
            i = m.start()
            c = s[i]
            if quote:
                if c == "\\":
                    i += 1
                elif c == '"':
                    quote = False
            elif c == '"':
                quote = True
            elif c in "{[(":
                depth += 1
            elif c in "}])":
                if depth == 0:
                    break
                depth -= 1
            elif depth == 0 and c in stop:
                break
            i += 1
        else:
            i = len(s)
        self.i = i
        return s[start:i].strip()

    def shape(self):
        if self.peek() == "(":
            self.i += 1
            elements = []
            while self.peek() != ")":
                elements.append(self.shape())
                if self.peek() == ",":
                    self.i += 1
            self.i += 1
            return TupleShape(tuple(elements))
        self.ws()
        m = _ARRAY_SHAPE.match(self.s, self.i)
        if not m:
            raise self.error("expected a shape like f32[3,4]")
        self.i = m.end()
        type_name, dims = m.group(1), m.group(2)
        if type_name not in HLO_DTYPES:
            raise self.error(f"element type {type_name} is not supported (only "
                             f"{', '.join(HLO_DTYPES)})")
        if "<=" in dims or "?" in dims:
            raise self.error("dynamic dimensions are not supported")
        if self.i < len(self.s) and self.s[self.i] == "{":  # a layout: row-major is assumed
            self.balanced_braces()
        try:
            return Shape(HLO_DTYPES[type_name], tuple(int(d) for d in dims.split(",") if d.strip()))
        except ValueError:
            raise self.error(f"bad dimensions in shape {m.group(0)}") from None

    def balanced_braces(self) -> str:
        self.expect("{")
        body = self.balanced(stop="")
        self.expect("}")
        return body


def _int_list(text: str) -> tuple[int, ...]:
    text = text.strip().strip("{}")
    return tuple(int(v) for v in text.split(",") if v.strip())


_SLICE_DIM = r"\[\s*(-?\d+)\s*:\s*(-?\d+)\s*(?::\s*(\d+))?\s*\]"


def _slice_spec(text: str):
    if not re.fullmatch(rf"\{{\s*(?:{_SLICE_DIM}\s*(?:,\s*{_SLICE_DIM}\s*)*)?\}}", text.strip()):
        raise ValueError(f"expected {{[start:limit:stride], ...}}, got {text}")
    spec = []
    for start, limit, stride in re.findall(_SLICE_DIM, text):
        spec.append((int(start), int(limit), int(stride) if stride else 1))
    return tuple(spec)


def _padding(text: str):
    out = []
    for part in text.strip().split("x"):
        if not re.fullmatch(r"-?\d+_-?\d+(_\d+)?", part):
            raise ValueError(f"expected lo_hi or lo_hi_interior per dimension, got {part!r}")
        vals = [int(v) for v in part.split("_")]
        out.append((vals[0], vals[1], vals[2] if len(vals) > 2 else 0))
    return tuple(out)


_UNESCAPES = {"n": "\n", "r": "\r", "t": "\t"}


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
        return re.sub(r"\\(.)", lambda m: _UNESCAPES.get(m.group(1), m.group(1)), text, flags=re.S)
    return text


def _metadata(body: str) -> Metadata:
    fields = re.findall(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)', body)
    known, extra = {}, []
    for key, value in fields:
        if key in ("op_name", "source_file") and key not in known:
            known[key] = _unquote(value)
        elif key == "source_line" and key not in known:
            known[key] = int(value)
        else:
            extra.append(f"{key}={value}")
    return Metadata(known.get("op_name", ""), known.get("source_file", ""),
                    known.get("source_line", 0), " ".join(extra))


_SPECIAL = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan, "-nan": np.nan,
            "true": True, "false": False}


def _literal(text: str, shape: Shape, cur: _Cursor) -> np.ndarray:
    tokens = re.findall(r"[^\s{},]+", text)
    try:
        values = [_SPECIAL[t] if t in _SPECIAL else (float(t) if shape.dtype.kind == "f" else int(t))
                  for t in tokens]
        arr = np.array(values, dtype=shape.dtype)
    except (ValueError, OverflowError) as e:
        raise cur.error(f"bad constant literal: {e}") from None
    if arr.size != shape.size:
        raise cur.error(f"constant has {arr.size} values for shape {shape}")
    return arr.reshape(shape.dims)


def _attr_value(key: str, raw: str):
    if key in INT_LIST_ATTRS:
        return _int_list(raw)
    if key in INT_ATTRS:
        return int(raw)
    if key == "slice":
        return _slice_spec(raw)
    if key == "padding":
        return _padding(raw)
    if key in QUOTED_ATTRS:
        return _unquote(raw)
    if key in COMPUTATION_ATTRS:
        return raw.lstrip("%")
    return raw


class _RawInstruction:
    __slots__ = ("name", "shape", "opcode", "operands", "attrs", "metadata", "literal",
                 "parameter_number", "root", "line_no", "line")


def _parse_instruction(line: str, line_no: int) -> _RawInstruction:
    m = _INSTRUCTION.match(line.strip())
    if not m:
        raise HloParseError("expected an instruction `name = shape opcode(operands)`", line_no, line)
    raw = _RawInstruction()
    raw.root, raw.name, raw.line_no, raw.line = bool(m.group(1)), m.group(2), line_no, line
    cur = _Cursor(m.group(3), line_no)
    raw.shape = cur.shape()
    raw.opcode = cur.word()
    cur.expect("(")
    inside = cur.balanced(stop="")
    cur.expect(")")
    raw.literal, raw.parameter_number, raw.operands = None, None, []
    if raw.opcode == "constant":
        if raw.shape.is_tuple:
            raise cur.error("tuple constants are not supported")
        raw.literal = _literal(inside, raw.shape, cur)
    elif raw.opcode == "parameter":
        if not re.fullmatch(r"\d+", inside):
            raise cur.error(f"a parameter's number must be an integer, not {inside!r}")
        raw.parameter_number = int(inside)
    elif inside:
        inner = _Cursor(inside, line_no)
        while inner.peek():
            item = inner.balanced(stop=",")
            # Older printers put each operand's shape before its name: `f32[3]{0} %x`.
            raw.operands.append(item.split()[-1].lstrip("%"))
            if inner.peek() == ",":
                inner.i += 1
    raw.attrs, raw.metadata = [], Metadata()
    while cur.peek() == ",":
        cur.i += 1
        key = cur.word()
        cur.expect("=")
        if cur.peek() == "{":
            value = "{" + cur.balanced_braces() + "}"
        else:
            value = cur.balanced(stop=",")
        try:
            if key == "metadata":
                raw.metadata = _metadata(value[1:-1])
            else:
                raw.attrs.append((key, _attr_value(key, value)))
        except (ValueError, IndexError):
            raise cur.error(f"bad {key} attribute: {value}") from None
    if cur.peek():
        raise cur.error("unexpected text after the instruction")
    return raw


def _build_computation(name: str, raws: list[_RawInstruction], line_no: int) -> Computation:
    """The computation, its instructions in text order except the root, which goes last.

    An operand may be named before its definition: the parser builds it anyway and keeps the
    text's order, so that the verifier, not the parser, reports the use before definition.
    """
    if not raws:
        raise HloParseError(f"computation {name} is empty", line_no)
    by_name: dict[str, _RawInstruction] = {}
    for r in raws:
        if r.name in by_name:
            raise HloParseError(f"{r.name} is defined twice in computation {name}", r.line_no, r.line)
        by_name[r.name] = r
    roots = [r for r in raws if r.root]
    if len(roots) > 1:
        raise HloParseError(f"computation {name} has a second ROOT", roots[1].line_no, roots[1].line)
    root = roots[0] if roots else raws[-1]
    built: dict[str, Instruction] = {}
    for start in raws:
        stack, on_stack = [start], {start.name}
        while stack:  # depth-first without recursion: chains can be thousands long
            r = stack[-1]
            if r.name in built:
                stack.pop()
                continue
            pending = []
            for op_name in r.operands:
                if op_name not in by_name:
                    raise HloParseError(f"operand {op_name} is not defined in computation {name}",
                                        r.line_no, r.line)
                if op_name in on_stack:
                    raise HloParseError(f"{op_name} depends on itself", r.line_no, r.line)
                if op_name not in built:
                    pending.append(by_name[op_name])
            if pending:
                stack.append(pending[0])
                on_stack.add(pending[0].name)
                continue
            built[r.name] = Instruction(r.name, r.opcode, r.shape,
                                        tuple(built[o] for o in r.operands), tuple(r.attrs),
                                        r.metadata, r.parameter_number, r.literal)
            on_stack.discard(r.name)
            stack.pop()
    order = [built[r.name] for r in raws if r is not root] + [built[root.name]]
    return Computation(name, tuple(order))


def _parse_header(line: str, line_no: int):
    cur = _Cursor(line.strip()[len("HloModule"):], line_no)
    name = cur.word().lstrip("%")
    aliases, scheduled = [], False
    while cur.peek() == ",":
        cur.i += 1
        key = cur.word()
        cur.expect("=")
        value = "{" + cur.balanced_braces() + "}" if cur.peek() == "{" else cur.balanced(",")
        if key == "input_output_alias":
            # `{1}: (0, {}, may-alias)`; a root that is not a tuple is output `{}`.
            aliases = [(int(o or 0), int(p)) for o, p in
                       re.findall(r"\{(\d*)\}\s*:\s*\((\d+)\s*,", value)]
        elif key == "is_scheduled":
            scheduled = value == "true"
    return name, tuple(aliases), scheduled


def parse_hlo(text: str) -> Module:
    """A Module from HLO text (the explorer's own, or JAX's and XLA's for supported ops)."""
    # Only "\n" ends a line (str.splitlines would also split inside a quoted "\u2028").
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    module_name, aliases, scheduled = None, (), False
    comps: list[Computation] = []
    entry: Computation | None = None
    current: tuple[str, bool, list, int] | None = None  # name, is entry, lines, header line
    in_table = False
    for n, line in enumerate(lines, 1):
        stripped = _strip_comments(line).strip()
        if not stripped:
            in_table = False
            continue
        if current is None:
            if stripped.startswith("HloModule"):
                module_name, aliases, scheduled = _parse_header(stripped, n)
                continue
            if stripped in _TABLES:
                in_table = True
                continue
            if in_table:
                continue
            m = _COMPUTATION.match(stripped)
            if not m:
                raise HloParseError("expected a computation header `name {`", n, line)
            current = (m.group(2), bool(m.group(1)), [], n)
            continue
        if stripped == "}":
            name, is_entry, raws, header_line = current
            comp = _build_computation(name, raws, header_line)
            if is_entry:
                entry = comp
            else:
                comps.append(comp)
            current = None
            continue
        current[2].append(_parse_instruction(stripped, n))
    if current is not None:
        raise HloParseError(f"computation {current[0]} is not closed with '}}'", len(lines))
    if module_name is None:
        raise HloParseError("no `HloModule name` header", 1)
    if entry is None:
        if not comps:
            raise HloParseError("no computations", 1)
        entry = comps.pop()  # XLA's rule: without ENTRY, the last computation is the entry
    return Module(module_name, entry, tuple(comps), aliases, scheduled)
