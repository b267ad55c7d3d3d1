"""Rooms stay small: no module of the package over 600 lines, so a reader finds one idea a
file (XLA keeps one kernel shape a file). Tables are the exception, named here with why."""
from __future__ import annotations

from pathlib import Path

import xla_explorer

LIMIT = 600
PACKAGE = Path(xla_explorer.__file__).parent

# Modules that are tables, a row an entry: splitting them would only scatter the rows.
TABLES = {
    "ir/ops.py": "the op table: one row (arity, types, shape rule, evaluator) per HLO opcode",
}


def line_counts() -> dict[str, int]:
    return {p.relative_to(PACKAGE).as_posix(): len(p.read_text().splitlines())
            for p in PACKAGE.rglob("*.py")}


def test_no_module_over_the_limit_but_the_tables():
    counts = line_counts()
    assert "codegen/gemm.py" in counts  # the walk found the package's modules
    over = {name: n for name, n in counts.items() if n > LIMIT and name not in TABLES}
    assert over == {}, f"split these into rooms of at most {LIMIT} lines: {over}"


def test_every_named_table_exists_and_is_why_it_is_named():
    counts = line_counts()
    assert set(TABLES) <= set(counts)
    # A table that shrank under the limit no longer needs its exception.
    assert [name for name in TABLES if counts[name] <= LIMIT] == []
