"""The default pass pipeline, one pass a line, in the order XLA runs their namesakes: what
`Backend.passes` gives unless a target chooses its own."""
from __future__ import annotations

from .algsimp import AlgebraicSimplifier
from .autocluster import AutoCluster
from .base import Pass
from .buffer_assignment import AssignBuffers, ScratchBytes
from .cse import CSE
from .dce import DCE
from .fusion import Fusion
from .loop_bodies import InLoopBodies
from .loop_rolling import RollLoops
from .unused_outputs import UnusedOutputs
from .multi_output_fusion import MultiOutputFusion
from .schedule import Schedule


def default_passes(autocluster: bool = False, roll_loops: bool = True,
                   scratch: ScratchBytes | None = None) -> list[Pass]:
    """The passes in order; with `autocluster`, ops that cannot compile (np.unique, ...) run
    eagerly between compiled clusters instead of failing the compilation; without
    `roll_loops` (a target that compiles no while loop), unrolled loops stay unrolled;
    `scratch` is the target's word on the scratch space its kernels take."""
    return [
        # Local algebra first: x*1, transpose of transpose, folding small constants. It
        # exposes duplicates for CSE and leaves dead operands for DCE.
        AlgebraicSimplifier(),
        # Merge identical instructions (tracing repeats constants, broadcasts, converts).
        CSE(),
        # Drop what nothing uses: the leftovers of both passes above.
        DCE(),
        # A long unrolled loop becomes a while whose body is one step, before the passes
        # below would work through every copy. After the cleanups: CSE makes the steps'
        # shared constants one, so the steps are alike.
        *([RollLoops()] if roll_loops else []),
        # Under autocluster: mark what runs eagerly and what compiles together, before fusion.
        *([AutoCluster()] if autocluster else []),
        # Producer-into-consumer fusion (kLoop, kInput, kOutput) and row fusion: decides what
        # runs as one kernel. After the cleanups, so it sees the program it will run.
        # Fusion and the two passes after it also run on every while loop's body, as XLA
        # runs its passes on every computation: the explorer shows the step fused.
        InLoopBodies(Fusion()),
        # Join kernels that share work: a value computed in two kernels, or one large operand
        # read by two loops of the same shape, becomes one kernel with several outputs.
        InLoopBodies(MultiOutputFusion()),
        # A kernel writes only what is read: argmax's reduce keeps its running value in
        # registers instead of storing it for nobody (as XLA's DCE narrows fusions' outputs).
        InLoopBodies(UnusedOutputs()),
        # Order the kernels to lower peak memory, now that the kernels are known.
        Schedule(),
        # Last, an analysis of the scheduled program: which values live in memory between
        # kernels, when, and where in the one temporary arena (with the scratch space the
        # target's kernels take while they run). The module is unchanged.
        AssignBuffers(scratch),
    ]
