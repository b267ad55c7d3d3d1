"""`ex.save_html`'s page (viz/page.py): the explorer's own script, inlined, draws the bundle's
JSON, also inlined; with no script, the static view. One file: no server, no network.
(tests/extension/test_browser.py opens such a page in Chromium and runs the explorer's checks
on it.)"""
import json
import re

import numpy as np
import pytest

import xla_explorer as xe
from xla_explorer.viz import page as xpage
from xla_explorer.viz.mime import MIME_TYPE, payload

from .test_html import parse, text
from .test_mime import softmax

DATA = re.compile(rf'<script type="{re.escape(MIME_TYPE)}">(.*?)</script>', re.S)


@pytest.fixture(scope="module")
def benched():
    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    ex = xe.explore(softmax, x, backend="cpu")
    return ex, ex.bench(x, repeat=3)


def test_the_page_carries_the_bundle_and_the_explorers_script(benched, tmp_path):
    ex, b = benched
    path = xpage.save_html(ex, tmp_path / "softmax.html", b)
    page = path.read_text(encoding="utf-8")
    doc = parse(page)
    assert doc.doctype.lower() == "doctype html" and not doc.errors and not doc.stack
    assert text(doc.find("title")[0]) == "xla-explorer: softmax (cpu)"
    (data,) = DATA.findall(page)
    assert json.loads(data) == json.loads(json.dumps(payload(ex, b)))  # the bench included
    (module,) = [el for el in doc.find("script") if el["attrs"].get("type") == "module"]
    assert text(module) == xpage.bundle_js()
    (noscript,) = doc.find("noscript")
    assert "softmax" in text(noscript) and "pass pipeline" in text(noscript)


def test_nothing_on_the_page_is_fetched(benched):
    ex, b = benched
    page = xpage.page(ex, b)
    assert not re.search(r"<script\b[^>]*\bsrc|<link\b|@import|<(?:img|iframe|object)\b", page)
    # The only addresses are SVG's namespace and doctype names, identifiers never fetched.
    addresses = set(re.findall(r"(?:https?|wss?|ftp)://[\w./#-]+", page))
    assert addresses <= {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink",
                         "http://www.w3.org/Graphics/SVG/1.1/DTD/svg11.dtd"}, addresses


def test_no_text_in_the_bundle_can_end_its_script_early():
    tricky = {"note": "</script><script>alert(1)</script>", "n": 1}
    tag = xpage.data_script(tricky)
    assert tag.count("</script>") == 1 and tag.endswith("</script>")
    assert json.loads(DATA.findall(tag)[0]) == tricky


def test_exploration_save_html_carries_the_last_bench(tmp_path):
    x = np.random.default_rng(1).standard_normal((8, 16)).astype(np.float32)
    ex = xe.explore(softmax, x, backend="cpu")
    ex.save_html(tmp_path / "before.html")
    result = ex.bench(x, repeat=3)
    ex.save_html(tmp_path / "after.html")
    before, after = ([json.loads(d) for d in DATA.findall((tmp_path / f).read_text())]
                     for f in ("before.html", "after.html"))
    assert before[0].get("bench") is None
    assert after[0]["bench"]["speedup"] == result.speedup
    assert ex._repr_mimebundle_()[MIME_TYPE]["bench"]["compiled"]["median"] == \
        result.compiled.median


def test_an_unbuilt_script_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setattr(xpage, "BUNDLE", tmp_path / "missing" / "explorer.js")
    ex = xe.explore(softmax, np.ones((2, 4), np.float32))
    with pytest.raises(xpage.BundleNotBuilt, match="make setup"):
        ex.save_html(tmp_path / "x.html")
    assert not (tmp_path / "x.html").exists()
