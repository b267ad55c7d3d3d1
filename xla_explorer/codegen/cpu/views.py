"""`arena_view`: a buffer of the arena as the array its kernels take, made in a few
instructions.

The CPU driver names each temporary as a view of the arena's bytes. Spelt in NumPy
(`arena[64:320].view(np.float32).reshape((8, 8))`), a program's first compile in a process
also compiles Numba's implementations of `view` and `reshape` for it: about 0.35 s, most of
what a driver of a dozen lines costs (docs/performance.md). The view needs none of their
checks: buffer assignment placed the buffer, aligned, inside the arena. So it is built
directly, a C-contiguous array over the arena's memory at an offset, as Numba builds an array
from a pointer.
"""
from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ..scalar import contiguous_view

__all__ = ["arena_view", "copy_into", "flat"]


@intrinsic
def arena_view(typingctx, arena, offset, shape, dtype):
    """The C-contiguous array of type `dtype` and shape `shape` (a tuple of ints, () for a
    scalar's 0-d array) whose first
    element is `offset` bytes into `arena` (a C-contiguous uint8 array), sharing its memory
    and keeping it alive. The caller vouches that it fits and is aligned."""
    if not (isinstance(arena, types.Array) and arena.dtype == types.uint8
            and arena.layout == "C" and isinstance(offset, types.Integer)
            and isinstance(shape, types.BaseTuple)
            and all(isinstance(d, types.Integer) for d in shape)
            and isinstance(dtype, (types.NumberClass, types.DType))):
        return None
    element = dtype.dtype if isinstance(dtype, types.DType) else dtype.instance_type
    result = types.Array(element, len(shape), "C")

    def codegen(context, builder, signature, args):
        arena_t, offset_t, shape_t = signature.args[:3]
        parent = context.make_array(arena_t)(context, builder, args[0])
        start = context.cast(builder, args[1], offset_t, types.intp)
        dims = [context.cast(builder, builder.extract_value(args[2], k), shape_t[k], types.intp)
                for k in range(len(shape_t))]
        data = builder.bitcast(builder.gep(parent.data, [start]),
                               context.get_data_type(element).as_pointer())
        return contiguous_view(context, builder, result, data, dims, parent)

    return result(arena, offset, shape, dtype), codegen


@intrinsic
def flat(typingctx, array):
    """A C-contiguous array of any rank (0 included) as the 1-d array of its elements, the
    same memory: what `reshape(-1)` gives, without compiling `reshape` for each type."""
    if not (isinstance(array, types.Array) and array.layout == "C"):
        return None
    result = types.Array(array.dtype, 1, "C")

    def codegen(context, builder, signature, args):
        src = context.make_array(signature.args[0])(context, builder, args[0])
        size = context.get_constant(types.intp, 1)
        for d in cgutils.unpack_tuple(builder, src.shape, signature.args[0].ndim):
            size = builder.mul(size, d)
        return contiguous_view(context, builder, result, src.data, [size], src)

    return result(array), codegen


@njit(cache=True)
def copy_into(dst, src):
    """dst's elements := src's (arrays of one shape and type, dst C-contiguous). A src laid
    out otherwise (a loop's initial state given as a strided view) is copied contiguous
    first; a C-contiguous one is read where it is."""
    d, s = flat(dst), flat(np.ascontiguousarray(src))
    for k in range(s.size):
        d[k] = s[k]
