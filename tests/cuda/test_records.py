"""Every op record on backend="cuda" against NumPy, under the simulator where there is no GPU.

One case per record: in `make test` on one of the record's element types, taken in turn from
record to record (the simulator runs a kernel as one Python thread per CUDA thread); every other
type in `make test-deep`, and element-wise records there too (one loop kernel shape, whose
scalar code is the op table's, as the cpu's is; the other groups are the kernel shapes that
differ). A record whose program the cuda backend cannot lay out yet must be
refused with a CompileError naming the op, never answered wrongly.
"""
from __future__ import annotations

import numpy as np
import pytest

import xla_explorer as xe
from tests import sweeps

from ..trace.op_records import RECORDS
from ..trace.test_numpy_ops import (_args_factory, _bind, _id, assert_matches_numpy,
                                    numpy_verdict)

# A sweep of hundreds of compiled programs: `make test`, not `make test-fast`.
pytestmark = [pytest.mark.filterwarnings("ignore::RuntimeWarning"), pytest.mark.slow]


def _params():
    turn = 0
    for r in RECORDS:
        if r.group == "not-compilable":
            continue
        dtypes = [np.dtype(d) for d in r.dtypes]
        chosen = dtypes[turn % len(dtypes)]
        turn += 1
        cases = list(r.all_cases())
        shapes, variant = next(((sh, v) for sh, v in cases
                                if all(0 not in np.shape(np.empty(s)) if isinstance(s, tuple)
                                       else True for s in sh)), cases[0])
        for dtype in dtypes:
            deep = (dtype != chosen or r.meta.get("compiled_deep", False)
                    or r.group == "elementwise")
            if not sweeps.keep(deep):
                continue
            yield pytest.param(r, dtype, shapes, variant,
                               marks=[pytest.mark.deep] if deep else [],
                               id=f"{r.name}|{dtype.name}|{_id(shapes)}|{_id(variant)}")


REFUSED: list[str] = []


@pytest.mark.parametrize("record,dtype,shapes,variant", list(_params()))
def test_record_on_cuda(record, dtype, shapes, variant):
    f = _bind(record, variant, dtype)
    make = _args_factory(record, shapes, dtype)
    assert numpy_verdict(f, make) is None
    try:
        assert_matches_numpy(f, make, tol=record.tol, values=record.values, backend="cuda")
    except xe.CompileError as e:
        # refused, by name: an op the backend lists as not compiled yet, or the code
        # generator's own sentence naming the op it cannot compile
        assert e.op and e.op in str(e), str(e)
        REFUSED.append(f"{record.name}: {str(e).splitlines()[0]}")
