"""trt-kernels: one hand-written CUDA C++ kernel, three artefacts.

From one :class:`KernelSpec`: a PyTorch op (fake impl for ``torch.compile`` /
``torch.export``, eager launches through the CUDA driver API), a TensorRT
quickly-deployable plugin whose ahead-of-time impl embeds the same
NVRTC-compiled PTX, and a Torch-TensorRT converter.
"""

__version__ = "0.1.0"

# The public names, each imported from its module when first used (PEP 562): ``import trt_kernels`` itself
# imports nothing heavy, so ``trt-kernels --help``, ``--version`` and ``cache`` answer without importing torch;
# the first declaration (``ttk.cuda_kernel_op``) imports torch and brings up the TensorRT side.
_EXPORTS = {
    "trt_kernels.api": ("cuda_kernel_op", "ptx_op", "triton_kernel_op", "unregister"),
    "trt_kernels.errors": ("ArchError", "CompileError", "InputError", "KernelABIError", "LaunchError",
                           "NoCudaDeviceError", "PtxVersionError", "SpecError"),
    "trt_kernels.expr": ("DimSize", "Numel", "Scalar", "cdiv", "maximum", "minimum", "next_power_of_2"),
    "trt_kernels.spec": ("Custom", "Elementwise", "InputDecl", "KernelSpec", "OutputDecl", "ReduceDims", "Reduction",
                         "SameAs", "SameDim", "SameShape", "ScalarInput", "SizeArg", "Written"),
    # the module imports without triton; triton is imported when an op is declared
    "trt_kernels.sources.triton_source": ("TritonConfig",),
}
_WHERE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'trt_kernels' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups find it directly
    return value


def __dir__():
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "Custom", "DimSize", "Elementwise", "InputDecl", "KernelSpec", "Numel", "OutputDecl",
    "ReduceDims", "Reduction", "SameAs", "SameDim", "SameShape", "Scalar", "ScalarInput", "SizeArg", "Written",
    "cuda_kernel_op", "ptx_op", "unregister",
    "triton_kernel_op", "TritonConfig",
    "cdiv", "maximum", "minimum", "next_power_of_2",
    "ArchError", "CompileError", "InputError", "KernelABIError", "LaunchError", "NoCudaDeviceError",
    "PtxVersionError", "SpecError",
]
