"""A ``@triton.jit`` kernel as a PyTorch op, a TensorRT plugin and a Torch-TensorRT converter.

Declares a masked elementwise kernel with a float scalar (three tactics for TensorRT to time)
and an RMSNorm over the last axis (fp32/fp16/bf16), runs them eagerly against torch
references, traces them with ``torch.export``, shows what ``trt-kernels status`` reports, and,
where TensorRT and Torch-TensorRT are installed (or, failing that, Torch-TensorRT over
``trt_kernels.testing``'s emulated libnvinfer, which every line then says), compiles a model that
mixes both Triton ops with a CUDA C++ op into one engine.

Run: ``python examples/triton_kernel_op.py`` (needs a CUDA GPU and ``pip install 'trt-kernels[triton]'``).
"""

import sys

import torch
import triton
import triton.language as tl

import trt_kernels as ttk


# The kernel's non-constexpr parameters follow the calling convention:
# (tensor inputs, scalar inputs, extras, outputs); a tensor "x" may be named x or x_ptr.
@triton.jit
def scale_shift(x_ptr, alpha, n, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (x * alpha + 1.0).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def rmsnorm(x_ptr, w_ptr, eps, D, y_ptr, BLOCK_D: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for off in range(0, D, BLOCK_D):
        cols = off + tl.arange(0, BLOCK_D)
        x = tl.load(x_ptr + row * D + cols, mask=cols < D, other=0.0).to(tl.float32)
        acc += x * x
    r = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / D + eps)
    for off in range(0, D, BLOCK_D):
        cols = off + tl.arange(0, BLOCK_D)
        m = cols < D
        x = tl.load(x_ptr + row * D + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * D + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=m)


DTYPES = [torch.float32, torch.float16, torch.bfloat16]

ttk.triton_kernel_op(
    "tri_ex::scale_shift", scale_shift,
    inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
    extras=[ttk.Numel("x")],
    grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),),  # Triton's kernel[grid] idiom
    constexprs={"BLOCK": 1024}, num_warps=4,
    tactics=[ttk.TritonConfig({"BLOCK": 256}, num_warps=2), ttk.TritonConfig({"BLOCK": 4096}, num_warps=8)],
    dtypes=DTYPES,
)

ttk.triton_kernel_op(
    "tri_ex::rmsnorm", rmsnorm,
    inputs=[ttk.InputDecl("x"), ttk.InputDecl("w"), ttk.ScalarInput("eps", float)],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
    extras=[ttk.DimSize("x", -1)],
    grid=(ttk.Numel("x") // ttk.maximum(ttk.DimSize("x", -1), 1),),  # one program per row
    constexprs={"BLOCK_D": 1024}, num_warps=4, dtypes=DTYPES,
)

CU_SIGMOID = r"""
extern "C" __global__ void my_sigmoid(const float* x, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
"""
ttk.cuda_kernel_op("tri_ex::sigmoid", ttk.KernelSpec(
    kernel_source=CU_SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
    geometry=ttk.Elementwise(block=(256,))))


class Mixed(torch.nn.Module):
    """Two Triton ops and a CUDA C++ op: one TensorRT engine of three AOT plugin layers."""

    def forward(self, x, w):
        return torch.ops.tri_ex.rmsnorm(torch.ops.tri_ex.sigmoid(torch.ops.tri_ex.scale_shift(x, 0.5)), w, 1e-6)


def reference(x, w):
    y = torch.sigmoid(x * 0.5 + 1.0)
    return y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6) * w


def eager_half() -> bool:
    ok = True
    for dt in DTYPES:
        tol = {torch.float32: 1e-5, torch.float16: 1e-2, torch.bfloat16: 5e-2}[dt]
        x = torch.randn(33, 1000, device="cuda", dtype=dt)
        w = torch.randn(1000, device="cuda", dtype=dt)
        y1 = torch.ops.tri_ex.scale_shift(x, -1.5)
        y2 = torch.ops.tri_ex.rmsnorm(x, w, 1e-6)
        xf = x.float()
        r2 = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(dt)
        good = torch.allclose(y1.float(), (xf * -1.5 + 1.0), atol=tol, rtol=tol) and \
            torch.allclose(y2.float(), r2.float(), atol=tol, rtol=tol)
        print(f"[eager {str(dt).replace('torch.', '')}] scale_shift and rmsnorm match torch: {good}")
        ok &= good
    x, w = torch.randn(8, 512, device="cuda"), torch.randn(512, device="cuda")
    ep = torch.export.export(Mixed(), (x, w))
    print("[export] ops in the graph:", sorted({str(n.target) for n in ep.graph.nodes if n.op == "call_function"}))
    return ok


def tensorrt_half() -> bool:
    try:
        import tensorrt  # noqa: F401
        import torch_tensorrt

        from trt_kernels.testing import is_emulated

        what = (f"TensorRT {tensorrt.__version__} API, libnvinfer emulated" if is_emulated()
                else f"TensorRT {tensorrt.__version__}")
        label = f"Torch-TensorRT {torch_tensorrt.__version__.split('+')[0]}, {what}"
    except Exception as e:  # noqa: BLE001
        from trt_kernels.testing import emulate_tensorrt, emulation_unavailable_reason

        why = emulation_unavailable_reason()
        if why is not None:
            print(f"[TensorRT] skipped: {type(e).__name__}: {e}; emulated tier unavailable too: {why}")
            return True
        _, torch_tensorrt = emulate_tensorrt()
        label = (f"Torch-TensorRT {torch_tensorrt.__version__.split('+')[0]}, "
                 f"TensorRT {sys.modules['tensorrt'].__version__} API, libnvinfer emulated")
    x, w = torch.randn(16, 512, device="cuda"), torch.randn(512, device="cuda")
    trt_model = torch_tensorrt.compile(Mixed().cuda().eval(), ir="dynamo", inputs=[x, w], min_block_size=1,
                                       enabled_precisions={torch.float32})
    ok = all(torch.allclose(trt_model(x, w), reference(x, w), atol=1e-4, rtol=1e-4) for _ in range(5))
    print(f"[TensorRT] Triton + CUDA C++ ops compiled and run: {ok} ({label})")
    return ok


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/triton_kernel_op.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/triton_kernel_op.py` declare its ops and compile them.",
              file=sys.stderr)
        return 1
    ok = eager_half()
    ok &= tensorrt_half()
    from trt_kernels.status import format_status

    print(format_status())
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
