"""How every viewer and report spells bytes, seconds and ratios: one spelling each.

Bytes in the binary unit that shows them as a number of at least 1, to three significant
digits (`1.41 KiB`, `38.1 MiB`, `512 bytes`), or exactly with that size beside them; seconds
in the unit that fits (`12.0 µs`, `3.142 ms`, `1.250 s`); ratios as `2.30x`.
"""
from __future__ import annotations

from typing import Callable

UNITS = (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))


def byte_unit(n: float) -> tuple[str, int]:
    """The unit that shows `n` bytes as a number of at least 1: KiB for 1.4 KiB, not MiB."""
    for unit, size in UNITS:
        if n >= size:
            return unit, size
    return "bytes", 1


def bytes_text(n: float) -> str:
    """`1.41 KiB`, `38.1 MiB`, `512 bytes`: three significant digits in the unit that fits."""
    unit, size = byte_unit(n)
    if size == 1:
        return f"{int(n)} bytes"
    value = n / size
    return f"{value:.3g} {unit}" if value < 1000 else f"{value:.0f} {unit}"


def exact_bytes_text(n: int) -> str:
    """`1,536 bytes (1.5 KiB)`: every byte counted, and the size beside them where a unit
    reads better."""
    exact = f"{n:,} bytes"
    return f"{exact} ({bytes_text(n)})" if n >= 2**10 else exact


def byte_count(n: int, width: int = 0) -> str:
    """`1,920 B`, the count right-aligned in `width` characters: for columns of counts."""
    return f"{n:>{width},} B"


def time_unit(longest: float) -> tuple[str, float]:
    """The unit, and its scale from seconds, for times up to `longest` seconds (an axis)."""
    return ("µs", 1e6) if longest < 1e-3 else ("ms", 1e3)


def seconds_text(s: float) -> str:
    """`12.0 µs`, `3.142 ms`, `1.250 s`."""
    if s < 1e-3:
        return f"{s * 1e6:.1f} µs"
    return f"{s * 1e3:.3f} ms" if s < 1 else f"{s:.3f} s"


def ratio_text(r: float, decimals: int = 2) -> str:
    """`2.30x`."""
    return f"{r:.{decimals}f}x"


def arena_note(assigned_bytes: int, allocated_bytes: int) -> str:
    """The buffer assignment's arena against what the executable allocates for it, so that
    the two figures never stand apart unexplained. (On the CPU they are one figure unless a
    while loop's body needs room no gap has: the assignment places the products' scratch.)"""
    extra = allocated_bytes - assigned_bytes
    if extra <= 0:
        return f"the executable allocates this arena, {bytes_text(allocated_bytes)}, once"
    return (f"the executable allocates {bytes_text(allocated_bytes)} once: these "
            f"{bytes_text(assigned_bytes)}, then {bytes_text(extra)} of scratch space its "
            "kernels take while they run, placed after the assignment (a while loop's body, "
            "a reduction's partials on a GPU)")


def memory_verdict(eager_bytes: int, compiled_bytes: int) -> str:
    """How much memory the compiled program holds during a call against eager NumPy's peak,
    said plainly either way: `compiled holds 3.20x less memory than eager NumPy`, or
    `compiled holds more memory than eager NumPy (1.23x)`."""
    if compiled_bytes > eager_bytes:
        return ("compiled holds more memory than eager NumPy"
                + (f" ({ratio_text(compiled_bytes / eager_bytes)})" if eager_bytes else ""))
    if compiled_bytes == eager_bytes:
        return "compiled holds as much memory as eager NumPy"
    return (f"compiled holds {ratio_text(eager_bytes / compiled_bytes)} less memory than eager "
            "NumPy" if compiled_bytes else "compiled holds no memory beyond its inputs")


def verdict(speedup: float, shown: Callable[[float], str] = ratio_text) -> str:
    """How a compiled program compares: `2.31x faster`, or `slower (0.82x)`, never "0.82x
    faster"; `shown` spells the number (the static page marks it up)."""
    number = shown(speedup)
    return f"{number} faster" if speedup >= 1 else f"slower ({number})"
