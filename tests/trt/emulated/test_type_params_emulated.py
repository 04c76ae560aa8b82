"""Several type parameters and size checks in real Torch-TensorRT over trt_kernels.testing's emulated
libnvinfer (marker ``trt_emulated``): the mixed-precision RMSNorm (x float16/bfloat16, w float32)
becomes an AOT plugin layer running the instantiation of its combination, with a static and a dynamic
batch; a model whose weight breaks the size check is refused while compiling. Emulated is not
TensorRT: see tests/trt/emulated/test_trt_emulated.py."""

import pytest
import torch

import emulated as emu
import trt_kernels as ttk
from kernels import rmsnorm_mixed_spec, rmsnorm_reference, unique

TOL = {torch.float16: 1e-2, torch.bfloat16: 6e-2}


@pytest.fixture(scope="module")
def rms(tt):
    return ttk.cuda_kernel_op(unique("ttk_tpe"), rmsnorm_mixed_spec())


class _RMSNorm(torch.nn.Module):
    def __init__(self, op, d):
        super().__init__()
        self.op = op
        self.register_buffer("w", torch.rand(d) + 0.5)  # float32 whatever the activations are

    def forward(self, x):
        return self.op(x, self.w, 1e-6)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("shape", [(1, 1), (7, 129), (33, 1000)], ids=str)
def test_mixed_precision_layer_runs_its_combination(tt, rms, dtype, shape):
    model = _RMSNorm(rms, shape[-1]).cuda()
    x = torch.randn(shape, device="cuda", dtype=dtype)
    trt_model = emu.compile_trt(tt, model, [x])
    kinds = [layer["kind"] for layer in emu.layers(trt_model)]
    assert kinds.count("aot_plugin") == 1 and set(kinds) <= {"aot_plugin", "constant"}, kinds  # the weight: a constant
    out = trt_model(x)
    assert out.dtype == dtype and out.shape == x.shape
    torch.testing.assert_close(out, model(x), atol=0, rtol=0)  # the same instantiation, the same bits
    torch.testing.assert_close(out.float(), rmsnorm_reference(x, model.w, 1e-6).float(), atol=TOL[dtype],
                               rtol=TOL[dtype])


def test_dynamic_batch(tt, rms):
    model = _RMSNorm(rms, 300).cuda()
    spec = tt[1].Input(min_shape=(1, 300), opt_shape=(8, 300), max_shape=(32, 300), dtype=torch.bfloat16)
    trt_model = emu.compile_trt(tt, model, [spec])
    for batch in (1, 5, 32):
        x = torch.randn(batch, 300, device="cuda", dtype=torch.bfloat16)
        torch.testing.assert_close(trt_model(x), model(x), atol=0, rtol=0)


def test_weight_of_the_wrong_length_is_refused_while_compiling(tt, rms):
    class Bad(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("w", torch.rand(64))

        def forward(self, x):
            return rms(x, self.w, 1e-6)

    with pytest.raises(Exception, match=r"x.shape\[-1\] = 128 and w.shape\[0\] = 64 must be equal"):
        emu.compile_trt(tt, Bad().cuda(), [torch.randn(4, 128, device="cuda", dtype=torch.float16)])
