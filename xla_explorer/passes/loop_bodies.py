"""A pass run on the entry computation and on every while loop's body, as XLA runs its passes
on every computation of a module.

The fusion passes look at one computation, the entry; a while loop's body (`xe.fori_loop`'s,
or a loop `roll-loops` rolled) is a computation of its own that runs once a step. Unwrapped,
the explorer would show the loop's step unfused though the CPU backend compiles it fused (it
compiles the body as a program of its own, through the same passes). `InLoopBodies(pass)`
runs the pass on the entry, then on each body as if it were an entry (a loop in a body too),
and puts the body it gives back in its place.
"""
from __future__ import annotations

from ..ir.module import Computation, Module
from .base import Pass, PassResult


class InLoopBodies(Pass):
    """`inner` on the entry and on every while body; its name and notes, all of them."""

    def __init__(self, inner: Pass):
        self.inner = inner
        self.name = inner.name

    def run(self, module: Module) -> PassResult:
        result = self.inner.run(module)
        module, changed, notes = result.module, result.changed, list(result.notes)
        done: set[str] = set()
        for inst in module.entry.instructions:
            name = inst.attr("body") if inst.opcode == "while" else None
            if name is None or name in done:
                continue
            done.add(name)
            body = module.computation(name)
            # The body as a module's entry; the rest of the module beside it, so that the
            # names the pass makes are new in the whole module.
            others = tuple(c for c in module.computations if c is not body)
            sub = self.run(Module(module.name, body, others + (module.entry,)))
            notes += sub.notes
            if not sub.changed:
                continue
            changed = True
            # The pass's computations (a fusion's, new), then the body, after what it calls.
            comps = tuple(c for c in sub.module.computations if c is not module.entry)
            new_body = Computation(name, sub.module.entry.instructions)
            module = module.replace(computations=comps + (new_body,))
        return PassResult(module, changed, tuple(notes), result.artifact)
