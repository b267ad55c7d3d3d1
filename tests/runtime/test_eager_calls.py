"""Eager ops name what they run in the HLO text: a module traced under auto-clustering runs,
from its text alone, in a process that never traced it."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.runtime.reference import run_module
from xla_explorer.trace.numpy.eager_calls import Operand, config_of, decode, encode
from xla_explorer.trace.tracer import trace

F32 = np.float32
ROOT = Path(__file__).resolve().parents[2]


def eager_between(x):
    y = np.tanh(x) * 2 + 1
    u, c = np.unique(np.round(y), return_counts=True)  # value-dependent, with a keyword
    m = np.linalg.cond(np.outer(y, y) + np.eye(y.size))  # a function the op table lacks
    r = np.add.reduceat(y, [0, 5])                      # a ufunc's method
    w = np.polyfit(y, y * 4, deg=np.int64(1))           # a NumPy scalar keyword
    return (u * c).sum() + m + w.sum() + r.sum(), u


# Parses the text and runs it with the interpreter and the clustered CPU runner; traces
# nothing, so every eager op must be found from the text.
RUN_ELSEWHERE = """
import json, sys
import numpy as np
from xla_explorer import compiler
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.runtime.reference import run_module

module = parse_hlo(open(sys.argv[1]).read())
x = np.array(json.loads(sys.argv[2]), dtype=np.float32)
interpreted = run_module(module, [x])
clustered = compiler.compile(module, "cpu", autocluster=True).executable(x)
print(json.dumps([[np.asarray(v).tolist() for v in out] for out in (interpreted, clustered)]))
"""


def test_a_traced_module_runs_in_a_process_that_never_traced_it(tmp_path):
    x = np.linspace(-2, 2, 16, dtype=F32)
    text = trace(eager_between, (x,), autocluster=True).module.to_text()
    assert 'custom_call_target="numpy.polyfit"' in text and '"deg":' in text
    assert parse_hlo(text).to_text() == text
    path = tmp_path / "eager.hlo"
    path.write_text(text)
    done = subprocess.run([sys.executable, "-c", RUN_ELSEWHERE, str(path), json.dumps(x.tolist())],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert done.returncode == 0, done.stderr
    want = eager_between(x)
    for outputs in json.loads(done.stdout):
        for got, w in zip(outputs, want):
            np.testing.assert_allclose(np.asarray(got, dtype=F32), w, rtol=2e-6, atol=1e-5)


def test_a_config_with_awkward_strings_reads_back_from_the_text():
    kwargs = {"s": 'a}", /* b\n\u00e9', "t": ("x, y", None)}
    config = config_of((Operand(0), [1.5, -0.0]), kwargs)
    text = f"""HloModule m
ENTRY e {{
  a = f32[4] parameter(0)
  ROOT u = f32[4] custom-call(a), custom_call_target="numpy.copy", backend_config={config}
}}"""
    module = parse_hlo(text)
    assert module.to_text() == parse_hlo(module.to_text()).to_text()
    data = json.loads(module.entry.root.attr("backend_config"))
    x = np.ones(4, F32)
    assert decode(data["kwargs"]["s"], [x]) == kwargs["s"]
    assert decode(data["kwargs"]["t"], [x]) == kwargs["t"]
    assert decode(data["args"], [x])[0] is x


@pytest.mark.parametrize("target, config, why", [
    ("numpy.no_such_function", "", "names no public NumPy function"),
    ("numpy.load", "", "names no public NumPy function"),  # nothing that touches files
    ("numpy.cumsum", '{"process_local":"cumsum/0123456789ab"}',
     "runs only in the process that traced it"),
    ("numpy.cumsum", '"numpy.cumsum/0123456789ab"', "is not a JSON object"),  # older text
])
def test_an_eager_op_that_cannot_be_found_names_its_target_and_line(target, config, why):
    config = f", backend_config={config}" if config else ""
    module = parse_hlo(f"""HloModule m
ENTRY e {{
  a = f32[4] parameter(0)
  ROOT u = f32[4] custom-call(a), custom_call_target="{target}"{config}, metadata={{source_line=7}}
}}""")
    with pytest.raises(xe.CompileError) as err:
        run_module(module, [np.ones(4, F32)])
    assert f'custom_call_target="{target}"' in str(err.value) and "line 7" in str(err.value)
    assert why in str(err.value)


def test_a_call_json_cannot_hold_still_runs_in_the_process_that_traced_it():
    def f(x):
        return np.apply_along_axis(lambda r: r[::-1] * 2, 1, x * 3) + 1

    x = np.arange(6, dtype=F32).reshape(2, 3)
    module = trace(f, (x,), autocluster=True).module
    assert '"process_local":' in module.to_text()
    np.testing.assert_array_equal(run_module(module, [x])[0], f(x))


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, float("inf"), "wrap", [1, (2, 3)], {"k": [None]},
    np.float32(np.nan), np.int16(-7), np.dtype("float16"), np.int64, float,
    np.array([[1.5, np.nan], [-np.inf, 0.0]], dtype=F32), np.zeros((0, 3), dtype=np.bool_),
])
def test_arguments_read_back_as_written(value):
    back = decode(json.loads(json.dumps(encode(value), allow_nan=False)), [])
    if isinstance(value, np.ndarray):
        np.testing.assert_array_equal(back, value)
        assert back.dtype == value.dtype and back.shape == value.shape
    elif isinstance(value, np.generic):
        assert type(back) is type(value)
        np.testing.assert_array_equal(back, value)
    elif isinstance(value, type) and issubclass(value, np.generic):
        assert back == np.dtype(value)
    else:
        assert back == value and type(back) is type(value)
