"""RMSNorm with fp16/bf16 activations and an fp32 weight: a kernel with two type parameters
(``template <typename T, typename W>``), and a size check between inputs.

As TensorRT's CuTe DSL RMSNorm sample, the activations ``x`` may be float16 or bfloat16 (or
float32) while the weight ``w`` stays float32. The declaration lists the combinations the kernel
is instantiated for; a call dispatches on the inputs' dtypes, and TensorRT's autotune is offered
exactly these combinations. ``SameDim(("x", -1), ("w", 0))`` makes a weight of the wrong length an
``InputError`` before launching (and a guard under ``torch.export``), instead of a read past its end.

Run: ``python examples/rmsnorm_mixed.py`` (CUDA GPU). Prints the error of each combination
against a torch reference.
"""

import sys

import torch

import trt_kernels as ttk

RMSNORM = """
template <typename T, typename W>
__global__ void rmsnorm(const T* __restrict__ x, const W* __restrict__ w, float eps, int D, T* __restrict__ y) {
  const T* xr = x + (long long)blockIdx.x * D;
  T* yr = y + (long long)blockIdx.x * D;
  __shared__ float sbuf[256];
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
    yr[j] = static_cast<T>(static_cast<float>(xr[j]) * r * static_cast<float>(w[j]));
}
"""

COMBINATIONS = [(torch.float16, torch.float32), (torch.bfloat16, torch.float32), (torch.float32, torch.float32)]

SPEC = ttk.KernelSpec(
    kernel_source=RMSNORM, kernel_name="rmsnorm<T, W>",   # template <typename T, typename W> __global__ ...
    type_params=("T", "W"), dtypes=COMBINATIONS,
    inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W", ndim=1), ttk.ScalarInput("eps", float)],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],  # y: x's dtype (T); OutputDecl(dtype="W") would take W's
    extras=[ttk.DimSize("x", -1)],
    # one block per row of x (none for an empty x)
    geometry=ttk.Custom(grid=(ttk.Numel("x") // ttk.maximum(ttk.DimSize("x", -1), 1),), block=(256,)),
    checks=[ttk.SameDim(("x", -1), ("w", 0))],
)

ttk.cuda_kernel_op("kern_mix::rmsnorm", SPEC)


def reference(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/rmsnorm_mixed.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/rmsnorm_mixed.py` declare its op and compile it.",
              file=sys.stderr)
        return 1
    ok = True
    print(f"{'x':9s} {'w':9s} {'max abs err':>12s}")
    for xdt, wdt in COMBINATIONS:
        x = torch.randn(37, 1000, device="cuda").to(xdt)
        w = torch.rand(1000, device="cuda").to(wdt) + 0.5
        y = torch.ops.kern_mix.rmsnorm(x, w, 1e-6)
        err = (y.float() - reference(x, w, 1e-6).float()).abs().max().item()
        tol = {torch.float32: 1e-4, torch.float16: 1e-2, torch.bfloat16: 6e-2}[xdt]
        ok &= y.dtype == xdt and err <= tol
        print(f"{str(xdt)[6:]:9s} {str(wdt)[6:]:9s} {err:12.3g}")
    try:  # a weight of the wrong length: refused before launching
        torch.ops.kern_mix.rmsnorm(torch.randn(4, 1000, device="cuda"), torch.rand(999, device="cuda"), 1e-6)
        ok = False
    except ttk.InputError as e:
        print("wrong weight length:", str(e).split(". Fix")[0])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
