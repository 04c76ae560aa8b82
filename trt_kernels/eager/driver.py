"""Driver-level pieces of an eager launch: per-device kernel loading and packed parameters.

A CUBIN is loaded once with ``cuLibraryLoadData`` (context-independent
loading) and turned into a ``CUfunction`` once per device, under that
device's primary context (the one torch uses). Parameters are packed with
one precompiled ``struct.Struct`` into a per-thread buffer whose ``void*[]``
array is built once, so a launch is ``pack_into`` plus ``cuLaunchKernel``.
"""

from __future__ import annotations

import ctypes
import struct
import threading
from typing import Dict, Optional, Sequence, Tuple

from trt_kernels.errors import LaunchError, NoCudaDeviceError
from trt_kernels.limits import STATIC_SHARED_MEM

_INIT_LOCK = threading.Lock()
_initialized = False

# driver errors after which a launch is retried with the tensor's device made current
RETRY_CONTEXT_ERRORS = frozenset({201, 400, 709})  # INVALID_CONTEXT, INVALID_HANDLE, CONTEXT_IS_DESTROYED


def driver():
    from cuda.bindings import driver as cu

    return cu


def check(result, what: str):
    err = result[0]
    if int(err) != 0:
        raise LaunchError(f"{what} failed: {error_text(err)}")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def error_text(err) -> str:
    cu = driver()
    try:
        code = cu.CUresult(int(err))
        _, name = cu.cuGetErrorName(code)
        _, desc = cu.cuGetErrorString(code)
        name = name.decode() if isinstance(name, bytes) else name
        desc = desc.decode() if isinstance(desc, bytes) else desc
        return f"{name} ({int(err)}): {desc}"
    except Exception:  # noqa: BLE001 - best effort text for an error code
        return f"CUDA driver error {int(err)}"


def ensure_driver() -> None:
    """``cuInit`` once; a clear error where no CUDA device can be used."""
    global _initialized
    if _initialized:
        return
    with _INIT_LOCK:
        if _initialized:
            return
        try:
            cu = driver()
            (err,) = cu.cuInit(0)
        except Exception as e:  # noqa: BLE001 - missing libcuda and the like
            raise NoCudaDeviceError(f"the CUDA driver could not be loaded ({e}); "
                                    "eager launches need an NVIDIA GPU and driver") from e
        if int(err) != 0:
            raise NoCudaDeviceError(f"cuInit failed: {error_text(err)}; eager launches need a usable CUDA device")
        _initialized = True


def driver_version() -> Optional[Tuple[int, int]]:
    """The CUDA version the installed driver supports, e.g. (13, 0); None without a driver."""
    try:
        cu = driver()
        err, v = cu.cuDriverGetVersion()
        if int(err) != 0:
            return None
        return int(v) // 1000, (int(v) % 1000) // 10
    except Exception:  # noqa: BLE001
        return None


class PrimaryContext:
    """The primary context of one device (torch's), retained for the process lifetime."""

    _cache: Dict[int, object] = {}
    _lock = threading.Lock()

    @classmethod
    def get(cls, device: int):
        ctx = cls._cache.get(device)
        if ctx is not None:
            return ctx
        with cls._lock:
            ctx = cls._cache.get(device)
            if ctx is None:
                ensure_driver()
                cu = driver()
                dev = check(cu.cuDeviceGet(device), f"cuDeviceGet({device})")
                ctx = check(cu.cuDevicePrimaryCtxRetain(dev), f"cuDevicePrimaryCtxRetain({device})")
                cls._cache[device] = ctx
        return ctx

    @classmethod
    def make_current(cls, device: int) -> None:
        check(driver().cuCtxSetCurrent(cls.get(device)), f"cuCtxSetCurrent(device {device})")


class LoadedKernel:
    """One symbol of one CUBIN; ``function(device)`` gives its CUfunction on that device (loading it once).

    ``functions`` (device -> CUfunction) and ``handles`` (device -> the CUfunction as an int, what the compiled
    launcher and the native kernel take) hold what is loaded so far: the eager readers look a device up there
    without a call and call :meth:`function` / :meth:`handle` on a miss. Only this class writes them."""

    def __init__(self, image: bytes, symbol: str, label: str, raise_dynamic_smem: bool = False, shared_mem: int = 0):
        self.image = image
        self.symbol = symbol
        self.label = label
        # a launch may ask for more than 48 KB of dynamic shared memory: raise the function's limit
        # to what the device allows (CUDA refuses such a launch without this opt-in)
        self.raise_dynamic_smem = raise_dynamic_smem
        # the code itself needs this much dynamic shared memory (Triton's metadata.shared): over 48 KB,
        # the function's limit is raised to exactly that
        self.shared_mem = shared_mem
        self._library = None
        self._kernel = None
        self.functions: Dict[int, object] = {}
        self.handles: Dict[int, int] = {}  # the CUfunction as an int, for the compiled launcher
        self._lock = threading.Lock()

    def function(self, device: int):
        f = self.functions.get(device)
        if f is None:
            f = self._load(device)
        return f

    def handle(self, device: int) -> int:
        """``function(device)`` as an int (what the compiled launcher takes)."""
        h = self.handles.get(device)
        if h is None:
            h = self.handles.setdefault(device, int(self.function(device)))
        return h

    def _load(self, device: int):
        with self._lock:
            f = self.functions.get(device)
            if f is not None:
                return f
            cu = driver()
            ensure_driver()
            if self._library is None:
                self._library = check(
                    cu.cuLibraryLoadData(self.image, None, None, 0, None, None, 0),
                    f"{self.label}: cuLibraryLoadData",
                )
                self._kernel = check(
                    cu.cuLibraryGetKernel(self._library, self.symbol.encode()),
                    f"{self.label}: cuLibraryGetKernel({self.symbol!r})",
                )
            ctx = PrimaryContext.get(device)
            check(cu.cuCtxPushCurrent(ctx), "cuCtxPushCurrent")
            try:
                f = check(cu.cuKernelGetFunction(self._kernel), f"{self.label}: cuKernelGetFunction")
                self._configure(cu, f)
            finally:
                cu.cuCtxPopCurrent()
            self.functions[device] = f
            return f

    def _configure(self, cu, f) -> None:
        """Set function attributes before ``f`` is handed out (under its device's context)."""
        attr = cu.CUfunction_attribute
        if self.shared_mem > STATIC_SHARED_MEM:
            check(cu.cuFuncSetAttribute(f, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared_mem),
                  f"{self.label}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={self.shared_mem}) (the device "
                  "has less shared memory per block than this kernel needs; for a Triton kernel use a smaller BLOCK "
                  "or fewer num_stages)")
            return
        if not self.raise_dynamic_smem:
            return
        static = check(cu.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
                       f"{self.label}: cuFuncGetAttribute(SHARED_SIZE_BYTES)")
        dev = check(cu.cuCtxGetDevice(), "cuCtxGetDevice")
        optin = check(cu.cuDeviceGetAttribute(
            cu.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, dev),
            "cuDeviceGetAttribute(MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)")
        check(cu.cuFuncSetAttribute(f, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(optin) - int(static)),
              f"{self.label}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)")


_ALIGN = {"Q": 8, "q": 8, "i": 4, "I": 4, "f": 4, "?": 1, "b": 1, "B": 1, "h": 2, "H": 2}


class ParamPack:
    """A packed kernel-parameter buffer laid out for ``codes`` (struct codes, one per parameter).

    ``buffer()`` returns ``(ctypes buffer, address of its void*[] array, the array)`` for the calling
    thread (``per_thread.b``, once made: the generated launcher reads it there without a call);
    ``struct.pack_into(buffer, 0, *values)`` fills it. ``n_hidden``: the ``void*[]`` array
    has that many more entries, each pointing at an 8-byte slot after the packed values (zero,
    i.e. a NULL pointer, unless :meth:`set_hidden` sets it): the pointers a compiler appends after
    the declared parameters (Triton's scratch buffers).
    """

    def __init__(self, codes: Sequence[str], n_hidden: int = 0):
        fmt = "="
        offsets = []
        pos = 0
        for c in codes:
            a = _ALIGN[c]
            pad = (-pos) % a
            if pad:
                fmt += f"{pad}x"
                pos += pad
            offsets.append(pos)
            fmt += c
            pos += struct.calcsize("=" + c)
        self.codes = tuple(codes)
        self.struct = struct.Struct(fmt)
        self.offsets = tuple(offsets)
        self.n_hidden = n_hidden
        self.hidden_offset = (pos + 7) // 8 * 8
        self.size = max(self.hidden_offset + 8 * n_hidden if n_hidden else pos, 1)
        self.per_thread = threading.local()  # its .b: this thread's (buffer, address of the void*[] array, array)

    def buffer(self):
        try:
            return self.per_thread.b
        except AttributeError:
            buf = ctypes.create_string_buffer(self.size)
            base = ctypes.addressof(buf)
            ptrs = [base + o for o in self.offsets] + [base + self.hidden_offset + 8 * i for i in range(self.n_hidden)]
            arr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
            self.per_thread.b = (buf, ctypes.addressof(arr), arr)
            return self.per_thread.b

    def set_hidden(self, buf, values: Sequence[int]) -> None:
        """Set the hidden pointers (those not in ``values`` become NULL)."""
        for i in range(self.n_hidden):
            struct.pack_into("=Q", buf, self.hidden_offset + 8 * i, int(values[i]) if i < len(values) else 0)
