"""The explorer while a kernel runs: `ex.show()` and what `%%xla` displays.

It is the explorer JupyterLab's extension draws for a saved notebook, the same code: an
anywidget whose front end is the extension's explorer built as one ES module
(viz/bundle/explorer.js, from extension/src/standalone.ts), drawing the bundle's JSON
(viz/mime.py's `payload`, the `bundle` trait). So there is one layout, one set of keys, one
opening stage and one buffer timeline wherever a student looks. The kernel is asked only for
what needs it: "Run benchmark" sends `{"action": "bench", "repeat": n}`, the kernel runs
`ex.bench` and sends the bundle back with the measurements in it; "Compare with XLA" sends
`{"action": "compare_xla", "repeat": n}`, the kernel runs `ex.compare_xla` and the bundle comes
back with XLA's side in it (the XLA tab).

anywidget runs the module wherever ipywidgets run (JupyterLab, Notebook 7, VS Code, Colab),
with no extension to install. What each widget carries is a loader (viz/loader.js, 1 KB):
the first explorer on a page asks the kernel for the 1 MB module (`{"action": "module"}`),
and every explorer after it on that page uses the same copy. Displayed, the explorer is one output carrying the widget, the
same JSON for the extension (a saved notebook, no kernel) and the static HTML view
(viz/html.py) for everything else; a benchmark run from it is written into that output.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import anywidget
import traitlets

from .page import bundle_js

LOADER = Path(__file__).with_name("loader.js")


class Explorer(anywidget.AnyWidget):
    """The live explorer of one Exploration (`ex.show()`)."""

    bundle = traitlets.Dict().tag(sync=True)  # viz/mime.py's payload, the last bench in it
    # Why this backend has nothing to benchmark, or "" when it has.
    bench_unavailable = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)  # a benchmark's failure, in words
    xla_status = traitlets.Unicode("").tag(sync=True)  # a comparison's failure, in words
    export_status = traitlets.Unicode("").tag(sync=True)  # what an export wrote, or why not
    # Where the reader is ({tab, stage, repeat}), kept by the front end: an output updated
    # with a benchmark is drawn afresh, where the reader was.
    view = traitlets.Dict().tag(sync=True)

    @property
    def _esm(self) -> str:  # read when the widget is made: a clear error if not built
        key = hashlib.sha256(bundle_js().encode()).hexdigest()[:16]
        return LOADER.read_text(encoding="utf-8").replace("__KEY__", key)

    def __init__(self, ex):
        from .mime import payload

        unavailable = "" if ex.compiled.backend.generates_code else (
            f'Benchmarks need backend="cpu": the {ex.backend} backend runs the HLO op by op '
            "in NumPy.")
        super().__init__(bundle=payload(ex, ex.last_bench), bench_unavailable=unavailable)
        self.exploration = ex
        self._displays: list = []  # the outputs showing this explorer (IPython DisplayHandles)
        self.on_msg(self._on_msg)

    def _on_msg(self, _widget, content, _buffers) -> None:
        if not isinstance(content, dict):
            return
        if content.get("action") == "module":  # the loader's first explorer on a page
            self.send({"module": bundle_js()})
        elif content.get("action") == "bench":
            self.run_benchmark(int(content.get("repeat", 20)))
        elif content.get("action") == "compare_xla":
            self.compare_xla(int(content.get("repeat", 20)))
        elif content.get("action") == "export":
            self.export(str(content.get("name", "")))

    def _ask(self, status: str, failed: str, action):
        """Run `action()` for the front end: its result, or None with the failure said in
        the trait `status` (shown in the tab: a message handler's error goes nowhere)."""
        setattr(self, status, "")
        try:
            return action()
        except Exception as err:
            setattr(self, status, f"{failed} failed: {type(err).__name__}: {err}")
            return None

    def _redraw(self) -> None:
        """The bundle again, with what the exploration measured last, in every output."""
        from .mime import payload

        self.bundle = payload(self.exploration, self.exploration.last_bench)
        self._update_displays()

    def run_benchmark(self, repeat: int = 20):
        """`ex.bench(repeat=repeat)`, drawn in the Performance tab and written into every
        output showing this explorer; a failure is said there instead. Returns the result,
        or None if it failed."""
        result = self._ask("status", "benchmark",
                           lambda: self.exploration.bench(repeat=max(1, repeat)))
        if result is not None:
            self._redraw()
        return result

    def compare_xla(self, repeat: int = 20):
        """`ex.compare_xla(repeat=repeat)`, drawn in the XLA tab and written into every output
        showing this explorer (a saved notebook keeps it); a failure (jax missing, a program
        XLA cannot take) is said there instead. Returns the comparison, or None."""
        result = self._ask("xla_status", "comparison",
                           lambda: self.exploration.compare_xla(repeat=max(1, repeat)))
        if result is not None:
            self._redraw()
        return result

    def export(self, name: str, directory=".") -> Path | None:
        """`ex.export(name, directory)` (the kernel's working directory by default), asked
        from the Kernels tab; what it wrote, or why it could not, goes into `export_status`.
        Returns the module's path, or None."""
        from ..viz.format import bytes_text

        name = re.sub(r"\W", "_", name.strip()) or "exported"
        if name[0].isdigit():
            name = "_" + name
        made = self._ask("export_status", "export",
                         lambda: self.exploration.export(name, directory))
        if made is None:
            return None
        self.export_status = (f"wrote {made.path} ({bytes_text(made.nbytes)}, built in "
                              f"{made.seconds:.1f} s) and {made.stub.name}: `import {name}; "
                              f"{name}.run(...)` with NumPy alone")
        return made.path

    def __repr__(self) -> str:
        # What a text-only front end prints instead of the widget.
        ex = self.exploration
        return (f"<Explorer of {ex.module.name}: {len(ex.stages)} stages, "
                f"{len(ex.decisions)} fusion decisions; backend {ex.backend}>")

    def _repr_mimebundle_(self, **kwargs):
        """The live widget, and in the same output the JSON the JupyterLab extension renders
        and the static HTML other viewers show: what is left when no kernel holds the
        widget's model (a saved notebook reopened, nbviewer, a code host's preview)."""
        from .display import bundle

        data = super()._repr_mimebundle_(**kwargs)
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        return {**bundle(self.exploration, self.exploration.last_bench), **(data or {})}

    def _ipython_display_(self):
        """Displayed with a display id, so that a benchmark run from the Performance tab is
        written into the output's JSON (`update_display`): a saved notebook keeps it."""
        from IPython.display import display

        handle = display(self._repr_mimebundle_(), raw=True, display_id=True)
        if handle is not None:
            self._displays.append(handle)

    def _update_displays(self) -> None:
        data = self._repr_mimebundle_()
        for handle in self._displays:
            handle.update(data, raw=True)


def explorer(ex) -> Explorer:
    """The explorer widget for one Exploration (what `ex.show()` returns)."""
    return Explorer(ex)
