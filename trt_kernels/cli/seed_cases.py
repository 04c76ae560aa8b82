"""The seed's seven cases (``shared/seeds/cuda_kernel_op_example.txt``) as data: kernel source,
spec, inputs and a torch reference each, declarable under any namespace; and one case for each
of the two other kernel sources (:data:`SOURCE_CASES`: ``ptx_op``, ``triton_kernel_op``).

``trt-kernels selftest`` runs them on every tier this machine has; tests may reuse them.
``examples/cuda_kernel_op.py`` is the seed as a script (its declarations as the seed writes
them, plus the TensorRT half); this module is the same seven declarations in a form a command
can import and loop over. Case 6 keeps the
seed's override path: a hand-written ``meta_fn``, an ``eager_fn`` that launches through
``cuda.core`` (compiled on first use) and an ``aot_fn`` that imports ``tensorrt.plugin`` only
when TensorRT (or its emulator) calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from trt_kernels.api import cuda_kernel_op
from trt_kernels.expr import DimSize, Numel
from trt_kernels.spec import Elementwise, InputDecl, KernelSpec, OutputDecl, ReduceDims, Reduction, SameAs, ScalarInput

NAMESPACE = "ttk_selftest"

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
  int j = blockIdx.x * blockDim.x + threadIdx.x;  // innermost
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


@dataclass(frozen=True)
class SeedCase:
    """One case: how to declare it, fresh inputs for it, and what it must compute."""

    name: str  # "sigmoid", ... (the op is "<namespace>::<name>")
    title: str
    spec: Optional[KernelSpec]  # None: ``declarer`` declares it through another entry point
    make_inputs: Callable[[torch.device], Tuple[Tuple[torch.Tensor, ...], Tuple[Any, ...]]]  # (tensors, scalars)
    reference: Callable[..., Any]  # (*tensors, *scalars) -> tensor or tuple
    atol: float = 1e-5
    rtol: float = 1e-5
    overrides: Dict[str, Any] = field(default_factory=dict)
    # another entry point than cuda_kernel_op: declare(op_name); and why it cannot be declared here (or None)
    declarer: Optional[Callable[[str], Any]] = None
    unavailable: Callable[[], Optional[str]] = lambda: None

    def op_name(self, namespace: str = NAMESPACE) -> str:
        return f"{namespace}::{self.name}"

    def declare(self, namespace: str = NAMESPACE) -> None:
        if self.declarer is not None:
            self.declarer(self.op_name(namespace))
        else:
            cuda_kernel_op(self.op_name(namespace), self.spec, supports_dynamic_shapes=True, **self.overrides)


def _randn(*shape, device):
    return torch.randn(*shape, device=device, dtype=torch.float32)


# ----- case 6: the seed's override path -----

_REPEAT2: Dict[Any, Any] = {}  # device index -> cuda.core kernel (compiled on first eager call)


def _repeat2_meta(x: torch.Tensor) -> torch.Tensor:
    return torch.empty((x.numel() * 2,), device=x.device, dtype=x.dtype)


def _repeat2_kernel(device_index: int):
    entry = _REPEAT2.get(device_index)
    if entry is None:
        from cuda.core import Device, Program, ProgramOptions

        from trt_kernels.sources.nvrtc import include_dirs

        dev = Device(device_index)
        dev.set_current()
        opts = ProgramOptions(std="c++17", arch=f"sm_{dev.arch}", include_path=include_dirs() or None)
        kernel = Program(CU_REPEAT2, code_type="c++", options=opts).compile(
            "ptx", name_expressions=("repeat2_kernel",)).get_kernel("repeat2_kernel")
        entry = _REPEAT2.setdefault(device_index, (dev, kernel))
    return entry


class _TorchStream:
    def __init__(self, handle: int):
        self.handle = handle

    def __cuda_stream__(self):
        return (0, self.handle)


def _repeat2_eager(x: torch.Tensor) -> torch.Tensor:
    from cuda.core import LaunchConfig, launch

    flat = x.contiguous().view(-1)
    n = int(flat.numel())
    y = torch.empty((n * 2,), device=x.device, dtype=x.dtype)
    if n == 0:
        return y
    dev, kernel = _repeat2_kernel(x.get_device())
    stream = dev.create_stream(_TorchStream(torch.cuda.current_stream(x.device).cuda_stream))
    block = 256
    launch(stream, LaunchConfig(grid=((n + block - 1) // block,), block=(block,)), kernel, flat.data_ptr(), n,
           y.data_ptr())
    return y


def _repeat2_aot(inputs, outputs, tactic):
    import tensorrt.plugin as trtp  # only TensorRT (or its emulator) calls this

    n = inputs[0].shape_expr.numel()
    params = trtp.KernelLaunchParams()
    params.grid_x = trtp.cdiv(n, 256)
    params.block_x = 256
    params.shared_mem = 0
    extra = trtp.SymIntExprs(1)
    extra[0] = trtp.SymInt32(n)
    return params, extra


def _flat_spec(source, kernel, inputs, outputs, extras, block=(256,), layout="flat"):
    return KernelSpec(kernel_source=source, kernel_name=kernel, inputs=inputs, outputs=outputs, extras=extras,
                      geometry=Elementwise(block=block, layout=layout))


CASES: Tuple[SeedCase, ...] = (
    SeedCase(
        "sigmoid", "Elementwise(flat), one input",
        _flat_spec(CU_SIGMOID, "my_sigmoid", [InputDecl("x")], [OutputDecl("y", shape=SameAs("x"))], [Numel("x")]),
        lambda d: ((_randn(4, 128, device=d),), ()), torch.sigmoid, atol=1e-6, rtol=1e-5),
    SeedCase(
        "add", "Elementwise(flat), two inputs",
        _flat_spec(CU_ADD, "my_add", [InputDecl("a"), InputDecl("b")], [OutputDecl("c", shape=SameAs("a"))],
                   [Numel("a")]),
        lambda d: ((_randn(257, device=d), _randn(257, device=d)), ()), torch.add, atol=0.0, rtol=0.0),
    SeedCase(
        "scale", "ScalarInput(float)",
        _flat_spec(CU_SCALE, "my_scale", [InputDecl("x"), ScalarInput("alpha", float)],
                   [OutputDecl("y", shape=SameAs("x"))], [Numel("x")]),
        lambda d: ((_randn(4, 128, device=d),), (float(torch.empty(()).uniform_(0.5, 3.0).item()),)),
        lambda x, alpha: alpha * x, atol=0.0, rtol=0.0),
    SeedCase(
        "relu_2d", "Elementwise(nd), 2-D block",
        _flat_spec(CU_RELU_2D, "my_relu_2d", [InputDecl("x")], [OutputDecl("y", shape=SameAs("x"))],
                   [DimSize("x", 0), DimSize("x", 1)], block=(16, 16), layout="nd"),
        lambda d: ((_randn(33, 47, device=d),), ()), torch.relu, atol=0.0, rtol=0.0),
    SeedCase(
        "row_sum", "Reduction over the last axis",
        KernelSpec(kernel_source=CU_ROW_SUM, kernel_name="my_row_sum", inputs=[InputDecl("x")],
                   outputs=[OutputDecl("y", shape=ReduceDims("x", (-1,)))], extras=[DimSize("x", -1)],
                   geometry=Reduction(reduce_dims=(-1,), block_size=256)),
        lambda d: ((_randn(8, 300, device=d),), ()), lambda x: x.sum(-1), atol=1e-4, rtol=1e-5),
    SeedCase(
        "repeat2", "override path (meta_fn, eager_fn, aot_fn)",
        KernelSpec(kernel_source=CU_REPEAT2, kernel_name="repeat2_kernel", inputs=[InputDecl("x")]),
        lambda d: ((_randn(1024, device=d),), ()), lambda x: torch.repeat_interleave(x, 2, dim=0),
        atol=0.0, rtol=0.0,
        overrides=dict(meta_fn=_repeat2_meta, eager_fn=_repeat2_eager, aot_fn=_repeat2_aot)),
    SeedCase(
        "sin_cos", "two outputs from one launch",
        _flat_spec(CU_SIN_COS, "my_sin_cos", [InputDecl("x")],
                   [OutputDecl("s", shape=SameAs("x")), OutputDecl("c", shape=SameAs("x"))], [Numel("x")]),
        lambda d: ((_randn(7, 31, device=d),), ()), lambda x: (torch.sin(x), torch.cos(x)), atol=1e-5, rtol=1e-4),
)


# ----- one case per other kernel source -----

CU_PTX_SIGMOID = CU_SIGMOID.replace("my_sigmoid", "ttk_ptx_sigmoid")
PTX_ARCH = "sm_75"  # the oldest arch CUDA 13's NVRTC targets: the driver JIT-compiles the PTX for newer GPUs


def _declare_ptx(op_name: str):
    from trt_kernels.api import ptx_op
    from trt_kernels.sources.nvrtc import compile_program

    ptx = compile_program(CU_PTX_SIGMOID, ["ttk_ptx_sigmoid"], arch=PTX_ARCH, label="selftest ptx case").ptx
    return ptx_op(op_name, ptx, "ttk_ptx_sigmoid", inputs=[InputDecl("x")],
                  outputs=[OutputDecl("y", shape=SameAs("x"))],
                  extras=[Numel("x")], geometry=Elementwise(block=(128,)), supports_dynamic_shapes=True)


def _declare_triton(op_name: str):
    from trt_kernels.cli import seed_triton

    return seed_triton.declare(op_name)


def _triton_missing() -> Optional[str]:
    import importlib.util

    if importlib.util.find_spec("triton") is None:
        return "triton is not installed (triton_kernel_op needs pip install 'trt-kernels[triton]')"
    return None


SOURCE_CASES: Tuple[SeedCase, ...] = (
    SeedCase(
        "ptx_sigmoid", "ptx_op: PTX text, JIT-loaded by the driver",
        None, lambda d: ((_randn(3, 100, device=d),), ()), torch.sigmoid, atol=1e-6, rtol=1e-5, declarer=_declare_ptx),
    SeedCase(
        "triton_scale", "triton_kernel_op: a @triton.jit kernel",
        None, lambda d: ((_randn(5, 77, device=d),), (float(torch.empty(()).uniform_(0.5, 3.0).item()),)),
        lambda x, alpha: alpha * x, atol=0.0, rtol=0.0, declarer=_declare_triton, unavailable=_triton_missing),
)
ALL_CASES: Tuple[SeedCase, ...] = CASES + SOURCE_CASES


def declare(namespace: str = NAMESPACE, cases: Optional[Sequence[SeedCase]] = None) -> List[SeedCase]:
    """Declare each case that can be declared here as ``<namespace>::<name>`` (re-declaring replaces);
    returns those cases (default: the seed's seven)."""
    cases = [c for c in (CASES if cases is None else cases) if c.unavailable() is None]
    for c in cases:
        c.declare(namespace)
    return cases


def op(case: SeedCase, namespace: str = NAMESPACE):
    """``torch.ops.<namespace>.<name>`` of a declared case."""
    return getattr(getattr(torch.ops, namespace), case.name)


class CaseModel(torch.nn.Module):
    """A one-op model for Torch-TensorRT: calls the op on its tensors with the case's scalars as
    constants (TensorRT plugin attributes are fixed when the engine is built). ``CaseModel(...)``
    gives a model whose ``forward`` names its tensors: ``torch.export`` (under
    ``torch_tensorrt.compile``) refuses a ``forward(*tensors)``."""

    def __new__(cls, namespace: str, name: str, scalars: Sequence[Any] = (), n_tensors: int = 1):
        if cls is CaseModel:
            cls = {1: _OneTensor, 2: _TwoTensors}[n_tensors]
        return super().__new__(cls)

    def __init__(self, namespace: str, name: str, scalars: Sequence[Any] = (), n_tensors: int = 1):
        super().__init__()
        self.namespace = namespace
        self.op_name = name
        self.scalars = tuple(scalars)

    def _call(self, *tensors):
        return getattr(getattr(torch.ops, self.namespace), self.op_name)(*tensors, *self.scalars)


class _OneTensor(CaseModel):
    def forward(self, x):
        return self._call(x)


class _TwoTensors(CaseModel):
    def forward(self, a, b):
        return self._call(a, b)


def as_tuple(out) -> Tuple[torch.Tensor, ...]:
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def mismatch(case: SeedCase, out, ref) -> Optional[str]:
    """None if ``out`` matches ``ref`` within the case's tolerance, else what differs."""
    outs, refs = as_tuple(out), as_tuple(ref)
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, the reference has {len(refs)}"
    for i, (o, r) in enumerate(zip(outs, refs)):
        if tuple(o.shape) != tuple(r.shape) or o.dtype != r.dtype:
            return f"output {i}: {tuple(o.shape)} {o.dtype}, the reference is {tuple(r.shape)} {r.dtype}"
        if not torch.allclose(o, r.to(o.device), atol=case.atol, rtol=case.rtol):
            diff = (o.double() - r.to(o.device).double()).abs().max().item() if o.numel() else 0.0
            return f"output {i}: max abs difference {diff:.3g} (atol {case.atol}, rtol {case.rtol})"
    return None
