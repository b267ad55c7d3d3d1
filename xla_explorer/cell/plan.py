"""A notebook cell as a function the tracer can trace: the plan `analyse` makes of it.

The function is built from the cell's own syntax tree, so its line numbers are the cell's:
the tracer records them in HLO metadata, and errors quote the line (the cell's text is
registered with `linecache` under the function's file name). Its parameters are the cell's
inputs (`inputs.py`), the containers it uses whole are rebuilt from their leaves first
(`containers.py`), and it returns the names the cell assigns (`outputs.py`).
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

from .containers import Tree
from .inputs import Inputs, Rewrite
from .outputs import (fill, has_refs, holds_arrays, is_number, returnable, template_of,
                      unreturnable_part)
from .scan import Scan
from .values import LAST, NO_VALUE, CellError, CellSyntaxError, path_text, take

# The names the function's own code uses; `_identifiers` keeps parameters clear of them.
_ARGS = "__xla_args"  # the inputs as passed, kept so outputs can be told apart from them
_OUTPUTS = "__xla_outputs"
_LOCALS = "__xla_locals"
_REBUILD = "__xla_rebuild"
_TREES = "__xla_trees"  # id of each container rebuilt from the namespace -> its path


@dataclass(eq=False)
class CellPlan:
    """One cell, analysed: its inputs, outputs and the function that runs it.

    `inputs` name the function's parameters as the cell reaches them (`x`, `params['w']`,
    `ws[0]` for a leaf of a list used whole), `params` are the parameters' own names and
    `paths` how each is read from the namespace; `values` are the values analysis read.
    `trees` are the containers the cell uses whole, rebuilt from their leaves in the function;
    `key` is what else in the namespace decides the program (constants by value, functions,
    modules and containers' structure), `keep` holds what it names by identity.
    `outputs` are the names the cell assigns, in the order of their first assignment (which of
    them come back is decided by their values, see `outputs.py`); `updated` the inputs
    the source updates in place (`x += 1`, `x[2:4] = 0`); the trace has the last word on that
    (a write through a view `v = x[1:3]; v += 1` changes x too). `links` says, after each call,
    which outputs were (or held) the same object as an input or an earlier output."""

    source: str
    name: str
    filename: str
    first_line: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    updated: dict[str, int]  # input -> the first line that updates it in place
    globals_read: tuple[str, ...]  # names read whole that are not inputs (np, helpers)
    function: Callable = field(repr=False)
    params: tuple[str, ...] = ()
    paths: tuple = field(default=(), repr=False)  # (root, steps) per input
    trees: tuple[Tree, ...] = field(default=(), repr=False)
    values: tuple = field(default=(), repr=False)
    objects: dict = field(default_factory=dict, repr=False)  # path -> a container used whole
    key: tuple = field(default=(), repr=False)
    keep: tuple = field(default=(), repr=False)
    shows_value: bool = False  # the last line is an expression: its value comes back as LAST
    lines: dict = field(default_factory=dict, repr=False)  # output -> its first assignment
    update_lines: dict = field(default_factory=dict, repr=False)  # root or path -> line
    links: dict = field(default_factory=dict, repr=False)
    last_value: Any = field(default=NO_VALUE, repr=False)  # a last-line value not returned

    def line(self, number: int) -> str:
        """The text of one line, numbered as the tracer numbers it."""
        lines = self.source.splitlines()
        i = number - self.first_line
        return lines[i] if 0 <= i < len(lines) else ""

    def arguments(self, namespace: Mapping) -> list:
        """The inputs' values, the caller's own objects, in parameter order, read afresh."""
        out = []
        for root, steps in self.paths:
            value = namespace[root]
            for step in steps:
                value = take(value, step)
            out.append(value)
        return out

    def update_line(self, name: str) -> int | None:
        """The first line that updates input `name` in place, or its root."""
        root = self.paths[self.inputs.index(name)][0] if name in self.inputs else name
        return self.updated.get(name) or self.update_lines.get(name) or \
            self.update_lines.get(root)

    def rebuild(self, k: int, leaves, registry: dict):
        return self.trees[k].rebuild(leaves, registry)

    def bindings(self, result: Mapping, args, links: Mapping | None = None,
                 objects: Mapping | None = None) -> dict[str, Any]:
        """What to bind in the namespace after a run of the function on `args`, given what the
        run returned: returned values, and for linked names (or parts of names) the same
        object as before. `links` are those of a call with the same argument shapes (default:
        the last call's); `objects` the namespace's containers (default: analysis's). The
        last line's value, if returned, is under LAST."""
        links = self.links if links is None else links
        objects = self.objects if objects is None else objects
        out: dict[str, Any] = {}

        def resolve(ref, filled):
            kind, what = ref[0], ref[1]
            if kind == "input":
                return args[self.inputs.index(what)]
            if kind == "tree":
                return objects[what]
            if what not in out:  # a part of the output being built
                return filled[ref[2]]
            value = out[what]
            for key in ref[2]:
                value = value[key]
            return value

        for name in self.outputs + (LAST,):
            link = links.get(name)
            if link is not None and link[0] == "parts":
                filled: dict = {}
                out[name] = fill(link[1], result[name], (), filled,
                                  lambda ref: resolve(ref, filled))
            elif link is not None:
                out[name] = resolve(link, {})
            elif name in result:
                out[name] = result[name]
        return out

    def _collect(self, frame_locals: Mapping, args: tuple) -> dict:
        """The function's return value: the outputs bound when it ends that hold arrays or
        numbers, each object once (what is an input, a container of the namespace or an
        earlier output is linked, and left out)."""
        seen = {id(a): ("input", n) for n, a in zip(self.inputs, args)}
        seen.update((i, ("tree", path)) for i, path in frame_locals.get(_TREES, {}).items())
        links, result = {}, {}
        self.last_value = NO_VALUE
        for name in self.outputs + ((LAST,) if self.shows_value else ()):
            if name not in frame_locals:
                continue  # never bound (a branch not taken), or an `except ... as` name
            value = frame_locals[name]
            if id(value) in seen and not is_number(value):
                links[name] = seen[id(value)]
            elif not returnable(value, seen):
                self._not_returned(name, value, seen)
            else:
                template, result[name] = template_of(value, name, (), seen)
                if has_refs(template):
                    links[name] = ("parts", template)
        self.links = links
        return result

    def _not_returned(self, name: str, value, seen) -> None:
        """A value the compiled program cannot return: local to the cell when it holds no
        array (a string, a function), refused when it does (it would be dropped)."""
        if not holds_arrays(value):
            if name == LAST and value is not None:
                self.last_value = value  # shown from an eager run: the trace's may be a Tracer
            return
        what = "the last line's value" if name == LAST else name
        steps, part = unreturnable_part(value, seen)
        where = f"{what}{path_text('', steps)}"
        raise CellError(
            f"{where} is a {type(part).__name__}, and {what} holds arrays: a compiled cell "
            "returns arrays and numbers, and tuples, lists and dicts of them", op=what,
            source_file=self.filename, source_line=self.lines.get(name),
            hint="Keep arrays and numbers in it (tuple(...), list(...) and dict(...) convert "
                 "other containers), or assign the parts you need to names.")


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
    shows_value = _keep_last_value(tree)
    scan = Scan(filename)
    for stmt in tree.body:
        scan.visit(stmt)
    found = Inputs(namespace, filename, _identifiers(tree))
    found.resolve(scan.uses)
    inputs = tuple(found.names)
    outputs = tuple(n for n in scan.assigned if n != LAST)
    updated = {n: line for n, line in scan.updated.items()
               if n in inputs and isinstance(found.values[inputs.index(n)], np.ndarray)}
    globals_ = namespace if isinstance(namespace, dict) else dict(namespace)
    plan = CellPlan(source, name, filename, first_line, inputs, outputs, updated,
                    tuple(found.globals_read), function=None, params=tuple(found.params),
                    paths=tuple(found.paths), trees=tuple(found.trees),
                    values=tuple(found.values), objects=found.objects, key=tuple(found.key),
                    keep=tuple(found.keep), shows_value=shows_value, lines=dict(scan.assigned),
                    update_lines=dict(scan.updated))
    Rewrite(found.rewrites).visit(tree)
    plan.function = _build(tree, plan, globals_)
    return plan


def _keep_last_value(tree: ast.Module) -> bool:
    """A last line that is an expression becomes `__xla_last = <expression>`: its value is
    shown as a plain cell shows it."""
    last = tree.body[-1] if tree.body else None
    if not isinstance(last, ast.Expr):
        return False
    target = ast.copy_location(ast.Name(LAST, ast.Store()), last)
    tree.body[-1] = ast.copy_location(ast.Assign([target], last.value), last)
    return True


def _identifiers(tree: ast.AST) -> set[str]:
    """Every name the cell's code spells, so that new parameter names differ from them."""
    names = {_ARGS, _OUTPUTS, _LOCALS, _REBUILD, _TREES, LAST}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
    return names


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
    statements keep their line numbers; the few added nodes take the first and last.
    Containers used whole are rebuilt from their leaves first."""
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

    def assign(name, value):
        return at(ast.Assign([ast.Name(name, ast.Store())], value), first)

    prologue = [assign(_ARGS, ast.Tuple([load(n) for n in plan.params], ast.Load()))]
    if plan.trees:
        prologue.append(assign(_TREES, ast.Dict([], [])))
    for k, t in enumerate(plan.trees):
        leaves = ast.Tuple([load(n) for n in plan.params[t.first:t.first + t.count]],
                           ast.Load())
        prologue.append(assign(t.param, ast.Call(load(_REBUILD), [ast.Constant(k), leaves,
                                                                  load(_TREES)], [])))
    ret = at(ast.Return(ast.Call(load(_OUTPUTS), [ast.Call(load(_LOCALS), [], []), load(_ARGS)],
                                 [])), last)
    inner = ast.FunctionDef(plan.name, params(plan.params), [*prologue, *tree.body, ret], [],
                            None, lineno=first, col_offset=0, end_lineno=last, end_col_offset=0)
    make = ast.FunctionDef("__xla_make", params([_OUTPUTS, _LOCALS, _REBUILD]),
                           [inner, at(ast.Return(load(plan.name)), last)], [], None,
                           lineno=first, col_offset=0, end_lineno=last, end_col_offset=0)
    code = compile(ast.Module([make], type_ignores=[]), plan.filename, "exec")
    make_code = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    # Built from its code object rather than exec'd: exec would add __builtins__ to a
    # namespace that lacks it.
    factory = types.FunctionType(make_code, globals_)
    return factory(plan._collect, builtins.locals, plan.rebuild)
