"""Containers of the namespace that a cell uses whole (`len(ws)`, `for w in ws`, `params.items()`).

Such a dict, list or tuple is passed leaf by leaf (`xla_explorer.tree`): its arrays and numbers
are parameters, and its structure (type, keys, length, and the strings, functions and other
constants it holds) is part of the plan's key, so a change compiles again. The cell sees a
copy that refuses to be changed (NamespaceList, NamespaceDict): the change would be lost, as
only names are written back.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass

from .. import tree
from ..trace.context import located
from .values import (INPUT, OBJECT, TREE, CellError, describe, identity,
                     is_static, kind_of, path_text, static_key)


@dataclass(frozen=True)
class Tree:
    """A dict, list or tuple of the namespace the cell uses whole: its structure (a treedef,
    see `xla_explorer.tree`) and, by leaf position, the constants among its leaves; the other
    leaves are parameters."""

    name: str  # the path, as the cell writes it
    param: str  # the local the rebuilt container is bound to
    treedef: tuple
    constants: tuple  # ((leaf position, value), ...)
    first: int  # its parameters are first .. first + count - 1
    count: int

    def rebuild(self, leaves, registry: dict):
        """The container as the cell sees it, from the parameters' values (Tracers while
        tracing); each container it holds is registered under its path, for identity."""
        constants = dict(self.constants)
        given = iter(leaves)
        values = [constants[i] if i in constants else next(given)
                  for i in range(len(constants) + self.count)]

        def build(path, container):
            here = self.name + path_text("", _item_steps(path))
            if type(container) in (list, dict):
                container = (NamespaceList if type(container) is list else NamespaceDict)(
                    container)
                container.xla_path = here
            registry[id(container)] = here
            return container

        return tree.unflatten(self.treedef, values, build)


def _item_steps(path: tuple) -> tuple:
    return tuple(("item", key) for key in path)


def flatten_used_whole(value, name: str, where: dict):
    """A container used whole, taken apart: its treedef, the steps from it to each input
    leaf, its constants by leaf position, and each container it holds by path text. A leaf
    that cannot be an input or a constant, a key that is not a constant, or a container that
    holds itself is refused."""
    try:
        leaves, treedef = tree.flatten(value, is_leaf=lambda v: kind_of(v) != TREE)
    except tree.CycleError as cycle:
        raise _used_whole_error(name, name + path_text("", _item_steps(cycle.path)), "itself",
                                where) from None
    inputs, constants, objects = [], [], {}
    for path, part in tree.walk(treedef):
        steps = _item_steps(path)
        text = name + path_text("", steps)
        if part[0] == tree.LEAF:
            leaf = leaves[part[1]]
            kind = kind_of(leaf)
            if kind == OBJECT:
                raise _used_whole_error(name, text, describe(leaf), where)
            if kind == INPUT:
                inputs.append(steps)
            else:
                constants.append((part[1], leaf))
            continue
        container = value
        for key in path:
            container = container[key]
        objects[text] = container
        if part[0] is dict:
            for key, _ in part[1]:
                if not is_static(key):
                    raise CellError(f"{text} has a key of type {type(key).__name__}; a "
                                    "compiled cell takes dicts keyed by strings, numbers and "
                                    "tuples of them", op=name, hint="Use string keys.",
                                    **where)
    return treedef, inputs, tuple(constants), objects


def _used_whole_error(name: str, text: str, what: str, where: dict) -> CellError:
    return CellError(
        f"{name} is used whole, and {text} is {what}: a compiled cell takes a dict, list or "
        "tuple as its arrays, numbers and constants", op=name,
        hint=f"Read what the cell needs from {name} by constant keys and attributes "
             f"({text}.attribute, {name}[0]), so that each is an input of its own.", **where)


def structure_key(treedef: tuple, constants: tuple, keep: list):
    """A container's structure as a cache key: its parameters by position, its constants by
    value, its functions, modules and types by identity (what they are is kept in `keep`,
    so that no id is reused while the key stands)."""
    by_leaf = dict(constants)

    def key(part):
        kind, body = part
        if kind == tree.LEAF:
            if body not in by_leaf:
                return tree.LEAF
            value = by_leaf[body]
            if is_static(value):
                return ("const", static_key(value))
            keep.append(value)
            return ("const", identity(value))
        if kind is dict:
            return (dict, tuple((static_key(k), key(c)) for k, c in body))
        return (kind, tuple(key(c) for c in body))

    return key(treedef)



def _refuse_change(container, how: str):
    what = type(container).__mro__[1].__name__
    raise located(CellError,
                  f"the cell changes {container.xla_path} (a {what} of the namespace) with "
                  f"{how}; the compiled cell takes the {what}'s contents as inputs and writes "
                  "back only names, so the change would be lost",
                  f"{container.xla_path}{how if how.startswith('.') else ''}",
                  f"Build a new {what} in the cell and assign it to a name (new = "
                  f"{'dict(' if what == 'dict' else 'list('}{container.xla_path}) ...): names "
                  "the cell assigns are written back.")


class NamespaceList(list):
    """A list of the namespace as a cell sees it: read freely; a change is refused (it would
    change this copy only). Storing the object already there is no change (`ws[0] += 1`
    updates the array in place and stores it back)."""

    xla_path = "the list"

    def __setitem__(self, index, value):
        if not (isinstance(index, int) and -len(self) <= index < len(self)
                and self[index] is value):
            _refuse_change(self, "item assignment")

    def __copy__(self):
        return list(self)

    def __deepcopy__(self, memo):
        return copy.deepcopy(list(self), memo)


class NamespaceDict(dict):
    """A dict of the namespace as a cell sees it; see NamespaceList."""

    xla_path = "the dict"

    def __setitem__(self, key, value):
        if not (key in self and self[key] is value):
            _refuse_change(self, "item assignment")

    def __copy__(self):
        return dict(self)

    def __deepcopy__(self, memo):
        return copy.deepcopy(dict(self), memo)


_OPERATORS = {"__delitem__": "del", "__iadd__": "+=", "__imul__": "*=", "__ior__": "|="}


def _refusing(name: str):
    def method(self, *args, **kwargs):
        _refuse_change(self, _OPERATORS.get(name, f".{name}()"))
    method.__name__ = name
    return method


for _name in ("__delitem__", "__iadd__", "__imul__", "append", "extend", "insert", "pop",
              "remove", "clear", "sort", "reverse"):
    setattr(NamespaceList, _name, _refusing(_name))
for _name in ("__delitem__", "__ior__", "pop", "popitem", "clear", "update", "setdefault"):
    setattr(NamespaceDict, _name, _refusing(_name))
