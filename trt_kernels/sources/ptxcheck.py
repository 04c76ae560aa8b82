"""PTX written by an NVRTC newer than the CUDA driver cannot be loaded by that driver.

The driver JIT-compiles PTX only up to the PTX ISA of its own CUDA version
(CUDA 13.0 -> ISA 9.0), and refuses newer PTX with
``CUDA_ERROR_UNSUPPORTED_PTX_VERSION``. A CUBIN from a newer NVRTC of the same
major version still loads (minor-version compatibility), which is why eager
launches use the CUBIN. TensorRT's AOT plugins take PTX only, so the PTX handed
to TensorRT must come from an NVRTC no newer than the driver that will run the
engine; this module detects the mismatch and says what to do.
"""

from __future__ import annotations

from typing import Optional, Tuple

from trt_kernels.errors import PtxVersionError

Version = Tuple[int, int]


def ptx_loadable_note(nvrtc: Version, driver: Optional[Version]) -> Optional[str]:
    """A sentence explaining the problem if PTX from ``nvrtc`` cannot load on ``driver``; else None."""
    if driver is None or tuple(nvrtc) <= tuple(driver):
        return None
    return (
        f"NVRTC {nvrtc[0]}.{nvrtc[1]} is newer than the CUDA driver (CUDA {driver[0]}.{driver[1]}): the driver "
        "cannot JIT-load the PTX it writes, so TensorRT plugins (which take PTX) would fail when the engine is "
        "built or loaded; eager launches use CUBIN and are unaffected. "
        f"Fix: pip install 'nvidia-cuda-nvrtc=={driver[0]}.{driver[1]}.*' (an NVRTC no newer than the driver), "
        "or update the driver"
    )


def check_ptx_for_driver(op_name: str, nvrtc: Version, driver: Optional[Version],
                         ptx_isa: Optional[Version] = None) -> None:
    """Raise :class:`PtxVersionError` if PTX from ``nvrtc`` cannot be loaded on ``driver``."""
    note = ptx_loadable_note(nvrtc, driver)
    if note:
        isa = f" (PTX ISA {ptx_isa[0]}.{ptx_isa[1]})" if ptx_isa else ""
        raise PtxVersionError(f"{op_name}: PTX for TensorRT{isa}: {note}")
