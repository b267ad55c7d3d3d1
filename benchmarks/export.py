"""The footprint and cost of an exported program against the JIT path (docs/export.md).

    python benchmarks/export.py [--reps N] [--json PATH]

In one run:

1. Bytes on disk: each exported module (`xe.export`), against what `xe.jit` needs installed
   to run the same program: Numba, llvmlite, this package, and the kernel cache the program
   leaves (generated sources and Numba's cache files, in a fresh cache directory). NumPy,
   which both need, is listed apart.
2. Time, each side in fresh processes, alternating export and JIT, medians of --reps: the
   import (the four modules, by a Python that has NumPy alone; `import xla_explorer`), the
   first call (the JIT's traces, compiles the pipeline, imports Numba and loads the kernels
   from its disk cache, filled by one cold run first, reported too) and the steady per-call
   time.
3. Large arrays (softmax, the dense layer), in this process, calls interleaved round by
   round: the export (its loops
   on one thread) against `xe.jit` (parallel loops, both cores) and against the JIT
   rendered serial, as the export is (the difference there is the export's own cost: the
   product's routines compiled into the module rather than called through symbols).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from programs import F32, dense_relu, layernorm, softmax, sum_xyz  # noqa: E402

import xla_explorer as xe  # noqa: E402
from xla_explorer.api import export  # noqa: E402
from xla_explorer.api.export import numpy_only_python  # noqa: E402
from xla_explorer.backends import get_backend  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RNG = np.random.default_rng(0)


def _n(*shape):
    return RNG.standard_normal(shape).astype(F32)


# name -> (the function on NumPy arrays, small arguments, large arguments)
PROGRAMS = {
    "sum_xyz": (lambda x, y, z: sum_xyz(np, x, y, z),
                lambda: (_n(100_000), _n(100_000), _n(100_000)),
                lambda: (_n(1 << 24), _n(1 << 24), _n(1 << 24))),
    "softmax": (lambda x: softmax(np, x), lambda: (_n(256, 256),), lambda: (_n(4096, 1024),)),
    "layernorm": (lambda x, g, b: layernorm(np, x, g, b),
                  lambda: (_n(256, 256), _n(256), _n(256)),
                  lambda: (_n(4096, 1024), _n(1024), _n(1024))),
    "dense": (lambda x, w, b: dense_relu(np, x, w, b),
              lambda: (_n(128, 256), _n(256, 128), _n(128)),
              lambda: (_n(1024, 1024), _n(1024, 1024), _n(1024))),
}

# Timed on large arrays too: a row kernel, and the product (where the export calls its
# routines as Numba functions, the JIT through symbols).
LARGE = ("softmax", "dense")

EXPORTED_CHILD = r"""
import json, sys, time
t = time.perf_counter()
import numpy as np
out = {"numpy_import": time.perf_counter() - t}
directory, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, directory)
for name in names:
    saved = np.load(f"{directory}/{name}.npz")
    args = [saved[f"a{k}"] for k in range(len(saved.files))]
    t = time.perf_counter()
    module = __import__(name)
    imported = time.perf_counter() - t
    t = time.perf_counter()
    module.run(*args)
    first = time.perf_counter() - t
    calls = []
    for _ in range(200):
        t = time.perf_counter()
        module.run(*args)
        calls.append(time.perf_counter() - t)
    out[name] = {"import": imported, "first": first, "steady": sorted(calls)[100]}
out["others"] = sorted(m for m in sys.modules if m.split(".")[0] in ("numba", "llvmlite"))
print(json.dumps(out))
"""

JIT_CHILD = r"""
import json, sys, time
t = time.perf_counter()
import numpy as np
out = {"numpy_import": time.perf_counter() - t}
directory, names = sys.argv[1], sys.argv[2:]
sys.path.insert(0, {bench!r})
t = time.perf_counter()
import xla_explorer as xe
out["import"] = time.perf_counter() - t
import export as bench
for name in names:
    saved = np.load(f"{directory}/{name}.npz")
    args = [saved[f"a{k}"] for k in range(len(saved.files))]
    f = xe.jit(bench.PROGRAMS[name][0])
    t = time.perf_counter()
    f(*args)
    first = time.perf_counter() - t
    calls = []
    for _ in range(200):
        t = time.perf_counter()
        f(*args)
        calls.append(time.perf_counter() - t)
    out[name] = {"first": first, "steady": sorted(calls)[100]}
print(json.dumps(out))
"""


def tree_bytes(path: Path, pycache: bool = False) -> int:
    """Bytes of the files under `path`; what is in __pycache__ (bytecode, and Numba's cache
    files beside a package's sources) only with `pycache`."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*")
               if p.is_file() and (pycache or "__pycache__" not in p.parts))


def package_cache_bytes(cache: Path) -> int:
    """Bytes of Numba's cache files (index and data) for the package's own routines, under
    a NUMBA_CACHE_DIR: a folder per source folder, named `<its name>_<hash>`; the generated
    kernels' is `kernels_<hash>`."""
    return sum(p.stat().st_size for p in cache.rglob("*")
               if p.suffix in (".nbi", ".nbc") and not p.parent.name.startswith("kernels_"))


def installed(name: str) -> int:
    """Bytes of an installed package and its bundled libraries (`numpy.libs`)."""
    import importlib.util

    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.origin is not None
    root = Path(spec.origin).parent
    libs = root.parent / f"{name}.libs"
    return tree_bytes(root) + (tree_bytes(libs) if libs.exists() else 0)


def fresh_processes(directory: Path, cache: Path, python: Path, reps: int) -> dict:
    """Each side's import, first call and steady call, in fresh processes, alternating;
    the JIT's first run (cold cache) apart."""
    names = list(PROGRAMS)
    # Both caches afresh: the programs' kernels, and Numba's cache of the package's own
    # routines (the product's entry points, next_block), which would otherwise hold whatever
    # this checkout has compiled before.
    env = {**os.environ, "XLA_EXPLORER_CACHE": str(cache / "kernels"),
           "NUMBA_CACHE_DIR": str(cache / "numba")}
    env.pop("PYTHONPATH", None)
    jit_child = JIT_CHILD.replace("{bench!r}", repr(str(Path(__file__).resolve().parent)))

    def jit():
        done = subprocess.run([sys.executable, "-c", jit_child, str(directory), *names],
                              capture_output=True, text=True, env=env, cwd=ROOT, check=True)
        return json.loads(done.stdout)

    def exported():
        done = subprocess.run([str(python), "-I", "-c", EXPORTED_CHILD, str(directory),
                               *names], capture_output=True, text=True, check=True)
        return json.loads(done.stdout)

    cold = jit()
    runs: dict[str, list] = {"export": [], "jit": []}
    for _ in range(reps):
        runs["export"].append(exported())
        runs["jit"].append(jit())
    assert all(not r["others"] for r in runs["export"])
    med = lambda xs: float(np.median(xs))  # noqa: E731
    out = {"jit_import": med([r["import"] for r in runs["jit"]]),
           "numpy_import": med([r["numpy_import"] for r in runs["export"]])}
    for name in names:
        out[name] = {
            "export_import": med([r[name]["import"] for r in runs["export"]]),
            "export_first": med([r[name]["first"] for r in runs["export"]]),
            "export_steady": med([r[name]["steady"] for r in runs["export"]]),
            "jit_first_cold": cold[name]["first"],
            "jit_first": med([r[name]["first"] for r in runs["jit"]]),
            "jit_steady": med([r[name]["steady"] for r in runs["jit"]])}
    return out


def large_arrays(directory: Path, rounds: int) -> dict:
    """Milliseconds per call on the large arguments: export, JIT, JIT rendered serial."""
    out = {}
    backend = get_backend("cpu")
    parallel_options = backend.options
    for name in LARGE:
        f, _, make = PROGRAMS[name]
        args = make()
        module = export(f, *args, name=f"{name}_large", directory=directory).load()
        parallel = xe.explore(f, *args, backend="cpu")
        backend.options = dataclasses.replace(parallel_options, serial_only=True)
        try:
            serial = xe.explore(f, *args, backend="cpu")
        finally:
            backend.options = parallel_options
        runners = {"export": lambda: module.run(*args),
                   "jit": lambda: parallel.executable.run_arrays(args),
                   "jit_serial": lambda: serial.executable.run_arrays(args)}
        want = f(*args)
        for call in runners.values():  # compiled, and right
            np.testing.assert_allclose(call() if call is runners["export"] else call()[0],
                                       want, rtol=2e-4, atol=1e-4)
        times: dict[str, list] = {k: [] for k in runners}
        for _ in range(rounds):
            for k, call in runners.items():
                t = time.perf_counter()
                call()
                times[k].append(time.perf_counter() - t)
        # The median, and the best call: on a machine others share (2 cores, a load of
        # several), the best is the nearer to what the code itself costs.
        out[name] = {k: float(np.median(v)) * 1e3 for k, v in times.items()}
        out[name].update({f"{k}_best": min(v) * 1e3 for k, v in times.items()})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3, help="fresh processes per side (3)")
    parser.add_argument("--rounds", type=int, default=15, help="large-array rounds (15)")
    parser.add_argument("--json", help="write the measurements here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    results: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, "
                                f"NumPy {np.__version__}"}
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        python = numpy_only_python(tmp_path / "numpy-only")
        built = {}
        for name, (f, make, _) in PROGRAMS.items():
            arrays = make()
            np.savez(tmp_path / f"{name}.npz", **{f"a{k}": a for k, a in enumerate(arrays)})
            built[name] = export(f, *arrays, name=name, directory=tmp_path)
        timing = fresh_processes(tmp_path, tmp_path / "cache", python, args.reps)
        import llvmlite
        import numba

        results["footprint"] = {
            "export": {name: e.nbytes for name, e in built.items()},
            "export_seconds": {name: e.seconds for name, e in built.items()},
            "numba": installed("numba"), "llvmlite": installed("llvmlite"),
            "xla_explorer": tree_bytes(ROOT / "xla_explorer"),
            # Everything cached: the generated sources and every kernel's and routine's
            # Numba cache files; of that, the package's routines'.
            "kernel_cache": tree_bytes(tmp_path / "cache", pycache=True),
            "package_cache": package_cache_bytes(tmp_path / "cache" / "numba"),
            "numpy": installed("numpy"),
            "versions": f"numba {numba.__version__}, llvmlite {llvmlite.__version__}"}
        results["fresh_process"] = timing
        results["large_ms"] = large_arrays(tmp_path, args.rounds)
    results["seconds"] = time.perf_counter() - start
    report(results)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))


def report(r: dict) -> None:
    fp, fresh, large = r["footprint"], r["fresh_process"], r["large_ms"]
    kib = lambda b: f"{b / 1024:,.0f} KiB"  # noqa: E731
    print(r["machine"], "-", fp["versions"], f"- {r['seconds']:.0f} s")
    print("on disk: " + ", ".join(f"{n} {kib(b)}" for n, b in fp["export"].items()))
    jit_total = fp["numba"] + fp["llvmlite"] + fp["xla_explorer"] + fp["kernel_cache"]
    print(f"  JIT: numba {kib(fp['numba'])} + llvmlite {kib(fp['llvmlite'])} + xla_explorer "
          f"{kib(fp['xla_explorer'])} + kernel cache {kib(fp['kernel_cache'])} (of which "
          f"the package's routines {kib(fp['package_cache'])}) = {kib(jit_total)}; "
          f"NumPy (both) {kib(fp['numpy'])}")
    print(f"fresh process (import: exported module; JIT import xla_explorer "
          f"{fresh['jit_import'] * 1e3:.0f} ms; NumPy {fresh['numpy_import'] * 1e3:.0f} ms)")
    print(f"{'program':10} {'import':>8} {'first':>9} {'steady':>9} | {'JIT first':>9} "
          f"{'(cold)':>8} {'steady':>9}")
    for name in PROGRAMS:
        t = fresh[name]
        print(f"{name:10} {t['export_import'] * 1e3:6.2f}ms {t['export_first'] * 1e3:7.3f}ms "
              f"{t['export_steady'] * 1e6:7.1f}us | {t['jit_first'] * 1e3:7.0f}ms "
              f"{t['jit_first_cold']:7.1f}s {t['jit_steady'] * 1e6:7.1f}us")
    print("large arrays, ms per call, median (best):")
    for name, t in large.items():
        cells = [f"{k.replace('_', ' ')} {t[k]:6.2f} ({t[k + '_best']:5.2f})"
                 for k in ("export", "jit", "jit_serial")]
        print(f"  {name:10} " + "  ".join(cells))


if __name__ == "__main__":
    main()
