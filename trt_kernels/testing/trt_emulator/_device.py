"""The GPU the emulator builds for and runs on: its compute capability and launch limits, and the
launch checks made against them.

With a CUDA device, the device of the calling thread's current context (device 0 where none is
current), read from the driver. Without one, the emulator stands in for an H100: compute
capability 9.0 and sm_90's limits (:data:`SM90`). Real TensorRT does not build without a GPU at
all; an engine the emulator builds on the CPU is an engine for sm_90: it records compute 9.0, its
plugin PTX was checked against sm_90 (``.target``) and its launches against sm_90's limits, and
it deserializes where the device is compute 9.0 (a CPU process, which stands in for sm_90 again,
or an H100/H200), and is refused elsewhere as TensorRT refuses a plan built for another GPU.

Launch limits (what ``cuLaunchKernel`` refuses with ``CUDA_ERROR_INVALID_VALUE``, measured on an
H100): a grid or block dimension of 0; more threads per block than the device (1024) or the
kernel's registers allow; block x/y above 1024 or z above 64; grid x above 2**31-1 or y/z above
65535; dynamic shared memory above what the function may use without
``cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)`` (48 KB less its static
shared memory), or static + dynamic above the device's opt-in maximum (227 KB on sm_90).

Whether TensorRT raises a QDP AOT kernel's dynamic shared memory limit is not documented: the
emulator models TensorRT as NOT opting in (the strict reading), so more than 48 KB (less static)
is refused at build and fails at run time.
"""

from typing import Dict, List, NamedTuple, Optional, Tuple

from . import _cuda


class Device(NamedTuple):
    name: str
    cc: Tuple[int, int]
    max_threads: int
    max_block: Tuple[int, int, int]
    max_grid: Tuple[int, int, int]
    smem_default: int  # static + dynamic shared memory per block without the opt-in
    smem_optin: int  # static + dynamic shared memory per block with the opt-in
    gpu: bool  # read from a real device (False: the sm_90 stand-in of a CPU process)

    @property
    def compute(self) -> str:
        """``"9.0"``: the compute capability as TensorRT's messages write it."""
        return f"{self.cc[0]}.{self.cc[1]}"


#: the device a process without a GPU stands in for (an H100's limits, as measured there)
SM90 = Device("no GPU: the emulator builds for sm_90 (an H100's limits)", (9, 0), 1024, (1024, 1024, 64),
              (2**31 - 1, 65535, 65535), 49152, 232448, False)

_BY_ORDINAL: Dict[int, Device] = {}


def current() -> Device:
    """The device builds target and engines run on in this process (see the module docstring)."""
    if not _cuda.available():
        return SM90
    ordinal = _cuda.device_ordinal()
    dev = _BY_ORDINAL.get(ordinal)
    if dev is None:
        a = _cuda.device_attributes(ordinal)
        dev = _BY_ORDINAL[ordinal] = Device(
            f"{a['name']} (device {ordinal})", (a["cc_major"], a["cc_minor"]), a["max_threads"],
            (a["block_x"], a["block_y"], a["block_z"]), (a["grid_x"], a["grid_y"], a["grid_z"]),
            a["smem_default"], a["smem_optin"], True)
    return dev


def launch_problems(v: Dict[str, int], dev: Device, static_smem: int = 0, max_dynamic_smem: Optional[int] = None,
                    fn_max_threads: Optional[int] = None, at_enqueue: bool = False) -> List[str]:
    """What ``cuLaunchKernel`` would refuse about a launch ``v`` (``grid_x`` ... ``shared_mem``) on ``dev``.

    ``static_smem`` / ``max_dynamic_smem`` / ``fn_max_threads``: what is known of the function (from the
    driver on a GPU; ``static_smem`` from the PTX on the CPU). A zero dimension is a failure only
    ``at_enqueue`` (a build cannot know the run-time shapes that make it so; a launch with it fails)."""
    grid = (v["grid_x"], v["grid_y"], v["grid_z"])
    block = (v["block_x"], v["block_y"], v["block_z"])
    smem = v["shared_mem"]
    out = []
    for what, dims, lims in (("grid", grid, dev.max_grid), ("block", block, dev.max_block)):
        for i, (d, lim) in enumerate(zip(dims, lims)):
            if d < 0:
                out.append(f"{what}_{'xyz'[i]} = {d} is negative (CUDA_ERROR_INVALID_VALUE)")
            elif d > lim:
                out.append(f"{what}_{'xyz'[i]} = {d} exceeds the device's maximum {lim} (CUDA_ERROR_INVALID_VALUE)")
        if at_enqueue and 0 in dims:
            out.append(f"{what} {dims} has a zero dimension (CUDA_ERROR_INVALID_VALUE)")
    threads = block[0] * block[1] * block[2]
    if min(block) >= 0 and threads > dev.max_threads:
        out.append(f"block {block} has {threads} threads, more than the device's {dev.max_threads} per block "
                   "(CUDA_ERROR_INVALID_VALUE)")
    elif fn_max_threads is not None and min(block) >= 0 and threads > fn_max_threads:
        out.append(f"block {block} has {threads} threads; the kernel's register use allows {fn_max_threads} per "
                   "block (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES)")
    if smem < 0:
        out.append(f"shared_mem = {smem} is negative (CUDA_ERROR_INVALID_VALUE)")
    else:
        allowed = max(dev.smem_default - static_smem, 0) if max_dynamic_smem is None else max_dynamic_smem
        if smem > allowed:
            static = f" less the kernel's {static_smem} bytes of static shared memory" if static_smem else ""
            more = (f"; static + dynamic ({static_smem + smem}) also exceeds the device's opt-in maximum of "
                    f"{dev.smem_optin} bytes" if static_smem + smem > dev.smem_optin else "")
            out.append(f"dynamic shared memory {smem} bytes exceeds the {allowed} bytes a launch may use without "
                       f"cuFuncSetAttribute(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) ({dev.smem_default}"
                       f"{static}), which TensorRT is not known to call for QDP AOT kernels{more} "
                       "(CUDA_ERROR_INVALID_VALUE)")
    return out
