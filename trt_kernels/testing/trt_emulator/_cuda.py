"""The CUDA driver calls the emulator makes (through ``cuda.bindings``), on the calling thread's
current context, as libnvinfer does. Only used where a GPU is present: loading each tactic's PTX
and reading the build GPU's limits at build time, tactic timing, and
``IExecutionContext.execute_async_v3``."""

import ctypes
import struct
from typing import Any, List, Sequence, Tuple

_STATE = {}


def _cu():
    from cuda.bindings import driver

    return driver


def check(result, what: str):
    err = result[0]
    if int(err) != 0:
        cu = _cu()
        try:
            name = cu.cuGetErrorName(err)[1]
            name = name.decode() if isinstance(name, bytes) else str(name)
        except Exception:  # noqa: BLE001 - best effort text
            name = f"error {int(err)}"
        raise RuntimeError(f"{what} failed: {name} ({int(err)})")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def available() -> bool:
    """True when a CUDA device can be used from this process."""
    if "available" not in _STATE:
        try:
            cu = _cu()
            ok = int(cu.cuInit(0)[0]) == 0
            ok = ok and int(check(cu.cuDeviceGetCount(), "cuDeviceGetCount")) > 0
        except Exception:  # noqa: BLE001 - no driver, no library: no GPU
            ok = False
        _STATE["available"] = ok
    return _STATE["available"]


def current_context() -> int:
    """The calling thread's current context (as an int); where there is none, the primary context of
    device 0 is made current, as the CUDA runtime does on a thread's first call."""
    cu = _cu()
    check(cu.cuInit(0), "cuInit")
    ctx = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        dev = check(cu.cuDeviceGet(0), "cuDeviceGet(0)")
        ctx = check(cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    return int(ctx)


def device_ordinal() -> int:
    """The device of the calling thread's current context, or device 0 where no context is current
    (what the CUDA runtime's ``cudaGetDevice`` gives a fresh thread); creates no context."""
    cu = _cu()
    check(cu.cuInit(0), "cuInit")
    ctx = check(cu.cuCtxGetCurrent(), "cuCtxGetCurrent")
    if ctx is None or int(ctx) == 0:
        return 0
    return int(check(cu.cuCtxGetDevice(), "cuCtxGetDevice"))


def device_attributes(ordinal: int) -> dict:
    """The attributes of device ``ordinal`` that the emulator's launch checks read."""
    cu = _cu()
    dev = check(cu.cuDeviceGet(int(ordinal)), f"cuDeviceGet({ordinal})")
    A = cu.CUdevice_attribute
    names = {
        "cc_major": A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        "cc_minor": A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        "max_threads": A.CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        "block_x": A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, "block_y": A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y,
        "block_z": A.CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, "grid_x": A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
        "grid_y": A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, "grid_z": A.CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z,
        "smem_default": A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        "smem_optin": A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
    }
    out = {k: int(check(cu.cuDeviceGetAttribute(a, dev), f"cuDeviceGetAttribute({k})")) for k, a in names.items()}
    name = check(cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
    out["name"] = (name.split(b"\x00")[0].decode(errors="replace") if isinstance(name, bytes) else str(name)).strip()
    return out


class Kernel:
    """One PTX kernel, JIT-compiled by the driver once per context (as TensorRT loads AOT plugin PTX)."""

    def __init__(self, ptx: bytes, name: str):
        self.ptx = ptx if ptx.endswith(b"\x00") else ptx + b"\x00"
        self.name = name
        self._by_context = {}

    def function(self):
        ctx = current_context()
        hit = self._by_context.get(ctx)
        if hit is None:
            cu = _cu()
            module = check(cu.cuModuleLoadData(self.ptx), f"cuModuleLoadData(PTX of {self.name!r})")
            fn = check(cu.cuModuleGetFunction(module, self.name.encode()), f"cuModuleGetFunction({self.name!r})")
            hit = self._by_context[ctx] = (module, fn, {})
        return hit

    def attributes(self) -> dict:
        """What the driver says about the loaded function: ``static_smem`` (bytes of static shared
        memory), ``max_dynamic_smem`` (the most dynamic shared memory a launch may ask for without
        ``cuFuncSetAttribute``'s opt-in), ``max_threads`` (threads per block its registers allow)."""
        cu = _cu()
        _module, fn, attrs = self.function()
        if not attrs:
            F = cu.CUfunction_attribute
            for k, a in (("static_smem", F.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES),
                         ("max_dynamic_smem", F.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES),
                         ("max_threads", F.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)):
                attrs[k] = int(check(cu.cuFuncGetAttribute(a, fn), f"cuFuncGetAttribute({k} of {self.name!r})"))
        return dict(attrs)

    def launch(self, grid: Sequence[int], block: Sequence[int], shared_mem: int, stream: int,
               args: Sequence[Tuple[str, int]]) -> None:
        """``args``: ``("ptr", address)`` or ``("i32", value)`` in kernel-parameter order; each parameter
        is passed as ``cuLaunchKernel``'s ``kernelParams`` expects: a pointer to its value.

        The function's dynamic shared memory limit is left as loaded (48 KB less its static shared
        memory): the emulator models TensorRT as not calling ``cuFuncSetAttribute(
        CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`` for QDP AOT kernels, which nothing NVIDIA
        documents it doing, so a launch asking for more fails in the driver (CUDA_ERROR_INVALID_VALUE),
        and the build refuses such a tactic first (``_device.launch_problems``)."""
        cu = _cu()
        _module, fn, _attrs = self.function()
        holders: List[Any] = []
        for kind, value in args:
            if kind == "ptr":
                holders.append(ctypes.c_uint64(int(value)))
            else:
                holders.append(ctypes.c_int32(struct.unpack("<i", struct.pack("<I", int(value) & 0xFFFFFFFF))[0]))
        params = (ctypes.c_void_p * max(len(holders), 1))(*[ctypes.addressof(h) for h in holders])
        check(cu.cuLaunchKernel(fn, *grid, *block, int(shared_mem), int(stream), ctypes.addressof(params), 0),
              f"cuLaunchKernel({self.name!r}, grid={tuple(grid)}, block={tuple(block)}, shared_mem={shared_mem})")


def alloc(nbytes: int, stream: int) -> int:
    if nbytes == 0:
        return 0
    return int(check(_cu().cuMemAllocAsync(int(nbytes), int(stream)), f"cuMemAllocAsync({nbytes})"))


def free(ptr: int, stream: int) -> None:
    if ptr:
        check(_cu().cuMemFreeAsync(int(ptr), int(stream)), "cuMemFreeAsync")


def zero(ptr: int, nbytes: int, stream: int) -> None:
    if ptr and nbytes:
        check(_cu().cuMemsetD8Async(int(ptr), 0, int(nbytes), int(stream)), "cuMemsetD8Async")


def fill(ptr: int, byte: int, nbytes: int, stream: int) -> None:
    """Set ``nbytes`` bytes at ``ptr`` to ``byte`` (stream-ordered)."""
    if ptr and nbytes:
        check(_cu().cuMemsetD8Async(int(ptr), int(byte) & 0xFF, int(nbytes), int(stream)), "cuMemsetD8Async")


def copy(dst: int, src: int, nbytes: int, stream: int) -> None:
    if nbytes:
        check(_cu().cuMemcpyDtoDAsync(int(dst), int(src), int(nbytes), int(stream)), "cuMemcpyDtoDAsync")


def upload(dst: int, data: bytes, stream: int) -> None:
    if data:
        check(_cu().cuMemcpyHtoDAsync(int(dst), data, len(data), int(stream)), "cuMemcpyHtoDAsync")
        synchronize(stream)  # ``data`` is a Python object: it must outlive the copy


def download(src: int, nbytes: int, stream: int) -> bytes:
    """``nbytes`` of device memory at ``src``, after the work queued on ``stream`` (into a buffer of its
    own: never into a ``bytes`` object, which CPython may share)."""
    if not (src and nbytes):
        return b""
    buf = (ctypes.c_char * int(nbytes))()
    check(_cu().cuMemcpyDtoHAsync(ctypes.addressof(buf), int(src), int(nbytes), int(stream)), "cuMemcpyDtoHAsync")
    synchronize(stream)
    return bytes(buf)


def new_stream() -> int:
    cu = _cu()
    return int(check(cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING), "cuStreamCreate"))


def destroy_stream(stream: int) -> None:
    check(_cu().cuStreamDestroy(int(stream)), "cuStreamDestroy")


def synchronize(stream: int) -> None:
    check(_cu().cuStreamSynchronize(int(stream)), "cuStreamSynchronize")


def time_ms(fn, stream: int, repeats: int = 5) -> float:
    """Median milliseconds of ``fn()`` (which enqueues work on ``stream``), timed with CUDA events."""
    cu = _cu()
    start = check(cu.cuEventCreate(0), "cuEventCreate")
    stop = check(cu.cuEventCreate(0), "cuEventCreate")
    try:
        fn()  # warm-up: module load, first-launch costs
        times = []
        for _ in range(repeats):
            check(cu.cuEventRecord(start, int(stream)), "cuEventRecord")
            fn()
            check(cu.cuEventRecord(stop, int(stream)), "cuEventRecord")
            check(cu.cuEventSynchronize(stop), "cuEventSynchronize")
            times.append(float(check(cu.cuEventElapsedTime(start, stop), "cuEventElapsedTime")))
        times.sort()
        return times[len(times) // 2]
    finally:
        cu.cuEventDestroy(start)
        cu.cuEventDestroy(stop)
