"""Nested containers as leaves and a structure, as `jax.tree_util` has them.

`flatten(tree)` walks lists, tuples (named tuples too) and dicts, in order, and gives the
values inside them (the leaves) and a `treedef` that `unflatten(treedef, leaves)` rebuilds the
same shape of containers from. None is an empty container: it holds no leaf and comes back as
None. Everything else is a leaf, unless `is_leaf` says otherwise (or says so first).

A treedef is plain data, so it can be compared, hashed and printed: a pair (kind, body),
where kind is

- LEAF, and body the leaf's position (`("leaf", 0)` is a tree that is one value);
- None, and body None;
- dict, and body ((key, treedef), ...) in the dict's order (a dict subclass comes back as a
  dict);
- a list or tuple type (a named tuple's own class), and body (treedef, ...).

This module imports nothing of the package but its error base: the tracer, the runtime, the
API and the notebook cells all walk containers with it.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

from .errors import XlaExplorerError

LEAF = "leaf"


class CycleError(XlaExplorerError, ValueError):
    """A container that holds itself: it has no finite leaves. `path` is the keys from the
    root to the place where it holds itself."""

    def __init__(self, path: tuple):
        super().__init__(f"the container at {path!r} holds itself (one of the containers "
                         "it is inside)")
        self.path = path


def flatten(tree, is_leaf: Callable[[Any], bool] | None = None) -> tuple[list, tuple]:
    """The leaves of `tree`, in order, and its treedef."""
    leaves: list = []
    return leaves, _flatten(tree, leaves, is_leaf, (), ())


def _flatten(value, leaves: list, is_leaf, path: tuple, stack: tuple) -> tuple:
    if is_leaf is not None and is_leaf(value):
        leaves.append(value)
        return (LEAF, len(leaves) - 1)
    if value is None:
        return (None, None)
    if not isinstance(value, (list, tuple, dict)):
        leaves.append(value)
        return (LEAF, len(leaves) - 1)
    if any(value is s for s in stack):
        raise CycleError(path)
    stack += (value,)
    if isinstance(value, dict):
        return (dict, tuple((k, _flatten(v, leaves, is_leaf, path + (k,), stack))
                            for k, v in value.items()))
    return (type(value), tuple(_flatten(v, leaves, is_leaf, path + (i,), stack)
                               for i, v in enumerate(value)))


def leaves(tree, is_leaf: Callable[[Any], bool] | None = None) -> list:
    """The leaves of `tree`, in order."""
    return flatten(tree, is_leaf)[0]


def unflatten(treedef: tuple, leaves, build: Callable[[tuple, Any], Any] | None = None):
    """The containers `treedef` describes, holding `leaves`. With `build`, each container made
    is passed as `build(path, container)` (innermost first), and what it returns is put in
    its place: a caller's own container types, or a record of where each container is."""
    if build is not None:
        return _unflatten_built(treedef, leaves, build, ())
    # The cached call of a compiled program rebuilds its outputs with this: kept lean.
    kind, body = treedef
    if kind == LEAF:
        return leaves[body]
    if kind is tuple or kind is list:
        return kind([unflatten(t, leaves) for t in body])
    if kind is dict:
        return {k: unflatten(t, leaves) for k, t in body}
    if kind is None:
        return None
    return _make(kind, [unflatten(t, leaves) for t in body])


def _unflatten_built(treedef: tuple, leaves, build, path: tuple):
    kind, body = treedef
    if kind == LEAF:
        return leaves[body]
    if kind is None:
        return None
    if kind is dict:
        made = {k: _unflatten_built(t, leaves, build, path + (k,)) for k, t in body}
    else:
        made = _make(kind, [_unflatten_built(t, leaves, build, path + (i,))
                            for i, t in enumerate(body)])
    return build(path, made)


def _make(kind: type, items: list):
    """A list or tuple of type `kind`: a named tuple takes its fields one by one."""
    return kind(*items) if hasattr(kind, "_fields") else kind(items)


def walk(treedef: tuple) -> Iterator[tuple[tuple, tuple]]:
    """(path, treedef) for every part of the tree, containers before what they hold, in the
    order of the leaves; a path is the keys (list and tuple positions, dict keys) from the
    root."""
    return _walk(treedef, ())


def _walk(treedef: tuple, path: tuple):
    yield path, treedef
    kind, body = treedef
    if kind == LEAF or kind is None:
        return
    items = body if kind is dict else enumerate(body)
    for key, child in items:
        yield from _walk(child, path + (key,))
