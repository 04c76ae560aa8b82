"""Scalar inputs with defaults, tuple attributes, and output shapes computed from them.

Two ops, each a port of a plugin that TensorRT's and Torch-TensorRT's samples write by hand:

- ``kern_pad::circular_pad2d(Tensor x, int[4] pads) -> Tensor``: circular padding of the last two
  axes of a ``(B, H, W)`` tensor, with ``pads = (left, right, top, bottom)`` as
  ``torch.nn.functional.pad`` orders them. ``pads`` is a tuple input, ``ScalarInput("pads", (int, 4))``:
  the kernel takes its four values as four C ints, TensorRT's plugin takes it as one int32 array
  attribute (as TensorRT's ``circ_pad`` sample passes it), and the output's shape reads it:
  ``DimSize("x", -1) + Scalar("pads")[0] + Scalar("pads")[1]``. (A spatial axis of size 0 has nothing to
  wrap around: the kernel writes zeros there.)
- ``kern_pad::rms_norm(Tensor x, Tensor w, float eps=1e-06) -> Tensor``: ``eps`` has a default
  (``ScalarInput("eps", float, default=1e-6)``): calls may leave it out or pass it by keyword, and
  ``torch.export`` / Torch-TensorRT bake the default in where the traced call leaves it out.

Declaring needs no GPU (``trt-kernels status|inspect|compile examples/circular_pad.py``); running
(``python examples/circular_pad.py``) compares both ops with torch on a CUDA GPU.
"""

import sys

import torch

import trt_kernels as ttk

CU_CIRCULAR_PAD2D = r"""
extern "C" __global__ void circular_pad2d(const float* x, int left, int right, int top, int bottom,
                                          int H, int W, int Ho, int Wo, int total, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= total) return;
  int wo = i % Wo, ho = (i / Wo) % Ho, b = i / (Wo * Ho);
  if (H == 0 || W == 0) { y[i] = 0.0f; return; }  // nothing to wrap around
  int w = ((wo - left) % W + W) % W, h = ((ho - top) % H + H) % H;  // negative pads crop
  y[i] = x[((long long)b * H + h) * W + w];
}
"""

CU_RMS_NORM = r"""
extern "C" __global__ void rms_norm(const float* x, const float* w, float eps, int D, float* y) {
  const float* row = x + (long long)blockIdx.x * D;
  float s = 0.f;
  for (int j = threadIdx.x; j < D; j += blockDim.x) s += row[j] * row[j];
  __shared__ float sbuf[256];
  sbuf[threadIdx.x] = s;
  __syncthreads();
  for (int step = blockDim.x >> 1; step > 0; step >>= 1) {
    if (threadIdx.x < step) sbuf[threadIdx.x] += sbuf[threadIdx.x + step];
    __syncthreads();
  }
  float r = rsqrtf(sbuf[0] / (float)D + eps);
  for (int j = threadIdx.x; j < D; j += blockDim.x) y[(long long)blockIdx.x * D + j] = row[j] * r * w[j];
}
"""

PADS = ttk.Scalar("pads")
H_OUT = ttk.DimSize("x", -2) + PADS[2] + PADS[3]  # top + H + bottom
W_OUT = ttk.DimSize("x", -1) + PADS[0] + PADS[1]  # left + W + right


def circular_pad_spec() -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=CU_CIRCULAR_PAD2D, kernel_name="circular_pad2d",
        inputs=[ttk.InputDecl("x", ndim=3), ttk.ScalarInput("pads", (int, 4))],
        outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0), H_OUT, W_OUT))],
        extras=[ttk.DimSize("x", -2), ttk.DimSize("x", -1), H_OUT, W_OUT, ttk.DimSize("x", 0) * H_OUT * W_OUT],
        geometry=ttk.Elementwise(block=(256,)),
    )


def rms_norm_spec() -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=CU_RMS_NORM, kernel_name="rms_norm",
        inputs=[ttk.InputDecl("x", ndim=2), ttk.InputDecl("w", ndim=1), ttk.ScalarInput("eps", float, default=1e-6)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Custom(grid=(ttk.DimSize("x", 0),), block=(256,)),
    )


ttk.cuda_kernel_op("kern_pad::circular_pad2d", circular_pad_spec())
ttk.cuda_kernel_op("kern_pad::rms_norm", rms_norm_spec())


def circular_pad_reference(x: torch.Tensor, pads) -> torch.Tensor:
    """torch's circular padding, written as an index map (any pad size, negative pads crop)."""
    left, right, top, bottom = pads
    B, H, W = x.shape
    Ho, Wo = H + top + bottom, W + left + right
    if H == 0 or W == 0:
        return x.new_zeros(B, Ho, Wo)
    rows = (torch.arange(Ho, device=x.device) - top) % H
    cols = (torch.arange(Wo, device=x.device) - left) % W
    return x[:, rows][:, :, cols]


def rms_norm_reference(x: torch.Tensor, w: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    x64 = x.double()
    return (x64 * torch.rsqrt(x64.pow(2).mean(-1, keepdim=True) + eps) * w.double()).float()


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/circular_pad.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/circular_pad.py` declare its ops and compile them.",
              file=sys.stderr)
        return 1
    ok = True
    x = torch.randn(2, 5, 7, device="cuda")
    for pads in [(1, 1, 1, 1), (3, 0, 2, 9), (0, 0, 0, 0)]:
        y = torch.ops.kern_pad.circular_pad2d(x, pads)
        same = torch.equal(y, circular_pad_reference(x, pads))
        if pads[:3] == (1, 1, 1):  # torch's own circular mode agrees where it applies
            same &= torch.equal(y, torch.nn.functional.pad(x, pads, mode="circular"))
        ok &= same
        print(f"circular_pad2d(x {tuple(x.shape)}, pads={pads}) -> {tuple(y.shape)}: {'equal' if same else 'DIFFERS'}")
    x, w = torch.randn(33, 1000, device="cuda"), torch.randn(1000, device="cuda")
    for label, y, eps in [("rms_norm(x, w)", torch.ops.kern_pad.rms_norm(x, w), 1e-6),
                          ("rms_norm(x, w, eps=0.5)", torch.ops.kern_pad.rms_norm(x, w, eps=0.5), 0.5)]:
        err = (y - rms_norm_reference(x, w, eps)).abs().max().item()
        ok &= err < 1e-4
        print(f"{label}: max abs err {err:.3g}")

    class Model(torch.nn.Module):
        def forward(self, x, w):
            return torch.ops.kern_pad.rms_norm(torch.ops.kern_pad.circular_pad2d(x, (1, 2, 0, 0))[0], w)

    ep = torch.export.export(Model(), (torch.randn(1, 4, 8, device="cuda"), torch.randn(11, device="cuda")))
    print("torch.export graph (eps left out: it equals its default):")
    print("\n".join("  " + ln for ln in str(ep.graph).splitlines() if "kern_pad" in ln))
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
