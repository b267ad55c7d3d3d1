"""Compilations dumped as XLA's --xla_dump_to dumps them: file names, contents, flags."""
import re
import shutil
import threading

import graphviz
import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.backends import BACKENDS
from xla_explorer.backends.interpreter import InterpreterBackend
from xla_explorer.passes.buffer_assignment import human_bytes
from xla_explorer.dump import (DumpOptions, dump_exploration, next_module_number,
                               options_from_env, options_from_flags)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def two_layer(x, w):
    h = np.tanh(x @ w)
    return (h @ w.T).sum(axis=1) + h.sum()


def unique_scaled(x):
    return np.unique(x) * 2.0


@pytest.fixture(autouse=True)
def no_flags(monkeypatch):
    # An XLA_EXPLORER_FLAGS in the environment would dump (and count) every compilation.
    monkeypatch.delenv("XLA_EXPLORER_FLAGS", raising=False)


@pytest.fixture(scope="module")
def cpu_ex():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 8)).astype(np.float32)
    w = rng.standard_normal((8, 8)).astype(np.float32)
    return xe.explore(two_layer, x, w, backend="cpu")


@pytest.fixture(scope="module")
def interp_ex():
    return xe.explore(softmax, np.ones((3, 5)), backend="interpreter")


def number_of(paths) -> int:
    """NNNN of a dump, read from its files (all must agree)."""
    numbers = {re.match(r"module_(\d{4})\.", p.name).group(1) for p in paths}
    assert len(numbers) == 1, numbers
    return int(numbers.pop())


def test_cpu_dump_writes_xla_names(cpu_ex, tmp_path):
    out = tmp_path / "new" / "dir"  # created as needed
    paths = dump_exploration(cpu_ex, out)
    n = f"module_{number_of(paths):04d}.two_layer"
    expected = [
        f"{n}.before_optimizations.txt",
        f"{n}.before_optimizations.dot",
        f"{n}.cpu_after_optimizations.txt",
        f"{n}.cpu_after_optimizations.dot",
        f"{n}.cpu_after_optimizations-buffer-assignment.txt",
        f"{n}.cpu_after_optimizations-memory-usage-report.txt",
        f"{n}.kernels.py",
    ]
    assert [p.name for p in paths] == expected
    assert sorted(p.name for p in out.iterdir()) == sorted(expected)
    assert all(p.parent == out for p in paths)


def test_interpreter_dump_has_no_cpu_prefix_and_no_kernels(interp_ex, tmp_path):
    paths = dump_exploration(interp_ex, tmp_path)
    n = f"module_{number_of(paths):04d}.softmax"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([
        f"{n}.before_optimizations.txt",
        f"{n}.before_optimizations.dot",
        f"{n}.after_optimizations.txt",
        f"{n}.after_optimizations.dot",
        f"{n}.after_optimizations-buffer-assignment.txt",
        f"{n}.after_optimizations-memory-usage-report.txt",
    ])


def test_interpreter_dump_of_an_eager_op(tmp_path):
    ex = xe.explore(unique_scaled, np.array([3.0, 1.0, 3.0]), backend="interpreter")
    paths = {p.name.split(".", 2)[2]: p for p in dump_exploration(ex, tmp_path)}
    assert paths["after_optimizations.txt"].read_text() == ex.hlo(-1, metadata=True)
    assert "custom-call" in paths["after_optimizations.txt"].read_text()
    report = paths["after_optimizations-memory-usage-report.txt"].read_text()
    assert "eager (outside the arena)" in report


class Named(InterpreterBackend):
    """A target whose dumps carry its own word, as XLA's CPU compiler's carry `cpu`."""

    name = "named"
    dump_name = "toy"


def test_a_backend_names_its_dumps_and_a_module_without_a_function_dumps(monkeypatch,
                                                                         tmp_path):
    monkeypatch.setitem(BACKENDS, "named", Named())
    module = xe.parse_hlo(interp_ex_text())
    ex = xe.Exploration.from_module(module, backend="named")
    paths = files_by_suffix(dump_exploration(ex, tmp_path, pass_re="fusion"))
    assert paths["toy_after_optimizations.txt"].read_text() == ex.hlo(-1, metadata=True)
    assert "toy_after_optimizations-buffer-assignment.txt" in paths
    assert any(k.endswith("toy-pipeline.after_fusion.txt") for k in paths), sorted(paths)
    assert not any(k.endswith("kernels.py") for k in paths)


def interp_ex_text() -> str:
    return xe.explore(softmax, np.ones((3, 5)), backend="interpreter").hlo(0)


def files_by_suffix(paths) -> dict:
    """{`before_optimizations.txt`: path, ...}: each file by what follows module_NNNN.<name>."""
    return {p.name.split(".", 2)[2]: p for p in paths}


def test_hlo_files_parse_back_to_the_first_and_last_stage(cpu_ex, tmp_path):
    files = files_by_suffix(dump_exploration(cpu_ex, tmp_path))
    before = files["before_optimizations.txt"].read_text()
    after = files["cpu_after_optimizations.txt"].read_text()
    assert before == cpu_ex.hlo(0, metadata=True) and after == cpu_ex.hlo(-1, metadata=True)
    assert before != after
    assert xe.parse_hlo(before).to_text() == cpu_ex.hlo(0, metadata=True)
    assert xe.parse_hlo(after).to_text() == cpu_ex.hlo(-1, metadata=True)


def test_buffer_files_and_kernels(cpu_ex, tmp_path):
    files = files_by_suffix(dump_exploration(cpu_ex, tmp_path))
    a = cpu_ex.buffers
    assert files["cpu_after_optimizations-buffer-assignment.txt"].read_text() == a.report()
    usage = files["cpu_after_optimizations-memory-usage-report.txt"].read_text()
    assert usage == a.memory_usage_report()
    kernels = files["kernels.py"].read_text()
    # The whole program in one file, as it is read; the JIT loads the same code from a file
    # a kernel (named by its code: its comments may be another shape's), and the driver's.
    assert kernels == cpu_ex.executable.program.source
    loaded = "\n".join(path.read_text() for path in cpu_ex.executable.files)
    for name in cpu_ex.kernels:
        assert f"def {name}" in kernels and f"def {name}(" in loaded


def test_memory_usage_report_counts_what_the_assignment_holds(cpu_ex):
    a = cpu_ex.buffers
    assert a.allocations, "the program should need temporaries"
    text = a.memory_usage_report()
    assert text.endswith(a.report())
    assert f"a {a.peak_bytes}-byte arena" in text and f"lower bound {a.lower_bound_bytes}" in text
    stats = dict(re.findall(r"^\s*([\w ]+ allocation):\s+(\S+)$", text, re.M))
    assert stats["preallocated_temp allocation"] == human_bytes(a.peak_bytes)
    total = re.search(r"^Total bytes used: (\d+)", a.report(), re.M).group(1)
    assert stats["total allocation"] == human_bytes(int(total))
    # One row per step; the most live is the lower bound, marked where it is reached.
    rows = re.findall(r"^\s+(\d+)  (\S+)\s+(\d+)(  <- most live.*)?$", text, re.M)
    assert [r[1] for r in rows] == [i.name for i in a.module.entry.instructions]
    live = [int(r[2]) for r in rows]
    assert max(live) == a.lower_bound_bytes
    assert [bool(r[3]) for r in rows] == [v == a.lower_bound_bytes for v in live]
    for t, v in enumerate(live):
        assert v == sum(x.size for x in a.allocations if x.start <= t <= x.end)


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz's dot is not installed")
def test_dot_files_render(cpu_ex, tmp_path):
    paths = dump_exploration(cpu_ex, tmp_path, pass_re="fusion")
    dots = [p for p in paths if p.suffix == ".dot"]
    assert len(dots) == 4
    for p in dots:
        svg = graphviz.Source(p.read_text()).pipe(format="svg", encoding="utf-8")
        assert "<svg" in svg and 'class="node"' in svg


def test_pass_re_adds_exactly_the_matching_stages(cpu_ex, tmp_path):
    plain = {p.name for p in dump_exploration(cpu_ex, tmp_path / "plain")}
    paths = dump_exploration(cpu_ex, tmp_path / "re", pass_re="fusion")
    n = f"module_{number_of(paths):04d}.two_layer"
    matching = [(i, s) for i, s in enumerate(cpu_ex.stages) if re.search("fusion", s.name)]
    assert [s.name for _, s in matching] == ["fusion", "multi-output-fusion"]
    extra = sorted(p.name for p in paths if p.name.split(".", 2)[2] not in
                   {q.split(".", 2)[2] for q in plain})
    assert extra == sorted(f"{n}.{i:04d}.cpu-pipeline.after_{s.name}.{ext}"
                           for i, s in matching for ext in ("txt", "dot"))
    for i, s in matching:
        assert (tmp_path / "re" / f"{n}.{i:04d}.cpu-pipeline.after_{s.name}.txt").read_text() \
            == cpu_ex.hlo(i, metadata=True)


def test_pass_re_is_searched_and_interpreter_pipeline_is_named_pipeline(interp_ex, tmp_path):
    paths = dump_exploration(interp_ex, tmp_path, pass_re="^dce$|^trace")
    stems = sorted(p.name.split(".", 2)[2] for p in paths if ".pipeline." in p.name)
    dce = [s.name for s in interp_ex.stages].index("dce")
    assert stems == sorted([f"0000.pipeline.after_trace.{e}" for e in ("txt", "dot")]
                           + [f"{dce:04d}.pipeline.after_dce.{e}" for e in ("txt", "dot")])
    nothing = dump_exploration(interp_ex, tmp_path / "none", pass_re="no-such-pass")
    assert len(nothing) == 6


def test_module_numbers_increase(interp_ex, tmp_path):
    first = number_of(dump_exploration(interp_ex, tmp_path / "a"))
    second = number_of(dump_exploration(interp_ex, tmp_path / "b"))
    assert second == first + 1
    assert next_module_number() == second + 1


def test_module_numbers_are_unique_across_threads():
    got: list[int] = []
    lock = threading.Lock()

    def take():
        mine = [next_module_number() for _ in range(200)]
        with lock:
            got.extend(mine)

    threads = [threading.Thread(target=take) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got) == list(range(min(got), min(got) + 1600))


def test_options_from_flags(tmp_path):
    assert options_from_flags("") is None
    assert options_from_flags("   ") is None
    assert options_from_flags(f"--dump_to={tmp_path}") == DumpOptions(tmp_path, None)
    opts = options_from_flags(f"  --dump_to={tmp_path}   --dump_pass_re=fusion\\.\\d|dce ")
    assert opts == DumpOptions(tmp_path, r"fusion\.\d|dce")
    spaced = options_from_flags(f'--dump_to="{tmp_path}/a b" --dump_pass_re="x y"')
    assert spaced == DumpOptions(tmp_path / "a b", "x y")


@pytest.mark.parametrize("text,words", [
    ("--dump_to=/tmp/x --xla_dump_to=/tmp/y", ["'--xla_dump_to'", "--dump_to", "--dump_pass_re"]),
    ("--dump-to=/tmp/x", ["'--dump-to'", "--dump_to", "--dump_pass_re"]),
    ("/tmp/x", ["'/tmp/x'"]),
    ("--dump_to", ["--dump_to", "value"]),
    ("--dump_to=/tmp/x --dump_pass_re=(", ["not a regular expression"]),
    ("--dump_pass_re=fusion", ["--dump_to"]),
])
def test_options_from_flags_rejects_bad_flags(text, words):
    with pytest.raises(ValueError) as err:
        options_from_flags(text)
    for word in words:
        assert word in str(err.value)


def test_options_from_env(monkeypatch, tmp_path):
    assert options_from_env() is None
    monkeypatch.setenv("XLA_EXPLORER_FLAGS", f"--dump_to={tmp_path} --dump_pass_re=cse")
    assert options_from_env() == DumpOptions(tmp_path, "cse")
    monkeypatch.setenv("XLA_EXPLORER_FLAGS", "--bogus=1")
    with pytest.raises(ValueError, match="--bogus"):
        options_from_env()


SCRIPT = '''
import numpy as np
import xla_explorer as xe
from xla_explorer.backends import BACKENDS
from xla_explorer.backends.interpreter import InterpreterBackend
from xla_explorer.passes.buffer_assignment import human_bytes

def f(x):
    return np.tanh(x) * 2 + x.sum()

def g(x):
    y = np.exp(x) * 2
    return (np.unique(np.round(y)) ** 2).sum() + 1

x = np.linspace(-1, 1, 100, dtype=np.float32)
print(float(xe.jit(f)(x)[0]), float(xe.jit(g, autocluster=True)(x)))
'''


@pytest.mark.slow  # a subprocess that compiles
def test_the_flag_dumps_every_compilation_of_a_script_using_jit(tmp_path):
    import os
    import subprocess
    import sys

    env = dict(os.environ, XLA_EXPLORER_FLAGS=f"--dump_to={tmp_path / 'dump'}",
               XLA_EXPLORER_CACHE=str(tmp_path / "cache"))
    subprocess.run([sys.executable, "-c", SCRIPT], env=env, check=True, timeout=300,
                   capture_output=True)
    names = sorted(p.name for p in (tmp_path / "dump").iterdir())
    after = "cpu_after_optimizations"
    want = []
    for n, module in ((0, "f"), (1, "g")):
        p = f"module_{n:04d}.{module}"
        want += [f"{p}.before_optimizations.txt", f"{p}.before_optimizations.dot",
                 f"{p}.{after}.txt", f"{p}.{after}.dot", f"{p}.{after}-buffer-assignment.txt",
                 f"{p}.{after}-memory-usage-report.txt"]
    want += ["module_0000.f.kernels.py", "module_0001.g.cluster_0.kernels.py",
             "module_0001.g.cluster_1.kernels.py"]
    assert names == sorted(want)
    text = (tmp_path / "dump" / f"module_0001.g.{after}.txt").read_text()
    assert 'custom_call_target="numpy.unique"' in text and '_xla_cluster="cluster_1"' in text
