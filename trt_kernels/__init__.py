"""trt-kernels: one hand-written CUDA C++ kernel, three artefacts.

From one :class:`KernelSpec`: a PyTorch op (fake impl for ``torch.compile`` /
``torch.export``, eager launches through the CUDA driver API), a TensorRT
quickly-deployable plugin whose ahead-of-time impl embeds the same
NVRTC-compiled PTX, and a Torch-TensorRT converter.
"""

from trt_kernels.api import cuda_kernel_op, ptx_op, triton_kernel_op, unregister
from trt_kernels.errors import (
    CompileError,
    InputError,
    KernelABIError,
    LaunchError,
    NoCudaDeviceError,
    PtxVersionError,
    SpecError,
)
from trt_kernels.expr import DimSize, Numel, Scalar, cdiv, maximum, minimum, next_power_of_2
from trt_kernels.spec import (
    Custom,
    Elementwise,
    InputDecl,
    KernelSpec,
    OutputDecl,
    ReduceDims,
    Reduction,
    SameAs,
    SameDim,
    SameShape,
    ScalarInput,
    SizeArg,
)

__version__ = "0.1.0"


def __getattr__(name):
    if name == "TritonConfig":  # the module imports without triton; triton is imported when an op is declared
        from trt_kernels.sources.triton_source import TritonConfig

        return TritonConfig
    raise AttributeError(f"module 'trt_kernels' has no attribute {name!r}")

__all__ = [
    "Custom", "DimSize", "Elementwise", "InputDecl", "KernelSpec", "Numel", "OutputDecl",
    "ReduceDims", "Reduction", "SameAs", "SameDim", "SameShape", "Scalar", "ScalarInput", "SizeArg",
    "cuda_kernel_op", "ptx_op", "unregister",
    "triton_kernel_op", "TritonConfig",
    "cdiv", "maximum", "minimum", "next_power_of_2",
    "CompileError", "InputError", "KernelABIError", "LaunchError", "NoCudaDeviceError",
    "PtxVersionError", "SpecError",
]
