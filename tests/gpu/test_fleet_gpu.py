"""Engines for a fleet (issue 35) on the GPU: PTX compiled for sm_80, as a hardware-compatible engine embeds it,
is JIT-compiled by this GPU's driver and gives the same bits as the eager op (this GPU's own CUBIN), through
``aot_replay`` (the AOT plugin built as an engine build drives it, launched as TensorRT launches it)."""

import pytest
import torch

import trt_kernels as ttk
from kernels import sigmoid_spec, unique
from support import load_example
from trt_kernels.testing import _standin as standin

pytestmark = [
    pytest.mark.skipif(standin.unavailable_reason() is not None,
                       reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}"),
]


def test_every_replay_case_at_sm80_equals_eager_bit_for_bit():
    from trt_kernels.testing import aot_replay

    ex = load_example("aot_replay")
    seed = ex.load_seed_example()
    ex.declare_extra_ops(seed)
    failures, targets, count = [], {}, 0
    before = seed.trtp  # case 6's hook sets the module's trtp to the stand-in's: put back what it was
    try:
        for label, op, args, tactics, hook in ex.cases(seed):
            for t in tactics:
                res = aot_replay(op, *args, tactic=t, arch="sm_80", on_standin=hook)
                count += 1
                targets[label] = res.ptx_target
                if not res.bitwise_equal:
                    failures.append((label, t, res.max_abs_diff()))
    finally:
        seed.trtp = before
    assert count >= 28 and failures == []
    assert set(targets.values()) == {"sm_80"}, targets
    assert torch.cuda.get_device_capability() >= (8, 0)  # (a GPU of the fleet: the driver JIT-compiled sm_80 PTX)


def test_a_triton_kernel_for_sm80_equals_eager():
    pytest.importorskip("triton")
    from triton_kernels import declare_scale
    from trt_kernels.testing import aot_replay

    name = unique("ttk_fleet_tri")
    declare_scale(name, tactics=False)
    for dt in (torch.float32, torch.float16):
        x = torch.randn(3, 1000, device="cuda").to(dt)
        res = aot_replay(name, x, 0.5, arch="sm_80")
        assert res.ptx_target == "sm_80"
        assert res.bitwise_equal, res.max_abs_diff()
        # the default for this GPU: Triton's arch-specific target
        assert aot_replay(name, x, 0.5).ptx_target == "sm_90a" or torch.cuda.get_device_capability() != (9, 0)


def test_an_eager_launch_below_the_declared_minimum_is_refused():
    name = unique("ttk_fleet")
    ttk.cuda_kernel_op(name, sigmoid_spec(min_arch="sm_100"))
    x = torch.randn(100, device="cuda")
    if torch.cuda.get_device_capability() >= (10, 0):
        pytest.skip("this GPU meets the declared minimum")
    with pytest.raises(ttk.ArchError, match=f"{name}: declared with min_arch='sm_100', but CUDA device 0 is sm_"):
        ns, op = name.split("::")
        getattr(getattr(torch.ops, ns), op)(x)
