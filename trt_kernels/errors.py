"""Exception types. Every message names the op, the field or argument, and the fix."""

from __future__ import annotations


class SpecError(ValueError):
    """An authoring mistake in a :class:`~trt_kernels.KernelSpec` or its registration."""


class KernelABIError(SpecError):
    """The compiled kernel's parameter list does not match the spec's calling convention."""


class ArchError(SpecError):
    """An op's code cannot target the GPUs asked for: its declared ``min_arch`` (or its PTX's ``.target``) is
    above the lowest arch an engine must load on, or the GPU is below the kernel's ``min_arch``."""


class CompileError(RuntimeError):
    """NVRTC rejected the kernel source; the message carries NVRTC's log."""


class NoCudaDeviceError(RuntimeError):
    """An eager launch was asked for where no CUDA device is usable."""


class InputError(ValueError):
    """Bad arguments at call time (device, dtype, rank, sizes); nothing was launched."""


class LaunchError(RuntimeError):
    """The CUDA driver refused to load or launch the kernel."""


class PtxVersionError(RuntimeError):
    """PTX written by an NVRTC newer than the CUDA driver can load."""


class UnregisteredOpError(RuntimeError):
    """The op was unregistered (or is being re-declared) and has no kernel right now."""


class UnknownOpError(KeyError):
    """A name no op declared with trt_kernels has (:func:`trt_kernels.unregister`): a ``KeyError``, as a mapping's
    missing key, whose message reads as written (not quoted)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class OnnxExportError(ValueError):
    """A model calling trt_kernels ops cannot be exported to ONNX as it is (:mod:`trt_kernels.onnx_export`)."""
