"""GPU tier for several type parameters and size checks: the mixed-precision RMSNorm (x: float16 /
bfloat16 / float32, w: float32) against a torch reference for every combination and edge sizes, the
size checks refusing before launching, AOT and JIT replay of every combination, and the Triton op
with the same declaration."""

import importlib.util

import pytest
import torch

import trt_kernels as ttk
from kernels import MIXED_COMBOS, add_spec, rmsnorm_mixed_spec, rmsnorm_reference, unique
from support import load_example
from trt_kernels.testing import _standin as standin

TOL = {torch.float16: 1e-2, torch.bfloat16: 6e-2, torch.float32: 1e-4}
# rows x D: one row, D of 1, D a non-multiple of the 128-thread block, D over the block, empty either way
SHAPES = [(1, 1), (1, 128), (7, 1), (3, 129), (33, 1000), (2, 3, 257), (0, 64), (5, 0)]


@pytest.fixture(scope="module")
def rms():
    name = unique("ttk_tpg")
    return ttk.cuda_kernel_op(name, rmsnorm_mixed_spec())


@pytest.fixture(scope="module")
def add():
    return ttk.cuda_kernel_op(unique("ttk_tpg"), add_spec())


def _inputs(shape, xdt, wdt):
    x = (torch.randn(shape, device="cuda") * 3).to(xdt)
    w = (torch.rand(shape[-1], device="cuda") + 0.5).to(wdt)
    return x, w


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS, ids=["fp16-fp32", "bf16-fp32", "fp32-fp32"])
def test_rmsnorm_every_combination_against_torch(rms, xdt, wdt, shape):
    x, w = _inputs(shape, xdt, wdt)
    y = rms(x, w, 1e-6)
    assert y.dtype == xdt and y.shape == x.shape
    if y.numel():
        torch.testing.assert_close(y.float(), rmsnorm_reference(x, w, 1e-6).float(), atol=TOL[xdt], rtol=TOL[xdt])


def test_each_combination_runs_its_own_instantiation(rms):
    """Same x values in float16 and bfloat16 (both exact): each dtype's kernel reads its own bytes."""
    x = torch.randint(-8, 8, (4, 64), device="cuda").float()
    w = torch.rand(64, device="cuda") + 0.5
    ref = rmsnorm_reference(x, w, 1e-6)
    for dt in (torch.float16, torch.bfloat16):
        torch.testing.assert_close(rms(x.to(dt), w, 1e-6).float(), ref, atol=TOL[dt], rtol=TOL[dt])


def test_undeclared_combination_and_mismatched_sizes_raise(rms):
    x = torch.randn(4, 64, device="cuda", dtype=torch.float16)
    with pytest.raises(ttk.InputError, match=r"input dtypes \(x: float16, w: float16\) are not a combination the "
                                             r"kernel declares \(x: float16, w: float32; x: bfloat16, w: float32; "
                                             r"x: float32, w: float32\)"):
        rms(x, torch.rand(64, device="cuda", dtype=torch.float16), 1e-6)
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 64 and w.shape\[0\] = 63 must be equal"):
        rms(x, torch.rand(63, device="cuda"), 1e-6)
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 64 and w.shape\[0\] = 65 must be equal"):
        rms(x, torch.rand(65, device="cuda"), 1e-6)
    # a non-contiguous x is copied first, then checked and launched as usual
    xt = torch.randn(64, 4, device="cuda", dtype=torch.float16).t()  # (4, 64), strides (1, 4)
    w = torch.rand(64, device="cuda") + 0.5
    torch.testing.assert_close(rms(xt, w, 1e-6).float(), rmsnorm_reference(xt, w, 1e-6).float(), atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("shape", [(1,), (255,), (257,), (33, 47), (0, 3)], ids=str)
def test_same_shape_add(add, shape):
    a, b = torch.randn(shape, device="cuda"), torch.randn(shape, device="cuda")
    torch.testing.assert_close(add(a, b), a + b)


def test_same_shape_mismatch_refused_before_launch(add):
    a = torch.randn(4, 5, device="cuda")
    torch.cuda.synchronize()
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(4, 5\) and 'b' \(4, 4\) must have equal shapes"):
        add(a, torch.randn(4, 4, device="cuda"))
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(4, 5\) and 'b' \(20,\) must have equal shapes"):
        add(a, torch.randn(20, device="cuda"))
    torch.cuda.synchronize()  # nothing was launched that could fault


def test_torch_compile_fullgraph_dynamic(rms):
    f = torch.compile(lambda x, w: rms(x, w, 1e-6) * 2, fullgraph=True, dynamic=True)
    for rows, d in [(3, 64), (9, 64), (5, 100)]:
        x, w = _inputs((rows, d), torch.bfloat16, torch.float32)
        torch.testing.assert_close(f(x, w).float(), (rmsnorm_reference(x, w, 1e-6) * 2).float(), atol=0.12, rtol=0.06)
    x, w = _inputs((3, 64), torch.bfloat16, torch.float32)
    with pytest.raises(Exception, match=r"must be equal"):
        f(x, w[:32])


def test_example_runs():
    ex = load_example("rmsnorm_mixed")
    assert ex.main() == 0


needs_standin = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                   reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")


@needs_standin
@pytest.mark.parametrize("shape", [(1, 1), (3, 129), (33, 1000)], ids=str)
@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS, ids=["fp16-fp32", "bf16-fp32", "fp32-fp32"])
def test_aot_replay_every_combination(rms, xdt, wdt, shape):
    """(An empty batch is left out: its grid is (0, 1, 1), which TensorRT's launch refuses, as the emulator
    models; eager returns the empty output without a launch, tested above.)"""
    from trt_kernels.testing import aot_replay

    x, w = _inputs(shape, xdt, wdt)
    res = aot_replay(rms, x, w, 1e-6)
    assert res.bitwise_equal, res
    assert res.outputs[0].dtype == xdt


@needs_standin
@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS[:2], ids=["fp16-fp32", "bf16-fp32"])
def test_jit_replay(rms, xdt, wdt):
    from trt_kernels.testing import jit_replay

    x, w = _inputs((5, 300), xdt, wdt)
    assert jit_replay(rms, x, w, 1e-6).bitwise_equal


@needs_standin
def test_replay_refuses_mismatched_sizes(rms):
    from trt_kernels.testing import aot_replay

    x, w = _inputs((4, 64), torch.float16, torch.float32)
    with pytest.raises(ttk.InputError, match="must be equal"):
        aot_replay(rms, x, w[:32], 1e-6)


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS, ids=["fp16-fp32", "bf16-fp32", "fp32-fp32"])
def test_triton_rmsnorm_mixed(xdt, wdt):
    import triton_kernels as tk

    name = f"ttk_tpg_tri::rms_{str(xdt)[6:]}"
    op = tk.declare_rmsnorm_mixed(name)
    for shape in [(1, 1), (7, 1000), (3, 2049), (0, 16)]:
        x, w = _inputs(shape, xdt, wdt)
        y = op(x, w, 1e-6)
        assert y.dtype == xdt
        if y.numel():
            torch.testing.assert_close(y.float(), tk.rmsnorm_ref(x, w, 1e-6).float(), atol=TOL[xdt] * 2,
                                       rtol=TOL[xdt] * 2)
    with pytest.raises(ttk.InputError, match="must be equal"):
        op(x, w[:-1] if w.numel() else torch.rand(3, device="cuda"), 1e-6)
