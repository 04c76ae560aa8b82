"""64-bit integer scalars in real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer (marker
``trt_emulated``): a value that fits TensorRT's 32-bit AOT extra arguments becomes an AOT plugin layer (its PTX
narrowed), a value over 2**31 a JIT plugin layer that launches the exact value, never a truncated one; both
engines' outputs are the eager op's, bit for bit, on fresh inputs. Emulated is not TensorRT: see
tests/trt/emulated/test_trt_emulated.py."""

import logging

import pytest
import torch

import emulated as emu
import trt_kernels as ttk
from kernels import unique

BIG = 2**40 + 12345
OFFSET = r"""
#include <stdint.h>
extern "C" __global__ void add_offset(const float* x, long long offset, uint64_t seed, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)(offset % 1000) + (float)(seed % 7);
}
"""


@pytest.fixture(scope="module")
def add_offset(tt):
    return ttk.cuda_kernel_op(unique("ttk_s64_emu"), ttk.KernelSpec(
        kernel_source=OFFSET, kernel_name="add_offset",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int, ctype="long long"),
                ttk.ScalarInput("seed", int, ctype="uint64_t")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
        geometry=ttk.Elementwise(block=(128,))))


class _Offset(torch.nn.Module):
    def __init__(self, op, offset, seed):
        super().__init__()
        self.op, self.offset, self.seed = op, offset, seed

    def forward(self, x):
        return self.op(x, self.offset, self.seed)


def _reference(x, offset, seed):
    r = abs(offset) % 1000
    return x + float(-r if offset < 0 else r) + float(seed % 7)


@pytest.mark.parametrize("offset, seed, kind", [
    (123, 2**32 - 1, "aot_plugin"),  # fits 32 bits of each type's signedness: baked into the AOT launch
    (-(2**31), 2**31, "aot_plugin"),
    (BIG, 5, "jit_plugin"),  # over 2**31: the converter gives the layer to the JIT impl
    (-BIG, 2**63 - 1, "jit_plugin"),
    (7, 2**32, "jit_plugin"),
])
def test_the_layer_is_aot_where_the_value_fits_and_jit_where_it_does_not(tt, add_offset, caplog, offset, seed, kind):
    model = _Offset(add_offset, offset, seed)
    x = torch.randn(1000, device="cuda")
    with caplog.at_level(logging.WARNING, logger="trt_kernels"):
        trt_model = emu.compile_trt(tt, model, [x])
    layers = emu.layers(trt_model)
    assert [layer["kind"] for layer in layers] == [kind], layers
    jit_notes = [r.getMessage() for r in caplog.records if "added with the JIT impl (aot=False)" in r.getMessage()]
    assert bool(jit_notes) == (kind == "jit_plugin"), jit_notes
    for n in (1000,):  # the engine's static shape, fresh inputs each time
        for _ in range(3):
            x = torch.randn(n, device="cuda")
            with torch.no_grad():
                out = trt_model(x)
            assert torch.equal(out, model(x)) and torch.equal(out, _reference(x, offset, seed))


def test_a_dynamic_batch_with_a_value_over_2_31(tt, add_offset):
    model = _Offset(add_offset, -BIG, 2**62 + 9)
    spec = tt[1].Input(min_shape=(1,), opt_shape=(257,), max_shape=(4097,), dtype=torch.float32, name="x")
    trt_model = emu.compile_trt(tt, model, [spec])
    assert [layer["kind"] for layer in emu.layers(trt_model)] == ["jit_plugin"]
    for n in (1, 127, 4097):
        x = torch.randn(n, device="cuda")
        with torch.no_grad():
            assert torch.equal(trt_model(x), _reference(x, -BIG, 2**62 + 9))
