"""The HLO verifier: what every module must satisfy, checked after every pass that changes one.

Names are unique in the module; operands are defined before use; every opcode is in the op
table with the right number of operands of allowed element types; every instruction's declared
shape is the one its op's shape rule gives; called computations exist and take what they get.
"""
from __future__ import annotations

from ..errors import VerifyError
from .module import Computation, Instruction, Module
from .ops import OPS, Group, infer_shape
from .shape import Shape


def _fail(comp: Computation, inst: Instruction | None, message: str):
    where = f"{comp.name}/{inst.name}" if inst is not None else comp.name
    raise VerifyError(f"{where}: {message}")


def _check_types(comp, inst, row):
    if row.group in (Group.LEAF, Group.STRUCTURAL, Group.CALL, Group.NOT_COMPILABLE):
        return
    ops = inst.operands
    for o in ops:
        if not o.shape.is_tuple and o.dtype.kind not in row.kinds and row.group is not Group.REDUCE:
            _fail(comp, inst, f"{inst.opcode} does not take {o.shape} ({o.name})")
    if row.group in (Group.ELEMENTWISE, Group.COMPARE_SELECT):
        arrays = ops[1:] if inst.opcode == "select" else ops
        if inst.opcode == "select" and (ops[0].dtype.kind != "b" or ops[0].dims != inst.dims):
            _fail(comp, inst, "select's predicate must be a pred array of the result's shape")
        if inst.opcode != "convert" and len({(o.dims, o.dtype) for o in arrays}) > 1:
            _fail(comp, inst, "operands differ in shape or type: "
                              + ", ".join(f"{o.name}: {o.shape}" for o in arrays))


def _attrs_for_inference(inst: Instruction) -> dict:
    attrs = dict(inst.attrs)
    if not inst.shape.is_tuple:
        attrs["out_dims"] = inst.dims
        attrs["new_dtype"] = inst.dtype
    return attrs


def verify_computation(module: Module, comp: Computation, names: set[str]) -> None:
    defined: set[int] = set()
    numbers = []
    for inst in comp.instructions:
        if inst.name in names:
            _fail(comp, inst, "name is used twice in the module")
        names.add(inst.name)
        row = OPS.get(inst.opcode)
        if row is None:
            _fail(comp, inst, f"opcode {inst.opcode!r} is not in the op table")
        for o in inst.operands:
            if id(o) not in defined:
                _fail(comp, inst, f"operand {o.name} is not defined before use")
        if row.arity is not None and len(inst.operands) != row.arity:
            _fail(comp, inst, f"{inst.opcode} takes {row.arity} operands, has {len(inst.operands)}")
        if inst.opcode == "parameter":
            numbers.append(inst.parameter_number)
        if inst.opcode == "constant" and (inst.literal is None or inst.literal.shape != inst.dims
                                          or inst.literal.dtype != inst.dtype):
            _fail(comp, inst, "constant literal does not match its shape")
        _check_types(comp, inst, row)
        for key in ("to_apply", "calls"):
            callee = inst.attr(key)
            if callee is not None:
                try:
                    target = module.computation(callee)
                except KeyError:
                    _fail(comp, inst, f"calls {callee}, which is not in the module")
                want = len(inst.operands) if inst.opcode in ("call", "fusion") else (
                    2 * (len(inst.operands) // 2) if inst.opcode in ("reduce", "reduce-window") else None)
                if want is not None and len(target.parameters) != want:
                    _fail(comp, inst, f"{callee} takes {len(target.parameters)} parameters, "
                                      f"given {want}")
        if row.infer is not None and inst.opcode != "reduce-window":
            try:
                expected = infer_shape(inst.opcode, [o.shape for o in inst.operands],
                                       _attrs_for_inference(inst))
            except Exception as e:  # a malformed attribute or operand
                _fail(comp, inst, f"cannot work out its shape: {e!r}")
            if str(expected) != str(inst.shape):
                _fail(comp, inst, f"declared {inst.shape}, but its operands give {expected}")
        defined.add(id(inst))
    if sorted(numbers) != list(range(len(numbers))):
        _fail(comp, None, f"parameter numbers {sorted(numbers)} are not 0..{len(numbers) - 1}")


def verify(module: Module) -> Module:
    """Raise VerifyError on the first broken invariant; return the module when it holds."""
    names: set[str] = set()
    comp_names = [c.name for c in module.all_computations]
    if len(set(comp_names)) != len(comp_names):
        raise VerifyError(f"computation names repeat: {comp_names}")
    for comp in module.all_computations:
        verify_computation(module, comp, names)
    n_out = len(module.entry.root.shape.elements) if module.entry.root.shape.is_tuple else 1
    n_param = len(module.entry.parameters)
    for out, param in module.input_output_alias:
        if not (0 <= out < n_out and 0 <= param < n_param):
            raise VerifyError(f"input_output_alias {{{out}}}: ({param}) is out of range")
        if str(module.entry.parameters[param].shape) != str(_element(module.entry.root.shape, out)):
            raise VerifyError(f"aliased output {out} and parameter {param} differ in shape")
    return module


def _element(shape, index):
    return shape.elements[index] if shape.is_tuple else shape
