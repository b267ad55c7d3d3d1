"""A notebook cell as a function the tracer can trace: what `%%xla` compiles.

`analyse(source, namespace)` reads the cell with `ast` and decides

- its inputs: every value it reads from the namespace that can change between runs, however
  it is reached: a name (`x`), or a path of attributes and constant subscripts from a name
  (`params['w']`, `lst[0]`, `cfg.scale`, `model.layers[0].w`), followed until it reaches an
  array or a number. Each becomes a parameter of the function, so a new value with the same
  shape and type re-runs the compiled program, and a new shape compiles again. A dict, list
  or tuple the cell uses whole (`len(lst)`, `for w in ws`, `ws[i]`, `params.items()`) is
  passed leaf by leaf: its arrays and numbers are parameters, and its structure (type, keys,
  length, and the strings and other constants it holds) is part of the plan's `key`, so a
  change compiles again. The cell sees a copy of such a container that refuses to be
  changed (the change would be lost).
- what is not an input: modules (`np.pi` is a constant), functions, classes and methods (called
  and traced through: what they read other than their arguments is frozen at the trace, as in
  JAX; they are part of the `key` by identity), and constants: strings, None, and tuples of
  numbers and strings (a shape), keyed by value. An arbitrary object the cell uses whole is
  refused, naming the line, as is a write into an object or container of the namespace
  (`params['w'] = v`, `cfg.scale = 5`): only names are written back.
- its outputs: the names it assigns. What comes back is decided when the function runs:
  a name is returned when it holds an array (traced or NumPy), a NumPy scalar, a Python bool,
  int or float, or a tuple, list or dict of them, and is bound when the cell ends. Names bound
  to anything else that holds no array (a string, a helper function or lambda defined in the
  cell) stay local to the cell, as if the cell were a function body; a container that holds
  arrays next to something else is refused.
- its value: a last line that is an expression is returned too (as `__xla_last`), for the
  magic to display as a plain cell would.

The function is built from the cell's own syntax tree, so its line numbers are the cell's:
the tracer records them in HLO metadata, and errors quote the line (the cell's text is
registered with `linecache` under the function's file name).

Identity follows Python. An output that is an input object (`x += 1` changed x in place,
`y = x`, `w = params['w']`, `ws2 = ws`) or another output (`z = y`), or a container holding
them (`pair = (x, x + 1)`), does not return them twice: `CellPlan.bindings` binds the name to
that same object. What the compiled program cannot keep is a view: `v = x[1:3]` comes back as
an array of its own, not a view of x.
"""
from __future__ import annotations

import ast
import builtins
import copy
import enum
import hashlib
import inspect
import linecache
import types
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import numpy as np

from ..errors import TraceError
from ..ir.shape import SUPPORTED_NAMES, is_supported_dtype
from .tracer import Tracer, located, subclass_refusal

_ARGS = "__xla_args"  # the inputs as passed, kept so outputs can be told apart from them
_OUTPUTS = "__xla_outputs"
_LOCALS = "__xla_locals"
_REBUILD = "__xla_rebuild"
_TREES = "__xla_trees"  # id of each container rebuilt from the namespace -> its path
LAST = "__xla_last"  # the value of a last line that is an expression
NO_VALUE = type("NoValue", (), {"__repr__": lambda self: "NO_VALUE"})()  # no last-line value


class CellError(TraceError):
    """A cell the explorer cannot turn into a function: a statement that only makes sense at
    module level (`import`, `global`, `del`, `return`, `yield`, `await`), or a value of the
    namespace that cannot be an input."""


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


# -- values of the namespace: what each can be to a compiled cell -------------------------------

INPUT, MODULE, STATIC, CALLABLE, TREE, OBJECT = ("input", "module", "static", "callable", "tree",
                                                 "object")
_STATIC_TYPES = (str, bytes, complex, type(None), type(Ellipsis), range, slice, np.dtype,
                 enum.Enum)


def path_text(root: str, steps) -> str:
    """A path as the cell writes it: `model.layers[0].w`."""
    return root + "".join(f".{key}" if kind == "attr" else f"[{key!r}]" for kind, key in steps)


def _step(value, step):
    kind, key = step
    return getattr(value, key) if kind == "attr" else value[key]


def _is_static(value) -> bool:
    """A constant that cannot change behind the cell's back: immutable, keyed by value."""
    if isinstance(value, _STATIC_TYPES) or (is_input_value(value)
                                            and not isinstance(value, np.ndarray)):
        return True
    if isinstance(value, (tuple, frozenset)):  # a shape, a set of names
        return all(_is_static(v) for v in value)
    return False


def _is_tree(value) -> bool:
    """A container the cell may use whole: passed leaf by leaf, its structure in the key."""
    return type(value) in (dict, list, tuple) or (isinstance(value, tuple)
                                                  and hasattr(value, "_fields"))


def kind_of(value) -> str:
    """What a value the cell reads is to the compiled program (one of the constants above)."""
    if is_input_value(value):
        return INPUT
    if isinstance(value, types.ModuleType):
        return MODULE
    if _is_static(value):
        return STATIC
    if _is_tree(value):
        return TREE
    return CALLABLE if callable(value) else OBJECT


def _descends(value, step) -> bool:
    """Whether a path goes on through `value` to find the cell's input: into containers by
    constant subscripts, into objects and classes by attributes. Arrays, numbers, constants,
    modules and functions end it (`x.T`, `np.pi`, `f.__name__` are read by the trace)."""
    kind = kind_of(value)
    if kind == TREE:
        return step[0] == "item"  # lst.append, params.items: the container is used whole
    if kind == OBJECT:
        return True
    return kind == CALLABLE and step[0] == "attr" and not inspect.isroutine(value)


def _what(value) -> str:
    """A value's type for a message: `a dict`, `an object of type Config`."""
    if type(value) in (dict, list, tuple) or isinstance(value, types.ModuleType):
        return f"a {type(value).__name__}"
    return f"an object of type {type(value).__name__}"


def _identity(value):
    """What keys a function or object by identity; a bound method is made afresh on each
    attribute read, so it is keyed by its function and its object."""
    if isinstance(value, types.MethodType):
        return ("method", id(value.__func__), id(value.__self__))
    return ("id", id(value))


def static_key(value):
    """A constant's value as a cache key: by type too (1, 1.0 and True are equal in Python but
    trace differently), floats by repr (-0.0 and nan apart)."""
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, np.generic):
        return ("np", value.dtype.str, value.tobytes())
    if isinstance(value, (tuple, frozenset)):
        keys = (static_key(v) for v in value)
        return (type(value).__qualname__, id(type(value)),
                frozenset(keys) if isinstance(value, frozenset) else tuple(keys))
    if isinstance(value, slice):
        return ("slice", static_key((value.start, value.stop, value.step)))
    return (type(value).__qualname__, value)


# -- containers of the namespace, passed leaf by leaf ----------------------------------------


@dataclass(frozen=True)
class Tree:
    """A dict, list or tuple of the namespace the cell uses whole. `spec` is its structure:
    ("leaf",) for an input (a parameter), ("const", value) for a constant, a function or a
    module, ("list", children), ("tuple", type, children), ("dict", ((key, child), ...))."""

    name: str  # the path, as the cell writes it
    param: str  # the local the rebuilt container is bound to
    spec: tuple
    first: int  # its leaves are parameters first .. first + count - 1
    count: int

    def rebuild(self, leaves, registry: dict):
        """The container as the cell sees it, from the leaves' values (Tracers while tracing);
        each container it holds is registered under its path, for identity."""
        return _rebuild(self.spec, iter(leaves), self.name, registry)


def _flatten(value, name: str, steps: tuple, leaves: list, objects: dict, keep: list,
             where: dict, stack: tuple = ()) -> tuple:
    """A container's structure (see `Tree`), collecting its inputs' steps in `leaves` and each
    container under its path in `objects`. A leaf that cannot be an input is refused."""
    text = name + path_text("", steps)
    kind = kind_of(value)
    if kind == INPUT:
        leaves.append(steps)
        return ("leaf",)
    if kind == STATIC:
        return ("const", value)
    if kind in (MODULE, CALLABLE):
        keep.append(value)
        return ("const", value)
    if kind == OBJECT or any(value is s for s in stack):
        what = "itself" if kind == TREE else _what(value)
        raise CellError(
            f"{name} is used whole, and {text} is {what}: a compiled cell takes a dict, list "
            "or tuple as its arrays, numbers and constants", op=name,
            hint=f"Read what the cell needs from {name} by constant keys and attributes "
                 f"({text}.attribute, {name}[0]), so that each is an input of its own.", **where)
    objects[text] = value
    stack += (value,)
    if isinstance(value, dict):
        for key in value:
            if not _is_static(key):
                raise CellError(f"{text} has a key of type {type(key).__name__}; a compiled "
                                "cell takes dicts keyed by strings, numbers and tuples of them",
                                op=name, hint="Use string keys.", **where)
        return ("dict", tuple((k, _flatten(v, name, steps + (("item", k),), leaves, objects,
                                           keep, where, stack)) for k, v in value.items()))
    children = tuple(_flatten(v, name, steps + (("item", i),), leaves, objects, keep, where,
                              stack) for i, v in enumerate(value))
    if isinstance(value, list):
        return ("list", children)
    keep.append(type(value))
    return ("tuple", type(value), children)


def _rebuild(spec: tuple, leaves, text: str, registry: dict, steps: tuple = ()):
    kind = spec[0]
    if kind == "leaf":
        return next(leaves)
    if kind == "const":
        return spec[1]
    here = text + path_text("", steps)
    if kind == "dict":
        out = NamespaceDict((k, _rebuild(c, leaves, text, registry, steps + (("item", k),)))
                            for k, c in spec[1])
    else:
        items = [_rebuild(c, leaves, text, registry, steps + (("item", i),))
                 for i, c in enumerate(spec[-1])]
        if kind == "list":
            out = NamespaceList(items)
        else:
            out = spec[1](items) if spec[1] is tuple else spec[1](*items)
    if isinstance(out, (NamespaceList, NamespaceDict)):
        out.xla_path = here
    registry[id(out)] = here
    return out


def spec_key(spec: tuple, keep: list):
    """A container's structure as a cache key: its leaves by position, its constants by
    value, its functions and types by identity."""
    kind = spec[0]
    if kind == "leaf":
        return "leaf"
    if kind == "const":
        value = spec[1]
        if _is_static(value):
            return ("const", static_key(value))
        keep.append(value)
        return ("const", _identity(value))
    if kind == "dict":
        return ("dict", tuple((static_key(k), spec_key(c, keep)) for k, c in spec[1]))
    children = tuple(spec_key(c, keep) for c in spec[-1])
    return ("list", children) if kind == "list" else ("tuple", id(spec[1]), children)


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


# -- the plan ------------------------------------------------------------------------------------


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
    them come back is decided by their values, see the module docstring); `updated` the inputs
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
                value = _step(value, step)
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
                out[name] = _fill(link[1], result[name], (), filled,
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
            if id(value) in seen and not _is_number(value):
                links[name] = seen[id(value)]
            elif not _returnable(value, seen):
                self._not_returned(name, value, seen)
            else:
                template, result[name] = _template(value, name, (), seen)
                if _has_refs(template):
                    links[name] = ("parts", template)
        self.links = links
        return result

    def _not_returned(self, name: str, value, seen) -> None:
        """A value the compiled program cannot return: local to the cell when it holds no
        array (a string, a function), refused when it does (it would be dropped)."""
        if not _holds_arrays(value):
            if name == LAST and value is not None:
                self.last_value = value  # shown from an eager run: the trace's may be a Tracer
            return
        what = "the last line's value" if name == LAST else name
        steps, part = _unreturnable_part(value, seen)
        where = f"{what}{path_text('', steps)}"
        raise CellError(
            f"{where} is a {type(part).__name__}, and {what} holds arrays: a compiled cell "
            "returns arrays and numbers, and tuples, lists and dicts of them", op=what,
            source_file=self.filename, source_line=self.lines.get(name),
            hint="Keep arrays and numbers in it (tuple(...), list(...) and dict(...) convert "
                 "other containers), or assign the parts you need to names.")


# -- what comes back ------------------------------------------------------------------------------


def _is_number(value) -> bool:
    """A Python number, traced or not. Its identity means nothing (an eager `b & True` may be
    the very object `b` is, where the trace makes a new value), so it is never a link: the
    eager and the traced run must return the same names."""
    if isinstance(value, Tracer):
        return value.is_python_number
    return isinstance(value, (bool, int, float)) and not isinstance(value, np.generic)


def _returnable(value, seen, stack: tuple = ()) -> bool:
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
        return all(_returnable(v, seen, stack + (value,)) for v in items)
    return False


def _unreturnable_part(value, seen, steps: tuple = (), stack: tuple = ()):
    """The first part of `value` that `_returnable` refuses, and its steps."""
    if type(value) in (list, tuple, dict) and not any(value is s for s in stack):
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, v in items:
            if not _returnable(v, seen, stack + (value,)):
                return _unreturnable_part(v, seen, steps + (("item", key),), stack + (value,))
    return steps, value


def _holds_arrays(value, stack: tuple = ()) -> bool:
    if isinstance(value, (Tracer, np.ndarray)):
        return True
    if isinstance(value, (list, tuple, set, frozenset, dict)) and \
            not any(value is s for s in stack):
        items = value.values() if isinstance(value, dict) else value
        return any(_holds_arrays(v, stack + (value,)) for v in items)
    return False


def _template(value, name: str, steps: tuple, seen: dict):
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
        parts = [(k, *_template(v, name, steps + (k,), seen)) for k, v in value.items()]
        return ("dict", tuple((k, t) for k, t, _ in parts)), {k: r for k, _, r in parts}
    parts = [_template(v, name, steps + (i,), seen) for i, v in enumerate(value)]
    return (type(value).__name__, tuple(t for t, _ in parts)), type(value)(r for _, r in parts)


def _has_refs(template) -> bool:
    if template[0] == "ref":
        return True
    if template[0] == "dict":
        return any(_has_refs(t) for _, t in template[1])
    return template[0] in ("list", "tuple") and any(_has_refs(t) for t in template[1])


def _fill(template, returned, steps: tuple, filled: dict, resolve):
    """An output rebuilt from its template: returned parts, and linked objects."""
    kind = template[0]
    if kind == "ref":
        return resolve(template[1])
    if kind == "none":
        return None
    if kind == "new":
        value = returned
    elif kind == "dict":
        value = {k: _fill(t, returned[k], steps + (k,), filled, resolve) for k, t in template[1]}
    else:
        parts = (_fill(t, returned[i], steps + (i,), filled, resolve)
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


# -- analysis -------------------------------------------------------------------------------------


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
    scan = _Scan(filename)
    for stmt in tree.body:
        scan.visit(stmt)
    found = _Inputs(namespace, filename, _identifiers(tree))
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
    _Rewrite(found.rewrites).visit(tree)
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


class _Inputs:
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

    def resolve(self, uses: list[_Use]) -> None:
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

    def _follow(self, use: _Use) -> tuple[int, Any, CellError | None]:
        """How far the path goes into the namespace (see `_descends`), what it reaches, and
        the error of a step that failed."""
        value = self.namespace[use.root]
        for k, step in enumerate(use.steps):
            if not _descends(value, step):
                return k, value, None
            try:
                value = _step(value, step)
            except Exception as e:
                text = path_text(use.root, use.steps[:k + 1])
                error = CellError(f"reading {text} raised {type(e).__name__}: {e}", op=text,
                                  source_file=self.filename, source_line=use.line,
                                  hint="A cell's inputs are read from the namespace before "
                                       f"it runs; define {text} first.")
                error.__cause__ = e
                return k, value, error
        return len(use.steps), value, None

    def _check(self, use: _Use, k: int, value) -> None:
        """Refuse what cannot be an input, and writes into the namespace's objects."""
        where = dict(source_file=self.filename, source_line=use.line)
        text = path_text(use.root, use.steps[:k])
        kind = kind_of(value)
        whole = k == len(use.steps)
        if whole and use.steps and use.aug and not isinstance(value, np.ndarray):
            parent = path_text(use.root, use.steps[:-1])
            raise CellError(f"the cell assigns to {text}, which changes {parent}, "
                            f"{_what(self._at(use, k - 1))} of the namespace; only names are "
                            "written back", op=text,
                            hint=_WRITE_HINT.format(text=text), **where)
        if whole and use.into and kind not in (INPUT, STATIC):
            raise CellError(f"the cell assigns to {use.into}, which changes {text}, "
                            f"{_what(value)} of the namespace; only names are written back",
                            op=use.into,
                            hint=_WRITE_HINT.format(text=use.into), **where)
        if kind == OBJECT:
            raise CellError(
                f"{text} is {_what(value)}, used whole: a compiled cell takes "
                "arrays, numbers, constants, functions, and dicts, lists and tuples of them",
                op=text, hint=f"Read the arrays and numbers the cell needs from {text} by "
                              f"attribute ({text}.name), so that each is an input.", **where)

    def _at(self, use: _Use, k: int):
        value = self.namespace[use.root]
        for step in use.steps[:k]:
            value = _step(value, step)
        return value

    def _rewrite(self, use: _Use, k: int, name: str) -> None:
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

    def _input(self, path: tuple, value, use: _Use) -> str:
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
        if isinstance(value, (np.ndarray, np.generic)) and not is_supported_dtype(value.dtype):
            raise CellError(f"{name} has dtype {value.dtype}, a type the explorer does not "
                            "support", op=name, source_file=self.filename, source_line=line,
                            hint=f"Supported are {SUPPORTED_NAMES}; "
                                 f"convert it first: {name} = {name}.astype(np.float64).")
        self.names.append(name)
        self.params.append(param)
        self.paths.append(path)
        self.values.append(value)

    def _tree(self, path: tuple, value, use: _Use) -> str:
        """A container used whole: its leaves become parameters, its structure the key."""
        if path in self._by_path:
            return self._by_path[path]
        root, steps = path
        name = path_text(root, steps)
        leaves: list = []
        spec = _flatten(value, name, (), leaves, self.objects, self.keep,
                        dict(source_file=self.filename, source_line=use.line))
        local = root if not steps else self._fresh(root, steps)
        self._by_path[path] = local
        for leaf in leaves:
            leaf_value = value
            for step in leaf:
                leaf_value = _step(leaf_value, step)
            self._add(name + path_text("", leaf), self._fresh(local, leaf), (root, steps + leaf),
                      leaf_value, use.line)
        self.trees.append(Tree(name, local, spec, len(self.names) - len(leaves), len(leaves)))
        self.key.append(("tree", name, spec_key(spec, self.keep)))
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
            self.key.append(("ref", path_text(root, steps), _identity(value)))


_WRITE_HINT = ("Assign a name in the cell instead (names the cell assigns are written back), "
               "and store it in an ordinary cell: {text} = name.")


class _Rewrite(ast.NodeTransformer):
    """Replaces each path that reaches an input by the parameter that holds it."""

    def __init__(self, names: dict[int, str]):
        self.names = names

    def visit(self, node):
        name = self.names.get(id(node))
        if name is not None:
            return ast.copy_location(ast.Name(name, node.ctx), node)
        return super().visit(node)


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


@dataclass(eq=False)
class _Use:
    """One read of the namespace: a name, or a path of attributes and constant subscripts
    from it. `nodes[i]` is the node the path reaches after i steps (`nodes[0]` the name)."""

    root: str
    steps: tuple
    nodes: list
    line: int
    into: str | None = None  # the target of an assignment into what it reaches: x[...] = v
    aug: bool = False  # it is the target of an augmented assignment: params['w'] += g


_NO_KEY = object()


def _constant_key(node: ast.expr):
    """The key of a subscript the analysis can follow: a constant, -constant, or a tuple."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
            and isinstance(node.operand, ast.Constant) \
            and isinstance(node.operand.value, (int, float)):
        return -node.operand.value
    if isinstance(node, ast.Tuple):
        keys = tuple(_constant_key(e) for e in node.elts)
        return _NO_KEY if any(k is _NO_KEY for k in keys) else keys
    return _NO_KEY


def _chain(node: ast.expr):
    """(root Name, steps, nodes) when `node` is a name followed by attributes and constant
    subscripts (`model.layers[0].w`), else None."""
    nodes, steps = [], []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        key = ("attr", node.attr) if isinstance(node, ast.Attribute) else \
            ("item", _constant_key(node.slice))
        if key[1] is _NO_KEY:
            return None
        nodes.append(node)
        steps.append(key)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    nodes.append(node)
    return node, tuple(reversed(steps)), list(reversed(nodes))


class _Scan(ast.NodeVisitor):
    """Walks the cell's statements in the order Python evaluates them, recording the reads of
    the namespace (names and paths from them, before the name is assigned), the names
    assigned, and the names updated in place. Flow-insensitive: a statement that comes later in
    the text counts as later."""

    def __init__(self, filename: str):
        self.filename = filename
        self.uses: list[_Use] = []  # in the order of evaluation
        self.assigned: dict[str, int] = {}
        self.updated: dict[str, int] = {}  # name or path -> first line
        self.scopes: list[_Scope] = []  # the nested scopes the walk is inside, innermost last

    # -- bookkeeping ----------------------------------------------------------------------

    def from_namespace(self, name: str) -> bool:
        return name not in self.assigned and not any(name in s.names for s in self.scopes)

    def load(self, node: ast.expr) -> _Use | None:
        """Visit an expression that is read; the use it is, if it reads the namespace by a
        name or a constant path from one."""
        chain = _chain(node)
        if chain is not None:
            root, steps, nodes = chain
            if not self.from_namespace(root.id):
                return None
            use = _Use(root.id, steps, nodes, node.lineno)
            self.uses.append(use)
            return use
        if isinstance(node, (ast.Attribute, ast.Subscript)):
            self.load(node.value)
            if isinstance(node, ast.Subscript):
                self.visit(node.slice)
        else:
            self.visit(node)
        return None

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
            self.load(node)
        else:
            self.store(node.id, node)

    def visit_Attribute(self, node) -> None:
        if isinstance(node.ctx, ast.Load):
            self.load(node)
        else:
            self.generic_visit(node)

    visit_Subscript = visit_Attribute

    def _target(self, target: ast.expr, *, in_place: bool = False, walrus: bool = False):
        """An assignment target: names bind; `x[...] = v` reads x and writes into it, and so
        does `x += v` when x is an array (NumPy's in-place add)."""
        if isinstance(target, ast.Name):
            if in_place:
                if self.from_namespace(target.id):
                    self.uses.append(_Use(target.id, (), [target], target.lineno, aug=True))
                if not self.scopes:
                    self.updated.setdefault(target.id, target.lineno)
            self.store(target.id, target, walrus=walrus)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for t in target.elts:
                self._target(t, in_place=in_place)
        elif isinstance(target, ast.Starred):
            self._target(target.value, in_place=in_place)
        else:
            self._target_into(target, in_place)

    def _target_into(self, target, in_place: bool) -> None:
        """A Subscript or Attribute target: the object is read, and written into; for
        `params['w'] += g` the whole path is read too (and, if an array, updated in place)."""
        chain = _chain(target)
        if in_place and chain is not None and self.from_namespace(chain[0].id):
            root, steps, nodes = chain
            use = _Use(root.id, steps, nodes, target.lineno, aug=True)
            self.uses.append(use)
        else:
            use = self.load(target.value)
            if isinstance(target, ast.Subscript):
                self.visit(target.slice)
            if use is not None:
                use.into = ast.unparse(target)
        root = target
        while isinstance(root, (ast.Subscript, ast.Attribute)):
            root = root.value
        if isinstance(root, ast.Name) and not self.scopes:
            self.updated.setdefault(root.id, target.lineno)
            if use is not None and use.steps:
                self.updated.setdefault(path_text(use.root, use.steps), target.lineno)

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
        self.load(node.generators[0].iter)  # the first iterable is evaluated outside
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
