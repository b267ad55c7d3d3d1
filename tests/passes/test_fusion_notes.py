"""One note per fusion decision, even when a consumer is copied into two kernels.

A cheap consumer read by two kernels is copied into both, and its own producer is fused into
each copy. The student reads one decision about that producer and consumer, with the true
reason (the producer's only consumer is the consumer), not two contradicting sentences.
"""
from xla_explorer.passes.fusion import Fusion

from .hlo_pass_helpers import hlo, run_pass


def test_a_producer_of_a_copied_consumer_gets_one_note():
    _, result = run_pass(Fusion(), hlo("""\
x = f32[16] parameter(0)
m = f32[16] multiply(x, x)
a = f32[16] add(m, m)
r = f32[16] negate(a)
ROOT t = (f32[16], f32[16]) tuple(a, r)"""))
    fused = {i.name: [j.name for j in result.module.computation(i.attr("calls")).instructions]
             for i in result.module.entry.instructions if i.opcode == "fusion"}
    # The copy of a in r's kernel and a's own kernel each compute m: two kernels hold it.
    assert sum(any(n.split(".clone")[0] == "m" for n in names) for names in fused.values()) == 2
    about_m = [d for d in result.notes if d.producer == "m"]
    assert [(d.consumer, d.fused, d.reason) for d in about_m] == [
        ("a", True, "fused m into a: element-wise, single consumer")]
    # a itself is read by the root tuple besides r's kernel: that copy names its other reader.
    about_a = [d.reason for d in result.notes if d.producer == "a"]
    assert about_a == ["fused a into r: element-wise and cheap, so copied into this kernel "
                       "(t also reads it)"]
    pairs = [(d.producer, d.consumer) for d in result.notes if d.fused]
    assert len(pairs) == len(set(pairs))
