"""The public API as DESIGN.md names it: explore, stages, hlo, run, check, parse_hlo, errors."""
import numpy as np
import pytest

import xla_explorer as xe


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


@pytest.fixture
def xyz(rng):
    return [rng.standard_normal(1000).astype(np.float32) for _ in range(3)]


def test_sum_xyz_prints_as_hlo_with_recorded_stages(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    text = ex.hlo()
    lines = text.splitlines()
    assert lines[0].startswith("HloModule sum_xyz")
    for opcode in ("parameter(0)", "multiply(", "add(", "constant(0)", "reduce("):
        assert any(opcode in line for line in lines), opcode
    reduce_line = next(line for line in lines if " reduce(" in line)
    assert "dimensions={0}" in reduce_line and "to_apply=add_f32" in reduce_line
    assert "add_f32 {" in text  # the reducer computation is printed before the entry
    assert [s.name for s in ex.stages] == ["trace", "algsimp", "cse", "dce", "fusion",
                                           "multi-output-fusion", "schedule", "buffer-assignment"]
    for s in ex.stages:
        assert s.seconds >= 0 and isinstance(s.changed, bool)
    # Metadata points at the user's line.
    line = sum_xyz.__code__.co_firstlineno + 1
    assert f'source_line={line}' in reduce_line and 'op_name="sum_xyz/sum"' in reduce_line


def test_run_and_check_against_numpy(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    got = ex.run(*xyz)
    want = sum_xyz(*xyz)
    assert type(got) is type(want)  # a NumPy scalar, as NumPy returns
    np.testing.assert_allclose(got, want, rtol=1e-6)
    result = ex.check(*xyz)
    assert result.ok and len(result.outputs) == 1
    assert result.outputs[0].max_abs_error <= 1e-3


def test_check_reports_a_mismatch(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    ex.function = lambda x, y, z: np.sum(x + y * z) + np.float32(1)  # a different "NumPy"
    result = ex.check(*xyz)
    assert not result.ok and "MISMATCH" in str(result)


def test_hlo_by_stage_name_and_index(xyz):
    ex = xe.explore(lambda x, y, z: x * 1 + y * z, *xyz)
    assert " multiply(x." in ex.hlo("trace") and " multiply(x." not in ex.hlo("algsimp")
    assert ex.hlo("dce") != ex.hlo("fusion")  # one kernel now
    assert ex.hlo("buffer-assignment") == ex.hlo(-1) == ex.hlo("schedule")  # an analysis
    assert ex.stage("algsimp").changed
    assert any("x * 1 -> x" in str(n) for n in ex.stage("algsimp").notes)
    with pytest.raises(KeyError, match="no stage named"):
        ex.hlo("fusion-of-everything")


def test_every_stage_round_trips_through_the_parser(xyz):
    ex = xe.explore(lambda x, y, z: (np.tanh(x) * 2.0 + 0, np.max(y - z)), *xyz)
    for s in ex.stages:
        text = s.module.to_text()
        assert xe.parse_hlo(text).to_text() == text
        xe.verify(xe.parse_hlo(text))


def test_run_rejects_wrong_arguments(xyz):
    ex = xe.explore(sum_xyz, *xyz)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        ex.run(xyz[0])
    with pytest.raises(TypeError, match="shape"):
        ex.run(xyz[0][:10], xyz[1], xyz[2])


def test_unknown_backend_is_refused(xyz):
    with pytest.raises(ValueError, match="interpreter"):
        xe.explore(sum_xyz, *xyz, backend="tpu")


def test_errors_are_compile_errors():
    assert issubclass(xe.UnsupportedOpError, xe.CompileError)
    e = xe.CompileError("np.foo is not supported", op="np.foo", source_file=__file__, source_line=1)
    assert e.op == "np.foo" and e.source_line == 1 and __file__ in str(e)


def test_check_asks_float64_when_compiled_and_numpy_disagree(monkeypatch):
    # float32 (x + 1e8) - 1e8 keeps x only to a multiple of 8. A compiled result nearer the
    # float64 answer than NumPy's is right; one farther away stays a mismatch.
    def f(x):
        return (x + np.float32(1e8)) - np.float32(1e8)

    x = np.linspace(-50, 50, 101, dtype=np.float32)
    ex = xe.explore(f, x)
    monkeypatch.setattr(ex, "run", lambda *a: x.copy())
    (better,) = ex.check(x).outputs
    assert better.ok and "float64" in better.note, str(better)
    monkeypatch.setattr(ex, "run", lambda *a: f(x) + np.float32(8))
    (worse,) = ex.check(x).outputs
    assert not worse.ok and not worse.note
