"""What the sort and scan lowerings refuse: each error names the NumPy function and
the user's line, and says what to do."""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe

X = np.arange(12.0).reshape(3, 4)


def line_of(f, text: str) -> int:
    import inspect
    lines, start = inspect.getsourcelines(f)
    return start + next(k for k, line in enumerate(lines) if text in line)


def weighted(x):
    return np.quantile(x, 0.5, method="inverted_cdf", weights=np.ones_like(x))


def traced_q(x, q):
    return np.quantile(x, q)


def with_sorter(x):
    return np.searchsorted(x[0], 3.0, sorter=np.arange(4))


@pytest.mark.parametrize("f,args,name,detail,call", [
    (weighted, (X,), "np.quantile", "weights=", "np.quantile("),
    (traced_q, (X, 0.5), "np.quantile", "q must be known", "np.quantile("),
    (with_sorter, (X,), "np.searchsorted", "sorter=", "np.searchsorted("),
])
def test_refusals_name_the_function_the_form_and_the_line(f, args, name, detail, call):
    with pytest.raises(xe.UnsupportedOpError) as info:
        xe.jit(f)(*args)
    message = str(info.value)
    assert f"{name} is not supported" in message and detail in message, message
    assert info.value.source_line == line_of(f, call)
    assert "autocluster" in message  # what to do: run it eagerly between clusters


def test_a_refused_form_runs_eagerly_under_autocluster():
    got = xe.jit(weighted, autocluster=True)(X)
    assert got == weighted(X)
