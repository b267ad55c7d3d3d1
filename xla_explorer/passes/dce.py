"""Dead code elimination: drop what the root does not need, and computations nobody calls."""
from __future__ import annotations

from ..ir.module import Computation, Module, post_order
from .base import Note, Pass, PassResult


def called_computations(module: Module) -> set[str]:
    """Names of the computations reachable from the entry through to_apply= and calls=."""
    seen: set[str] = set()
    todo = [module.entry]
    while todo:
        comp = todo.pop()
        for inst in comp.instructions:
            for key in ("to_apply", "calls"):
                name = inst.attr(key)
                if name and name not in seen:
                    seen.add(name)
                    todo.append(module.computation(name))
    return seen


class DCE(Pass):
    name = "dce"

    def run(self, module: Module) -> PassResult:
        entry = module.entry
        live = {id(i) for i in post_order([entry.root])}
        dead = [i for i in entry.instructions if id(i) not in live and i.opcode != "parameter"]
        notes = [Note(f"removed {i.name}: nothing uses its value", "unused", (i.name,))
                 for i in dead]
        if dead:
            dead_ids = {id(i) for i in dead}
            entry = Computation(entry.name, tuple(i for i in entry.instructions
                                                  if id(i) not in dead_ids))
            module = module.with_entry(entry)
        called = called_computations(module)
        unused = [c for c in module.computations if c.name not in called]
        if unused:
            notes += [Note(f"removed computation {c.name}: no instruction calls it",
                           "unused-computation", ()) for c in unused]
            module = module.replace(computations=tuple(c for c in module.computations
                                                       if c.name in called))
        return PassResult(module, bool(notes), tuple(notes))
