"""Arguments an exported module checks before it reads them.

An ahead-of-time module's entry unboxes a NumPy array as Numba's own wrapper does, which
trusts the caller's types: an array of another rank writes past the native array's shape,
one of another element type of the same size is read as the wrong numbers. The exported
function takes `CheckedArray`s instead, whose unboxing first asks the array itself (through
the Python C API, so it needs nothing but NumPy at run time) whether it is a C-contiguous
`ndarray` of the expected dtype and shape, and raises a `ValueError` naming the argument
when it is not. `plain(a)` then hands the kernels the plain C array they were compiled for.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.core.datamodel import models
from numba.core.imputils import impl_ret_borrowed
from numba.extending import NativeValue, intrinsic, register_model, unbox

__all__ = ["CheckedArray", "plain"]


class CheckedArray(types.Array):
    """A C-contiguous array argument of one dtype and shape, checked when it is unboxed;
    `argname` names it in the error."""

    def __init__(self, dtype, shape: tuple[int, ...], argname: str):
        self.expected_shape = tuple(int(d) for d in shape)
        self.argname = argname
        super().__init__(dtype, len(shape), "C",
                         name=f"checked({argname}: {dtype}{list(self.expected_shape)})")

    @property
    def key(self):
        return super().key + (self.expected_shape, self.argname)

    @property
    def plain(self) -> types.Array:
        return types.Array(self.dtype, self.ndim, "C")


register_model(CheckedArray)(models.ArrayModel)


def expected_text(typ: CheckedArray) -> str:
    """What the error says an argument must be: `a C-contiguous float32 array of shape (3, 4)`."""
    return (f"a C-contiguous {np.dtype(str(typ.dtype))} array of shape "
            f"{typ.expected_shape!r}")


@unbox(CheckedArray)
def _unbox_checked(typ, obj, c):
    builder, pyapi = c.builder, c.pyapi
    value = cgutils.alloca_once(builder, c.context.get_value_type(typ), zfill=True)
    failed = cgutils.alloca_once_value(builder, cgutils.true_bit)
    ok = _matches(typ, obj, c)
    with builder.if_else(ok) as (matched, mismatched):
        with matched:
            native = c.unbox(typ.plain, obj)
            builder.store(native.value, value)
            builder.store(native.is_error, failed)
        with mismatched:
            # PyErr_Format's %R shows what was given: its type, and its dtype and shape
            # where it has them (None where it has not).
            kind = pyapi.object_type(obj)
            dtype = _getattr_or_none(pyapi, obj, "dtype")
            shape = _getattr_or_none(pyapi, obj, "shape")
            # ValueError looked up in builtins: `pyapi.err_format("PyExc_ValueError", ...)`
            # names the C variable, whose address an ahead-of-time module links to where
            # the JIT links the class (Numba's own unboxing errors crash there so).
            builtins = pyapi.import_module(_text(pyapi, "builtins"))
            value_error = pyapi.object_getattr_string(builtins, "ValueError")
            pyapi.err_format(value_error,
                             f"run: argument {typ.argname} must be {expected_text(typ)}; "
                             "got %R with dtype %R and shape %R", kind, dtype, shape)
            for o in (kind, dtype, shape, value_error, builtins):
                pyapi.decref(o)
    return NativeValue(builder.load(value), is_error=builder.load(failed))


def _text(pyapi, text: str):
    """A C string constant in the module being built."""
    return pyapi.context.insert_const_string(pyapi.module, text)


def _getattr_or_none(pyapi, obj, name: str):
    """obj.name, or a new reference to None when obj has no such attribute (its error
    cleared)."""
    builder = pyapi.builder
    out = cgutils.alloca_once(builder, pyapi.pyobj)
    got = pyapi.object_getattr_string(obj, name)
    with builder.if_else(cgutils.is_null(builder, got)) as (missing, found):
        with missing:
            pyapi.err_clear()
            builder.store(pyapi.make_none(), out)
        with found:
            builder.store(got, out)
    return builder.load(out)


def _matches(typ: CheckedArray, obj, c):
    """Whether obj is an ndarray (or a subclass) of exactly typ's dtype and shape, and
    C-contiguous: an i1. Raises nothing; clears any error a lookup on a foreign object set."""
    builder, pyapi = c.builder, c.pyapi
    result = cgutils.alloca_once_value(builder, cgutils.false_bit)
    numpy = pyapi.import_module(_text(pyapi, "numpy"))
    with builder.if_then(cgutils.is_not_null(builder, numpy)):
        ndarray = pyapi.object_getattr_string(numpy, "ndarray")
        pyapi.decref(numpy)
        with builder.if_then(cgutils.is_not_null(builder, ndarray)):
            is_array = _isinstance(pyapi, obj, ndarray)
            pyapi.decref(ndarray)
            with builder.if_then(is_array):
                builder.store(_same_layout(typ, obj, c), result)
    pyapi.err_clear()
    return builder.load(result)


def _isinstance(pyapi, obj, cls):
    fnty = ir.FunctionType(ir.IntType(32), [pyapi.pyobj, pyapi.pyobj])
    fn = pyapi._get_function(fnty, name="PyObject_IsInstance")
    return pyapi.builder.icmp_signed("==", pyapi.builder.call(fn, [obj, cls]),
                                     ir.Constant(ir.IntType(32), 1))


def _same_layout(typ: CheckedArray, obj, c):
    """obj (an ndarray) has typ's dtype (`obj.dtype == "float32"`: native byte order),
    typ's shape (`obj.shape == (3, 4)`) and is C-contiguous: an i1."""
    builder, pyapi = c.builder, c.pyapi
    checks = []
    dtype = pyapi.object_getattr_string(obj, "dtype")
    name = pyapi.string_from_string(_text(pyapi, np.dtype(str(typ.dtype)).name))
    checks.append(_equal(pyapi, dtype, name))
    for o in (dtype, name):
        pyapi.decref(o)
    shape = pyapi.object_getattr_string(obj, "shape")
    dims = [pyapi.long_from_longlong(ir.Constant(ir.IntType(64), d))
            for d in typ.expected_shape]
    expected = pyapi.tuple_pack(dims)
    for d in dims:
        pyapi.decref(d)
    checks.append(_equal(pyapi, shape, expected))
    for o in (shape, expected):
        pyapi.decref(o)
    flags = pyapi.object_getattr_string(obj, "flags")
    contiguous = pyapi.object_getattr_string(flags, "c_contiguous")
    truth = pyapi.object_istrue(contiguous)
    checks.append(builder.icmp_signed("==", truth, ir.Constant(truth.type, 1)))
    for o in (flags, contiguous):
        pyapi.decref(o)
    out = cgutils.true_bit
    for check in checks:
        out = builder.and_(out, check)
    return out


def _equal(pyapi, a, b):
    """a == b as an i1 (False where either is NULL or the comparison fails)."""
    builder = pyapi.builder
    fnty = ir.FunctionType(ir.IntType(32), [pyapi.pyobj, pyapi.pyobj, ir.IntType(32)])
    fn = pyapi._get_function(fnty, name="PyObject_RichCompareBool")
    result = cgutils.alloca_once_value(builder, cgutils.false_bit)
    both = builder.and_(cgutils.is_not_null(builder, a), cgutils.is_not_null(builder, b))
    with builder.if_then(both):
        r = builder.call(fn, [a, b, ir.Constant(ir.IntType(32), 2)])  # Py_EQ
        builder.store(builder.icmp_signed("==", r, ir.Constant(r.type, 1)), result)
    return builder.load(result)


@intrinsic
def plain(typingctx, a):
    """A checked argument as the plain C array the kernels were compiled for."""
    if not isinstance(a, CheckedArray):
        return None

    def codegen(context, builder, signature, args):
        return impl_ret_borrowed(context, builder, signature.return_type, args[0])

    return a.plain(a), codegen
