"""The steps of an unrolled loop on CUDA: one kernel, launched in a loop by the driver
(tests/codegen/test_unrolled_loops.py has the CPU's and the why)."""
from tests.codegen import test_unrolled_loops as loops


def test_the_steps_of_a_loop_are_one_kernel_launched_in_a_loop():
    loops.test_the_steps_of_a_loop_are_one_kernel_called_in_a_loop("cuda")
