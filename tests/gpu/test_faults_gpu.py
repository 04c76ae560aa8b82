"""Issue 15's behaviours on the GPU, against torch on fresh random inputs: schema defaults in eager,
declared ndim and out-of-range sizes refused before any launch (eager and TensorRT's JIT launch path),
re-declaring and unregistering while other threads launch, and unregistered ops."""

import threading
import time

import pytest
import torch

import trt_kernels as ttk
from kernels import scale_spec, sigmoid_spec, unique
from trt_kernels import registry
from trt_kernels.eager.cuda_kernel import launch_into
from trt_kernels.errors import UnregisteredOpError


def op_of(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


@pytest.mark.parametrize("n", [1, 255, 257, 4097, 0])
def test_schema_default_reaches_the_kernel(n):
    name = unique("ttk_fgpu")
    op = ttk.cuda_kernel_op(name, scale_spec(), schema="(Tensor x, float alpha=2.5) -> Tensor")
    x = torch.randn(n, device="cuda")
    torch.testing.assert_close(op(x), x * 2.5, atol=0, rtol=0)  # torch drops alpha=2.5 before our kernel
    torch.testing.assert_close(op(x, 2.5), x * 2.5, atol=0, rtol=0)
    torch.testing.assert_close(op(x, alpha=-1.5), x * -1.5, atol=0, rtol=0)
    torch.testing.assert_close(op.default(x), x * 2.5, atol=0, rtol=0)


def test_declared_ndim_and_bad_sizes_are_refused_before_launching():
    name = unique("ttk_fgpu")
    src = ('extern "C" __global__ void k(const float* x, int n, float* y) '
           '{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }')
    spec = sigmoid_spec(kernel_source=src, kernel_name="k", inputs=[ttk.InputDecl("x", ndim=2)],
                        outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0) - 2, ttk.DimSize("x", 1)))],
                        extras=[ttk.Numel("x")],
                        geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 128),), block=(128,)))
    op = ttk.cuda_kernel_op(name, spec)
    with pytest.raises(ttk.InputError, match="has 3 dims but is declared with ndim=2"):
        op(torch.randn(4, 5, 6, device="cuda"))
    with pytest.raises(ttk.InputError, match=r"outputs\[0\].shape\[0\]: \(x.shape\[0\] - 2\) = -1"):
        op(torch.randn(1, 5, device="cuda"))
    y = op(torch.randn(3, 5, device="cuda"))
    assert y.shape == (1, 5)
    kop = registry.get(name)
    x = torch.randn(1, 5, device="cuda")
    out = torch.empty(0, 5, device="cuda")
    with pytest.raises(ttk.InputError, match=r"= -1 is out of range"):  # TensorRT's JIT launch path too
        launch_into(kop, [x], [out], torch.cuda.current_stream().cuda_stream)


def test_redeclaring_and_unregistering_while_threads_launch():
    name = unique("ttk_fgpu")
    ttk.cuda_kernel_op(name, scale_spec())
    stale = op_of(name).default
    stop = threading.Event()
    bad, ok = [], [0]

    def call():
        x = torch.randn(1000, device="cuda")
        while not stop.is_set():
            try:
                torch.testing.assert_close(stale(x, 3.0), x * 3.0, atol=0, rtol=0)
                ok[0] += 1
            except UnregisteredOpError:
                pass
            except Exception as e:  # noqa: BLE001
                bad.append(e)
        torch.cuda.synchronize()

    threads = [threading.Thread(target=call) for _ in range(3)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while ok[0] < 3 and time.monotonic() < deadline:  # the callers are launching before the churn starts
        time.sleep(0.01)
    before = ok[0]
    for i in range(40):
        if i % 2:
            ttk.unregister(name)
        ttk.cuda_kernel_op(name, scale_spec(geometry=ttk.Elementwise(block=(64 * (1 + i % 4),))))
        time.sleep(0.005)  # let the callers run against each declaration
    stop.set()
    for t in threads:
        t.join()
    assert not bad, bad[:3]
    assert before >= 3 and ok[0] > before  # calls succeeded during the churn too
    x = torch.randn(4097, device="cuda")
    torch.testing.assert_close(op_of(name)(x, -2.0), x * -2.0, atol=0, rtol=0)


def test_unregistered_op_raises_ours_and_comes_back():
    name = unique("ttk_fgpu")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    stale = op_of(name).default
    x = torch.randn(257, device="cuda")
    torch.testing.assert_close(stale(x), torch.sigmoid(x), atol=1e-6, rtol=1e-5)
    ttk.unregister(name)
    with pytest.raises(UnregisteredOpError):
        stale(x)
    ttk.cuda_kernel_op(name, sigmoid_spec())
    torch.testing.assert_close(stale(x), torch.sigmoid(x), atol=1e-6, rtol=1e-5)


BIG_SMEM = r"""
extern "C" __global__ void rev_block(const float* x, int n, float* y) {
  extern __shared__ float buf[];  // 16384 floats = 64 KB: over the 48 KB a launch gets without the opt-in
  int base = blockIdx.x * 16384;
  for (int j = threadIdx.x; j < 16384; j += blockDim.x) buf[j] = (base + j < n) ? x[base + j] : 0.f;
  __syncthreads();
  for (int j = threadIdx.x; j < 16384; j += blockDim.x)
    if (base + j < n) y[base + j] = buf[16383 - j] + x[base + j];
}
"""


@pytest.mark.parametrize("n", [1, 16383, 16384, 40000])
def test_dynamic_shared_memory_over_48k_launches(n):
    """64 KB of dynamic shared memory: the eager launch raises the function's limit first (CUDA refuses
    the launch otherwise)."""
    name = unique("ttk_fgpu")
    spec = sigmoid_spec(kernel_source=BIG_SMEM, kernel_name="rev_block",
                        geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 16384),), block=(256,), shared_mem=65536))
    op = ttk.cuda_kernel_op(name, spec)
    x = torch.randn(n, device="cuda")
    ref = torch.empty_like(x)
    for b in range(0, n, 16384):
        chunk = x[b:b + 16384]
        padded = torch.zeros(16384, device="cuda")
        padded[:chunk.numel()] = chunk
        ref[b:b + 16384] = padded.flip(0)[:chunk.numel()] + chunk
    torch.testing.assert_close(op(x), ref, atol=0, rtol=0)
