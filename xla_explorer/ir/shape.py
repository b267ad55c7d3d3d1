"""HLO shapes: an element type and static dimensions, or a tuple of shapes.

Layouts are not modelled: every array is row-major (XLA's default layout `{n-1,...,0}`),
so the printer omits layouts and the parser accepts and drops them.
"""
from __future__ import annotations

from dataclasses import dataclass
from math import prod

import numpy as np

# The element types the explorer supports, by their HLO names: every NumPy type but complex,
# datetime/timedelta and the non-numeric ones.
HLO_DTYPES: dict[str, np.dtype] = {
    "pred": np.dtype(np.bool_),
    "s8": np.dtype(np.int8),
    "s16": np.dtype(np.int16),
    "s32": np.dtype(np.int32),
    "s64": np.dtype(np.int64),
    "u8": np.dtype(np.uint8),
    "u16": np.dtype(np.uint16),
    "u32": np.dtype(np.uint32),
    "u64": np.dtype(np.uint64),
    "f16": np.dtype(np.float16),
    "f32": np.dtype(np.float32),
    "f64": np.dtype(np.float64),
}
_HLO_NAMES = {dt: name for name, dt in HLO_DTYPES.items()}
# The supported types as a reader names them, for error messages: "bool, int8, ... and float64".
_NUMPY_NAMES = [dt.name for dt in HLO_DTYPES.values()]
SUPPORTED_NAMES = ", ".join(_NUMPY_NAMES[:-1]) + " and " + _NUMPY_NAMES[-1]


def hlo_type_name(dtype: np.dtype) -> str:
    return _HLO_NAMES[np.dtype(dtype)]


def is_supported_dtype(dtype) -> bool:
    return np.dtype(dtype) in _HLO_NAMES


def kind(dtype: np.dtype) -> str:
    """'b' for pred, 'i' for signed and 'u' for unsigned integers, 'f' for floats (NumPy's
    dtype.kind)."""
    return np.dtype(dtype).kind


@dataclass(frozen=True)
class Shape:
    """An array shape: element type and static dimensions (row-major)."""

    dtype: np.dtype
    dims: tuple[int, ...]

    def __post_init__(self):
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "dims", tuple(int(d) for d in self.dims))

    @property
    def rank(self) -> int:
        return len(self.dims)

    @property
    def size(self) -> int:
        return prod(self.dims)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    @property
    def is_tuple(self) -> bool:
        return False

    def with_dtype(self, dtype) -> Shape:
        return Shape(dtype, self.dims)

    def with_dims(self, dims) -> Shape:
        return Shape(self.dtype, tuple(dims))

    def __str__(self) -> str:
        return f"{hlo_type_name(self.dtype)}[{','.join(map(str, self.dims))}]"


@dataclass(frozen=True)
class TupleShape:
    """The shape of a tuple: the entry root, a variadic reduce, a multi-output fusion."""

    elements: tuple[Shape | TupleShape, ...]

    @property
    def is_tuple(self) -> bool:
        return True

    @property
    def nbytes(self) -> int:
        return sum(e.nbytes for e in self.elements)

    def __str__(self) -> str:
        return "(" + ", ".join(map(str, self.elements)) + ")"


def scalar(dtype) -> Shape:
    return Shape(dtype, ())
