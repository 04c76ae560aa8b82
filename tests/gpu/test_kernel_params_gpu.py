"""Kernels in their own parameter order, with size_t sizes, launched on the GPU: eager against a torch
reference at edge sizes, torch.compile, and the AOT plugin replayed as TensorRT launches it (its PTX rewritten
to TensorRT's argument layout) against eager, bit for bit."""

import pytest
import torch

import trt_kernels as ttk
from kernels import layernorm_spec, saxpy_spec, unique
from trt_kernels.testing import _standin as standin

no_standin = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")


@pytest.fixture(scope="module")
def layernorm():
    return ttk.cuda_kernel_op(unique("ttk_kparams_gpu"), layernorm_spec(arch_override=None))


@pytest.fixture(scope="module")
def saxpy():
    return ttk.cuda_kernel_op(unique("ttk_kparams_gpu"), saxpy_spec(arch_override=None))


def _ln_reference(x, w, b):
    m = x.mean(-1)
    r = torch.rsqrt(x.var(-1, unbiased=False) + 1e-5)
    return (x - m[..., None]) * r[..., None] * w + b, m.reshape(-1), r.reshape(-1)


@pytest.mark.parametrize("rows, cols", [(1, 1), (1, 7), (129, 33), (300, 256)])
def test_outputs_first_layernorm_matches_torch(layernorm, rows, cols):
    x = torch.randn(rows, cols, device="cuda")
    w, b = torch.randn(cols, device="cuda"), torch.randn(cols, device="cuda")
    for got, want in zip(layernorm(x, w, b), _ln_reference(x, w, b)):
        torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)


def test_outputs_first_layernorm_under_torch_compile(layernorm):
    x = torch.randn(37, 19, device="cuda")
    w, b = torch.randn(19, device="cuda"), torch.randn(19, device="cuda")
    f = torch.compile(lambda x, w, b: layernorm(x, w, b)[0] * 2, fullgraph=True)
    torch.testing.assert_close(f(x, w, b), _ln_reference(x, w, b)[0] * 2, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("n", [0, 1, 255, 1000, 4097])
def test_size_t_saxpy_matches_torch(saxpy, n):
    x = torch.randn(n, device="cuda")
    torch.testing.assert_close(saxpy(-0.75, x), -0.75 * x)


@no_standin
@pytest.mark.parametrize("which, make", [
    ("layernorm", lambda: (torch.randn(130, 48, device="cuda"), torch.randn(48, device="cuda"),
                           torch.randn(48, device="cuda"))),
    ("saxpy", lambda: (1.5, torch.randn(3001, device="cuda"))),
])
def test_the_rewritten_aot_ptx_replays_as_eager(request, which, make):
    from trt_kernels.testing import aot_replay, jit_replay

    op = request.getfixturevalue(which)
    args = make()
    res = aot_replay(op, *args)
    assert res.bitwise_equal, res.max_abs_diff()
    assert jit_replay(op, *args).bitwise_equal


def test_the_native_kernel_serves_kernels_in_their_own_order(saxpy, layernorm):
    from trt_kernels.eager import native
    from trt_kernels.library.definition import native_slot

    for op, args in ((saxpy, (0.5, torch.randn(1000, device="cuda"))),
                     (layernorm, (torch.randn(8, 32, device="cuda"), torch.randn(32, device="cuda"),
                                  torch.randn(32, device="cuda")))):
        name = op.default._schema.name
        slot = native_slot(name)
        if slot is None:
            pytest.skip("the native kernel is not built on this machine (trt-kernels doctor says why)")
        op(*args)  # the first call builds the launcher and hands it to the native kernel
        before = native.launches(slot)
        op(*args)
        assert native.launches(slot) == before + 1, name
