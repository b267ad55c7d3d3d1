"""`python -m xla_explorer` (`xla-explorer`): replay's exit status (0 agree, 1 differ, 2 a bad
dump), opt's HLO after the passes asked for, explore's HTML file, and a `%%xla --dump DIR
--dump-snapshots` cell replayed in a fresh process. Most run `main` in this process; the
subprocess tests (a fresh interpreter importing the package and compiling, seconds each) are
few and slow-marked."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import xla_explorer as xe
from xla_explorer.__main__ import main
from xla_explorer.ir.parser import parse_hlo
from xla_explorer.runtime.reference import run_module
from xla_explorer.viz import page

F32 = np.float32
ROOT = Path(__file__).resolve().parents[1]


def f(x, y):
    return np.exp(x * y).sum(axis=1), np.tanh(x) + 1


@pytest.fixture
def args(rng):
    return [rng.standard_normal((4, 8)).astype(F32), rng.standard_normal(8).astype(F32)]


@pytest.fixture
def dump(tmp_path, args):
    xe.explore(f, *args).dump(tmp_path / "dump", snapshots=True)
    return tmp_path / "dump"


def module_file(directory) -> Path:
    (path,) = directory.glob("*.before_optimizations.txt")
    return path


def test_help_reads_like_xlas_tools(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for word in ("run_hlo_module", "hlo-opt", "replay", "opt", "explore", "exit status"):
        assert word in out
    assert main(["replay", "--help"]) == 0
    out = capsys.readouterr().out
    for word in ("DUMP_DIR_OR_FILE", "--backend {cpu,cuda,interpreter}", "--reference",
                 "--bisect", "--reference_platform=interpreter"):
        assert word in out
    assert main(["opt", "--help"]) == 0
    assert "--until PASS" in capsys.readouterr().out
    assert main(["replay"]) == 2  # a usage error
    assert "DUMP_DIR_OR_FILE" in capsys.readouterr().err


def test_replay_exits_0_when_all_agree_and_1_when_an_output_differs(dump, capsys):
    assert main(["replay", str(dump), "--backend", "interpreter"]) == 0
    out = capsys.readouterr().out
    assert "all outputs agree" in out and "max abs error" in out
    path = module_file(dump)
    path.write_text(path.read_text().replace(" tanh(", " exponential(", 1))
    assert main(["replay", str(dump), "--backend", "interpreter"]) == 1
    out = capsys.readouterr().out
    assert "DIFFERS" in out and "NO (rtol" in out


def test_replay_of_a_truncated_dump_exits_2_naming_the_file(dump, capsys):
    (npz,) = dump.glob("*.arguments.npz")
    npz.write_bytes(npz.read_bytes()[:100])
    assert main(["replay", str(dump), "--backend", "interpreter"]) == 2
    err = capsys.readouterr().err
    assert str(npz) in err and "xla-explorer replay: error" in err


def test_replay_bisect_prints_every_pass(dump, capsys):
    assert main(["replay", str(dump), "--backend", "interpreter", "--bisect"]) == 0
    out = capsys.readouterr().out
    assert "after pass" in out and "fusion" in out and "every pass's module agrees" in out


def test_opt_until_fusion_prints_fused_hlo_the_parser_reads(dump, args, capsys):
    assert main(["opt", str(module_file(dump)), "--until", "fusion"]) == 0
    fused = parse_hlo(capsys.readouterr().out)
    assert any(i.opcode == "fusion" for i in fused.entry.instructions)
    for got, want in zip(run_module(fused, args), f(*args)):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_opt_runs_the_passes_named_and_refuses_an_unknown_one(dump, capsys):
    assert main(["opt", str(module_file(dump)), "--passes", "algsimp,cse,dce"]) == 0
    cleaned = parse_hlo(capsys.readouterr().out)
    assert not any(i.opcode == "fusion" for i in cleaned.entry.instructions)
    assert main(["opt", str(module_file(dump)), "--passes", "algsimp,fuse-everything"]) == 2
    err = capsys.readouterr().err
    assert "no pass 'fuse-everything'" in err and "multi-output-fusion" in err
    assert main(["opt", "x.hlo", "--list-passes"]) == 0
    assert capsys.readouterr().out.split()[:3] == ["algsimp", "cse", "dce"]


def test_explore_writes_one_html_file(dump, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["explore", str(dump), "-o", str(out), "--backend", "interpreter"]) == 0
    html = out.read_text()
    assert html.startswith("<!DOCTYPE html>") and "xla-explorer: f (interpreter)" in html
    assert page.bundle_js()[:200].replace("</script", "<\\/script") in html
    assert "wrote" in capsys.readouterr().out


def test_explore_without_the_built_script_says_how_to_build_it(dump, tmp_path, capsys,
                                                               monkeypatch):
    monkeypatch.setattr(page, "BUNDLE", tmp_path / "missing" / "explorer.js")
    out = tmp_path / "report.html"
    assert main(["explore", str(dump), "-o", str(out)]) == 2
    assert "make setup" in capsys.readouterr().err and not out.exists()


# -- a %%xla cell, replayed in a fresh process ------------------------------------------------


CELL = "z = np.exp(x * y).sum(axis=1) - np.tanh(x).mean()\n"


@pytest.fixture
def shell():
    sh = InteractiveShell.instance()
    assert sh.run_cell("%reload_ext xla_explorer").success
    sh.run_cell("import numpy as np")
    yield sh
    for name in ("x", "y", "z", "_xla"):
        sh.user_ns.pop(name, None)


def test_dump_snapshots_needs_dump(shell):
    with capture_output() as cap:
        shell.run_cell(f"%%xla --dump-snapshots\n{CELL}")
    assert "--dump-snapshots needs --dump DIR" in cap.stdout + cap.stderr


def replay_elsewhere(directory, backend):
    return subprocess.run([sys.executable, "-m", "xla_explorer", "replay", str(directory),
                           "--backend", backend], capture_output=True, text=True, cwd=ROOT,
                          timeout=300)


@pytest.mark.slow
def test_a_cells_snapshot_replays_in_a_fresh_process_and_agrees(shell, args, tmp_path):
    x, y = args
    shell.user_ns.update(x=x, y=y)
    with capture_output() as cap:
        result = shell.run_cell(f"%%xla --dump {tmp_path} --dump-snapshots\n{CELL}")
    assert result.success, cap.stdout + cap.stderr
    want = np.exp(x * y).sum(axis=1) - np.tanh(x).mean()
    (results,) = tmp_path.glob("*.results.npz")
    with np.load(results, allow_pickle=False) as z:  # what the replays are held to
        np.testing.assert_allclose(z["result0"], want, rtol=2e-5, atol=1e-5)
    for backend in ("cpu", "interpreter"):
        done = replay_elsewhere(tmp_path, backend)
        assert done.returncode == 0, done.stdout + done.stderr
        assert f"on {backend}," in done.stdout and "all outputs agree" in done.stdout
        assert "against the results saved with the dump" in done.stdout


@pytest.mark.slow
def test_a_module_edited_to_be_wrong_exits_1_in_a_fresh_process(dump):
    path = module_file(dump)
    path.write_text(path.read_text().replace(" multiply(", " add(", 1))
    done = replay_elsewhere(dump, "cpu")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "DIFFERS" in done.stdout
