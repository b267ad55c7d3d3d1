"""One spelling for bytes, seconds and ratios, wherever they are shown."""
from __future__ import annotations

import pytest

from xla_explorer.viz.format import (byte_count, byte_unit, bytes_text, exact_bytes_text,
                                     ratio_text, seconds_text, time_unit, verdict)


@pytest.mark.parametrize("n, text", [
    (0, "0 bytes"), (1023, "1023 bytes"), (1024, "1 KiB"), (1536, "1.5 KiB"),
    (1444, "1.41 KiB"), (1000 * 2**10, "1000 KiB"), (int(38.1 * 2**20), "38.1 MiB"),
    (5 * 2**30, "5 GiB"), (2000 * 2**30, "2000 GiB"),
])
def test_bytes_read_to_three_digits_in_the_unit_that_fits(n, text):
    assert bytes_text(n) == text


def test_exact_bytes_carry_the_size_beside_them_where_a_unit_reads_better():
    assert exact_bytes_text(512) == "512 bytes"
    assert exact_bytes_text(1536) == "1,536 bytes (1.5 KiB)"
    assert exact_bytes_text(3 * 2**20) == "3,145,728 bytes (3 MiB)"


def test_counts_of_bytes_line_up_in_columns():
    assert byte_count(1920) == "1,920 B"
    assert byte_count(1920, 8) == "   1,920 B"


@pytest.mark.parametrize("s, text", [
    (12e-6, "12.0 µs"), (0.0031416, "3.142 ms"), (0.999, "999.000 ms"), (1.25, "1.250 s"),
])
def test_seconds_in_the_unit_that_fits(s, text):
    assert seconds_text(s) == text


def test_units_for_an_axis():
    assert byte_unit(2**20 - 1) == ("KiB", 2**10) and byte_unit(10) == ("bytes", 1)
    assert time_unit(0.5e-3) == ("µs", 1e6) and time_unit(2e-3) == ("ms", 1e3)


def test_a_ratio_and_the_verdict_it_gives():
    assert ratio_text(2.3) == "2.30x" and ratio_text(2.34, 1) == "2.3x"
    assert verdict(2.3) == "2.30x faster" and verdict(0.82) == "slower (0.82x)"
    assert verdict(1.0) == "1.00x faster"
    assert verdict(0.5, lambda r: f"<b>{r}</b>") == "slower (<b>0.5</b>)"
