"""The seed's seven ops (examples/cuda_kernel_op.py), declared without touching a GPU.

The example itself builds case 6's kernel through ``cuda.core`` at import time (a GPU
and NVRTC), which would hide what declaring the ops costs. Here the seven declarations
are the same specs under the namespace ``kern_seed``; case 6 keeps the override path
(``meta_fn`` / ``eager_fn``), its eager function written with torch ops.

``declare(ttk)`` declares all seven and returns their names; ``inputs(device)`` gives one
call's arguments per op, for a first launch.
"""

import torch

CU_SIGMOID = """
extern "C" __global__ void my_sigmoid(
    const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
"""

CU_ADD = """
extern "C" __global__ void my_add(
    const float* a, const float* b, int n, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

CU_SCALE = """
extern "C" __global__ void my_scale(
    const float* x, float alpha, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
"""

CU_RELU_2D = """
extern "C" __global__ void my_relu_2d(
    const float* x, int H, int W, float* y) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= H || j >= W) return;
  float v = x[i * W + j];
  y[i * W + j] = v > 0.f ? v : 0.f;
}
"""

CU_ROW_SUM = """
extern "C" __global__ void my_row_sum(
    const float* x, int D, float* y) {
  int row = blockIdx.x;
  const float* xr = x + row * D;
  float s = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) s += xr[j];
  __shared__ float sbuf[256];
  sbuf[threadIdx.x] = s;
  __syncthreads();
  for (int step = blockDim.x >> 1; step > 0; step >>= 1) {
    if (threadIdx.x < step) sbuf[threadIdx.x] += sbuf[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[row] = sbuf[0];
}
"""

CU_REPEAT2 = """
extern "C" __global__ void repeat2_kernel(
    const float* __restrict__ x, const int n, float* __restrict__ y) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    const float v = x[i];
    y[2 * i] = v;
    y[2 * i + 1] = v;
  }
}
"""

CU_SIN_COS = """
extern "C" __global__ void my_sin_cos(
    const float* __restrict__ x, int n,
    float* __restrict__ s, float* __restrict__ c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    s[i] = __sinf(x[i]);
    c[i] = __cosf(x[i]);
  }
}
"""

NAMES = ("sigmoid", "add", "scale", "relu_2d", "row_sum", "repeat2", "sin_cos")
NS = "kern_seed"


def _repeat2_meta(x: torch.Tensor) -> torch.Tensor:
    return torch.empty((x.numel() * 2,), device=x.device, dtype=x.dtype)


def _repeat2_eager(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1).repeat_interleave(2)


def declare(ttk, ns: str = NS):
    """Declare the seven seed ops under ``ns``; returns their op names in seed order."""
    flat = ttk.Elementwise(block=(256,), layout="flat")
    same = ttk.SameAs("x")
    ttk.cuda_kernel_op(f"{ns}::sigmoid", ttk.KernelSpec(
        kernel_source=CU_SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=same)], extras=[ttk.Numel("x")], geometry=flat))
    ttk.cuda_kernel_op(f"{ns}::add", ttk.KernelSpec(
        kernel_source=CU_ADD, kernel_name="my_add", inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
        outputs=[ttk.OutputDecl("c", shape=ttk.SameAs("a"))], extras=[ttk.Numel("a")], geometry=flat))
    ttk.cuda_kernel_op(f"{ns}::scale", ttk.KernelSpec(
        kernel_source=CU_SCALE, kernel_name="my_scale", inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=same)], extras=[ttk.Numel("x")], geometry=flat))
    ttk.cuda_kernel_op(f"{ns}::relu_2d", ttk.KernelSpec(
        kernel_source=CU_RELU_2D, kernel_name="my_relu_2d", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=same)], extras=[ttk.DimSize("x", 0), ttk.DimSize("x", 1)],
        geometry=ttk.Elementwise(block=(16, 16), layout="nd")))
    ttk.cuda_kernel_op(f"{ns}::row_sum", ttk.KernelSpec(
        kernel_source=CU_ROW_SUM, kernel_name="my_row_sum", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256)))
    ttk.cuda_kernel_op(f"{ns}::repeat2", ttk.KernelSpec(
        kernel_source=CU_REPEAT2, kernel_name="repeat2_kernel", inputs=[ttk.InputDecl("x")]),
        meta_fn=_repeat2_meta, eager_fn=_repeat2_eager)
    ttk.cuda_kernel_op(f"{ns}::sin_cos", ttk.KernelSpec(
        kernel_source=CU_SIN_COS, kernel_name="my_sin_cos", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("s", shape=same), ttk.OutputDecl("c", shape=same)], extras=[ttk.Numel("x")],
        geometry=flat))
    return [f"{ns}::{n}" for n in NAMES]


def inputs(device):
    """One call's arguments per op (seed order), on ``device``."""
    x = torch.randn(4, 128, device=device)
    return [
        (x,),
        (torch.randn(256, device=device), torch.randn(256, device=device)),
        (x, 2.5),
        (torch.randn(33, 47, device=device),),
        (torch.randn(8, 256, device=device),),
        (torch.randn(1024, device=device),),
        (torch.randn(7, 31, device=device),),
    ]
