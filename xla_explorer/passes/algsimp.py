"""Algebraic simplification: local rewrites, each a row of RULES with its math beside it.

One walk in def-before-use order: an instruction's operands are already simplified when its
own rules are tried, and rules are retried on their result until none applies. A rewritten
instruction goes; what it used stays in place even if now unused, for DCE to remove and report.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..ir.module import Instruction, Module, root_last
from ..ir.ops import Group, in_group, op
from ..ir.shape import Shape
from .base import Note, Pass, PassResult
from .names import NameGen

# Constants up to this many elements are folded; bigger results stay as computations.
FOLD_LIMIT = 16


def scalar_value(x: Instruction):
    """The value every element of x has, if x is a constant or a broadcast of a scalar one."""
    if x.opcode == "broadcast" and x.operands[0].opcode == "constant" and x.operands[0].literal.ndim == 0:
        x = x.operands[0]
    if x.opcode == "constant" and x.literal.size and (x.literal == x.literal.flat[0]).all():
        return x.literal.flat[0]
    return None


def is_all(x: Instruction, v) -> bool:
    s = scalar_value(x)
    return s is not None and s == v


def _adds_nothing(x: Instruction) -> bool:
    """x is all zeros that leave every addend as it is: 0, or -0.0 for floats."""
    s = scalar_value(x)
    return s is not None and s == 0 and (x.dtype.kind != "f" or bool(np.signbit(s)))


@dataclass(frozen=True)
class Rule:
    name: str
    opcode: Optional[str]  # the opcode it looks at; None: any
    math: str  # what it means, as a student would write it
    apply: Callable  # (inst, make) -> replacement or None


def _operand_if(cond):
    def apply(i, make):
        return cond(i)
    return apply


def _compose_transpose(i, make):
    inner = i.operands[0]
    if inner.opcode != "transpose":
        return None
    p, q = inner.attr("dimensions"), i.attr("dimensions")
    perm = tuple(p[j] for j in q)
    return make("transpose", (inner.operands[0],), i.shape, [("dimensions", perm)])


def _compose_broadcast(i, make):
    inner = i.operands[0]
    if inner.opcode != "broadcast":
        return None
    d1, d2 = inner.attr("dimensions"), i.attr("dimensions")
    return make("broadcast", (inner.operands[0],), i.shape, [("dimensions", tuple(d2[d] for d in d1))])


def _dot_through_transpose(side: int):
    """dot(.., transpose(x, p), ..) -> dot(.., x, ..): the transposed operand's dimension d is
    x's p[d], so its batch and contracting dimensions are renamed through p. Only where x's
    free dimensions stay in order, since the result lists an operand's free dimensions in
    increasing order: always for a matrix, and for q @ k.T with batch dimensions."""
    prefix = ("lhs", "rhs")[side]

    def apply(i, make):
        t = i.operands[side]
        if t.opcode != "transpose":
            return None
        p = tuple(t.attr("dimensions"))
        keys = (f"{prefix}_batch_dims", f"{prefix}_contracting_dims")
        named = {key: tuple(i.attr(key, ())) for key in keys}
        free = [p[d] for d in range(len(p)) if all(d not in ds for ds in named.values())]
        if free != sorted(free):
            return None
        renamed = {key: tuple(p[d] for d in ds) for key, ds in named.items()}
        attrs = [(key, renamed.get(key, value)) for key, value in i.attrs]
        operands = list(i.operands)
        operands[side] = t.operands[0]
        return make("dot", tuple(operands), i.shape, attrs)

    return apply


def _identity_broadcast(i):
    x = i.operands[0]
    return x if x.dims == i.dims and tuple(i.attr("dimensions")) == tuple(range(len(i.dims))) else None


def _full_slice(i):
    x = i.operands[0]
    return x if all(a == 0 and b == n and c == 1 for (a, b, c), n in zip(i.attr("slice"), x.dims)) else None


def _fold(i, make):
    """Evaluate ops of constants: small results become literals, uniform ones a broadcast scalar."""
    if not in_group(i.opcode, Group.ELEMENTWISE, Group.COMPARE_SELECT, Group.DATA_MOVEMENT, Group.DOT):
        return None
    if i.opcode == "broadcast" or not i.operands or i.shape.is_tuple:
        return None
    if all(o.opcode == "constant" for o in i.operands) and i.shape.size <= FOLD_LIMIT:
        value = op(i.opcode).impl(i, [o.literal for o in i.operands], None)
        return make("constant", (), i.shape, [], literal=np.asarray(value, dtype=i.dtype).reshape(i.dims))
    if in_group(i.opcode, Group.ELEMENTWISE, Group.COMPARE_SELECT) and i.shape.size > 1:
        scalars = [scalar_value(o) for o in i.operands]
        if all(s is not None for s in scalars) and any(o.opcode == "broadcast" for o in i.operands):
            s = Shape(i.dtype, ())
            value = op(i.opcode).impl(i.replace(shape=s), [np.asarray(v) for v in scalars], None)
            c = make("constant", (), s, [], literal=np.asarray(value, dtype=i.dtype))
            return make("broadcast", (c,), i.shape, [("dimensions", ())])
    return None


RULES: list[Rule] = [
    # -0.0 + 0.0 is +0.0, so for floats only -0.0 is the identity of add (1 / (x + 0) keeps
    # its sign); x - 0.0 is x for every x, -0.0 included.
    Rule("add-zero",        "add",       "x + 0 -> x (floats: x + -0.0)", _operand_if(lambda i: i.operands[0] if _adds_nothing(i.operands[1]) else (i.operands[1] if _adds_nothing(i.operands[0]) else None))),
    Rule("sub-zero",        "subtract",  "x - 0 -> x",   _operand_if(lambda i: i.operands[0] if is_all(i.operands[1], 0) else None)),
    Rule("mul-one",         "multiply",  "x * 1 -> x",   _operand_if(lambda i: i.operands[0] if is_all(i.operands[1], 1) else (i.operands[1] if is_all(i.operands[0], 1) else None))),
    Rule("div-one",         "divide",    "x / 1 -> x",   _operand_if(lambda i: i.operands[0] if is_all(i.operands[1], 1) else None)),
    Rule("neg-neg",         "negate",    "-(-x) -> x",   _operand_if(lambda i: i.operands[0].operands[0] if i.operands[0].opcode == "negate" else None)),
    Rule("transpose-id",    "transpose", "transpose(x, identity) -> x", _operand_if(lambda i: i.operands[0] if tuple(i.attr("dimensions")) == tuple(range(len(i.dims))) else None)),
    Rule("transpose-transpose", "transpose", "transpose(transpose(x, p), q) -> transpose(x, p[q])", _compose_transpose),
    Rule("reshape-same",    "reshape",   "reshape(x) to x's shape -> x", _operand_if(lambda i: i.operands[0] if i.operands[0].dims == i.dims else None)),
    Rule("reshape-reshape", "reshape",   "reshape(reshape(x)) -> reshape(x)", lambda i, make: make("reshape", (i.operands[0].operands[0],), i.shape, []) if i.operands[0].opcode == "reshape" else None),
    Rule("broadcast-id",    "broadcast", "broadcast(x) to x's shape -> x", _operand_if(_identity_broadcast)),
    Rule("broadcast-broadcast", "broadcast", "broadcast(broadcast(x, d1), d2) -> broadcast(x, d2[d1])", _compose_broadcast),
    Rule("convert-same",    "convert",   "convert(x) to x's type -> x", _operand_if(lambda i: i.operands[0] if i.operands[0].dtype == i.dtype else None)),
    # XLA folds these in TransposeFolding: the product reads the operand in either layout,
    # so no kernel copies it first (q @ k.T).
    Rule("dot-transpose-lhs", "dot",     "dot(transpose(a, p), b), dims D of a^T -> dot(a, b), dims p[D]", _dot_through_transpose(0)),
    Rule("dot-transpose-rhs", "dot",     "dot(a, transpose(b, p)), dims D of b^T -> dot(a, b), dims p[D]", _dot_through_transpose(1)),
    Rule("slice-all",       "slice",     "x[all of it] -> x", _operand_if(_full_slice)),
    Rule("fold-constants",  None,        "op(constants) -> constant", _fold),
]


class AlgebraicSimplifier(Pass):
    name = "algsimp"

    def __init__(self, rules: list[Rule] | None = None):
        self.rules = RULES if rules is None else rules

    def run(self, module: Module) -> PassResult:
        fresh = NameGen(module)
        notes: list[Note] = []
        new: dict[int, Instruction] = {}  # id(original) -> what stands for it now
        out: list[Instruction] = []  # the new entry, in the old order
        made: set[int] = set()

        def make(opcode, operands, shape, attrs, literal=None):
            inst = Instruction(fresh(opcode), opcode, shape, tuple(operands), tuple(attrs),
                               current.metadata, None, literal)
            made.add(id(inst))
            out.append(inst)  # before `current`'s users, after its operands
            return inst

        for current in module.entry.instructions:
            ops = tuple(new[id(o)] for o in current.operands)
            same = all(a is b for a, b in zip(ops, current.operands))
            base = current if same else current.replace(operands=ops)
            inst = base
            for _ in range(16):  # a rule's result may match another rule
                fired = self._rewrite(inst, make)
                if fired is None:
                    break
                rule, result = fired
                notes.append(Note(f"{inst.name}: {rule.math} ({rule.name})", rule.name,
                                  (inst.name, result.name)))
                inst = result
            new[id(current)] = inst
            if inst is base:
                out.append(base)
            # else `current` is replaced: it goes. Its operands stay, for DCE to remove.
        if not notes:
            return PassResult(module, False)
        root = new[id(module.entry.root)]
        # Instructions a rule made and a later rule replaced were never part of the program.
        used = {id(root)}
        kept = []
        for inst in reversed(out):
            if id(inst) in made and id(inst) not in used:
                continue
            kept.append(inst)
            used.update(id(o) for o in inst.operands)
        entry = root_last(module.entry.name, kept[::-1], root)
        return PassResult(module.with_entry(entry), True, tuple(notes))

    def _rewrite(self, inst, make):
        for rule in self.rules:
            if rule.opcode is not None and rule.opcode != inst.opcode:
                continue
            result = rule.apply(inst, make)
            if result is not None and result is not inst:
                return rule, result
        return None
