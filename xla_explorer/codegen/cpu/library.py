"""A library call's kernel on the CPU: its buffers reshaped to one batch axis, one call of
the routine codegen/linalg.py holds for it, and its status turned into the user's error.

XLA runs a LAPACK custom-call as a thunk of its own that calls the library; this kernel is
that thunk. The routine is compiled once per element type for every program; the kernel,
a few lines, is the program's own, so the error it raises names the function and the line
of the user's source (`xla_explorer.errors.LinAlgError`, which is NumPy's LinAlgError).
"""
from __future__ import annotations

from math import prod

from ...errors import UnsupportedOpError
from ...ir.library import config_of, library_call, shape_changed
from ...ir.module import Instruction
from ..linalg import FAILED, NONFINITE, SHAPE
from ..writer import KernelSource, tuple_text

# target -> the routine's name in codegen/linalg.py, and the options it takes from the
# call's backend_config, in order.
ROUTINES = {
    "linalg.solve": ("solve", ()),
    "linalg.inv": ("inv", ()),
    "linalg.cholesky": ("cholesky", ()),
    "linalg.qr": ("qr", ()),
    "linalg.eigh": ("eigh", ()),
    "linalg.eigvalsh": ("eigvalsh", ()),
    "linalg.svd": ("svd", ("full_matrices",)),
    "linalg.svdvals": ("svdvals", ()),
    "linalg.det": ("det", ()),
    "linalg.slogdet": ("slogdet", ()),
    "linalg.lstsq": ("lstsq", ("rcond",)),
}

NONFINITE_WHY = ("its input holds NaN or inf, which the compiled LAPACK bindings (Numba's "
                 "np.linalg) refuse; NumPy's LAPACK returns NaN there (or raises)")


def emit_library_call(inst: Instruction, name: str) -> KernelSource:
    """The kernel `name(p0, ..., out0, ...)` running library call `inst`."""
    call = library_call(inst)
    target = str(inst.attr("custom_call_target"))
    if call is None or target not in ROUTINES:
        raise UnsupportedOpError(f"the cpu backend has no routine for {target} ({inst.name})",
                                 op=target)
    routine, options = ROUTINES[target]
    outputs = inst.shape.elements if inst.shape.is_tuple else (inst.shape,)
    first = inst.operands[0].dims
    if target == "linalg.lstsq":  # one problem, no batch; its rank a 1-element array
        lead: tuple[int, ...] = ()
        views = [f"contiguous(p{k})" for k in range(len(inst.operands))]
        views += [f"out{k}" if s.dims else f"out{k}.reshape((1,))"
                  for k, s in enumerate(outputs)]
        batch = 1
    else:
        lead = first[:-2]
        batch = prod(lead)
        views = [f"contiguous(p{k}).reshape({tuple_text((batch,) + o.dims[len(lead):])})"
                 for k, o in enumerate(inst.operands)]
        views += [f"out{k}.reshape({tuple_text((batch,) + s.dims[len(lead):])})"
                  for k, s in enumerate(outputs)]
    config = config_of(inst)
    views += [repr(config[o]) for o in options]
    md = inst.metadata
    where = (repr(call.function), repr(md.source_file or None), repr(md.source_line or None))
    fn = f"lapack_{routine}"
    args = [f"p{k}" for k in range(len(inst.operands))] + [f"out{k}" for k in range(len(outputs))]
    batch_words = f", over a batch of {batch}" if lead else ""
    lines = [
        f"from xla_explorer.codegen.linalg import {routine} as {fn}",
        "from xla_explorer.errors import LinAlgError",
        "",
        "",
        "@njit(cache=True)",
        f"def {name}({', '.join(args)}):",
        f'    """{inst.name}: {call.function}, a library call (LAPACK {call.routines}: '
        f"{call.how}), run by codegen/linalg.py's {routine}{batch_words}, which is compiled "
        'once per element type, not per program."""',
        f"    status = {fn}({', '.join(views)})",
        f"    if status == {NONFINITE}:",
        f"        raise LinAlgError({call.function + ': ' + NONFINITE_WHY!r}, {', '.join(where)}, "
        "None)",
        f"    if status == {FAILED}:",
        f"        raise LinAlgError({call.function + ': ' + (call.failure or 'LAPACK failed')!r}, "
        f"{', '.join(where)}, None)",
    ]
    if call.value_shaped:
        lines += [
            f"    if status == {SHAPE}:",
            f"        raise ValueError({shape_changed(call.function, md.source_line)!r})",
        ]
    return KernelSource(name, inst.name, "\n".join(lines) + "\n", len(inst.operands),
                        len(outputs), False)

