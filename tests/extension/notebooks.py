"""Notebooks for the extension's browser tests, written with nbformat.

`saved_notebook` is what a person finds after running `%%xla` cells and saving: each output
carries the widget view of a kernel that is gone, the JSON bundle, and text. It has no
kernelspec, so JupyterLab opens it with no kernel. `live_notebook` builds a live explorer in
the kernel and displays it with its bundle, as the contract's display bundle does.
"""
from __future__ import annotations

from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from xla_explorer.viz.mime import MIME_TYPE

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def output(payload: dict, widget_model: str | None = None):
    data = {MIME_TYPE: payload, "text/plain": f"<xla-explorer {payload['module']}>"}
    if widget_model is not None:
        data[WIDGET_MIME] = {"version_major": 2, "version_minor": 0, "model_id": widget_model}
    return new_output("display_data", data=data)


def saved_notebook(path: Path, payloads: dict, *, widget: bool = True) -> Path:
    """One code cell per bundle, in the order given; the cell's source names the program."""
    cells = [new_markdown_cell("Saved `%%xla` outputs, reopened with no kernel.")]
    for k, (name, payload) in enumerate(payloads.items()):
        cell = new_code_cell(f"# {name}", execution_count=k + 1)
        # A model id of a kernel that no longer exists, as a saved %%xla output holds.
        cell.outputs = [output(payload, f"{k:032x}" if widget else None)]
        cells.append(cell)
    nb = new_notebook(cells=cells, metadata={})
    nbformat.write(nb, path)
    return path


LIVE_SOURCE = '''\
import numpy as np
import xla_explorer as xe
from IPython.display import display
from xla_explorer.viz import mime

def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)

ex = xe.explore(softmax, np.ones((4, 8), np.float32), backend="cpu")
w = ex.show()
bundle = dict(w._repr_mimebundle_())
bundle[mime.MIME_TYPE] = mime.payload(ex)
display(bundle, raw=True)
'''


def live_notebook(path: Path) -> Path:
    nb = new_notebook(cells=[new_code_cell(LIVE_SOURCE)], metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"}})
    nbformat.write(nb, path)
    return path


def live_explorers_notebook(path: Path, root: Path, names: list[str]) -> Path:
    """A running kernel shows each of the browser test's programs (`bundles.py`, the same
    inputs), one `ex.show()` a cell, in `names`' order: the live explorers."""
    setup = (f"import sys\nsys.path.insert(0, {str(root)!r})\n"
             "from tests.extension.bundles import issue_programs, large_program\n"
             "programs = {**issue_programs(), **large_program()}")
    cells = [new_code_cell(setup)] + [new_code_cell(f"programs[{name!r}].show()")
                                      for name in names]
    nb = new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)",
                       "language": "python"}})
    nbformat.write(nb, path)
    return path
