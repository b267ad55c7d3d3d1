"""What the threads that run a parallel kernel are started with (codegen/parallel.py): how
OpenMP's threads wait, and the stack every new thread gets, enough for a product's packed B
(codegen/gemm_threads.py). Each test starts a process of its own, since both are settled
before Numba starts its threads."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest


@pytest.mark.parametrize("given, policy, spins", [({}, "PASSIVE", "5000"),
                                                  ({"GOMP_SPINCOUNT": "0"}, "PASSIVE", "0")])
def test_openmp_threads_spin_briefly_then_sleep_unless_told_otherwise(given, policy, spins):
    # What GNU OpenMP itself read when Numba loaded it (OMP_DISPLAY_ENV prints it):
    # parallel.py's settings must come before that load, and a user's own setting wins.
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")}
    env.update(given, OMP_DISPLAY_ENV="verbose")
    shown = subprocess.run([sys.executable, "-c", "import xla_explorer.codegen.gemm"], env=env,
                           capture_output=True, text=True, check=True).stderr
    assert f"OMP_WAIT_POLICY = '{policy}'" in shown
    assert f"GOMP_SPINCOUNT = '{spins}'" in shown


@pytest.mark.parametrize("limit, shown", [(8 << 20, "0"), ("unlimited", "4194304")])
def test_openmp_threads_get_the_stack_a_product_packs_b_on(limit, shown):
    # A thread packs up to STACK_B_BYTES of B on its stack. glibc gives a new thread
    # RLIMIT_STACK's soft limit (8 MiB: enough, left alone), or 2 MiB where it is unlimited:
    # then OpenMP is told 4 MiB.
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if limit == "unlimited":
        if hard != resource.RLIM_INFINITY:
            pytest.skip("this process may not lift its stack limit")
        limit = resource.RLIM_INFINITY
    elif hard != resource.RLIM_INFINITY and hard < limit:
        pytest.skip("this process may not raise its stack limit that far")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_STACKSIZE", "GOMP_STACKSIZE")}
    env.update(OMP_DISPLAY_ENV="verbose")
    done = subprocess.run([sys.executable, "-c", "import xla_explorer.codegen.gemm"], env=env,
                          capture_output=True, text=True, check=True,
                          preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_STACK,
                                                                (limit, hard)))
    assert f"OMP_STACKSIZE = '{shown}'" in done.stderr


PRODUCT_IN_THREADS = """
import threading
import numpy as np
import xla_explorer as xe
from numba import threading_layer

a, b = np.ones((512, 1024), np.float32), np.ones((1024, 1024), np.float32)
dense = xe.jit(lambda a, b: a @ b)
got = {}
def run(key):
    got[key] = dense(a, b)
run("main")
worker = threading.Thread(target=run, args=("thread",))
worker.start()
worker.join()
assert all(np.array_equal(g, a @ b) for g in got.values()) and len(got) == 2, got
print(threading_layer())
"""


def test_a_product_runs_in_any_thread_with_an_unlimited_stack_limit(tmp_path):
    # glibc gives threads 2 MiB where RLIMIT_STACK is unlimited: too little for a group of
    # packed B and a packed A block. OMP_STACKSIZE reaches OpenMP's threads alone; the
    # process's default for new threads (codegen/parallel.py) reaches the workqueue layer's
    # and the caller's own (a thread of the user, of a Dask worker).
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
    if hard != resource.RLIM_INFINITY:
        pytest.skip("this process may not lift its stack limit")
    env = dict(os.environ, NUMBA_THREADING_LAYER="workqueue", XLA_EXPLORER_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", PRODUCT_IN_THREADS], env=env,
                          capture_output=True, text=True, timeout=300,
                          preexec_fn=lambda: resource.setrlimit(
                              resource.RLIMIT_STACK, (resource.RLIM_INFINITY, hard)))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "workqueue"
