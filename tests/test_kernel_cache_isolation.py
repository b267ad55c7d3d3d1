"""Tests never write into the user's kernel cache: conftest.py points it at one temporary
directory for the session, in the environment, so subprocesses and notebook kernels use it too."""
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import xla_explorer as xe
from xla_explorer.codegen import cache

SESSION = Path(os.environ["XLA_EXPLORER_TEST_CACHE_ROOT"])


def users_cache_dir(monkeypatch) -> Path:
    """Where the kernels would go outside the tests."""
    with monkeypatch.context() as m:
        m.delenv("XLA_EXPLORER_CACHE")
        return cache.cache_dir()


def test_the_kernel_cache_is_the_sessions_temporary_directory(monkeypatch):
    assert SESSION.is_dir() and SESSION.resolve() != Path.home().resolve()
    assert cache.cache_dir().is_relative_to(SESSION)
    assert not cache.cache_dir().is_relative_to(users_cache_dir(monkeypatch))
    assert not users_cache_dir(monkeypatch).is_relative_to(SESSION)


def test_a_subprocess_inherits_the_sessions_kernel_cache():
    code = "import os; print(os.environ['XLA_EXPLORER_CACHE'])"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                           check=True).stdout.strip()
    assert Path(shown) == cache.cache_dir()


def test_a_compiled_kernel_and_numbas_cache_of_it_are_in_the_session_directory(monkeypatch):
    def f(x):
        return np.tanh(x) * 3 + 1

    x = np.linspace(-1, 1, 7, dtype=np.float32)
    ex = xe.explore(f, x, backend="cpu")
    np.testing.assert_allclose(ex.run(x), f(x), rtol=1e-6)
    path = Path(ex.executable.path)
    assert path.is_relative_to(SESSION) and path.exists()
    # Numba's index of each compiled function, beside the file it came from (the kernel's).
    assert [p for p in ex.executable.files
            if list((p.parent / "__pycache__").glob(f"{p.stem}.*.nbi"))]
    assert not path.is_relative_to(users_cache_dir(monkeypatch))
