"""What a notebook front end is given for an Exploration: one mime bundle with the JSON the
JupyterLab extension renders (`mime.py`) and, for front ends without it (classic notebook,
VS Code, nbviewer, a code host's preview), the compact form of the HTML export (`html.py`)."""
from __future__ import annotations

from .html import fragment
from .mime import MIME_TYPE, payload


def bundle(ex, bench=None) -> dict:
    """What `_repr_mimebundle_` returns: the JSON for the extension, HTML for everyone else."""
    return {MIME_TYPE: payload(ex, bench), "text/html": fragment(ex, bench)}
