"""64-bit integer scalars (``ScalarInput(name, int, ctype="long long" / "uint64_t" / "int64_t")``) on the GPU:
kernels whose results depend on every bit of the value, against torch references on fresh random inputs at edge
sizes (empty, 1, not a multiple of the block), through torch.compile, torch.export and a CUDA graph, the native
kernel, and the TensorRT plugins replayed as TensorRT launches them (AOT where the value fits the 32-bit extra
arguments, refused where it does not; the JIT plugin exact for any value)."""

import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from trt_kernels.testing import _standin as standin

no_standin = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")

BIG = 2**40 + 12345
SIZES = [0, 1, 127, 128, 1000, 4097]

# out = x + (offset % 1000) + (seed % 7): the low digits of a value over 2**31 (a truncated one differs)
OFFSET = r"""
#include <stdint.h>
extern "C" __global__ void add_offset(const float* x, long long offset, uint64_t seed, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)(offset % 1000) + (float)(seed % 7);
}
"""

# 64-bit index arithmetic: out[i] = (base + i * stride) % 1000003, exact only in 64 bits (the multiply is an
# integer one; 0.0f * like[i] only gives the kernel an input)
AFFINE = r"""
#include <stdint.h>
__global__ void affine_index(float* out, int64_t base, const float* like, int64_t stride, size_t n) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = (float)((base + (int64_t)i * stride) % 1000003) + 0.0f * like[i];
}
"""

# the top byte of a uint64 seed and its bits over 2**32 (additions only: no multiply-add to contract)
SEED = r"""
#include <stdint.h>
extern "C" __global__ void seed_bits(const float* x, uint64_t seed, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)((seed >> 56) & 0xFF) + (float)((seed >> 32) & 0xFFFF);
}
"""


def _c_mod(a: int, m: int) -> int:
    """C's ``a % m`` (truncating toward zero), as the kernel computes it."""
    r = abs(a) % m
    return -r if a < 0 else r


@pytest.fixture(scope="module")
def add_offset():
    return ttk.cuda_kernel_op(unique("ttk_s64_gpu"), ttk.KernelSpec(
        kernel_source=OFFSET, kernel_name="add_offset",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int, ctype="long long"),
                ttk.ScalarInput("seed", int, ctype="uint64_t")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
        geometry=ttk.Elementwise(block=(128,))))


@pytest.fixture(scope="module")
def affine():
    # the kernel's own order (out, base, like, stride, n), matched by name
    return ttk.cuda_kernel_op(unique("ttk_s64_gpu"), ttk.KernelSpec(
        kernel_source=AFFINE, kernel_name="affine_index",
        inputs=[ttk.InputDecl("like"), ttk.ScalarInput("base", int, ctype="int64_t"),
                ttk.ScalarInput("stride", int, ctype="int64_t")],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("like"))],
        extras=[ttk.SizeArg("n", ttk.Numel("like"), "size_t")], geometry=ttk.Elementwise(block=(256,))))


@pytest.fixture(scope="module")
def seed_bits():
    return ttk.cuda_kernel_op(unique("ttk_s64_gpu"), ttk.KernelSpec(
        kernel_source=SEED, kernel_name="seed_bits",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("seed", int, ctype="uint64_t", default=2**63 - 1)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
        geometry=ttk.Elementwise(block=(128,))))


def offset_reference(x, offset, seed):
    return x + float(_c_mod(offset, 1000)) + float(seed % 7)


def affine_reference(like, base, stride):
    i = torch.arange(like.numel(), dtype=torch.int64, device=like.device)
    return torch.fmod(base + i * stride, 1000003).to(torch.float32).reshape(like.shape)  # C's %: truncating


def seed_reference(x, seed):
    return x + float((seed >> 56) & 0xFF) + float((seed >> 32) & 0xFFFF)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("offset, seed", [(BIG, 2**40 + 3), (-BIG, 2**63 - 1), (2**63 - 1, 0), (-(2**63), 2**32 + 5),
                                          (2**31, 2**31), (7, 3)])
def test_add_offset_matches_torch(add_offset, n, offset, seed):
    x = torch.randn(n, device="cuda")
    y = add_offset(x, offset, seed)
    assert y.shape == x.shape and y.dtype == torch.float32
    assert torch.equal(y, offset_reference(x, offset, seed))


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("base, stride", [(2**40, 2**33 + 1), (-(2**45), 3**20), (0, -(2**35) - 7), (5, 1)])
def test_64_bit_index_arithmetic_matches_torch(affine, n, base, stride):
    like = torch.randn(n, device="cuda")
    out = affine(like, base, stride)
    assert torch.equal(out, affine_reference(like, base, stride))


@pytest.mark.parametrize("n", [1, 129, 3000])
def test_uint64_bits_and_the_default(seed_bits, n):
    x = torch.randn(n, device="cuda")
    for seed in (2**63 - 1, 0xAB_CDEF_1234_5678, 2**32 + 5, 3):
        assert torch.equal(seed_bits(x, seed), seed_reference(x, seed))
    assert torch.equal(seed_bits(x), seed_reference(x, 2**63 - 1))  # the schema's default


def test_out_of_range_values_are_refused_with_the_argument(add_offset):
    x = torch.randn(10, device="cuda")
    name = add_offset.default._schema.name
    with pytest.raises(ttk.InputError, match=rf"{name}: scalar 'seed' = -1 does not fit a 64-bit unsigned C int"):
        add_offset(x, 0, -1)
    with pytest.raises(RuntimeError):  # torch's schema int is int64: torch refuses 2**63 before the op runs
        add_offset(x, 2**63, 0)


def test_compile_export_and_cuda_graph(add_offset):
    x = torch.randn(1000, device="cuda")
    want = offset_reference(x, -BIG, 2**62 + 1)

    class M(torch.nn.Module):
        def forward(self, x):
            return add_offset(x, -BIG, 2**62 + 1)

    assert torch.equal(torch.compile(M(), fullgraph=True)(x), want)
    ep = torch.export.export(M(), (x,))
    assert torch.equal(ep.module()(x), want)
    static = torch.randn(1000, device="cuda")
    add_offset(static, BIG, 5)  # warm up (the launcher is built outside the capture)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = add_offset(static, BIG, 5)
    static.copy_(x)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, offset_reference(x, BIG, 5))


def test_the_native_kernel_launches_64_bit_scalars(add_offset):
    from trt_kernels.eager import native
    from trt_kernels.library.definition import native_slot

    slot = native_slot(add_offset.default._schema.name)
    if slot is None:
        pytest.skip("the native kernel is not built on this machine (trt-kernels doctor says why)")
    x = torch.randn(300, device="cuda")
    add_offset(x, BIG, 1)  # the first call builds the launcher and hands it to the native kernel
    before = native.launches(slot)
    y = add_offset(x, -BIG, 2**63 - 1)
    assert native.launches(slot) == before + 1
    assert torch.equal(y, offset_reference(x, -BIG, 2**63 - 1))


@no_standin
@pytest.mark.parametrize("offset, seed", [(5, 7), (-(2**31), 2**32 - 1), (2**31 - 1, 2**31)])
def test_aot_replay_of_values_that_fit_32_bits(add_offset, offset, seed):
    from trt_kernels.testing import aot_replay

    for n in (1, 1000):
        x = torch.randn(n, device="cuda")
        res = aot_replay(add_offset, x, offset, seed)
        assert res.bitwise_equal, res.max_abs_diff()


@no_standin
def test_aot_replay_of_affine_index_in_its_own_order(affine):
    from trt_kernels.testing import aot_replay

    res = aot_replay(affine, torch.randn(3001, device="cuda"), -(2**31), 2**31 - 1)
    assert res.bitwise_equal, res.max_abs_diff()


@no_standin
def test_the_aot_plugin_refuses_a_value_it_would_truncate_and_the_jit_plugin_is_exact(add_offset, affine):
    from trt_kernels.testing import aot_replay, jit_replay

    x = torch.randn(1000, device="cuda")
    with pytest.raises(ttk.InputError, match=r"scalar 'offset' = 1099511640121 .*does not fit the 32 bits of "
                                             r"TensorRT's AOT extra arguments"):
        aot_replay(add_offset, x, BIG, 3)
    for args in ((BIG, 2**63 - 1), (-BIG, 2**40 + 3)):
        assert jit_replay(add_offset, x, *args).bitwise_equal
    assert jit_replay(affine, x, 2**40, 2**33 + 1).bitwise_equal
