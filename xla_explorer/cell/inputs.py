"""Which reads of the namespace are a cell's inputs.

Each read (a name, or a path of attributes and constant subscripts from it) is followed into
the namespace until it reaches an array or a number (an input: a parameter of the function),
a container the cell uses whole (its leaves parameters), or a constant, module or function
(part of the plan's key). What cannot be an input, and writes into the namespace's objects,
are refused naming the line.
"""
from __future__ import annotations

import ast
from typing import Any, Mapping

import numpy as np

from ..ir.shape import SUPPORTED_NAMES, is_supported_dtype
from ..trace.arguments import subclass_refusal
from .containers import Tree, flatten_used_whole, structure_key
from .scan import Use
from .values import (INPUT, OBJECT, STATIC, TREE, CellError, describe, descends, identity,
                     is_chunked, kind_of, path_text, static_key, take)


class Inputs:
    """What each read of the namespace is, in the order the cell reads them: an input (a
    parameter), a container used whole (its leaves parameters), or a constant."""

    def __init__(self, namespace: Mapping, filename: str, taken: set[str]):
        self.namespace = namespace
        self.filename = filename
        self.taken = set(taken)
        self.names: list[str] = []  # per parameter: the path as the cell writes it
        self.params: list[str] = []
        self.paths: list[tuple] = []
        self.values: list = []
        self.trees: list[Tree] = []
        self.objects: dict = {}
        self.key: list = []
        self.keep: list = []
        self.globals_read: list[str] = []
        self.rewrites: dict[int, str] = {}  # id(node) -> the name it becomes
        self._by_path: dict[tuple, str] = {}  # (root, steps) -> parameter or tree local
        self._seen_constants: set[tuple] = set()

    def resolve(self, uses: list[Use]) -> None:
        followed = []
        for use in uses:
            if use.root in self.namespace:
                k, value, error = self._follow(use)
                if error is None:
                    self._check(use, k, value)
                followed.append((use, k, value, error))
        # A container used whole takes in every path through it: `ws[0] += 1; s = sum(ws)`
        # must see one array, not two parameters.
        wholes = {(u.root, u.steps[:k]): v for u, k, v, e in followed
                  if e is None and kind_of(v) == TREE}
        wholes = {p: v for p, v in wholes.items()
                  if not any(q != p and q[0] == p[0] and p[1][:len(q[1])] == q[1]
                             for q in wholes)}
        for use, k, value, error in followed:
            whole = next((p for p in wholes if p[0] == use.root
                          and use.steps[:len(p[1])] == p[1]), None)
            if whole is not None:  # read by the trace (`if 'b' in d: d['b']` reads no key)
                self._rewrite(use, len(whole[1]), self._tree(whole, wholes[whole], use))
            elif error is not None:
                raise error
            elif kind_of(value) == INPUT:
                self._rewrite(use, k, self._input((use.root, use.steps[:k]), value, use))
            else:
                self._constant((use.root, use.steps[:k]), value)

    def _follow(self, use: Use) -> tuple[int, Any, CellError | None]:
        """How far the path goes into the namespace (see `descends`), what it reaches, and
        the error of a step that failed."""
        value = self.namespace[use.root]
        for k, step in enumerate(use.steps):
            if not descends(value, step):
                return k, value, None
            try:
                value = take(value, step)
            except Exception as e:
                text = path_text(use.root, use.steps[:k + 1])
                error = CellError(f"reading {text} raised {type(e).__name__}: {e}", op=text,
                                  source_file=self.filename, source_line=use.line,
                                  hint="A cell's inputs are read from the namespace before "
                                       f"it runs; define {text} first.")
                error.__cause__ = e
                return k, value, error
        return len(use.steps), value, None

    def _check(self, use: Use, k: int, value) -> None:
        """Refuse what cannot be an input, and writes into the namespace's objects."""
        where = dict(source_file=self.filename, source_line=use.line)
        text = path_text(use.root, use.steps[:k])
        kind = kind_of(value)
        whole = k == len(use.steps)
        if whole and use.steps and use.aug and not isinstance(value, np.ndarray):
            parent = path_text(use.root, use.steps[:-1])
            raise CellError(f"the cell assigns to {text}, which changes {parent}, "
                            f"{describe(self._at(use, k - 1))} of the namespace; only names are "
                            "written back", op=text,
                            hint=_WRITE_HINT.format(text=text), **where)
        if whole and use.into and kind not in (INPUT, STATIC):
            raise CellError(f"the cell assigns to {use.into}, which changes {text}, "
                            f"{describe(value)} of the namespace; only names are written back",
                            op=use.into,
                            hint=_WRITE_HINT.format(text=use.into), **where)
        if kind == OBJECT:
            raise CellError(
                f"{text} is {describe(value)}, used whole: a compiled cell takes "
                "arrays, numbers, constants, functions, and dicts, lists and tuples of them",
                op=text, hint=f"Read the arrays and numbers the cell needs from {text} by "
                              f"attribute ({text}.name), so that each is an input.", **where)

    def _at(self, use: Use, k: int):
        value = self.namespace[use.root]
        for step in use.steps[:k]:
            value = take(value, step)
        return value

    def _rewrite(self, use: Use, k: int, name: str) -> None:
        if name != use.root or k:
            self.rewrites[id(use.nodes[k])] = name

    def _fresh(self, root: str, steps) -> str:
        """A parameter name from a path: params['w'] -> params_w."""
        text = "_".join([root] + [str(key) for _, key in steps])
        name = "".join(c if c.isalnum() or c == "_" else "_" for c in text)
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def _input(self, path: tuple, value, use: Use) -> str:
        if path not in self._by_path:
            root, steps = path
            self._by_path[path] = param = root if not steps else self._fresh(root, steps)
            self._add(path_text(root, steps), param, path, value, use.line)
        return self._by_path[path]

    def _add(self, name: str, param: str, path: tuple, value, line: int) -> None:
        # Refused here rather than by the trace, which would name the parameter, not the path.
        refusal = subclass_refusal(value, name)
        if refusal is not None:
            raise CellError(f"{name} {refusal[0]}", op=name, source_file=self.filename, source_line=line,
                            hint=f"Convert it first: {name} = {refusal[1]}.")
        if (isinstance(value, (np.ndarray, np.generic)) or is_chunked(value)) and \
                not is_supported_dtype(np.dtype(value.dtype)):
            raise CellError(f"{name} has dtype {value.dtype}, a type the explorer does not "
                            "support", op=name, source_file=self.filename, source_line=line,
                            hint=f"Supported are {SUPPORTED_NAMES}; "
                                 f"convert it first: {name} = {name}.astype(np.float64).")
        self.names.append(name)
        self.params.append(param)
        self.paths.append(path)
        self.values.append(value)

    def _tree(self, path: tuple, value, use: Use) -> str:
        """A container used whole: its leaves become parameters, its structure the key."""
        if path in self._by_path:
            return self._by_path[path]
        root, steps = path
        name = path_text(root, steps)
        treedef, leaves, constants, objects = flatten_used_whole(
            value, name, dict(source_file=self.filename, source_line=use.line))
        self.objects.update(objects)
        local = root if not steps else self._fresh(root, steps)
        self._by_path[path] = local
        for leaf in leaves:
            leaf_value = value
            for step in leaf:
                leaf_value = take(leaf_value, step)
            self._add(name + path_text("", leaf), self._fresh(local, leaf), (root, steps + leaf),
                      leaf_value, use.line)
        self.trees.append(Tree(name, local, treedef, constants, len(self.names) - len(leaves),
                               len(leaves)))
        self.key.append(("tree", name, structure_key(treedef, constants, self.keep)))
        return local

    def _constant(self, path: tuple, value) -> None:
        """A module, function or constant: read by the trace, part of the key."""
        root, steps = path
        if path in self._seen_constants:
            return
        self._seen_constants.add(path)
        if not steps:
            self.globals_read.append(root)
        if kind_of(value) == STATIC:
            self.key.append(("const", path_text(root, steps), static_key(value)))
        else:
            self.keep.append(value)
            self.key.append(("ref", path_text(root, steps), identity(value)))


_WRITE_HINT = ("Assign a name in the cell instead (names the cell assigns are written back), "
               "and store it in an ordinary cell: {text} = name.")


class Rewrite(ast.NodeTransformer):
    """Replaces each path that reaches an input by the parameter that holds it."""

    def __init__(self, names: dict[int, str]):
        self.names = names

    def visit(self, node):
        name = self.names.get(id(node))
        if name is not None:
            return ast.copy_location(ast.Name(name, node.ctx), node)
        return super().visit(node)
