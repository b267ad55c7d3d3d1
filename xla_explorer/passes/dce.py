"""Dead code elimination: drop what the root does not need, and computations nobody calls."""
from __future__ import annotations

from ..ir.module import Computation, Module, called_by, post_order
from .base import Note, Pass, PassResult


def called_computations(module: Module) -> set[str]:
    """Names of the computations reachable from the entry through to_apply=, calls=,
    condition= and body=."""
    return {c.name for c in called_by(module, module.entry.instructions)}


def without_dead(comp: Computation) -> tuple[Computation, list]:
    """`comp` without what its root does not need (parameters stay: they are its signature)."""
    live = {id(i) for i in post_order([comp.root])}
    dead = [i for i in comp.instructions if id(i) not in live and i.opcode != "parameter"]
    if not dead:
        return comp, []
    gone = {id(i) for i in dead}
    return Computation(comp.name, tuple(i for i in comp.instructions if id(i) not in gone)), dead


class DCE(Pass):
    name = "dce"

    def run(self, module: Module) -> PassResult:
        notes: list[Note] = []
        entry, dead = without_dead(module.entry)
        notes += [Note(f"removed {i.name}: nothing uses its value", "unused", (i.name,))
                  for i in dead]
        if dead:
            module = module.with_entry(entry)
        called = called_computations(module)
        unused = [c for c in module.computations if c.name not in called]
        notes += [Note(f"removed computation {c.name}: no instruction calls it",
                       "unused-computation", ()) for c in unused]
        comps = []
        for comp in module.computations:
            if comp.name not in called:
                continue
            comp, dead = without_dead(comp)
            notes += [Note(f"removed {i.name} from {comp.name}: nothing uses its value", "unused",
                           (i.name,)) for i in dead]
            comps.append(comp)
        if not notes:
            return PassResult(module, False)
        return PassResult(module.replace(computations=tuple(comps)), True, tuple(notes))
