"""Kernel sources and spec builders shared by the CPU-tier tests."""

import itertools
import pathlib

import torch

import trt_kernels as ttk

_ids = itertools.count()


def unique(ns: str = "ttk_test") -> str:
    """A fresh op name, so tests never collide with each other's registrations."""
    return f"{ns}::op{next(_ids)}"


SIGMOID = """
extern "C" __global__ void my_sigmoid(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
"""

SCALE = """
extern "C" __global__ void my_scale(const float* x, float alpha, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
"""

MIXED = """
extern "C" __global__ void mixed(const float* a, const float* b, float alpha, int k, bool flag,
                                 int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = flag ? a[i] * alpha + b[i] + k : a[i];
}
"""

ROW_SUM = """
extern "C" __global__ void my_row_sum(const float* x, int D, float* y) {
  int row = blockIdx.x;
  float s = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) s += x[row * D + j];
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

TEMPLATE_SIGMOID = """
template <typename T>
__global__ void tsig(const T* x, int n, T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = static_cast<float>(x[i]); y[i] = static_cast<T>(1.0f / (1.0f + __expf(-v))); }
}
"""

SIN_COS = """
extern "C" __global__ void my_sin_cos(const float* x, int n, float* s, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { s[i] = __sinf(x[i]); c[i] = __cosf(x[i]); }
}
"""


def sigmoid_spec(**kw) -> ttk.KernelSpec:
    args = dict(
        kernel_source=SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,)),
    )
    args.update(kw)
    return ttk.KernelSpec(**args)


def scale_spec(**kw) -> ttk.KernelSpec:
    return sigmoid_spec(kernel_source=SCALE, kernel_name="my_scale",
                        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)], **kw)


def row_sum_spec(**kw) -> ttk.KernelSpec:
    args = dict(
        kernel_source=ROW_SUM, kernel_name="my_row_sum", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256),
    )
    args.update(kw)
    return ttk.KernelSpec(**args)


def mixed_spec(**kw) -> ttk.KernelSpec:
    """Tensors and scalars interleaved in the op's signature: (a, alpha, b, k, flag)."""
    args = dict(
        kernel_source=MIXED, kernel_name="mixed",
        inputs=[ttk.InputDecl("a"), ttk.ScalarInput("alpha", float), ttk.InputDecl("b"),
                ttk.ScalarInput("k", int), ttk.ScalarInput("flag", bool)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("a"))], extras=[ttk.Numel("a")],
        geometry=ttk.Elementwise(block=(128,)),
    )
    args.update(kw)
    return ttk.KernelSpec(**args)


def float32(*shape):
    return torch.randn(*shape, dtype=torch.float32)


# x: T, w: W (fp16/bf16 activations with an fp32 weight), one block per row of x
RMSNORM_MIXED = """
template <typename T, typename W>
__global__ void rms(const T* __restrict__ x, const W* __restrict__ w, float eps, int D, T* __restrict__ y) {
  const T* xr = x + (long long)blockIdx.x * D;
  __shared__ float sbuf[128];
  float s = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) { float v = static_cast<float>(xr[j]); s += v * v; }
  sbuf[threadIdx.x] = s;
  __syncthreads();
  for (int step = blockDim.x >> 1; step > 0; step >>= 1) {
    if (threadIdx.x < step) sbuf[threadIdx.x] += sbuf[threadIdx.x + step];
    __syncthreads();
  }
  float r = rsqrtf(sbuf[0] / (float)max(D, 1) + eps);
  for (int j = threadIdx.x; j < D; j += blockDim.x)
    y[(long long)blockIdx.x * D + j] = static_cast<T>(static_cast<float>(xr[j]) * r * static_cast<float>(w[j]));
}
"""

MIXED_COMBOS = [(torch.float16, torch.float32), (torch.bfloat16, torch.float32), (torch.float32, torch.float32)]


def rmsnorm_mixed_spec(**kw) -> ttk.KernelSpec:
    args = dict(
        kernel_source=RMSNORM_MIXED, kernel_name="rms<T, W>", type_params=("T", "W"), dtypes=MIXED_COMBOS,
        inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W"), ttk.ScalarInput("eps", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Custom(grid=(ttk.Numel("x") // ttk.maximum(ttk.DimSize("x", -1), 1),), block=(128,)),
        checks=[ttk.SameDim(("x", -1), ("w", 0))],
    )
    args.update(kw)
    return ttk.KernelSpec(**args)


def rmsnorm_reference(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


ADD = """
extern "C" __global__ void my_add(const float* a, const float* b, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a[i] + b[i];
}
"""


def add_spec(**kw) -> ttk.KernelSpec:
    """y = a + b, with a SameShape check between a and b."""
    args = dict(kernel_source=ADD, kernel_name="my_add", inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
                outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("a"))], extras=[ttk.Numel("a")],
                geometry=ttk.Elementwise(block=(256,)), checks=[ttk.SameShape("a", "b")])
    args.update(kw)
    return ttk.KernelSpec(**args)


# outputs first, sizes last, as a well-known C/CUDA training codebase writes its layer norm
LAYERNORM = r"""
__global__ void layernorm_forward_kernel(float* __restrict__ out, float* __restrict__ mean,
                                         float* __restrict__ rstd, const float* __restrict__ inp,
                                         const float* __restrict__ weight, const float* __restrict__ bias,
                                         int N, int C) {
    int row = blockIdx.x * blockDim.x + threadIdx.x;
    if (row >= N) return;
    const float* x = inp + row * C;
    float m = 0.0f;
    for (int i = 0; i < C; i++) m += x[i];
    m = m / C;
    float v = 0.0f;
    for (int i = 0; i < C; i++) { float d = x[i] - m; v += d * d; }
    float s = rsqrtf(v / C + 1e-5f);
    for (int i = 0; i < C; i++) out[row * C + i] = (x[i] - m) * s * weight[i] + bias[i];
    mean[row] = m;
    rstd[row] = s;
}
"""

# a size_t count between the pointers, as CUDA samples write vector kernels
SAXPY = r"""
extern "C" __global__ void saxpy(size_t n, float a, const float* x, float* y_out) {
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i < n) y_out[i] = a * x[i];
}
"""


def layernorm_spec(**kw):
    rows = ttk.Numel("inp") // ttk.DimSize("inp", -1)
    args = dict(
        kernel_source=LAYERNORM, kernel_name="layernorm_forward_kernel", arch_override="sm_90",
        inputs=[ttk.InputDecl("inp"), ttk.InputDecl("weight"), ttk.InputDecl("bias")],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("inp")), ttk.OutputDecl("mean", shape=(rows,)),
                 ttk.OutputDecl("rstd", shape=(rows,))],
        extras=[ttk.SizeArg("N", rows), ttk.SizeArg("C", ttk.DimSize("inp", -1))],
        geometry=ttk.Custom(grid=(ttk.cdiv(rows, 128),), block=(128,)))
    args.update(kw)
    return ttk.KernelSpec(**args)


def saxpy_spec(**kw):
    args = dict(kernel_source=SAXPY, kernel_name="saxpy", arch_override="sm_90",
                inputs=[ttk.ScalarInput("a", float), ttk.InputDecl("x")],
                outputs=[ttk.OutputDecl("y_out", shape=ttk.SameAs("x"))],
                extras=[ttk.SizeArg("n", ttk.Numel("x"), "size_t")], geometry=ttk.Elementwise(block=(256,)))
    args.update(kw)
    return ttk.KernelSpec(**args)


# an optimizer step that updates its parameters and moments in place (the gallery's, as its author wrote it)
ADAMW = (pathlib.Path(__file__).resolve().parents[1] / "examples" / "gallery" / "kernels" / "adamw_step.cu").read_text()


def adamw_spec(**kw):
    f = lambda name: ttk.ScalarInput(name, float)  # noqa: E731
    args = dict(
        kernel_source=ADAMW, kernel_name="adamw_kernel", arch_override="sm_90",
        inputs=[ttk.InputDecl("params_memory", mutated=True), ttk.InputDecl("grads_memory"),
                ttk.InputDecl("m_memory", mutated=True), ttk.InputDecl("v_memory", mutated=True),
                f("learning_rate"), f("beta1"), f("beta2"), f("beta1_correction"), f("beta2_correction"), f("eps"),
                f("weight_decay")],
        outputs=[], extras=[ttk.SizeArg("num_parameters", ttk.Numel("params_memory"), "long")],
        geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("params_memory"), 256),), block=(256,)),
        checks=[ttk.SameShape("params_memory", "grads_memory", "m_memory", "v_memory")])
    args.update(kw)
    return ttk.KernelSpec(**args)


def adamw_reference(p, g, m, v, lr, b1, b2, c1, c2, eps, wd):
    """The same step in torch, on copies: (params, m, v) after it."""
    m = b1 * m + (1 - b1) * g
    v = b2 * v + (1 - b2) * g * g
    p = p - lr * ((m / c1) / (torch.sqrt(v / c2) + eps) + wd * p)
    return p, m, v


# a copy through TMA (cp.async.bulk, sm_90 and newer); it is only compiled here, never launched
TMA_COPY = r"""
extern "C" __global__ void bulk_copy(const float* x, float* y, unsigned n) {
    __shared__ alignas(128) float tile[256];
    __shared__ alignas(8) unsigned long long barrier;
    const unsigned base = blockIdx.x * 256u;
    if (threadIdx.x == 0) {
        const unsigned dst = static_cast<unsigned>(__cvta_generic_to_shared(tile));
        const unsigned bar = static_cast<unsigned>(__cvta_generic_to_shared(&barrier));
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];"
                     :: "r"(dst), "l"(x + base), "r"(bar) : "memory");
    }
    __syncthreads();
    if (base + threadIdx.x < n) y[base + threadIdx.x] = tile[threadIdx.x];
}
"""


def tma_spec(**kw):
    return ttk.KernelSpec(TMA_COPY, "bulk_copy", inputs=[ttk.InputDecl("x", dtype=torch.float32)],
                          outputs=[ttk.OutputDecl("y", ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                          geometry=ttk.Elementwise(block=256), **kw)
