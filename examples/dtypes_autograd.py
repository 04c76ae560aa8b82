"""Beyond the anchor: one template kernel for float32/float16/bfloat16/float64 (accumulating
in float, or double for float64), and an op with a backward made of another declared kernel op.

Run: ``python examples/dtypes_autograd.py`` (CUDA GPU). Prints the error of each dtype
against torch and the result of ``torch.autograd.gradcheck`` in float64.
"""

import sys

import torch

import trt_kernels as ttk

DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64]

# Acc<T>: the type arithmetic happens in (float for the 16-bit types, double for double).
COMMON = """
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };
"""

SIGMOID = COMMON + """
template <typename T>
__global__ void tsigmoid(const T* __restrict__ x, int n, T* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    using A = typename Acc<T>::type;
    A v = static_cast<A>(x[i]);
    y[i] = static_cast<T>(A(1) / (A(1) + exp(-v)));
  }
}
"""

SIGMOID_BACKWARD = COMMON + """
template <typename T>
__global__ void tsigmoid_bwd(const T* __restrict__ y, const T* __restrict__ gy, int n, T* __restrict__ gx) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    using A = typename Acc<T>::type;
    A s = static_cast<A>(y[i]);
    gx[i] = static_cast<T>(static_cast<A>(gy[i]) * s * (A(1) - s));
  }
}
"""

ROW_SUM = COMMON + """
template <typename T>
__global__ void trow_sum(const T* __restrict__ x, int D, T* __restrict__ y) {
  using A = typename Acc<T>::type;
  __shared__ A sbuf[256];
  const T* xr = x + (long long)blockIdx.x * D;
  A s = A(0);
  for (int j = threadIdx.x; j < D; j += blockDim.x) s += static_cast<A>(xr[j]);
  sbuf[threadIdx.x] = s;
  __syncthreads();
  for (int step = blockDim.x >> 1; step > 0; step >>= 1) {
    if (threadIdx.x < step) sbuf[threadIdx.x] += sbuf[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) y[blockIdx.x] = static_cast<T>(sbuf[0]);
}
"""


def elementwise(source, name, inputs):
    return ttk.KernelSpec(
        kernel_source=source, kernel_name=name, dtypes=DTYPES,
        inputs=[ttk.InputDecl(n) for n in inputs],
        outputs=[ttk.OutputDecl("result", shape=ttk.SameAs(inputs[0]))],
        extras=[ttk.Numel(inputs[0])], geometry=ttk.Elementwise(block=(256,)),
    )


ttk.cuda_kernel_op("kern_dt::sigmoid_backward", elementwise(SIGMOID_BACKWARD, "tsigmoid_bwd<T>", ["y", "gy"]))


def _sigmoid_backward(ctx, gy):
    x, y = ctx.saved_tensors  # the default setup_context saves the tensor inputs, then the outputs
    return torch.ops.kern_dt.sigmoid_backward(y, gy.contiguous())


ttk.cuda_kernel_op("kern_dt::sigmoid", elementwise(SIGMOID, "tsigmoid<T>", ["x"]), backward=_sigmoid_backward)

ttk.cuda_kernel_op("kern_dt::row_sum", ttk.KernelSpec(
    kernel_source=ROW_SUM, kernel_name="trow_sum<T>", dtypes=DTYPES, inputs=[ttk.InputDecl("x")],
    outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("x", -1)],
    geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256)))


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/dtypes_autograd.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/dtypes_autograd.py` declare its ops and compile them.",
              file=sys.stderr)
        return 1
    ok = True
    print(f"{'op':10s} {'dtype':9s} {'max abs err':>12s}")
    for dt in DTYPES:
        x = torch.randn(33, 257, device="cuda").to(dt)
        for name, ours, ref in [
            ("sigmoid", torch.ops.kern_dt.sigmoid(x), torch.sigmoid(x.double()).to(dt)),
            ("row_sum", torch.ops.kern_dt.row_sum(x), x.double().sum(-1).to(dt)),
        ]:
            err = (ours.double() - ref.double()).abs().max().item()
            tol = {torch.float32: 1e-4, torch.float16: 2e-2, torch.bfloat16: 2e-1, torch.float64: 1e-10}[dt]
            ok &= ours.dtype == dt and err <= tol
            print(f"{name:10s} {str(dt)[6:]:9s} {err:12.3g}")
    xg = torch.randn(64, device="cuda", dtype=torch.float64, requires_grad=True)
    passed = torch.autograd.gradcheck(torch.ops.kern_dt.sigmoid, (xg,))
    print("gradcheck(float64) of kern_dt::sigmoid with its kernel backward:", passed)
    return 0 if ok and passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
