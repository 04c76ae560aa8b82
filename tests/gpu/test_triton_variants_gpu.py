"""Triton kernels whose launcher computes its config per call, declared as written: BLOCK_SIZE and
num_warps from the row width (Triton's softmax tutorial), @triton.autotune over @triton.heuristics. Eager
against torch on fresh random inputs at widths on both sides of each variant, torch.compile, and
TensorRT's JIT impl (the variant each call's sizes select) through NVIDIA's enqueue, bit for bit."""

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")

import triton_kernels as tk  # noqa: E402
from kernels import unique  # noqa: E402
from trt_kernels.testing import _standin as standin  # noqa: E402

TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}


@pytest.fixture(scope="module")
def softmax():
    return tk.declare_row_softmax(unique("tri_var_gpu"))


@pytest.fixture(scope="module")
def tuned():
    return tk.declare_tuned_axpb(unique("tri_var_gpu"))


@pytest.mark.parametrize("dtype", tk.HALF, ids=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("rows, cols", [(1, 1), (3, 7), (64, 1000), (5, 1500), (17, 2048), (4, 5000)])
def test_softmax_block_from_the_row_width(softmax, rows, cols, dtype):
    x = torch.randn(rows, cols, device="cuda", dtype=dtype)
    rtol, atol = TOL[dtype]
    torch.testing.assert_close(softmax(x), torch.softmax(x.float(), -1).to(dtype), rtol=rtol, atol=atol)


def test_softmax_under_torch_compile(softmax):
    f = torch.compile(lambda x: softmax(x) * 2, fullgraph=True)
    for cols in (100, 3000):
        x = torch.randn(9, cols, device="cuda")
        torch.testing.assert_close(f(x), torch.softmax(x, -1) * 2)


@pytest.mark.parametrize("n", [1, 1000, 1024, 4096, 100_003])
def test_autotuned_kernel_with_a_heuristic(tuned, n):
    x = torch.randn(n, device="cuda")
    torch.testing.assert_close(tuned(x, 1.5, -0.25), 1.5 * x - 0.25)
    torch.testing.assert_close(tuned(x, 2.0, 0.5), 2.0 * x + 0.5)  # the tuned choice, from memory


@pytest.mark.skipif(standin.unavailable_reason() is not None,
                    reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")
def test_the_jit_plugin_launches_the_variant_of_each_call(softmax, tuned):
    from trt_kernels.testing import jit_replay

    for cols in (7, 1500):
        assert jit_replay(softmax, torch.randn(6, cols, device="cuda")).bitwise_equal
    assert jit_replay(tuned, torch.randn(5000, device="cuda"), 1.5, 2.0).bitwise_equal
