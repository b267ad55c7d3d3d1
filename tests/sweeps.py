"""Whether this run wants the deep sweeps (`make test-deep`), for the generators of the largest
parametrisations: where the marker expression leaves them out (`-m "not deep"`), the generators
leave out the deep cases too, instead of making tens of thousands of items for pytest to
deselect (seconds of collection in every pytest-xdist worker). tests/conftest.py sets it."""

WANTED = True


def keep(deep: bool) -> bool:
    """Whether to generate a case, deep or not."""
    return WANTED or not deep
