"""NumPy on traced arrays: how each supported NumPy call lowers to HLO, split by kind as JAX
splits its NumPy.

    registry       the dispatch table, and the decorators that fill it
    dispatch       call_ufunc / call_function: NumPy's calls -> the table's rows
    util           helpers the kinds share; unsupported() and its suggestions
    elementwise    ufuncs and their decompositions
    elementwise_functions
                   the element-wise functions that are not ufuncs: where, clip, round, isin, ...
    types          astype, result_type, arithmetic between Python scalars
    reductions     sum, prod, max, min, mean, var, std, argmax, argmin, all, any, ufunc.reduce
    manipulation   reshape, transpose, broadcast_to, concatenate, stack, flip, pad, copy, ...
    rearranging    compositions of those: rot90, tile, repeat, roll, diff, insert, block, ...
    indexing       x[index] and x[index] = v; views written through
    creation       zeros_like & co.; np.zeros, np.arange, ... and np.array while tracing
    linalg         matmul, dot, einsum, norm
    lapack         np.linalg's solve, inv, cholesky, qr, eigh, svd, det, lstsq, pinv, ...:
                   library calls (custom-calls XLA hands to LAPACK)
    composed       convolve, correlate, polyval, cov, corrcoef, gradient, interp, trapezoid
    scans          cumsum, cumprod, nancumsum, nancumprod, ufunc.accumulate: reduce-window
                   over a growing window
    numeric        gcd, lcm, bitwise_count, nextafter, i0, angle; isposinf & co.; allclose,
                   array_equal, array_equiv
    flat_indexing  put, ix_
    sorting        sort, argsort, partition, argpartition, median, searchsorted
    quantiles      quantile, percentile (every method), nanquantile, nanpercentile
    opaque         custom calls: unique, nonzero, argwhere; autocluster's opaque calls
    eager_calls    what an eager op's HLO text names, and how the runtime runs it
    array_methods  the Tracer's protocols, indexing, astype and operators

Each lowering registers itself where it is defined (`@lowers(np.sum)`,
`@lowers_ufunc(np.sinh)`); importing this package imports every module, which fills the
table and sets the Tracer's NumPy methods. `xla_explorer.trace` imports it.
"""
from . import (array_methods, composed, creation, dispatch, eager_calls,  # noqa: F401
               elementwise, elementwise_functions, flat_indexing, indexing, lapack, linalg,
               manipulation, numeric, opaque, quantiles, rearranging, reductions, registry,
               scans, sorting, types, util)
