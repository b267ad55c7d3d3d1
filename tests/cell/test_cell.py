"""analyse(): a cell's inputs, outputs and the function that runs it, without IPython."""
import copy
import linecache
import types

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.cell import LAST, CellError, CellSyntaxError, analyse, cell_names
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
    # sizes is used whole: its numbers are inputs, its length part of the key.
    assert plan.inputs == ("x", "s", "n", "k", "flag", "w", "sizes[0]", "sizes[1]")
    assert plan.globals_read == ("helper",)
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
    # name: not an array; parts: a list of y (not returned twice); z is y; v is x; never unbound
    assert list(out) == ["y", "parts", "c"] and out["parts"] == [None, None]
    assert plan.links["z"] == ("output", "y", ()) and plan.links["v"] == ("input", "x")
    want = numpy_run(source, ns)
    np.testing.assert_array_equal(out["y"], want["y"])
    assert out["c"] == want["c"] == 3
    bound = plan.bindings(out, args)
    assert bound["z"] is bound["y"] and bound["v"] is args[0]
    assert type(bound["parts"]) is list and all(p is bound["y"] for p in bound["parts"])
    assert "name" not in bound and "never" not in bound


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


# -- values reached through containers and attributes ------------------------------------------


class Layer:
    def __init__(self, w):
        self.w = w

    @property
    def doubled(self):  # evaluated when the cell is analysed, as Python evaluates it
        return self.w * 2


@pytest.fixture
def deep(rng):
    """A namespace whose arrays and numbers sit in dicts, lists and objects."""
    cfg = types.SimpleNamespace(scale=2.0, act="relu", n=3)
    model = types.SimpleNamespace(layers=[Layer(rng.standard_normal(8)),
                                          Layer(rng.standard_normal(8))])
    return {"np": np, "helper": helper, "x": rng.standard_normal(8),
            "params": {"w": rng.standard_normal(8), "b": rng.standard_normal(8), "name": "lin"},
            "lst": [2, 5], "ws": [rng.standard_normal(8), rng.standard_normal(8)],
            "cfg": cfg, "model": model, "shape": (2, 4),
            "codes": {"c": np.zeros(3, np.complex64)}}


def deep_run(source: str, namespace: dict) -> dict:
    """The cell as plain Python on a deep copy of the namespace."""
    scope = copy.deepcopy({k: v for k, v in namespace.items() if k != "np"})
    exec(source, {"np": np, **scope}, scope)
    return scope


PATHS = ("y = x * params['w'] + lst[0] * cfg.scale\n"
         "z = y - model.layers[1].w + model.layers[0].doubled\n")


def test_paths_to_arrays_and_numbers_are_inputs_and_read_afresh(deep):
    plan = analyse(PATHS, deep)
    assert plan.inputs == ("x", "params['w']", "lst[0]", "cfg.scale", "model.layers[1].w",
                           "model.layers[0].doubled")
    assert plan.params == ("x", "params_w", "lst_0", "cfg_scale", "model_layers_1_w",
                           "model_layers_0_doubled")
    args = plan.arguments(deep)
    assert args[1] is deep["params"]["w"] and args[4] is deep["model"].layers[1].w
    fn = xe.jit(plan.function, backend="interpreter")
    np.testing.assert_allclose(fn(*args)["z"], deep_run(PATHS, deep)["z"])
    # Changed in the containers and objects, the values reach the same compiled program.
    deep["params"]["w"][:] = -1
    deep["lst"][0] = 1000
    deep["cfg"].scale = 5.0
    deep["model"].layers[1].w = deep["model"].layers[1].w + 3
    again = analyse(PATHS, deep)
    assert again.inputs == plan.inputs and again.key == plan.key
    np.testing.assert_allclose(fn(*again.arguments(deep))["z"], deep_run(PATHS, deep)["z"])
    assert fn.cache_info().hits == 1 and fn.cache_info().misses == 1


def test_a_container_used_whole_is_passed_leaf_by_leaf(deep):
    source = "y = x * 0\nfor w in ws:\n    y = y + w\nn = len(ws)\nq = params['b'] * n\n"
    plan = analyse(source, deep)
    assert plan.inputs == ("x", "ws[0]", "ws[1]", "params['b']")  # params only by constant key
    assert [t.name for t in plan.trees] == ["ws"]
    out = xe.jit(plan.function, backend="interpreter")(*plan.arguments(deep))
    want = deep_run(source, deep)
    np.testing.assert_allclose(out["y"], want["y"])
    np.testing.assert_allclose(out["q"], want["q"])
    assert out["n"] == want["n"] == 2
    # The container's length is in the key: another length compiles again.
    deep["ws"].append(deep["x"])
    assert analyse(source, deep).key != plan.key
    # Used whole, params' keys and its string are in the key too, by value.
    whole = analyse("n = len(params)\ny = params['b'] * n\n", deep)
    assert whole.inputs == ("params['w']", "params['b']")
    deep["params"]["name"] = "other"
    assert analyse("n = len(params)\ny = params['b'] * n\n", deep).key != whole.key


def test_a_path_under_a_container_used_whole_is_the_same_array(deep):
    # Python changes ws[0] in place and sum(ws) sees it: one parameter, not two.
    source = "ws[0] += 1\ns = sum(ws)\n"
    plan = analyse(source, deep)
    assert plan.inputs == ("ws[0]", "ws[1]")
    args = copy.deepcopy(plan.arguments(deep))
    out = xe.explore(plan.function, *args).run(*args)
    want = deep_run(source, deep)
    np.testing.assert_allclose(out["s"], want["s"])
    np.testing.assert_allclose(args[0], want["ws"][0])


def test_constants_modules_and_functions_are_keyed_not_inputs(deep):
    import math

    deep["math"] = math
    source = "y = helper(x).reshape(shape) * np.pi * math.e\nif cfg.act == 'relu':\n    y = y * 2\n"
    plan = analyse(source, deep)
    assert plan.inputs == ("x",)
    assert set(plan.globals_read) == {"helper", "shape", "np", "math"}
    key = dict(((kind, name), k) for kind, name, k in plan.key)
    assert key["const", "cfg.act"] == ("str", "relu") and ("const", "shape") in key
    deep["cfg"].act = "tanh"
    assert analyse(source, deep).key != plan.key
    deep["cfg"].act = "relu"
    assert analyse(source, deep).key == plan.key


@pytest.mark.parametrize("source, line, what", [
    ("y = x\nparams['w'] = x * 2\n", 2, "params['w'], which changes params, a dict"),
    ("cfg.scale = 5\n", 1, "cfg.scale, which changes cfg, an object of type SimpleNamespace"),
    ("y = x\nlst[0] += 1\n", 2, "lst[0], which changes lst, a list"),
    ("cfg.n += 1\n", 1, "cfg.n, which changes cfg"),
    ("model.layers[0].w = x\n", 1, "model.layers[0].w, which changes model.layers[0], an "
                                   "object of type Layer"),
    ("y = helper(x)\nz = helper(cfg)\n", 2, "cfg is an object of type SimpleNamespace, used whole"),
    ("for layer in model.layers:\n    y = layer.w\n", 1,
     "model.layers is used whole, and model.layers[0] is an object of type Layer"),
    ("y = x + params['missing']\n", 1, "reading params['missing'] raised KeyError"),
    ("i = 1\nws[i] = x\n", 2, "ws[i], which changes ws, a list"),
    ("k = 'b'\nparams[k] = x\n", 2, "params[k], which changes params, a dict"),
    ("y = x\nz = codes['c'] * 2\n", 2, "codes['c'] has dtype complex64"),
])
def test_what_cannot_be_an_input_is_refused_naming_the_line(deep, source, line, what):
    before = copy.deepcopy(deep["params"]), deep["cfg"].scale
    with pytest.raises(CellError) as info:
        analyse(source, deep, first_line=2)
    e = info.value
    assert what in e.message and e.source_line == line + 1 and e.hint
    assert e.op in e.message
    np.testing.assert_array_equal(deep["params"]["w"], before[0]["w"])
    assert deep["cfg"].scale == before[1]


@pytest.mark.parametrize("source, how", [
    ("ws.append(x)\n", "ws (a list of the namespace) with .append()"),
    ("params.update(w=x)\n", "params (a dict of the namespace) with .update()"),
    ("ws += [x]\n", "ws (a list of the namespace) with +="),
    ("i = 0\nnest[i][0] = x\n", "nest[0] (a list of the namespace) with item assignment"),
])
def test_a_change_to_a_container_used_whole_is_refused_when_it_runs(deep, source, how):
    deep["nest"] = [[deep["x"] + 1]]
    plan = analyse(source, deep, first_line=2)
    before = {k: copy.copy(deep[k]) for k in ("ws", "params", "nest")}
    with pytest.raises(CellError) as info:
        trace(plan.function, plan.arguments(deep))
    e = info.value
    assert how in e.message and e.hint
    assert e.source_file == plan.filename and e.source_line == source.count("\n") + 1
    for k, v in before.items():  # the same objects, unchanged
        assert len(deep[k]) == len(v) and all(a is b for a, b in zip(deep[k], v))


def test_in_place_updates_through_paths_reach_the_callers_arrays(deep):
    source = "params['w'] += 1\nparams['b'][:2] = 0\nmodel.layers[0].w *= x\n"
    plan = analyse(source, deep)
    assert plan.inputs == ("params['w']", "params['b']", "x", "model.layers[0].w")
    assert plan.updated == {"params['w']": 1, "params['b']": 2, "model.layers[0].w": 3}
    args = plan.arguments(deep)
    want = deep_run(source, deep)
    xe.explore(plan.function, *args).run(*args)
    np.testing.assert_allclose(deep["params"]["w"], want["params"]["w"])
    np.testing.assert_allclose(deep["params"]["b"], want["params"]["b"])
    np.testing.assert_allclose(deep["model"].layers[0].w, want["model"].layers[0].w)


def test_containers_of_arrays_come_back_as_numpy_gives_them(deep):
    source = ("pair = (x + 1, x - 1)\nd = {'a': x * 2, 'b': [x, None]}\nsame = [pair[0], ws]\n"
              "names = ['a', 'b']\n")
    plan = analyse(source, deep)
    args = plan.arguments(deep)
    out = xe.explore(plan.function, *args).run(*args)
    bound = plan.bindings(out, args)
    want = deep_run(source, deep)
    assert type(bound["pair"]) is tuple and len(bound["pair"]) == 2
    for got, ref in zip(bound["pair"], want["pair"]):
        np.testing.assert_allclose(got, ref)
    np.testing.assert_allclose(bound["d"]["a"], want["d"]["a"])
    assert bound["d"]["b"][0] is deep["x"] and bound["d"]["b"][1] is None  # x is x, as in NumPy
    assert bound["same"][0] is bound["pair"][0] and bound["same"][1] is deep["ws"]
    assert "names" not in bound  # holds no array: local to the cell, as a string is


def test_a_container_holding_arrays_and_something_else_is_refused(deep):
    plan = analyse("y = x + 1\nbad = (y, 'label')\n", deep, first_line=2)
    with pytest.raises(CellError) as info:
        trace(plan.function, plan.arguments(deep))
    assert "bad[1] is a str" in info.value.message and info.value.source_line == 3


def test_the_last_lines_value_is_returned(deep):
    plan = analyse("y = x * 2\ny.sum()\n", deep)
    assert plan.shows_value and plan.outputs == ("y",)
    args = plan.arguments(deep)
    out = xe.explore(plan.function, *args).run(*args)
    assert np.isclose(out[LAST], (deep["x"] * 2).sum())
    assert not analyse("y = x * 2\n", deep).shows_value
    plan = analyse("x.dtype\n", deep)  # not an array: the value an eager run gives
    plan.function(*plan.arguments(deep))
    assert plan.last_value == deep["x"].dtype
