"""Scalar defaults, tuple inputs and output shapes from scalar values, on the GPU: the ops of
examples/circular_pad.py against torch on fresh random inputs (sizes 1, not a multiple of the block,
empty), called positionally and by keyword, and their AOT plugins replayed as TensorRT launches them."""

import pytest
import torch

import trt_kernels as ttk
from support import load_example
from trt_kernels.testing import _standin as standin


@pytest.fixture(scope="module")
def ex():
    return load_example("circular_pad")


PADS = [(0, 0, 0, 0), (1, 1, 1, 1), (3, 0, 2, 9), (0, 257, 1, 0), (9, 9, 9, 9), (-1, 0, -2, 1)]
SHAPES = [(1, 1, 1), (2, 5, 7), (3, 17, 300), (0, 4, 4), (2, 0, 3), (1, 3, 0)]


# (cropping more than an axis holds gives a negative size: test_circular_pad_non_contiguous_and_errors)
CASES = [(shape, pads) for pads in PADS for shape in SHAPES
         if shape[1] + pads[2] + pads[3] >= 0 and shape[2] + pads[0] + pads[1] >= 0]


@pytest.mark.parametrize("shape, pads", CASES)
def test_circular_pad_matches_torch(ex, shape, pads):
    x = torch.randn(*shape, device="cuda")
    op = torch.ops.kern_pad.circular_pad2d
    want = ex.circular_pad_reference(x, pads)
    for y in (op(x, pads), op(x, list(pads)), op(x, pads=pads), op.default(x, pads)):
        assert y.shape == want.shape and y.dtype == torch.float32
        assert torch.equal(y, want)
    if shape[1] >= max(pads[2:]) and shape[2] >= max(pads[:2]) and min(pads) >= 0 and x.numel():
        torch.testing.assert_close(op(x, pads), torch.nn.functional.pad(x, pads, mode="circular"), rtol=0, atol=0)


def test_circular_pad_non_contiguous_and_errors(ex):
    op = torch.ops.kern_pad.circular_pad2d
    x = torch.randn(7, 5, 3, device="cuda").transpose(0, 2)  # (3, 5, 7), not contiguous
    assert torch.equal(op(x, (2, 1, 0, 3)), ex.circular_pad_reference(x.contiguous(), (2, 1, 0, 3)))
    with pytest.raises(ttk.InputError, match=r"scalar 'pads' takes 4 ints, got 3 values"):
        op(x, (1, 2, 3))
    with pytest.raises(ttk.InputError, match=r"scalar 'pads'\[3\] = 4294967296 does not fit a 32-bit C int"):
        op(x, (0, 0, 0, 2**32))
    with pytest.raises(ttk.InputError, match=r"= -3 is out of range for an output dimension"):
        op(x, (-10, 0, 0, 0))


@pytest.mark.parametrize("shape", [(1, 1), (33, 1000), (5, 257), (0, 64), (4, 0)])
def test_rms_norm_default_and_keyword(ex, shape):
    x, w = torch.randn(*shape, device="cuda"), torch.randn(shape[1], device="cuda")
    op = torch.ops.kern_pad.rms_norm
    for y, eps in [(op(x, w), 1e-6), (op(x, w, 0.5), 0.5), (op(x, w, eps=0.25), 0.25), (op(x, w, eps=1e-6), 1e-6),
                   (op.default(x, w), 1e-6)]:
        assert y.shape == x.shape
        torch.testing.assert_close(y, ex.rms_norm_reference(x, w, eps), rtol=1e-4, atol=1e-5)
    if x.numel():  # the default is the kernel's eps, not zero: an all-zero row stays finite
        z = torch.zeros_like(x)
        assert torch.equal(op(z, w), torch.zeros_like(x))


def test_compile_and_export_keep_the_default(ex):
    class M(torch.nn.Module):
        def forward(self, x, w):
            return torch.ops.kern_pad.rms_norm(torch.ops.kern_pad.circular_pad2d(x, (1, 2, 0, 0))[0], w)

    x, w = torch.randn(1, 6, 9, device="cuda"), torch.randn(12, device="cuda")
    want = ex.rms_norm_reference(ex.circular_pad_reference(x, (1, 2, 0, 0))[0], w)
    torch.testing.assert_close(torch.compile(M(), fullgraph=True)(x, w), want, rtol=1e-4, atol=1e-5)
    ep = torch.export.export(M(), (x, w))
    torch.testing.assert_close(ep.module()(x, w), want, rtol=1e-4, atol=1e-5)


@pytest.mark.skipif(standin.unavailable_reason() is not None,
                    reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")
@pytest.mark.parametrize("shape,pads", [((2, 5, 7), (1, 2, 3, 4)), ((1, 1, 1), (0, 0, 0, 0)),
                                        ((3, 17, 300), (0, 257, 1, 0)), ((0, 4, 4), (1, 1, 1, 1))])
def test_aot_replay_bakes_the_tuple(ex, shape, pads):
    from trt_kernels.testing import aot_replay

    x = torch.randn(*shape, device="cuda")
    res = aot_replay("kern_pad::circular_pad2d", x, pads)
    assert res.bitwise_equal, res
    assert res.extra_args[:4] == list(pads)
    assert res.outputs[0].shape == ex.circular_pad_reference(x, pads).shape


@pytest.mark.skipif(standin.unavailable_reason() is not None,
                    reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")
def test_aot_replay_bakes_the_default(ex):
    from trt_kernels.plugins.qdp import float_bits
    from trt_kernels.testing import aot_replay

    x, w = torch.randn(33, 1000, device="cuda"), torch.randn(1000, device="cuda")
    res = aot_replay("kern_pad::rms_norm", x, w)  # eps left out: the default is baked in
    assert res.bitwise_equal, res
    assert res.extra_args == [float_bits(1e-6), 1000]
    res = aot_replay("kern_pad::rms_norm", x, w, 0.5)
    assert res.bitwise_equal and res.extra_args == [float_bits(0.5), 1000]
