"""Every teaching notebook runs on a fresh kernel and shows what its text says it shows.

Each notebook is executed with nbclient (the venv's python3 kernel) and its outputs are
checked, not only that nothing raised: the `%%xla` summaries, the fusions the text explains,
the explorer widget's output and its state saved in the notebook's metadata (what
JupyterLab, nbviewer and GitHub use to draw the widget without a kernel).
"""
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


def execute(path: Path, extra_cells=()):
    nb = nbformat.read(path, as_version=4)
    nb.cells.extend(nbformat.v4.new_code_cell(src) for src in extra_cells)
    NotebookClient(nb, timeout=120, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    return nb


def text_of(cell) -> str:
    """Everything a code cell printed or displayed as text, errors included."""
    parts = []
    for o in cell.get("outputs", []):
        if o.output_type == "stream":
            parts.append(o.text)
        elif o.output_type == "error":
            parts.append("\n".join(o.traceback))
        else:
            parts.append(o.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def find(nb, start: str):
    """The one code cell whose source starts with `start`."""
    cells = [c for c in nb.cells if c.cell_type == "code" and c.source.startswith(start)]
    assert len(cells) == 1, f"{len(cells)} cells start with {start!r}"
    return cells[0]


def widget_models(nb) -> list[str]:
    """The model ids of every widget displayed in the notebook."""
    return [o.data[WIDGET_VIEW]["model_id"] for c in nb.cells if c.cell_type == "code"
            for o in c.outputs if WIDGET_VIEW in o.get("data", {})]


def check_common(nb):
    """Every cell ran; only cells tagged raises-exception raised; checks all say ok; the
    state of every displayed widget is saved in the notebook."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        assert cell.execution_count is not None, cell.source
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if "raises-exception" not in cell.metadata.get("tags", []):
            assert not errors, f"{cell.source}\n{text_of(cell)}"
        assert "MISMATCH" not in text_of(cell), cell.source
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    for model in widget_models(nb):
        assert model in state, f"widget {model} shown but its state was not saved"


@pytest.mark.slow  # runs the notebook in a Jupyter kernel
def test_01_first_cell():
    nb = execute(ROOT / "notebooks" / "01_first_cell.ipynb")
    check_common(nb)
    cell = find(nb, "%%xla")
    out = text_of(cell)
    assert "inputs:   x f32[3,4], b f32[4]" in out
    assert "outputs:  y f32[3,4], total f32[]" in out
    assert "check against eager NumPy: ok" in out
    assert "fusions: 1 kernel\n  multi_output_fusion." in out
    assert "buffers: arena 0 B" in out
    # %%xla displays the explorer under its summary, and so does ex.show().
    assert any(WIDGET_VIEW in o.get("data", {}) for o in cell.outputs)
    assert any(WIDGET_VIEW in o.get("data", {}) for o in find(nb, "ex = _xla").outputs)
    assert len(widget_models(nb)) == 2
    assert "float32 (3, 4) 18.0" in text_of(find(nb, "print(y.dtype"))
    hlo = text_of(find(nb, "print(_xla.hlo(metadata=True))"))
    assert hlo.startswith("HloModule") and "kind=kInput" in hlo
    assert "broadcast(param_1" in hlo and "dimensions={1}" in hlo
    assert "source_line=2" in hlo and "source_line=3" in hlo
    stages = text_of(find(nb, "print([s.name for s in _xla.stages])"))
    assert stages.startswith("['trace', 'algsimp', 'cse', 'dce', 'fusion', "
                             "'multi-output-fusion', 'unused-outputs', 'schedule', "
                             "'buffer-assignment']")
    fusions = text_of(find(nb, "for f in _xla.fusions"))
    assert "not fused tanh" in fusions and "multi-output fusion:" in fusions
    check = text_of(find(nb, "print(_xla.check(x, b))"))
    assert check.count(" ok\n") == 2


@pytest.mark.slow  # runs the notebook in a Jupyter kernel
def test_02_fusion():
    nb = execute(ROOT / "notebooks" / "02_fusion.ipynb")
    check_common(nb)
    outs = [text_of(c) for c in nb.cells if c.cell_type == "code"
            and c.source.startswith("show_fusions(_xla)")]
    softmax, layernorm, adam, attention = outs
    assert re.search(r"1 kernel\(s\)\n +row_fusion\.\d+ \(row fusion\)", softmax)
    assert 'backend_config={"schedule":"row"}' in softmax and "kind=kInput" in softmax
    decisions = text_of(find(nb, "for d in _xla.decisions:\n    print("))
    assert re.search(r"not fused exponential\.\d+ into divide\.\d+: exponential\.\d+ is "
                     r"expensive \(exponential\) and has 2 consumers", decisions)
    assert "[fusion] row fusion: joined" in decisions
    assert re.search(r"1 kernel\(s\)\n .*\(row fusion\)", layernorm)
    assert layernorm.count(" ok\n") == 3
    assert text_of(find(nb, "print(w is w_before")).startswith("True 0.001")
    assert re.search(r"1 kernel\(s\)\n +multi_output_fusion\.\d+ \(kLoop\)", adam)
    assert adam.count("multi-output fusion:") == 2  # m and v join the update of w
    assert "4 kernel(s)" in attention and "(row fusion)" in attention
    assert re.search(r"add_maximum_fusion\.\d+ \(kOutput\): .*dot.*add.*maximum", attention)
    assert "transpose" not in attention  # k.T is folded into the first dot
    refused = text_of(find(nb, "for d in _xla.decisions:\n    if not d.fused"))
    assert "a dot reads its operands from memory (BLAS)" in refused
    buffers = text_of(find(nb, "bufs = _xla.buffers"))
    assert buffers.startswith("arena: 192 bytes; lower bound: 192 bytes")
    assert "buffer_id,buffer_name,offset,size" in buffers
    assert re.search(r"\n\d+,dot\.\d+,0,144,", buffers)  # the scores, the one temporary
    assert ",transpose." not in buffers
    assert "preallocated-temp" in text_of(find(nb, "print(bufs.report())"))


@pytest.mark.slow  # runs the notebook in a Jupyter kernel
def test_03_autocluster():
    # The cell after the must-compile error shows that the failed cell wrote nothing back.
    nb = execute(ROOT / "notebooks" / "03_autocluster.ipynb", ["print(u, total)"])
    check_common(nb)
    first = text_of(find(nb, "%%xla --autocluster\n"))
    assert "check against eager NumPy: ok" in first
    assert "clusters: 2 compiled, 1 run eagerly" in first
    assert "eager: numpy.unique (line 3) is not compilable" in first
    assert len(widget_models(nb)) == 1
    hlo = text_of(find(nb, 'print(_xla.hlo(stage="auto-cluster"))'))
    assert 'custom_call_target="numpy.unique"' in hlo
    assert '_xla_cluster="eager"' in hlo and '_xla_cluster="cluster_1"' in hlo
    assert "1 variant(s) traced for another length" in text_of(
        find(nb, "print(u, total)\nprint(len(_xla.variants)"))
    failing = [c for c in nb.cells if "raises-exception" in c.metadata.get("tags", [])]
    assert len(failing) == 1
    errors = [o for o in failing[0].outputs if o.output_type == "error"]
    assert [e.ename for e in errors] == ["CompileError"]
    message = text_of(failing[0])
    assert "np.unique is not compilable" in message
    assert "line 3 of the cell:\n    u = np.unique(np.round(y))" in message
    assert "%%xla --autocluster" in message
    assert text_of(nb.cells[-1]) == "[0. 1. 2.] 5.0\n"


def test_every_notebook_is_tested_and_paired():
    """A new notebook needs a test here; each .ipynb has its jupytext .py with the same cells
    (`jupytext --sync notebooks/*.py` after editing either)."""
    jupytext = pytest.importorskip("jupytext")
    tested = {name[len("test_"):] for name in globals() if re.match(r"test_\d\d_", name)}
    # ... or in a test file of its own beside this one (tests/test_notebook_gpu.py)
    tested |= {m.group(1) for p in Path(__file__).parent.glob("test_notebook_*.py")
               for m in re.finditer(r"^def test_(\d\d_\w+)\(", p.read_text(), re.M)}
    assert {p.stem for p in NOTEBOOKS} == tested
    for path in NOTEBOOKS:
        pair = path.with_suffix(".py")
        assert pair.exists(), f"{pair.name} is missing: jupytext --sync {path.name}"
        a, b = nbformat.read(path, as_version=4), jupytext.read(pair)
        assert [(c.cell_type, c.source) for c in a.cells] == \
               [(c.cell_type, c.source) for c in b.cells], f"{path.name} and {pair.name} differ"
        # Saved without outputs: the tests execute them, and the .py is the readable diff.
        assert all(not c.get("outputs") for c in a.cells if c.cell_type == "code"), \
            f"{path.name} has outputs: jupyter nbconvert --clear-output --inplace {path}"
