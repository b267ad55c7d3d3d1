"""Bytes moved, computed from the buffer assignment and each kernel's reads and writes:
three programs checked by hand against their HLO, and the payload's shape."""
from __future__ import annotations

import json

import numpy as np
import pytest

import xla_explorer as xe


def sum_xyz(x, y, z):
    return np.sum(x + y * z)


def softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def loop(x, y):
    return np.tanh(x) * y + 1


def test_sum_of_x_plus_y_times_z_by_hand():
    # Before fusion: multiply(y, z) reads 2 x 4000 B and writes 4000; add(x, that) reads
    # 8000 and writes 4000; the reduce reads 4000 and its f32 init (4 B), writes 4 B.
    # Fused: one kernel reads x, y and z (12000 B) and writes the 4-byte sum.
    x = np.ones(1000, np.float32)
    t = xe.explore(sum_xyz, x, x, x).traffic.to_dict()
    assert t["eager"]["ops"] == [
        {"name": "multiply.4", "read_bytes": 8000, "write_bytes": 4000},
        {"name": "add.5", "read_bytes": 8000, "write_bytes": 4000},
        {"name": "reduce.10", "read_bytes": 4004, "write_bytes": 4}]
    assert (t["eager"]["read_bytes"], t["eager"]["write_bytes"]) == (20004, 8004)
    assert t["fused"] == {"read_bytes": 12000, "write_bytes": 4, "kernels": [
        {"name": "add_reduce_fusion.12", "read_bytes": 12000, "write_bytes": 4}]}


def test_softmax_by_hand():
    # x is f32[8,16] (512 B), a row's max or sum f32[8] (32 B). Eager: max reads x and -inf
    # (516), writes 32; subtract reads x and the max (the broadcast is a view of 32 B),
    # writes 512; exp 512 -> 512; sum reads exp and 0 (516), writes 32; divide reads exp
    # and the sum (544), writes 512. Fused: one row kernel reads x once, writes the result.
    ex = xe.explore(softmax, np.ones((8, 16), np.float32))
    t = ex.traffic
    assert [(m.read_bytes, m.write_bytes) for m in t.eager] == [
        (516, 32), (544, 512), (512, 512), (516, 32), (544, 512)]
    assert [(m.read_bytes, m.write_bytes) for m in t.fused] == [(512, 512)]
    assert (t.eager_bytes, t.fused_bytes) == (4232, 1024)


def test_a_loop_that_cannot_fuse_away_its_inputs_by_hand():
    # tanh(x) * y + 1 on f32[10,10] (400 B): eager tanh 400 -> 400, multiply 800 -> 400,
    # add reads 400 and the constant 1 (a broadcast scalar: 4 B) -> 400. Fused: x and y in,
    # one result out.
    x = np.ones((10, 10), np.float32)
    t = xe.explore(loop, x, x).traffic.to_dict()
    assert [(o["read_bytes"], o["write_bytes"]) for o in t["eager"]["ops"]] == [
        (400, 400), (800, 400), (404, 400)]
    assert (t["fused"]["read_bytes"], t["fused"]["write_bytes"]) == (800, 400)


@pytest.mark.parametrize("backend", ["interpreter", "cpu"])
def test_the_same_on_every_backend(backend):
    x = np.ones((8, 16), np.float32)
    assert xe.explore(softmax, x, backend=backend).traffic.to_dict() == \
        xe.explore(softmax, x).traffic.to_dict()


def test_payload_shape_is_the_contracts():
    t = xe.explore(softmax, np.ones((4, 8), np.float32)).traffic.to_dict()
    json.dumps(t)
    assert set(t) == {"computed", "eager", "fused"} and t["computed"] is True
    assert set(t["eager"]) == {"read_bytes", "write_bytes", "ops"}
    assert set(t["fused"]) == {"read_bytes", "write_bytes", "kernels"}
    for side, key in (("eager", "ops"), ("fused", "kernels")):
        for item in t[side][key]:
            assert set(item) == {"name", "read_bytes", "write_bytes"}
            assert all(isinstance(item[k], int) for k in ("read_bytes", "write_bytes"))
        assert t[side]["read_bytes"] == sum(i["read_bytes"] for i in t[side][key])
