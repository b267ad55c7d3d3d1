import os
import shutil
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import settings

# The kernel cache (xla_explorer.codegen.cache.cache_dir()) is one temporary directory per test
# session, never the user's ~/.cache/xla_explorer. It is set here, when pytest imports this file,
# before any test module imports the package, so pytest-xdist workers and every subprocess a
# test starts (notebook kernels, `make lab`, scripts) inherit it. The controller (or a run
# without -n) makes the directory and removes it at the end; its workers use the same one.
# Numba caches a generated kernel's machine code beside the kernel's file: in there too. (The
# package's own cache=True functions, in codegen/, keep theirs in the checkout's __pycache__,
# which is not the user's cache; NUMBA_CACHE_DIR stays unset so that cache is not rebuilt, by
# every worker, at every session: about 15 s of compiling for gemm alone.)
CACHE_ROOT_VAR = "XLA_EXPLORER_TEST_CACHE_ROOT"
_OWNS_CACHE_ROOT = "PYTEST_XDIST_WORKER" not in os.environ or CACHE_ROOT_VAR not in os.environ
if _OWNS_CACHE_ROOT:
    os.environ[CACHE_ROOT_VAR] = tempfile.mkdtemp(prefix="xla-explorer-tests-")
CACHE_ROOT = Path(os.environ[CACHE_ROOT_VAR])
os.environ["XLA_EXPLORER_CACHE"] = str(CACHE_ROOT / "kernels")
# IPython's profile too: the shells of tests/test_magic.py and the notebooks' kernels would
# otherwise write their history into the user's ~/.ipython.
os.environ["IPYTHONDIR"] = str(CACHE_ROOT / "ipython")

# CI runs a fixed set of examples so a red run can be reproduced; locally they vary.
settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


# The long integration tests first, so that with pytest-xdist they start at once, one worker
# each, and the thousands of short tests fill in around them, instead of one worker finishing
# them alone at the end. The notebook tests share one execution of the notebooks: one xdist
# group (`--dist loadgroup` in the Makefile), so only one worker waits for it.
LONG_FIRST = ("tests/test_binder.py", "tests/test_notebooks.py", "tests/test_notebook_gpu.py",
              "tests/extension/test_browser.py", "tests/test_docs_site.py",
              "tests/cuda/test_records.py", "tests/test_screenshot.py",
              "tests/extension/test_typescript.py", "tests/test_make_lab.py",
              "tests/test_dask.py")


def pytest_configure(config):
    # Whether the deep sweeps' cases are wanted at all (tests/sweeps.py).
    from tests import sweeps

    sweeps.WANTED = "notdeep" not in (config.option.markexpr or "").replace(" ", "")


@pytest.hookimpl(trylast=True)  # after xdist has added each test's group to its id
def pytest_collection_modifyitems(config, items):
    def rank(item) -> int:
        return next((i for i, p in enumerate(LONG_FIRST) if item.nodeid.startswith(p)),
                    len(LONG_FIRST))
    items.sort(key=rank)  # stable: every worker collects the same order, as xdist requires
    # Under `--dist loadgroup` xdist sends a group to one worker by the `@group` it adds to
    # each id. Where it cannot (a pytest it does not know), both workers would wait for the
    # one Binder rehearsal: say so, rather than run a suite minutes slower.
    if getattr(config.option, "loadgroup", False):
        grouped = [i for i in items if i.get_closest_marker("xdist_group")]
        if grouped and "@" not in grouped[0].nodeid:
            raise pytest.UsageError(
                "pytest-xdist could not group the tests marked xdist_group under this pytest "
                f"({pytest.__version__}): install the test extra's versions (make setup)")


def pytest_unconfigure(config):
    if _OWNS_CACHE_ROOT:
        shutil.rmtree(CACHE_ROOT, ignore_errors=True)


@pytest.fixture(scope="session")
def executed():
    """Every notebook executed once per test session on a fresh kernel of this environment
    (tests/binder_rehearsal.py); the notebook tests read the executed copies. The same run in
    a venv made from binder/ alone is tests/test_binder.py's, under `make test-deep`."""
    from tests.binder_rehearsal import execute_here

    return execute_here()


@pytest.fixture
def rng():
    return np.random.default_rng(0)
