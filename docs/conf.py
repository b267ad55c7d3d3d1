"""Sphinx's configuration of the documentation site: `make docs` builds it into
docs/_build/html (docs/contributing.md says how it is built).

The source is this folder: index.md, the pages beside it, and the teaching notebooks. Those
stay in ../notebooks, saved without outputs; Sphinx reads documents only inside its source
folder, so the site's extension (_ext/xla_explorer_docs.py) copies them into notebooks/ here
when the build starts (a folder that ignores itself in git, as `make lab`'s copy does), with
a gallery page. The extension also draws their explorers with no kernel.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "_ext"))

project = "xla-explorer"
author = "the xla-explorer authors"
copyright = "the xla-explorer authors; Apache-2.0"

extensions = ["myst_nb", "xla_explorer_docs"]
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints"]

# -- the notebooks: executed on this environment's python3 kernel ---------------------------
# Whenever Sphinx reads one: `make docs` builds from nothing, so every notebook runs from the
# top and the site shows what the code does now (a later sphinx-build into the same folder
# reads again only the notebooks whose copies changed).
nb_execution_mode = "force"
# Per cell. Each notebook runs in under half a minute on 2 cores; a first Numba compile on a
# cold kernel cache, or a loaded machine, takes longer.
nb_execution_timeout = 600
# A cell that raises stops the build, except the cells tagged `raises-exception`, which show
# their error as the notebook means them to. The extension stops it, with the cell and its
# traceback in the message; MyST-NB's own stop (nb_execution_raise_on_error) names only the
# notebook and leaves the cell's error in a log file.
nb_execution_raise_on_error = False
nb_execution_show_tb = False
# Each notebook's stdout as one block, not one block per print.
nb_merge_streams = True

# -- Markdown -------------------------------------------------------------------------------
# `[text](page.md#a-heading)`: anchors for headings, as a code host's preview makes them.
myst_heading_anchors = 4

# -- HTML -----------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = "xla-explorer"
# An explorer is wide (a graph beside its HLO): the page takes the window, not 940 px.
html_theme_options = {"page_width": "min(1400px, 96vw)", "body_max_width": "none",
                      "description": "A visual compiler explorer for Jupyter, modelled on XLA"}
html_show_sourcelink = False
html_copy_source = False
