"""What a cell's function returns, and how its outputs are bound again.

A name is returned when it holds an array (traced or NumPy), a NumPy scalar, a Python bool,
int or float, or a tuple, list or dict of them. Identity follows Python: an output that is an
input object, a container of the namespace or an earlier output (or a container holding
them) is not returned twice but linked, and bound to that same object (`CellPlan.bindings`).
"""
from __future__ import annotations

import numpy as np

from ..trace.tracer import Tracer
from .values import is_chunked, is_output_value



def is_number(value) -> bool:
    """A Python number, traced or not. Its identity means nothing (an eager `b & True` may be
    the very object `b` is, where the trace makes a new value), so it is never a link: the
    eager and the traced run must return the same names."""
    if isinstance(value, Tracer):
        return value.is_python_number
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def returnable(value, seen, stack: tuple = ()) -> bool:
    """An array or number, or a tuple, list or dict of them (None inside), each part new or
    an object seen before; not a container that holds itself."""
    if stack and id(value) in seen:
        return True
    if is_output_value(value):
        return True
    if value is None:
        return bool(stack)
    if type(value) in (list, tuple, dict) and not any(value is s for s in stack):
        items = value.values() if isinstance(value, dict) else value
        return all(returnable(v, seen, stack + (value,)) for v in items)
    return False


def unreturnable_part(value, seen, steps: tuple = (), stack: tuple = ()):
    """The first part of `value` that `returnable` refuses, and its steps."""
    if type(value) in (list, tuple, dict) and not any(value is s for s in stack):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, v in items:
            if not returnable(v, seen, stack + (value,)):
                return unreturnable_part(v, seen, steps + (("item", key),), stack + (value,))
    return steps, value


def holds_arrays(value, stack: tuple = ()) -> bool:
    if isinstance(value, (Tracer, np.ndarray)) or is_chunked(value):
        return True
    if isinstance(value, (list, tuple, set, frozenset, dict)) and \
            not any(value is s for s in stack):
        items = value.values() if isinstance(value, dict) else value
        return any(holds_arrays(v, stack + (value,)) for v in items)
    return False


def template_of(value, name: str, steps: tuple, seen: dict):
    """How output `name` is made: ("new",) for a value the program returns, ("ref", link) for
    an object seen before, ("none",), or a container of templates; and what the program
    returns for it (None where a part is linked)."""
    if steps and id(value) in seen:
        return ("ref", seen[id(value)]), None
    if value is None:
        return ("none",), None
    seen[id(value)] = ("output", name, steps)
    if is_output_value(value):
        return ("new",), value
    if isinstance(value, dict):
        parts = [(k, *template_of(v, name, steps + (k,), seen)) for k, v in value.items()]
        return ("dict", tuple((k, t) for k, t, _ in parts)), {k: r for k, _, r in parts}
    parts = [template_of(v, name, steps + (i,), seen) for i, v in enumerate(value)]
    return (type(value).__name__, tuple(t for t, _ in parts)), type(value)(r for _, r in parts)


def has_refs(template) -> bool:
    if template[0] == "ref":
        return True
    if template[0] == "dict":
        return any(has_refs(t) for _, t in template[1])
    return template[0] in ("list", "tuple") and any(has_refs(t) for t in template[1])


def fill(template, returned, steps: tuple, filled: dict, resolve):
    """An output rebuilt from its template: returned parts, and linked objects."""
    kind = template[0]
    if kind == "ref":
        return resolve(template[1])
    if kind == "none":
        return None
    if kind == "new":
        value = returned
    elif kind == "dict":
        value = {k: fill(t, returned[k], steps + (k,), filled, resolve) for k, t in template[1]}
    else:
        parts = (fill(t, returned[i], steps + (i,), filled, resolve)
                 for i, t in enumerate(template[1]))
        value = list(parts) if kind == "list" else tuple(parts)
    filled[steps] = value
    return value


def link_text(link) -> str | None:
    """`name = <this>` for an output that is another object, or None."""
    if link[0] in ("input", "tree"):
        return link[1]
    if link[0] == "output":
        return link[1] + "".join(f"[{k!r}]" for k in link[2])
    return None
