"""AOT replay on the GPU: what aot_impl describes, launched as TensorRT does, equals eager bit for bit."""

import pytest
import torch

from support import load_example
from trt_kernels.testing import _standin as standin

pytestmark = [
    pytest.mark.skipif(standin.unavailable_reason() is not None,
                       reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}"),
]


@pytest.fixture(scope="module")
def replay_cases():
    ex = load_example("aot_replay")
    seed = ex.load_seed_example()
    ex.declare_extra_ops(seed)
    return ex, seed


def test_every_case_dtype_and_tactic(replay_cases):
    ex, seed = replay_cases
    from trt_kernels.testing import aot_replay

    failures = []
    count = 0
    cases = ex.cases(seed)
    expected = sum(len(c[3]) for c in cases)
    before = seed.trtp  # case 6's hook sets the module's trtp to the stand-in's: put back what it was
    try:
        for label, op, args, tactics, hook in cases:
            for t in tactics:
                res = aot_replay(op, *args, tactic=t, on_standin=hook)
                count += 1
                if t is not None:
                    assert res.tactic == t
                if not res.bitwise_equal:
                    failures.append((label, t, res.max_abs_diff()))
    finally:
        seed.trtp = before
    assert count == expected >= 28 and failures == []


def test_tactic_changes_the_launch(replay_cases):
    from trt_kernels.testing import aot_replay

    x = torch.randn(4097, device="cuda")
    blocks = {aot_replay("kern_replay::sigmoid_tactics", x, tactic=t).block[0] for t in (1, 2, 3)}
    assert blocks == {256, 128, 1024}


def test_scalar_travels_as_float_bits(replay_cases):
    from trt_kernels.plugins.qdp import float_bits
    from trt_kernels.testing import aot_replay

    x = torch.randn(300, device="cuda")
    res = aot_replay("kern_ex::scale", x, -1.25)
    assert res.extra_args == [float_bits(-1.25), 300] and res.bitwise_equal


def test_empty_input_launches_nothing(replay_cases):
    from trt_kernels.testing import aot_replay

    res = aot_replay("kern_ex::sigmoid", torch.randn(0, 4, device="cuda"))
    assert not res.launched and res.outputs[0].shape == (0, 4) and res.bitwise_equal


@pytest.mark.parametrize("case", ["sigmoid", "scale", "row_sum", "sin_cos", "repeat2"])
def test_jit_impl_through_nvidia_enqueue(replay_cases, case):
    """The JIT plugin (used by override-path ops without aot_fn, and as a fallback) run the way
    TensorRT runs it: NVIDIA's enqueue wraps the buffers in trtp.Tensor and calls our impl."""
    from trt_kernels.testing import jit_replay

    x = torch.randn(33, 47, device="cuda")
    args = {"sigmoid": (x,), "scale": (x, 0.625), "row_sum": (x,), "sin_cos": (x,), "repeat2": (x.reshape(-1),)}[case]
    res = jit_replay(f"kern_ex::{case}", *args)
    assert res.bitwise_equal, res.max_abs_diff()
