"""The seven cases of the API contract (shared/seeds/cuda_kernel_op_example.txt), with
``import torch_tensorrt.kernels as ttk`` replaced by ``import trt_kernels as ttk``.

Each case registers an op, runs it eagerly against a torch reference and, where TensorRT
and Torch-TensorRT are installed, compiles a one-op model with ``torch_tensorrt.compile``
(``min_block_size=1``), runs it five times and compares. Where TensorRT is absent but
Torch-TensorRT's Python and NVIDIA's ``tensorrt`` wheel are (``trt_kernels.testing``), the
TensorRT half runs over the emulated libnvinfer and every line says so; otherwise the script
says why and runs the eager half only.

Run: ``python examples/cuda_kernel_op.py`` (needs a CUDA GPU).
"""

import sys

import cuda.core  # noqa: F401
import torch
from cuda.core import Device as _Device
from cuda.core import LaunchConfig as _LaunchConfig
from cuda.core import Program as _Program
from cuda.core import ProgramOptions as _ProgramOptions
from cuda.core import launch as _cuda_launch

import trt_kernels as ttk

try:  # the TensorRT half needs both; the eager half needs neither
    import tensorrt.plugin as trtp
    import torch_tensorrt
except Exception as _e:  # noqa: BLE001 - ImportError, or a broken native install
    trtp = torch_tensorrt = None
    TRT_MISSING = f"{type(_e).__name__}: {_e}"
else:
    TRT_MISSING = None
TRT_LABEL = ""  # what ran the TensorRT half, shown on each line

# Case 1: Elementwise(flat), one tensor input; the output is shaped like x.
CU_SIGMOID = """
extern "C" __global__ void my_sigmoid(
    const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = 1.0f / (1.0f + __expf(-x[i]));
}
"""

ttk.cuda_kernel_op(
    "kern_ex::sigmoid",
    ttk.KernelSpec(
        kernel_source=CU_SIGMOID,
        kernel_name="my_sigmoid",
        inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,), layout="flat"),
    ),
    supports_dynamic_shapes=True,
)

# Case 2: Elementwise(flat), two tensor inputs of one shape.
CU_ADD = """
extern "C" __global__ void my_add(
    const float* a, const float* b, int n, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
"""

ttk.cuda_kernel_op(
    "kern_ex::add",
    ttk.KernelSpec(
        kernel_source=CU_ADD,
        kernel_name="my_add",
        inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
        outputs=[ttk.OutputDecl("c", shape=ttk.SameAs("a"))],
        extras=[ttk.Numel("a")],
        geometry=ttk.Elementwise(block=(256,), layout="flat"),
    ),
)

# Case 3: a runtime float scalar passed by value, after the tensor pointers.
CU_SCALE = """
extern "C" __global__ void my_scale(
    const float* x, float alpha, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
"""

ttk.cuda_kernel_op(
    "kern_ex::scale",
    ttk.KernelSpec(
        kernel_source=CU_SCALE,
        kernel_name="my_scale",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,), layout="flat"),
    ),
)

# Case 4: Elementwise(layout="nd"): block[0] covers the last axis (grid x), block[1] the
# one before (grid y); H and W reach the kernel as extras.
CU_RELU_2D = """
extern "C" __global__ void my_relu_2d(
    const float* x, int H, int W, float* y) {
  int j = blockIdx.x * blockDim.x + threadIdx.x;  // innermost
  int i = blockIdx.y * blockDim.y + threadIdx.y;
  if (i >= H || j >= W) return;
  float v = x[i * W + j];
  y[i * W + j] = v > 0.f ? v : 0.f;
}
"""

ttk.cuda_kernel_op(
    "kern_ex::relu_2d",
    ttk.KernelSpec(
        kernel_source=CU_RELU_2D,
        kernel_name="my_relu_2d",
        inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.DimSize("x", 0), ttk.DimSize("x", 1)],  # H, W
        geometry=ttk.Elementwise(block=(16, 16), layout="nd"),
    ),
)

# Case 5: Reduction over the last axis, one block per row (the kernel assumes 256 threads).
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

ttk.cuda_kernel_op(
    "kern_ex::row_sum",
    ttk.KernelSpec(
        kernel_source=CU_ROW_SUM,
        kernel_name="my_row_sum",
        inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))],
        extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256),
    ),
)

# Case 6: the override path. repeat2 writes y[2i] = y[2i+1] = x[i]; meta_fn / eager_fn /
# aot_fn are written by hand and the spec's outputs and geometry are left out. (trt_kernels
# can also say this declaratively: outputs=[OutputDecl("y", shape=(ttk.Numel("x") * 2,))].)
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

# The seed compiles repeat2 here, at import (cuda.core.Device() needs the NVIDIA driver); this
# script does it on the first eager call instead, so that importing it needs no GPU:
# `trt-kernels status|inspect|compile examples/cuda_kernel_op.py` run on a CPU machine.
_repeat2_device = _repeat2_kernel = None


def _repeat2_compile():
    global _repeat2_device, _repeat2_kernel
    if _repeat2_kernel is None:
        device = _Device()
        device.set_current()
        _repeat2_opts = _ProgramOptions(
            std="c++17",
            arch=f"sm_{device.arch}",
            include_path=["/usr/local/cuda/include"],
        )
        _repeat2_kernel = (
            _Program(CU_REPEAT2, code_type="c++", options=_repeat2_opts)
            .compile("ptx", name_expressions=("repeat2_kernel",))
            .get_kernel("repeat2_kernel")
        )
        _repeat2_device = device
    return _repeat2_device, _repeat2_kernel


class _PTStream:
    def __cuda_stream__(self):
        return (0, torch.cuda.current_stream().cuda_stream)


def _repeat2_meta(x: torch.Tensor) -> torch.Tensor:
    return torch.empty((x.numel() * 2,), device=x.device, dtype=x.dtype)


def _repeat2_eager(x: torch.Tensor) -> torch.Tensor:
    flat = x.contiguous().view(-1)
    n = int(flat.numel())
    y = torch.empty((n * 2,), device=x.device, dtype=x.dtype)
    block = 256
    grid = max(1, (n + block - 1) // block)
    device, kernel = _repeat2_compile()  # the seed's module-level compile, on first use
    _cuda_launch(
        device.create_stream(_PTStream()),
        _LaunchConfig(grid=(grid,), block=(block,)),
        kernel,
        flat.data_ptr(),
        n,
        y.data_ptr(),
    )
    return y


def _repeat2_aot(inputs, outputs, tactic):
    n = inputs[0].shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    params.shared_mem = 0
    extra = trtp.SymIntExprs(1)
    extra[0] = trtp.SymInt32(n)
    return params, extra


ttk.cuda_kernel_op(
    "kern_ex::repeat2",
    ttk.KernelSpec(
        kernel_source=CU_REPEAT2,
        kernel_name="repeat2_kernel",
        inputs=[ttk.InputDecl("x")],
        # outputs / geometry come from the overrides below.
    ),
    meta_fn=_repeat2_meta,
    eager_fn=_repeat2_eager,
    aot_fn=_repeat2_aot,
    supports_dynamic_shapes=True,
)

# Case 7: one launch, two outputs; the schema returns (Tensor, Tensor).
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

ttk.cuda_kernel_op(
    "kern_ex::sin_cos",
    ttk.KernelSpec(
        kernel_source=CU_SIN_COS,
        kernel_name="my_sin_cos",
        inputs=[ttk.InputDecl("x")],
        outputs=[
            ttk.OutputDecl("s", shape=ttk.SameAs("x")),
            ttk.OutputDecl("c", shape=ttk.SameAs("x")),
        ],
        extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,), layout="flat"),
    ),
    supports_dynamic_shapes=True,
)


class SigmoidModel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.sigmoid(x)


class AddModel(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.add(a, b)


class ScaleModel(torch.nn.Module):
    def __init__(self, alpha: float) -> None:
        super().__init__()
        self.alpha = alpha

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.scale(x, self.alpha)


class Relu2DModel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.relu_2d(x)


class RowSumModel(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.row_sum(x)


class Repeat2Model(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.ops.kern_ex.repeat2(x)


class SinCosModel(torch.nn.Module):
    def forward(self, x: torch.Tensor):
        return torch.ops.kern_ex.sin_cos(x)


def _allclose(out, ref) -> bool:
    if isinstance(out, (tuple, list)):
        return len(out) == len(ref) and all(torch.allclose(o, r, atol=1e-2, rtol=1e-2) for o, r in zip(out, ref))
    return torch.allclose(out, ref, atol=1e-2, rtol=1e-2)


def _run(name, model, inputs, ref, *, compile_trt=True):
    eager_out = model(*inputs)
    ok = _allclose(eager_out, ref)
    print(f"[{name}] eager matches reference: {ok}")
    if not compile_trt:
        print(f"[{name}] TRT compile skipped (see case docstring)")
        return ok
    if TRT_MISSING is not None:
        print(f"[{name}] TRT compile NOT RUN: TensorRT / Torch-TensorRT not importable ({TRT_MISSING})")
        return ok
    trt_model = torch_tensorrt.compile(
        model,
        ir="dynamo",
        inputs=list(inputs),
        enabled_precisions={torch.float32},
        min_block_size=1,
    )
    with torch.no_grad():
        for _ in range(5):
            out = trt_model(*inputs)
            assert _allclose(out, ref), f"{name}: mismatch"
    print(f"[{name}] TRT compile + run successful{TRT_LABEL}")
    return ok


def _tensorrt_half() -> None:
    """Real TensorRT when it imports; else, where it can run, real Torch-TensorRT over the emulator."""
    global TRT_MISSING, TRT_LABEL, torch_tensorrt, trtp
    from trt_kernels.testing import emulate_tensorrt, emulation_unavailable_reason, is_emulated

    if TRT_MISSING is None:
        import tensorrt

        what = (f"TensorRT {tensorrt.__version__} API, libnvinfer emulated" if is_emulated()
                else f"TensorRT {tensorrt.__version__}")
        TRT_LABEL = f" (Torch-TensorRT {torch_tensorrt.__version__.split('+')[0]}, {what})"
        return
    why = emulation_unavailable_reason()
    if why is not None:
        TRT_MISSING += f"; emulated tier unavailable too: {why}"
        return
    _, torch_tensorrt = emulate_tensorrt()
    import tensorrt.plugin as trtp  # noqa: F811 - case 6's aot_fn uses it

    TRT_MISSING = None
    TRT_LABEL = (f" (Torch-TensorRT {torch_tensorrt.__version__.split('+')[0]}, "
                 f"TensorRT {sys.modules['tensorrt'].__version__} API, libnvinfer emulated)")


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/cuda_kernel_op.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/cuda_kernel_op.py` declare its ops and compile them.",
              file=sys.stderr)
        return 1
    _tensorrt_half()
    results = []
    x = torch.randn(4, 128, device="cuda", dtype=torch.float32)
    results.append(_run("sigmoid", SigmoidModel().cuda().eval(), (x,), torch.sigmoid(x)))

    a = torch.randn(256, device="cuda", dtype=torch.float32)
    b = torch.randn(256, device="cuda", dtype=torch.float32)
    results.append(_run("add", AddModel().cuda().eval(), (a, b), a + b))

    alpha = 2.5
    results.append(_run("scale", ScaleModel(alpha).cuda().eval(), (x,), alpha * x))

    x2d = torch.randn(33, 47, device="cuda", dtype=torch.float32)
    results.append(_run("relu_2d", Relu2DModel().cuda().eval(), (x2d,), torch.relu(x2d)))

    xr = torch.randn(8, 256, device="cuda", dtype=torch.float32)
    results.append(_run("row_sum", RowSumModel().cuda().eval(), (xr,), xr.sum(-1)))

    xrep = torch.randn(1024, device="cuda", dtype=torch.float32)
    results.append(_run("repeat2", Repeat2Model().cuda().eval(), (xrep,), torch.repeat_interleave(xrep, 2, dim=0)))

    xsc = torch.randn(7, 31, device="cuda", dtype=torch.float32)
    results.append(_run("sin_cos", SinCosModel().cuda().eval(), (xsc,), (torch.sin(xsc), torch.cos(xsc))))
    print(f"{sum(results)}/{len(results)} cases match their references eagerly")
    return 0 if all(results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
