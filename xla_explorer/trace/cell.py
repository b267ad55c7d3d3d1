"""A notebook cell as a function the tracer can trace: what `%%xla` compiles.

`analyse(source, namespace)` reads the cell with `ast` and decides

- its inputs: the names it reads before assigning them that hold arrays or numbers in the
  namespace (they become the function's parameters, so they are traced); every other name it
  reads (np, helper functions, modules) is a global looked up in the namespace;
- its outputs: the names it assigns. What comes back is decided when the function runs:
  a name is returned when it holds an array (traced or NumPy, of a supported type), a NumPy
  scalar or a Python bool, int or float, and is bound when the cell ends. Names bound to
  anything else (a list, a string, a helper function or lambda defined in the cell) stay
  local to the cell and are not written back, as if the cell were a function body.

The function is built from the cell's own syntax tree, so its line numbers are the cell's:
the tracer records them in HLO metadata, and errors quote the line (the cell's text is
registered with `linecache` under the function's file name).

Identity follows Python. An output that is an input object (`x += 1` changed x in place, or
`y = x`) or another output (`z = y`) is not returned twice: `CellPlan.bindings` binds the
name to that same object. What the compiled program cannot keep is a view: `v = x[1:3]`
comes back as an array of its own, not a view of x.
"""
from __future__ import annotations

import ast
import builtins
import hashlib
import linecache
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import TraceError
from ..ir.shape import is_supported_dtype
from .tracer import Tracer

_ARGS = "__xla_args"  # the inputs as passed, kept so outputs can be told apart from them
_OUTPUTS = "__xla_outputs"
_LOCALS = "__xla_locals"


class CellError(TraceError):
    """A cell the explorer cannot turn into a function: a statement that only makes sense at
    module level (`import`, `global`, `del`, `return`, `yield`, `await`)."""


class CellSyntaxError(CellError):
    """The cell is not valid Python (its `__cause__` is Python's SyntaxError)."""


def is_input_value(value) -> bool:
    """What a cell takes as an input: an array, a NumPy number or bool, a Python number."""
    if isinstance(value, np.ndarray):
        return True
    if isinstance(value, (np.number, np.bool_)):
        return True
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def is_output_value(value) -> bool:
    """What a cell can return: a traced array, or a value the tracer turns into a constant."""
    if isinstance(value, Tracer):
        return True
    if isinstance(value, (np.ndarray, np.number, np.bool_)):
        return is_supported_dtype(value.dtype)
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


@dataclass(eq=False)
class CellPlan:
    """One cell, analysed: its inputs, outputs and the function that runs it.

    `outputs` are the names the cell assigns, in the order of their first assignment (which of
    them come back is decided by their values, see the module docstring); `updated` the inputs
    the source updates in place (`x += 1`, `x[2:4] = 0`); the trace has the last word on that
    (a write through a view `v = x[1:3]; v += 1` changes x too). `links` says, after each call,
    which outputs were the same object as an input or an earlier output."""

    source: str
    name: str
    filename: str
    first_line: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    updated: dict[str, int]  # input -> the first line that updates it in place
    globals_read: tuple[str, ...]
    function: Callable = field(repr=False)
    links: dict = field(default_factory=dict, repr=False)

    def line(self, number: int) -> str:
        """The text of one line, numbered as the tracer numbers it."""
        lines = self.source.splitlines()
        i = number - self.first_line
        return lines[i] if 0 <= i < len(lines) else ""

    def arguments(self, namespace: Mapping) -> list:
        """The inputs' values, the caller's own objects, in parameter order."""
        return [namespace[n] for n in self.inputs]

    def bindings(self, result: Mapping, args, links: Mapping | None = None) -> dict[str, Any]:
        """What to bind in the namespace after a run of the function on `args`, given what the
        run returned: returned values, and for linked names the same object as before.
        `links` are those of a call with the same argument shapes (default: the last call's)."""
        links = self.links if links is None else links
        out = {}
        for name in self.outputs:
            if name in result:
                out[name] = result[name]
            elif name in links:
                kind, other = links[name]
                if kind == "input":
                    out[name] = args[self.inputs.index(other)]
                elif other in out:
                    out[name] = out[other]
        return out

    def _collect(self, frame_locals: Mapping, args: tuple) -> dict:
        """The function's return value: the outputs bound when it ends that hold arrays or
        numbers, each object once."""
        by_id = {id(a): n for n, a in zip(self.inputs, args)}
        links, result = {}, {}
        for name in self.outputs:
            if name not in frame_locals:
                continue  # never bound (a branch not taken), or an `except ... as` name
            value = frame_locals[name]
            if not is_output_value(value):
                continue
            if id(value) in by_id:
                links[name] = ("input", by_id[id(value)])
                continue
            earlier = next((n for n, v in result.items() if v is value), None)
            if earlier is not None:
                links[name] = ("output", earlier)
                continue
            result[name] = value
        self.links = links
        return result


def analyse(source: str, namespace: Mapping, *, first_line: int = 1) -> CellPlan:
    """Analyse a cell against the namespace it will run in and build its function.

    `first_line` is the number the source's first line has for the user (2 under a `%%xla`
    line). The namespace is read, never written: the function's globals are the namespace
    itself (a copy if it is not a dict), and every name the cell assigns is local to it."""
    name, filename = cell_names(source, first_line)
    _register(filename, source, first_line)
    try:
        tree = ast.parse(source, filename)
    except SyntaxError as e:
        line = e.lineno + first_line - 1 if e.lineno else None
        raise CellSyntaxError(e.msg, op="syntax", source_file=filename, source_line=line,
                              hint=None) from e
    ast.increment_lineno(tree, first_line - 1)
    scan = _Scan(filename)
    for stmt in tree.body:
        scan.visit(stmt)
    inputs = tuple(n for n in scan.reads if n in namespace and is_input_value(namespace[n]))
    globals_read = tuple(n for n in scan.reads if n in namespace and n not in inputs)
    outputs = tuple(scan.assigned)
    updated = {n: line for n, line in scan.updated.items()
               if n in inputs and isinstance(namespace[n], np.ndarray)}
    globals_ = namespace if isinstance(namespace, dict) else dict(namespace)
    plan = CellPlan(source, name, filename, first_line, inputs, outputs, updated, globals_read,
                    function=None)
    plan.function = _build(tree, plan, globals_)
    return plan


def cell_names(source: str, first_line: int = 1) -> tuple[str, str]:
    """The function's name and file name for a cell: `cell_` and `<xla-cell-` and a short hash
    of the source (and where it starts), so the same cell gets the same names."""
    digest = hashlib.sha1(f"{first_line}\n{source}".encode()).hexdigest()[:8]
    return f"cell_{digest}", f"<xla-cell-{digest}>"


def _register(filename: str, source: str, first_line: int) -> None:
    """Make the cell's lines readable by `linecache` (tracebacks, error messages); no mtime, so
    `linecache.checkcache` keeps the entry."""
    lines = ["\n"] * (first_line - 1) + [line + "\n" for line in source.splitlines()]
    linecache.cache[filename] = (len(source), None, lines, filename)


def _build(tree: ast.Module, plan: CellPlan, globals_: dict) -> Callable:
    """def cell_xxx(inputs...): <the cell>; return <its outputs>, made inside a factory so the
    collector is a closure, not a global (the namespace stays untouched). The cell's
    statements keep their line numbers; the few added nodes take the first and last."""
    first = tree.body[0].lineno if tree.body else plan.first_line
    last = max((s.end_lineno or s.lineno for s in tree.body), default=first)

    def at(node, line):
        for n in ast.walk(node):
            if "lineno" in n._attributes:
                n.lineno = n.end_lineno = line
                n.col_offset = n.end_col_offset = 0
        return node

    def params(names):
        return at(ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], vararg=None,
                                kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]), first)

    def load(name):
        return ast.Name(name, ast.Load())

    keep_args = at(ast.Assign([ast.Name(_ARGS, ast.Store())],
                              ast.Tuple([load(n) for n in plan.inputs], ast.Load())), first)
    ret = at(ast.Return(ast.Call(load(_OUTPUTS), [ast.Call(load(_LOCALS), [], []), load(_ARGS)],
                                 [])), last)
    inner = ast.FunctionDef(plan.name, params(plan.inputs), [keep_args, *tree.body, ret], [],
                            None, lineno=first, col_offset=0, end_lineno=last, end_col_offset=0)
    make = ast.FunctionDef("__xla_make", params([_OUTPUTS, _LOCALS]),
                           [inner, at(ast.Return(load(plan.name)), last)], [], None,
                           lineno=first, col_offset=0, end_lineno=last, end_col_offset=0)
    code = compile(ast.Module([make], type_ignores=[]), plan.filename, "exec")
    make_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    # Built from its code object rather than exec'd: exec would add __builtins__ to a
    # namespace that lacks it.
    factory = types.FunctionType(make_code, globals_)
    return factory(plan._collect, builtins.locals)


# -- the scan -----------------------------------------------------------------------------------

_MODULE_ONLY = {
    ast.Import: ("import", "Import modules in an ordinary cell before this one."),
    ast.ImportFrom: ("import", "Import modules in an ordinary cell before this one."),
    ast.Global: ("global", "A cell's names are written back when it succeeds; assign the "
                           "name in the cell instead."),
    ast.Nonlocal: ("nonlocal", "Assign the name in the cell instead."),
    ast.Delete: ("del", "Names are written back only when the cell succeeds; delete them "
                        "in an ordinary cell."),
    ast.Return: ("return", "The names a cell assigns are its results; assign instead of "
                           "returning."),
    ast.Yield: ("yield", "A cell runs once, top to bottom; it cannot be a generator."),
    ast.YieldFrom: ("yield from", "A cell runs once, top to bottom; it cannot be a generator."),
    ast.Await: ("await", "The compiled program is not a coroutine; await outside the cell."),
    ast.AsyncFor: ("async for", "The compiled program is not a coroutine."),
    ast.AsyncWith: ("async with", "The compiled program is not a coroutine."),
}
_ANYWHERE = (ast.Global,)  # refused in nested functions too: it would write the namespace


class _Scope:
    """The names bound in one nested scope; a comprehension's scope does not take walrus
    targets, and does not make `return` or `yield` legal."""

    def __init__(self, kind: str, names=()):
        self.kind = kind  # "function" (def, lambda, class body) or "comprehension"
        self.names = set(names)


class _Scan(ast.NodeVisitor):
    """Walks the cell's statements in the order Python evaluates them, recording the names read
    before any assignment, the names assigned, and the names updated in place. Flow-insensitive:
    a statement that comes later in the text counts as later."""

    def __init__(self, filename: str):
        self.filename = filename
        self.reads: dict[str, int] = {}  # name -> first line, in order of first read
        self.assigned: dict[str, int] = {}
        self.updated: dict[str, int] = {}
        self.scopes: list[_Scope] = []  # the nested scopes the walk is inside, innermost last

    # -- bookkeeping ----------------------------------------------------------------------

    def read(self, name: str, node: ast.AST) -> None:
        if any(name in s.names for s in self.scopes):
            return
        if name not in self.assigned and name not in self.reads:
            self.reads[name] = node.lineno

    def store(self, name: str, node: ast.AST, *, walrus: bool = False) -> None:
        scopes = [s for s in self.scopes if not (walrus and s.kind == "comprehension")]
        if scopes:
            scopes[-1].names.add(name)
        elif name not in self.assigned:
            self.assigned[name] = node.lineno

    @property
    def in_function(self) -> bool:
        return any(s.kind == "function" for s in self.scopes)

    def refuse(self, node: ast.AST) -> None:
        what, hint = _MODULE_ONLY[type(node)]
        raise CellError(f"`{what}` is not supported inside an %%xla cell", op=what,
                        source_file=self.filename, source_line=node.lineno, hint=hint)

    # -- names ----------------------------------------------------------------------------

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Load):
            self.read(node.id, node)
        else:
            self.store(node.id, node)

    def _target(self, target: ast.expr, *, in_place: bool = False, walrus: bool = False):
        """An assignment target: names bind; `x[...] = v` reads x and writes into it, and so
        does `x += v` when x is an array (NumPy's in-place add)."""
        if isinstance(target, ast.Name):
            if in_place:
                self.read(target.id, target)
                if not self.scopes:
                    self.updated.setdefault(target.id, target.lineno)
            self.store(target.id, target, walrus=walrus)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._target(t, in_place=in_place)
        elif isinstance(target, ast.Starred):
            self._target(target.value, in_place=in_place)
        else:  # a Subscript or Attribute: the object is read, and written into
            self.visit(target)
            root = target
            while isinstance(root, (ast.Subscript, ast.Attribute)):
                root = root.value
            if isinstance(root, ast.Name) and not self.scopes:
                self.updated.setdefault(root.id, target.lineno)

    # -- statements, in evaluation order ---------------------------------------------------

    def generic_visit(self, node: ast.AST) -> None:
        if type(node) in _MODULE_ONLY and (not self.in_function or isinstance(node, _ANYWHERE)):
            self.refuse(node)
        super().generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for t in node.targets:
            self._target(t)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self._target(node.target, in_place=True)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:  # a bare `x: int` binds nothing
            self.visit(node.value)
            self._target(node.target)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.visit(node.value)
        self._target(node.target, walrus=True)  # binds outside a comprehension

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._target(node.target)
        for s in node.body + node.orelse:
            self.visit(s)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
            if item.optional_vars is not None:
                self._target(item.optional_vars)
        for s in node.body:
            self.visit(s)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.type is not None:
            self.visit(node.type)
        if node.name and self.scopes:
            self.scopes[-1].names.add(node.name)
        # At cell level `except E as e` binds nothing that lasts: Python unbinds e after the
        # handler, so it is never an output.
        for s in node.body:
            self.visit(s)

    def visit_MatchAs(self, node) -> None:
        self.generic_visit(node)
        if node.name:
            self.store(node.name, node)

    def visit_MatchStar(self, node) -> None:
        if node.name:
            self.store(node.name, node)

    def visit_MatchMapping(self, node) -> None:
        self.generic_visit(node)
        if node.rest:
            self.store(node.rest, node)

    # -- nested scopes: names they bind are theirs; names they read are the cell's ---------

    def _nested(self, kind: str, args: ast.arguments | None, body: list) -> None:
        names = set()
        if args is not None:
            names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs
                     + [args.vararg, args.kwarg] if a is not None}
        # A name assigned anywhere in a function is local to all of it.
        for n in body:
            for sub in ast.walk(n):
                if isinstance(sub, ast.Name) and not isinstance(sub.ctx, ast.Load):
                    names.add(sub.id)
        self.scopes.append(_Scope(kind, names))
        try:
            for n in body:
                self.visit(n)
        finally:
            self.scopes.pop()

    def _defined_here(self, node) -> None:
        """Decorators and defaults are evaluated where the function is defined."""
        for d in getattr(node, "decorator_list", []):
            self.visit(d)
        for d in node.args.defaults + [d for d in node.args.kw_defaults if d is not None]:
            self.visit(d)

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._defined_here(node)
        self.store(node.name, node)
        self._nested("function", node.args, node.body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._defined_here(node)
        self._nested("function", node.args, [node.body])

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for d in node.decorator_list + node.bases + [k.value for k in node.keywords]:
            self.visit(d)
        self.store(node.name, node)
        self._nested("function", None, node.body)

    def _comprehension(self, node, elements: list) -> None:
        self.visit(node.generators[0].iter)  # the first iterable is evaluated outside
        targets = {sub.id for g in node.generators for sub in ast.walk(g.target)
                   if isinstance(sub, ast.Name)}
        self.scopes.append(_Scope("comprehension", targets))
        try:
            for i, g in enumerate(node.generators):
                if i:
                    self.visit(g.iter)
                for cond in g.ifs:
                    self.visit(cond)
            for e in elements:
                self.visit(e)
        finally:
            self.scopes.pop()

    def visit_ListComp(self, node) -> None:
        self._comprehension(node, [node.elt])

    visit_SetComp = visit_GeneratorExp = visit_ListComp

    def visit_DictComp(self, node: ast.DictComp) -> None:
        self._comprehension(node, [node.key, node.value])
