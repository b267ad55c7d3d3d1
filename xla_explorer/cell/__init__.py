"""A notebook cell as a function the tracer can trace, and its run: what `%%xla` does.

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

The modules, in the order a cell meets them: `values` (what a value of the namespace can be
to a compiled cell), `scan` (the reads, assignments and in-place updates in the syntax tree),
`inputs` (which reads are inputs), `containers` (containers used whole), `outputs` (what
comes back, and how it is bound again), `plan` (`analyse` and the function it builds),
`cache` (the session's compiled cells) and `run` (one run of a cell, checked against NumPy,
written back only when everything succeeded). The magic only parses flags and displays.
"""
from .cache import CachedCell, CellCache
from .plan import CellPlan, analyse, cell_names
from .run import CellRun, run_cell
from .values import LAST, NO_VALUE, CellError, CellSyntaxError

__all__ = ["CachedCell", "CellCache", "CellError", "CellPlan", "CellRun", "CellSyntaxError",
           "LAST", "NO_VALUE", "analyse", "cell_names", "run_cell"]
