"""Compiled chunks against plain dask.array on one LocalCluster: time and peak worker memory.

    python benchmarks/dask_cluster.py [--rounds N] [--million M] [--memory-limit MiB] [--json FILE]

A LocalCluster of two worker processes (one thread each) with a low memory limit, so that
each program's arrays are larger than one worker's memory. Each program runs two ways on the
same cluster, on the same inputs (made chunk by chunk on the workers, in the graph, by
`dask.array.random`, so neither side holds them on the client):

  dask.array   the NumPy code run on dask arrays (Dask's own blockwise NumPy)
  xla-explorer the same function through `xe.jit(f, backend="dask")`: our compiled kernels
               per chunk, the reductions' partials combined in a tree

Per round the two alternate (a slow moment of this shared machine hits both); a first
untimed round compiles our kernels on the workers. Time is the median over rounds of the
wall time of `client.compute(...).result()`; memory is the peak, over the rounds, of the
workers' process memory (RSS, both summed, Dask's MemorySampler every 50 ms) above what they
held before the run. Every result is checked against the other side's.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import xla_explorer as xe

F32 = np.float32


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def mean_var(x):
    return x.mean(), x.var()


def gelu_sum(x):
    c = F32(np.sqrt(2 / np.pi))
    return (F32(0.5) * x * (F32(1) + np.tanh(c * (x + F32(0.044715) * x * x * x)))).sum()


def softmax_max(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).max(axis=0)


def inputs(name: str, n: int, chunk: int):
    """The program's dask arrays, made on the workers (a fresh graph for each run)."""
    import dask.array as da

    rng = da.random.default_rng(7)
    if name == "sum_xyz":
        return [rng.random(n, chunks=chunk) for _ in range(3)]
    if name == "mean_var":
        return [rng.random(n, chunks=chunk) * 4.0 + 1.0]
    if name == "gelu_sum":
        return [rng.random(n, chunks=chunk).astype(F32)]
    return [rng.random((n // 64, 64), chunks=(chunk // 64, 64))]


PROGRAMS = {"sum_xyz": sum_xyz, "mean_var": mean_var, "gelu_sum": gelu_sum,
            "softmax_max": softmax_max}


def measure(client, sampler, label: str, make):
    """(seconds, peak bytes above the start, the result) of one run of `make()`'s graph."""
    before = sum(client.run(_rss).values())
    with sampler.sample(label, interval=0.05):
        start = time.perf_counter()
        result = _result(client, make())
        seconds = time.perf_counter() - start
    peak = max((b for _, b in sampler.samples[label]), default=before)
    return seconds, max(peak - before, 0), result


def _result(client, graph):
    """The computed value of `graph` (an array or a list of them); a worker paused at its
    memory limit would wait for ever: a time limit says so."""
    from distributed import wait

    futures = client.compute(graph)
    wait(futures, timeout=300)
    return client.gather(futures)


def _rss() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--million", type=int, default=16, help="elements per array, millions")
    ap.add_argument("--memory-limit", type=int, default=320, help="per worker, MiB")
    ap.add_argument("--only", choices=sorted(PROGRAMS))
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    from distributed import Client, LocalCluster
    from distributed.diagnostics import MemorySampler

    n, chunk = args.million * 1_000_000, 1_000_000
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           dashboard_address=None, memory_limit=f"{args.memory_limit}MiB")
    client = Client(cluster)
    sampler = MemorySampler()
    rows = []
    try:
        for name, f in PROGRAMS.items():
            if args.only and name != args.only:
                continue
            fast = xe.jit(f, backend="dask")
            ways = {"dask.array": lambda f=f, name=name: f(*inputs(name, n, chunk)),
                    "xla-explorer": lambda fast=fast, name=name: fast(*inputs(name, n, chunk))}
            nbytes = sum(a.nbytes for a in inputs(name, n, chunk))
            warm = {way: make() for way, make in ways.items()}
            _result(client, warm["xla-explorer"])  # compiles on the workers
            times: dict[str, list[float]] = {w: [] for w in ways}
            peaks: dict[str, list[int]] = {w: [] for w in ways}
            results = {}
            for r in range(args.rounds):
                for way, make in ways.items():
                    s, peak, results[way] = measure(client, sampler, f"{name}/{way}/{r}", make)
                    times[way].append(s)
                    peaks[way].append(peak)
            for a, b in zip(np.atleast_1d(results["dask.array"]),
                            np.atleast_1d(results["xla-explorer"])):
                np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-4)
            row = {"program": name, "input_mib": nbytes / 2**20,
                   "worker_limit_mib": args.memory_limit, "chunks": n // chunk}
            for way in ways:
                row[f"{way} s"] = statistics.median(times[way])
                row[f"{way} peak MiB"] = max(peaks[way]) / 2**20
            rows.append(row)
            print(f"{name:12} inputs {row['input_mib']:7.0f} MiB   "
                  + "   ".join(f"{w}: {row[f'{w} s']:.2f} s, peak +{row[f'{w} peak MiB']:.0f} MiB"
                             for w in ways), flush=True)
    finally:
        client.close()
        cluster.close()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
