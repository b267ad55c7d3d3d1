"""Large arrays an exported module allocates, on huge pages where Linux gives them.

NumPy asks Linux for transparent huge pages for every array of 4 MiB or more
(`madvise(MADV_HUGEPAGE)`), where the system leaves them to be asked for ("madvise" in
/sys/kernel/mm/transparent_hugepage/enabled); Numba's allocator, which an exported module's
`np.empty` uses, does not: a 16 MiB output then spans 4096 pages, each its own TLB entry,
where NumPy's spans eight. `huge_pages(a)` asks as NumPy does, for an array the module
allocated (its outputs, its arena).
"""
from __future__ import annotations

import sys

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

__all__ = ["huge_pages"]

# NumPy's threshold, and Linux's constants (asm-generic/mman-common.h).
HUGE_PAGE_MIN_BYTES = 1 << 22
PAGE = 4096
MADV_HUGEPAGE = 14
LINUX = sys.platform.startswith("linux")


@intrinsic
def huge_pages(typingctx, array):
    """madvise(MADV_HUGEPAGE) over the whole pages of a C-contiguous array of 4 MiB or more,
    on Linux (nothing elsewhere); its result is ignored, as NumPy ignores it."""
    if not (isinstance(array, types.Array) and array.layout == "C"):
        return None

    def codegen(context, builder, signature, args):
        if not LINUX:
            return context.get_dummy_value()
        arr = context.make_array(signature.args[0])(context, builder, args[0])
        i64 = ir.IntType(64)
        size = builder.mul(arr.nitems, arr.itemsize)
        with builder.if_then(builder.icmp_signed(">=", size, i64(HUGE_PAGE_MIN_BYTES))):
            start = builder.ptrtoint(arr.data, i64)
            first = builder.and_(builder.add(start, i64(PAGE - 1)), i64(-PAGE))
            end = builder.and_(builder.add(start, size), i64(-PAGE))
            madvise = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.IntType(32), [
                    ir.IntType(8).as_pointer(), i64, ir.IntType(32)]), "madvise")
            builder.call(madvise, [builder.inttoptr(first, ir.IntType(8).as_pointer()),
                                   builder.sub(end, first), ir.IntType(32)(MADV_HUGEPAGE)])
        return context.get_dummy_value()

    return types.none(array), codegen
