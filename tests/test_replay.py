"""Snapshots in dumps and `replay`: a dump carries its module, arguments and results; replayed,
its outputs are NumPy's; a module edited to be wrong, or a pass planted to be wrong, is found;
a dump that is malformed is an error naming the file, and nothing in it runs but registered
NumPy functions. Outputs are compared with the functions run by NumPy, never with an earlier
replay."""
from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.api.hlo_input import inputs_from_seed
from xla_explorer.errors import DumpError
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.passes.base import Pass, PassResult
from xla_explorer.replay import pipeline_passes, replay
from xla_explorer.snapshot import SnapshotTooLarge

F32 = np.float32


def f(x, y, n):
    return (x * y).sum() + n, np.exp(x) * 2


def g(a):
    u = np.unique(a)  # an eager op between compiled clusters
    return u * 2 + 1


@pytest.fixture
def args(rng):
    return [rng.standard_normal((3, 5)).astype(F32), rng.standard_normal(5).astype(F32), 4]


@pytest.fixture
def dump(tmp_path, args):
    """A snapshot dump of f, compiled for the interpreter (nothing to compile: quick)."""
    xe.explore(f, *args).dump(tmp_path, snapshots=True)
    return tmp_path


def files(directory, suffix):
    found = sorted(directory.glob("*" + suffix))
    assert len(found) == 1, found
    return found[0]


def assert_numpys(values, function, args):
    for got, want in zip(values, function(*args)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-5)


def test_a_snapshot_holds_the_unoptimised_module_its_signature_arguments_and_results(dump,
                                                                                    args):
    manifest = json.loads(files(dump, ".manifest.json").read_text())
    module_text = (dump / manifest["module_file"]).read_text()
    assert manifest["module_file"].endswith(".f.before_optimizations.txt")
    assert "fusion(" not in module_text and "multiply(" in module_text  # stage 0
    assert manifest["backend"] == "interpreter" and manifest["options"] == {"autocluster": False}
    assert manifest["passes"][:3] == ["algsimp", "cse", "dce"] and "fusion" in manifest["passes"]
    assert manifest["arguments"] == [
        {"name": "x", "shape": [3, 5], "dtype": "float32"},
        {"name": "y", "shape": [5], "dtype": "float32"},
        {"name": "n", "shape": [], "dtype": "int64", "python": "int"}]
    assert manifest["numpy_version"] == np.__version__ and manifest["xla_explorer_version"]
    with np.load(dump / manifest["arguments_file"], allow_pickle=False) as z:
        for i, a in enumerate(args):
            np.testing.assert_array_equal(z[f"arg{i}"], a)
    with np.load(dump / manifest["results_file"], allow_pickle=False) as z:
        assert_numpys([z["result0"], z["result1"]], f, args)


def test_a_replayed_dump_gives_numpys_outputs_and_says_they_agree(dump, args):
    result = replay(dump, backend="interpreter")
    assert result.ok and len(result.outputs) == 2 and len(result.saved) == 2
    assert_numpys(result.values, f, args)
    assert result.seed is None and "arguments.npz" in result.inputs
    text = str(result)
    assert "max abs error" in text and "all outputs agree" in text


def test_a_module_edited_by_hand_to_be_wrong_differs(dump, args):
    path = files(dump, ".before_optimizations.txt")
    text = path.read_text()
    assert text.count(" multiply(x.1") == 1
    path.write_text(text.replace(" multiply(x.1", " add(x.1"))  # x * y -> x + y
    result = replay(dump, backend="interpreter")
    assert not result.ok
    assert all(o.ok for o in result.outputs)  # the backend runs the edited module faithfully
    assert not result.saved[0].ok and result.saved[1].ok  # only the sum used the product
    x, y, _ = args
    edited_by = abs(float((x + y).sum()) - float((x * y).sum()))
    assert result.saved[0].max_abs_error == pytest.approx(edited_by, rel=1e-4)
    assert "DIFFERS" in str(result) and "changed since the dump" in str(result)


class SwapMultiplyForAdd(Pass):
    """A planted bug: the first multiply computes an add."""

    name = "swap-multiply"

    def run(self, module):
        text = module.to_text()
        if " multiply(" not in text:
            return PassResult(module, False)
        return PassResult(parse_hlo(text.replace(" multiply(", " add(", 1)), True)


def test_bisection_names_the_pass_planted_to_be_wrong(dump):
    passes = pipeline_passes("interpreter")
    passes.insert([p.name for p in passes].index("dce") + 1, SwapMultiplyForAdd())
    result = replay(dump, backend="interpreter", passes=passes, bisect=True)
    assert not result.ok and not result.outputs[0].ok
    bisection = result.bisection
    assert bisection.first_bad == "swap-multiply"
    names = [s.name for s in bisection.steps]
    assert names[:4] == ["algsimp", "cse", "dce", "swap-multiply"]
    assert all(s.ok for s in bisection.steps[:3])
    assert "first pass after which the result differs: swap-multiply" in str(result)
    # Without the planted pass, every step agrees.
    clean = replay(dump, backend="interpreter", bisect=True)
    assert clean.ok and clean.bisection.first_bad is None


def test_an_hlo_file_replays_on_generated_inputs_with_its_seed(dump, args):
    path = files(dump, ".before_optimizations.txt")
    result = replay(path, backend="interpreter", seed=7)
    assert result.ok and result.seed == 7 and "seed 7" in result.inputs and not result.saved
    inputs = inputs_from_seed(parse_hlo(path.read_text()), seed=7)
    assert [a.shape for a in inputs] == [(3, 5), (5,), ()]
    assert not np.array_equal(inputs[0], args[0])  # generated, not the saved ones
    assert_numpys(result.values, f, inputs)


def test_arguments_over_the_cap_are_left_out_with_a_note_and_a_warning(tmp_path, args):
    ex = xe.explore(f, *args)
    with pytest.warns(SnapshotTooLarge, match="over the cap of 64"):
        ex.dump(tmp_path, snapshots=True, max_snapshot_bytes=64)
    manifest = json.loads(files(tmp_path, ".manifest.json").read_text())
    assert manifest["arguments_file"] is None and manifest["results_file"] is None
    assert "max_snapshot_bytes" in manifest["note"] and not list(tmp_path.glob("*.npz"))
    result = replay(tmp_path, backend="interpreter")
    assert result.ok and result.seed == 0 and any("over the cap" in n for n in result.notes)


def test_an_autoclustered_dump_replays_its_eager_op_on_cpu_and_the_interpreter(tmp_path):
    a = np.array([5, 1, 3, 5, 1, 9, 3])
    xe.explore(g, a, backend="cpu", autocluster=True).dump(tmp_path, snapshots=True)
    assert 'custom_call_target="numpy.unique"' in \
        files(tmp_path, ".before_optimizations.txt").read_text()
    for backend in ("cpu", "interpreter"):
        result = replay(tmp_path, backend=backend)
        assert result.ok, str(result)
        np.testing.assert_array_equal(result.values[0], g(a))


def test_a_dump_of_several_modules_replays_the_last_or_the_one_named(tmp_path, args):
    xe.explore(f, *args).dump(tmp_path, snapshots=True)
    xe.explore(lambda x: np.tanh(x), args[0]).dump(tmp_path, snapshots=True)
    assert replay(tmp_path, "interpreter").module != "f"
    assert replay(tmp_path, "interpreter", module="f").module == "f"
    with pytest.raises(DumpError, match="holds no module 'nope'"):
        replay(tmp_path, "interpreter", module="nope")


# -- malformed dumps: an error naming the file ------------------------------------------------


def test_a_truncated_arguments_file_is_an_error_naming_it(dump):
    npz = files(dump, ".arguments.npz")
    npz.write_bytes(npz.read_bytes()[: npz.stat().st_size // 2])
    with pytest.raises(DumpError, match="cannot be read as .npz") as err:
        replay(dump, "interpreter")
    assert str(npz) in str(err.value)


def test_a_manifest_that_is_not_json_is_an_error_naming_it(dump):
    manifest = files(dump, ".manifest.json")
    manifest.write_text(manifest.read_text()[:40])
    with pytest.raises(DumpError, match="is not valid JSON") as err:
        replay(dump, "interpreter")
    assert str(manifest) in str(err.value)


def test_a_missing_module_file_is_an_error_naming_it(dump):
    module = files(dump, ".before_optimizations.txt")
    module.unlink()
    with pytest.raises(DumpError, match="missing") as err:
        replay(dump, "interpreter")
    assert str(module) in str(err.value)


def rewrite_manifest(directory, **changes):
    path = files(directory, ".manifest.json")
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))
    return path, data


def test_arrays_that_do_not_match_the_signature_are_an_error_naming_the_file(dump):
    path, data = rewrite_manifest(dump)
    npz = dump / data["arguments_file"]
    np.savez(open(npz, "wb"), arg0=np.zeros((2, 2), F32), arg1=np.zeros(5, F32),
             arg2=np.array(1))
    with pytest.raises(DumpError, match=r"arg0 \(x\) is float32\[2, 2\]") as err:
        replay(dump, "interpreter")
    assert str(npz) in str(err.value)


def test_an_object_array_is_refused_not_unpickled(dump):
    _, data = rewrite_manifest(dump)
    npz = dump / data["arguments_file"]
    with open(npz, "wb") as out:
        np.savez(out, arg0=np.array([{"x": 1}], dtype=object), arg1=np.zeros(5, F32),
                 arg2=np.array(1))
    with pytest.raises(DumpError, match="allow_pickle"):
        replay(dump, "interpreter")


@pytest.mark.parametrize("name", ["../elsewhere.txt", "/etc/hostname", "sub/module.txt"])
def test_a_manifest_names_only_files_beside_it(dump, name):
    path, _ = rewrite_manifest(dump, module_file=name)
    with pytest.raises(DumpError, match="not a file name in the dump's own directory") as err:
        replay(dump, "interpreter")
    assert str(path) in str(err.value)


@pytest.mark.parametrize("target", ["numpy.test", "os.system", "numpy.lib.format.read_array",
                                    "numpy.load", "builtins.eval"])
def test_an_eager_op_runs_only_a_registered_numpy_function(tmp_path, target):
    path = tmp_path / "m.hlo"
    path.write_text(f"""HloModule m
ENTRY e {{
  a = f32[4] parameter(0)
  ROOT u = f32[4] custom-call(a), custom_call_target="{target}", metadata={{source_line=3}}
}}
""")
    with pytest.raises(xe.CompileError, match="names no public NumPy function") as err:
        replay(path, "interpreter")
    assert target in str(err.value) and "line 3" in str(err.value)


def test_no_dump_at_all_says_how_to_write_one(tmp_path):
    with pytest.raises(DumpError, match="holds no dump") as err:
        replay(tmp_path, "interpreter")
    assert "snapshots=True" in str(err.value)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(DumpError, match="no such file"):
            replay(tmp_path / "absent", "interpreter")


def test_the_dump_snapshots_flag_dumps_every_compilation_replayable(tmp_path, args,
                                                                     monkeypatch):
    from xla_explorer.dump import options_from_flags

    monkeypatch.setenv("XLA_EXPLORER_FLAGS", f"--dump_to={tmp_path} --dump_snapshots")
    xe.explore(f, *args)
    monkeypatch.delenv("XLA_EXPLORER_FLAGS")
    result = replay(tmp_path, "interpreter")
    assert result.ok and result.seed is None
    assert_numpys(result.values, f, args)
    assert not options_from_flags(f"--dump_to={tmp_path} --dump_snapshots=false").snapshots
    with pytest.raises(ValueError, match="needs --dump_to=DIR"):
        options_from_flags("--dump_snapshots")
    with pytest.raises(ValueError, match="true or false"):
        options_from_flags(f"--dump_to={tmp_path} --dump_snapshots=maybe")


def test_generated_inputs_that_change_an_eager_ops_shape_ask_for_the_saved_ones(tmp_path):
    a = np.array([5, 1, 3, 5, 1, 9, 3])  # 4 distinct values; the generated ones have more
    xe.explore(g, a, autocluster=True).dump(tmp_path, snapshots=True)
    path = files(tmp_path, ".before_optimizations.txt")
    assert len(np.unique(inputs_from_seed(parse_hlo(path.read_text()), seed=0)[0])) != 4
    with pytest.raises(DumpError, match="on the generated inputs") as err:
        replay(path, "interpreter")
    assert str(path) in str(err.value) and "snapshots=True" in str(err.value)
    assert replay(tmp_path, "interpreter").ok  # the saved arguments give the traced shape
