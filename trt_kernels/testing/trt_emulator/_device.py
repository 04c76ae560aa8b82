"""The GPU the emulator builds for and runs on: its compute capability and launch limits, and the
launch checks made against them.

With a CUDA device, the device of the calling thread's current context (device 0 where none is
current), read from the driver. Without one, the emulator stands in for an H100: compute
capability 9.0 and sm_90's limits (:data:`SM90`). Real TensorRT does not build without a GPU at
all; an engine the emulator builds on the CPU is an engine for sm_90: it records compute 9.0, its
plugin PTX was checked against sm_90 (``.target``) and its launches against sm_90's limits, and
it deserializes where the device is compute 9.0 (a CPU process, which stands in for sm_90 again,
or an H100/H200), and is refused elsewhere as TensorRT refuses a plan built for another GPU
(unless it was built hardware-compatible: see ``_engine.Runtime.deserialize_cuda_engine``).

Standing in another GPU (:func:`stand_in_device`, or ``$TRT_EMULATOR_STAND_IN_CC`` for a whole
process and its children): the emulator then believes the device has that compute capability and
that card's limits (:data:`CARDS`): builds record it and check plugin PTX and launches against it,
deserialization compares plans with it. The state is the environment variable itself, so every
copy of the emulator in the process (the ``tensorrt.tensorrt`` a stand-in block loads, and
``trt_kernels.testing.trt_emulator`` imported by name) and every child process started inside the
block agree; it is process-wide (all threads). On a machine with a GPU the stand-in's
``Device.gpu`` stays ``True``: kernels are still loaded by the real card's driver and launched on
it (tactic timing, ``execute_async_v3``), and in addition their PTX is checked against the
stood-in compute capability (``_ptx.check``), as the stood-in card's driver would refuse it; the
real card's own limits are not consulted then, the stood-in card's are. ``Device.stand_in`` says
which one it is.

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

import contextlib
import os
from typing import Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _cuda


class Device(NamedTuple):
    name: str
    cc: Tuple[int, int]
    max_threads: int
    max_block: Tuple[int, int, int]
    max_grid: Tuple[int, int, int]
    smem_default: int  # static + dynamic shared memory per block without the opt-in
    smem_optin: int  # static + dynamic shared memory per block with the opt-in
    gpu: bool  # a real device is there (kernels load and launch on it); False: a CPU process
    stand_in: bool = False  # a card named by stand_in_device / $TRT_EMULATOR_STAND_IN_CC, not the process's own

    @property
    def compute(self) -> str:
        """``"9.0"``: the compute capability as TensorRT's messages write it."""
        return f"{self.cc[0]}.{self.cc[1]}"


#: the device a process without a GPU stands in for (an H100's limits, as measured there)
SM90 = Device("no GPU: the emulator builds for sm_90 (an H100's limits)", (9, 0), 1024, (1024, 1024, 64),
              (2**31 - 1, 65535, 65535), 49152, 232448, False)

_BY_ORDINAL: Dict[int, Device] = {}

#: the environment variable naming the compute capability the emulator stands in for ("8.6"); set by
#: :func:`stand_in_device` for the duration of its block, or by hand for a whole (child) process
ENV_VAR = "TRT_EMULATOR_STAND_IN_CC"


def _card(name: str, cc: Tuple[int, int], smem_optin: int) -> Device:
    # every card of the table: 1024 threads per block, block (1024, 1024, 64), grid (2**31-1, 65535, 65535)
    # and 48 KB of shared memory per block without the opt-in, as on sm_90
    return Device(name, cc, 1024, (1024, 1024, 64), (2**31 - 1, 65535, 65535), 49152, smem_optin, False, True)


#: the cards the emulator can stand in for, by compute capability: the opt-in shared memory per block
#: (static + dynamic) from the CUDA C++ Programming Guide's table of technical specifications per compute
#: capability (notes/fleet_engines.md, section G); the other limits are the same on all of them
CARDS: Dict[Tuple[int, int], Device] = {d.cc: d for d in (
    _card("stand-in for compute 7.5 (Turing: T4, RTX 20)", (7, 5), 65536),
    _card("stand-in for compute 8.0 (A100)", (8, 0), 166912),
    _card("stand-in for compute 8.6 (A10, A40, RTX 30)", (8, 6), 101376),
    _card("stand-in for compute 8.9 (L4, L40, RTX 40)", (8, 9), 101376),
    _card("stand-in for compute 9.0 (H100, H200)", (9, 0), 232448),
    _card("stand-in for compute 10.0 (B200)", (10, 0), 232448),
    _card("stand-in for compute 12.0 (RTX 50, RTX PRO Blackwell)", (12, 0), 101376),
)}


def parse_cc(cc: Union[str, Sequence[int]], source: str = "compute capability") -> Tuple[int, int]:
    """``(major, minor)`` of a card :data:`CARDS` knows, from ``(8, 6)`` or ``"8.6"``; else ``ValueError``
    naming the known ones."""
    key: Optional[Tuple[int, int]] = None
    if isinstance(cc, str):
        parts = cc.strip().split(".")
        if len(parts) == 2 and all(p.isdigit() for p in parts):
            key = (int(parts[0]), int(parts[1]))
    elif isinstance(cc, (tuple, list)) and len(cc) == 2 and all(isinstance(x, int) for x in cc):
        key = (int(cc[0]), int(cc[1]))
    if key not in CARDS:
        known = ", ".join(f"{a}.{b}" for a, b in CARDS)
        raise ValueError(f"{source} {cc!r}: the TensorRT emulator can stand in for compute capability {known} "
                         "(give it as (8, 6) or \"8.6\")")
    return key


def stood_in() -> Optional[Tuple[int, int]]:
    """The compute capability stood in for (:data:`ENV_VAR`), or ``None``."""
    spec = os.environ.get(ENV_VAR)
    return parse_cc(spec, f"${ENV_VAR}") if spec else None


@contextlib.contextmanager
def stand_in_device(cc: Union[str, Sequence[int]]) -> Iterator[Device]:
    """Inside the block the emulator believes the GPU has compute capability ``cc`` (``(8, 6)`` or ``"8.6"``,
    one of :data:`CARDS`) and that card's limits: :func:`current` returns its :class:`Device` (yielded), with
    ``gpu`` telling whether a real GPU is there (see the module docstring). The previous state is restored on
    exit, also when the block raises; blocks nest. An unknown ``cc`` is a ``ValueError`` listing the known ones,
    raised before anything changes.

    Process-wide: it sets :data:`ENV_VAR`, which every copy of the emulator in the process reads and child
    processes started inside the block inherit."""
    key = parse_cc(cc)
    before = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = f"{key[0]}.{key[1]}"
    try:
        yield current()
    finally:
        if before is None:
            os.environ.pop(ENV_VAR, None)
        else:
            os.environ[ENV_VAR] = before


def current() -> Device:
    """The device builds target and engines run on in this process (see the module docstring)."""
    cc = stood_in()
    if cc is not None:
        return CARDS[cc]._replace(gpu=_cuda.available())
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
