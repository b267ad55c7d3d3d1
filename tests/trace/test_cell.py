"""analyse(): a cell's inputs, outputs and the function that runs it, without IPython."""
import copy
import linecache
import types

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.trace.cell import CellError, CellSyntaxError, analyse, cell_names
from xla_explorer.trace.tracer import trace


def helper(v):
    return v * 2


@pytest.fixture
def ns(rng):
    return {"np": np, "helper": helper, "x": rng.standard_normal(8).astype(np.float32),
            "w": rng.standard_normal(8), "s": 2.5, "n": 3, "flag": True, "k": np.float32(1.5),
            "sizes": [1, 2], "label": "a", "mod": types}


def numpy_run(source: str, namespace: dict) -> dict:
    """The cell as plain Python and NumPy, on copies: the reference."""
    local = {k: copy.deepcopy(v) for k, v in namespace.items() if k not in ("np", "mod")}
    exec(source, {"np": np, "mod": types}, local)
    return local


def test_inputs_are_the_arrays_and_numbers_read_before_assignment(ns):
    plan = analyse("y = helper(x) * s + n\nt = y.sum() * k * flag\nz = w[: len(sizes)]\n", ns)
    assert plan.inputs == ("x", "s", "n", "k", "flag", "w")
    assert set(plan.globals_read) == {"helper", "np", "sizes"} - {"np"}
    assert plan.outputs == ("y", "t", "z")
    assert plan.updated == {}


def test_a_name_assigned_before_it_is_read_is_not_an_input(ns):
    ns["t"] = np.zeros(3)
    plan = analyse("t = x * 2\ny = t + 1\n", ns)
    assert plan.inputs == ("x",)
    plan = analyse("y = t + 1\nt = x * 2\n", ns)  # read first: the namespace's t
    assert plan.inputs == ("t", "x")
    assert plan.outputs == ("y", "t")


def test_in_place_updates_read_the_array_and_are_outputs(ns):
    plan = analyse("x += 1\n", ns)
    assert plan.inputs == ("x",) and plan.outputs == ("x",) and plan.updated == {"x": 1}
    plan = analyse("y = 1\nx[2:4] = 0\n", ns)
    assert plan.inputs == ("x",) and plan.outputs == ("y",) and plan.updated == {"x": 2}
    plan = analyse("w[x > 0] += 1\n", ns)
    assert plan.inputs == ("w", "x") and plan.updated == {"w": 1}
    # A number is immutable: `s += 1` rebinds s, as in Python.
    plan = analyse("s += 1\nk *= 2\n", ns)
    assert plan.inputs == ("s", "k") and plan.outputs == ("s", "k") and plan.updated == {}


def test_every_kind_of_binding_is_an_output(ns):
    source = "\n".join([
        "a, (b, *c) = x[0], x[1:4]",
        "for i in range(2):",
        "    d = x[i]",
        "with np.errstate(all='ignore') as e:",
        "    f = x / 0",
        "if (g := x.sum()) > 0:",
        "    pass",
        "h: float = 2.0",
        "def square(v):",
        "    q = v * v",
        "    return q",
        "m = [r * 2 for r in range(3)]",
        "o = [p for p in range(3) if (last := p)]",
        "try:",
        "    u = 1",
        "except ValueError as err:",
        "    pass",
        "class Box:",
        "    inside = 1",
    ])
    plan = analyse(source, ns)
    assert plan.outputs == ("a", "b", "c", "i", "d", "e", "f", "g", "h", "square", "m", "last",
                            "o", "u", "Box")
    assert plan.inputs == ("x",)  # not q, v, r, p (their own scopes) nor err


def test_nested_scopes_read_the_cells_inputs(ns):
    plan = analyse("f = lambda v: v * w\ny = [x[i] * s for i in range(2)]\n"
                   "def g(a, b=n):\n    return a + k\nz = f(x) + g(x)\n", ns)
    assert plan.inputs == ("w", "x", "s", "n", "k")
    assert plan.outputs == ("f", "y", "g", "z")


def test_the_function_returns_arrays_and_numbers_and_leaves_the_rest(ns):
    source = ("y = x * s\nparts = [y, y]\nname = 'cell'\nz = y\nv = x\n"
              "if s < 0:\n    never = 1\nc = 3\n")
    plan = analyse(source, ns)
    assert plan.function.__name__ == plan.name and plan.name.startswith("cell_")
    args = plan.arguments(ns)
    assert args[0] is ns["x"]
    out = plan.function(*copy.deepcopy(args))
    assert list(out) == ["y", "c"]  # parts, name: not arrays; z is y; v is x; never unbound
    assert plan.links == {"z": ("output", "y"), "v": ("input", "x")}
    want = numpy_run(source, ns)
    np.testing.assert_array_equal(out["y"], want["y"])
    assert out["c"] == want["c"] == 3
    bound = plan.bindings(out, args)
    assert bound["z"] is bound["y"] and bound["v"] is args[0]
    assert "parts" not in bound and "never" not in bound


def test_the_function_never_writes_the_namespace(ns):
    before = dict(ns)
    plan = analyse("y = x + 1\nx += 2\nfor j in range(2):\n    t = j\n", ns)
    plan.function(*copy.deepcopy(plan.arguments(ns)))
    assert ns.keys() == before.keys()  # not even __builtins__
    assert all(ns[k] is before[k] for k in ns)


def test_a_read_only_mapping_works(ns):
    plan = analyse("y = np.tanh(x)\n", types.MappingProxyType(ns))
    out = plan.function(*plan.arguments(ns))
    np.testing.assert_array_equal(out["y"], np.tanh(ns["x"]))


def test_names_are_stable_and_identify_the_cell(ns):
    a, b = analyse("y = x * 2\n", ns), analyse("y = x * 2\n", ns)
    assert a.name == b.name and a.filename == b.filename
    assert (a.name, a.filename) == cell_names("y = x * 2\n")
    assert analyse("y = x * 3\n", ns).name != a.name
    assert analyse("y = x * 2\n", ns, first_line=2).name != a.name


def test_traced_lines_are_the_cells_lines(ns):
    source = "a = x * 2\n\nb = np.sum(a)\n"
    for first in (1, 2):
        plan = analyse(source, ns, first_line=first)
        module = trace(plan.function, plan.arguments(ns)).module
        lines = {i.opcode: i.metadata.source_line for i in module.entry.instructions
                 if i.metadata.source_file == plan.filename}
        assert lines["multiply"] == first and lines["reduce"] == first + 2
        assert linecache.getline(plan.filename, first + 2).strip() == "b = np.sum(a)"
        assert plan.line(first + 2) == "b = np.sum(a)"


def test_an_error_in_the_cell_names_the_cells_line(ns):
    plan = analyse("a = x * 2\nb = np.unique(a)\n", ns, first_line=2)
    with pytest.raises(xe.CompileError) as info:
        xe.jit(plan.function).explore(*plan.arguments(ns))
    e = info.value
    assert e.source_file == plan.filename and e.source_line == 3 and "unique" in e.op
    assert "b = np.unique(a)" in str(e)


def test_the_compiled_cell_matches_numpy(ns):
    source = "y = np.tanh(x) * s + w[:8].astype(np.float32)\nx += k\nm = y.max()\n"
    plan = analyse(source, ns)
    args = copy.deepcopy(plan.arguments(ns))
    got = xe.explore(plan.function, *args, backend="cpu").run(*args)
    want = numpy_run(source, ns)
    np.testing.assert_allclose(got["y"], want["y"], rtol=2e-5)
    assert type(got["m"]) is type(want["m"]) and np.isclose(got["m"], want["m"], rtol=2e-5)
    np.testing.assert_allclose(args[plan.inputs.index("x")], want["x"], rtol=2e-5)


@pytest.mark.parametrize("source, what, line", [
    ("y = x\nimport math\n", "import", 2),
    ("from math import pi\n", "import", 1),
    ("y = x\n\ndel y\n", "del", 3),
    ("global y\ny = x\n", "global", 1),
    ("def f():\n    global y\n    y = 1\n", "global", 2),
    ("y = x\nreturn y\n", "return", 2),
    ("y = x\nyield y\n", "yield", 2),
    ("y = (yield from x)\n", "yield from", 1),
    ("y = await x\n", "await", 1),
    ("nonlocal y\n", "nonlocal", 1),
])
def test_module_level_statements_are_refused_naming_the_line(ns, source, what, line):
    with pytest.raises(CellError) as info:
        analyse(source, ns, first_line=2)
    e = info.value
    assert e.op == what and e.source_line == line + 1
    assert f"`{what}`" in e.message and e.hint
    assert isinstance(e, xe.TraceError)


def test_what_is_legal_inside_a_nested_function_is_accepted(ns):
    plan = analyse("def f(v):\n    t = v * 2\n    del t\n    return v\n"
                   "g = (lambda: (yield 1))\ny = f(x)\n", ns)
    assert plan.outputs == ("f", "g", "y")


def test_a_syntax_error_names_the_cell_line(ns):
    with pytest.raises(CellSyntaxError) as info:
        analyse("y = x\nz = = 2\n", ns, first_line=2)
    assert info.value.source_line == 3 and isinstance(info.value.__cause__, SyntaxError)
