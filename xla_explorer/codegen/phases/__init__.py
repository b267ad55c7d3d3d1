"""Bodies for the ops that fill their result in a phase of their own (scatter, sort, scan),
written against the elemental core and a target's loops, so that every target runs them: the
CPU with its loop nests, CUDA inside one block with its block-stride loops."""
