"""The scan of a cell's syntax tree: what it reads from the namespace, what it assigns, and
what it updates in place.

Names and paths of attributes and constant subscripts from a name (`params['w']`,
`model.layers[0].w`) are reads of the namespace until the cell assigns the name; nested
functions, lambdas, classes and comprehensions bind their own names. Statements that only make
sense at module level (`import`, `global`, `del`, `return`, `yield`, `await`) are refused.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass

from .values import CellError, path_text


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
class Use:
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


class Scan(ast.NodeVisitor):
    """Walks the cell's statements in the order Python evaluates them, recording the reads of
    the namespace (names and paths from them, before the name is assigned), the names
    assigned, and the names updated in place. Flow-insensitive: a statement that comes later in
    the text counts as later."""

    def __init__(self, filename: str):
        self.filename = filename
        self.uses: list[Use] = []  # in the order of evaluation
        self.assigned: dict[str, int] = {}
        self.updated: dict[str, int] = {}  # name or path -> first line
        self.scopes: list[_Scope] = []  # the nested scopes the walk is inside, innermost last

    # -- bookkeeping ----------------------------------------------------------------------

    def from_namespace(self, name: str) -> bool:
        return name not in self.assigned and not any(name in s.names for s in self.scopes)

    def load(self, node: ast.expr) -> Use | None:
        """Visit an expression that is read; the use it is, if it reads the namespace by a
        name or a constant path from one."""
        chain = _chain(node)
        if chain is not None:
            root, steps, nodes = chain
            if not self.from_namespace(root.id):
                return None
            use = Use(root.id, steps, nodes, node.lineno)
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
                    self.uses.append(Use(target.id, (), [target], target.lineno, aug=True))
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
            use = Use(root.id, steps, nodes, target.lineno, aug=True)
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
