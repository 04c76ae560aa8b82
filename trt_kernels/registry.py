"""One record per declared op: the spec, its compiled programs, plans and loaded kernels.

Everything here is computed lazily and memoized: the compile (per arch), the plan
(per input ranks and tactic), the loaded CUBIN (per dtype, then per device).
"""

from __future__ import annotations

import contextlib
import logging
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch

from . import abi as _abi
from .compile import CompiledProgram, cached_program, compile_program, default_arch, env_arch, normalize_arch
from .errors import NoCudaDeviceError, SpecError
from .launch import LoadedKernel, ParamPack
from .plan import LaunchPlan, build_plan, tactic_count
from .expr import Const, Expr, lift
from .limits import STATIC_SHARED_MEM
from .spec import Custom, KernelSpec, Validated, kernel_name_for

_LOG = logging.getLogger("trt_kernels")
#: the arch a declaration compiles for when no GPU is visible and none is given: the kernel's
#: parameters and any compile error do not depend on it, and Hopper accepts every feature an
#: sm_80/sm_89 kernel uses (a kernel for newer archs needs arch_override or TRT_KERNELS_ARCH)
CHECK_ARCH = "sm_90"


@dataclass
class KernelOp:
    """Everything trt_kernels knows about one registered op."""

    op_name: str
    spec: KernelSpec
    v: Validated
    meta_fn: Optional[Callable[..., Any]] = None
    eager_fn: Optional[Callable[..., Any]] = None
    aot_fn: Optional[Callable[..., Any]] = None
    schema: str = ""
    ptx: Optional[bytes] = None  # precompiled PTX (ptx_op): NVRTC is skipped
    supports_dynamic_shapes: bool = True
    backward: Optional[Callable[..., Any]] = None
    setup_context: Optional[Callable[..., Any]] = None
    options: Dict[str, Any] = field(default_factory=dict)
    # default values of the schema's trailing arguments (torch leaves out arguments equal to their
    # defaults when it calls a kernel, and in traced graphs): filled back in by every caller
    defaults: Tuple[Any, ...] = ()
    # filled in as the op is used
    library: Any = None
    cuda_impl: Any = None  # the function registered as the op's CUDA kernel
    trt: Dict[str, Any] = field(default_factory=dict)  # status of the TensorRT side
    _programs: Dict[str, CompiledProgram] = field(default_factory=dict)
    _plans: Dict[Tuple, LaunchPlan] = field(default_factory=dict)
    _loaded: Dict[Tuple, LoadedKernel] = field(default_factory=dict)
    _packs: Dict[torch.dtype, ParamPack] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # ----- identity -----
    @property
    def namespace(self) -> str:
        return self.v.namespace

    @property
    def name(self) -> str:
        return self.v.name

    @property
    def overload(self):
        """The ``OpOverload`` (``torch.ops.ns.name.default``)."""
        return getattr(getattr(torch.ops, self.namespace), self.name).default

    @property
    def has_plan_outputs(self) -> bool:
        return bool(self.spec.outputs)

    @property
    def has_plan_geometry(self) -> bool:
        return self.spec.geometry is not None

    @property
    def dtypes(self) -> Tuple[torch.dtype, ...]:
        return self.v.kernel_dtypes

    def name_expression(self, dtype: torch.dtype) -> str:
        return kernel_name_for(self.spec, dtype)

    def with_defaults(self, args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        """``args`` with the trailing arguments torch left out (equal to their defaults) filled in."""
        n = len(self.v.arg_kinds)
        if len(args) >= n or not self.defaults:
            return args
        missing = n - len(args)
        if missing > len(self.defaults):
            return args  # too few arguments: the caller's own check names the missing one
        return tuple(args) + self.defaults[len(self.defaults) - missing:]

    # ----- compile -----
    def resolve_arch(self, arch: Optional[str] = None) -> str:
        arch = arch or self.spec.arch_override or default_arch()
        if arch is None:
            raise NoCudaDeviceError(
                f"{self.op_name}: no GPU arch to compile for: no CUDA device is visible and none was given. "
                "Fix: run on a CUDA machine, or set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH=sm_90"
            )
        return normalize_arch(arch)

    def _program_inputs(self) -> Tuple[str, List[str]]:
        names = [self.name_expression(d) for d in self.dtypes]
        return _with_headers(self.spec.kernel_source, self.dtypes, self.v), names

    def program(self, arch: Optional[str] = None) -> CompiledProgram:
        """NVRTC output (PTX, CUBIN, lowered names) for ``arch``; compiled and ABI-checked once."""
        arch = self.resolve_arch(arch)
        prog = self._programs.get(arch)
        if prog is not None:
            return prog
        with self._lock:
            prog = self._programs.get(arch)
            if prog is None:
                if self.ptx is not None:
                    raise SpecError(f"{self.op_name}: registered from PTX (ptx_op); it has no source to compile")
                source, names = self._program_inputs()
                prog = compile_program(
                    source, names, arch=arch, options=self.spec.compile_options, std=self.spec.compile_std,
                    include_paths=self.spec.include_paths, label=self.op_name,
                )
                self.check_abi(prog.ptx, {n: prog.lowered[n] for n in names})
                self._programs[arch] = prog
        return prog

    def prepare(self) -> str:
        """At declaration: compile (or find in the cache) and check the kernel's parameters.

        The arch comes from ``spec.arch_override`` or ``TRT_KERNELS_ARCH`` (no CUDA query). Without
        either, a cached build for any arch serves the ABI check (a kernel's parameter list in the
        PTX does not depend on the arch) and the CUBIN for the device's arch waits for the first
        launch, so a warm start neither initialises CUDA nor loads NVRTC. Only when nothing is
        cached is the GPU asked for its arch (and the kernel compiled now, so errors surface here).
        Returns what was done, for logging.
        """
        arch = self.spec.arch_override or env_arch()
        if arch is None and not torch.cuda.is_initialized():
            source, names = self._program_inputs()
            prog = cached_program(source, names, options=self.spec.compile_options, std=self.spec.compile_std,
                                  include_paths=self.spec.include_paths)
            if prog is not None:
                with self._lock:
                    self.check_abi(prog.ptx, {n: prog.lowered[n] for n in names})
                    self._programs.setdefault(prog.arch, prog)
                return f"checked against the cached build for {prog.arch}"
        arch = arch or default_arch()
        if arch is None:  # no GPU and no arch given: compile for CHECK_ARCH, so mistakes surface now
            self.program(CHECK_ARCH)
            return f"compiled for {CHECK_ARCH} to check it (no GPU visible and no arch given)"
        self.program(arch)
        return f"compiled for {normalize_arch(arch)}"

    def symbol(self, dtype: torch.dtype, arch: Optional[str] = None) -> str:
        """The PTX/CUBIN symbol of the kernel instantiated for ``dtype``."""
        if self.ptx is not None:
            return self.spec.kernel_name
        return self.program(arch).lowered[self.name_expression(dtype)]

    def check_abi(self, ptx: bytes, symbols: Dict[str, str]) -> None:
        if not self.has_plan_outputs:
            return  # override path: the spec does not say what the kernel takes
        for d in self.dtypes:
            n = self.name_expression(d)
            _abi.check_abi(self.op_name, n, symbols[n], ptx, _abi.expected_params(self.spec, self.v, d))

    def param_codes(self, dtype: torch.dtype) -> List[str]:
        return [p.code for p in _abi.expected_params(self.spec, self.v, dtype)]

    def param_pack(self, dtype: torch.dtype) -> ParamPack:
        """The packed-parameter layout for the kernel at ``dtype`` (one per dtype; buffers are per thread)."""
        pack = self._packs.get(dtype)
        if pack is None:
            pack = self._packs.setdefault(dtype, ParamPack(self.param_codes(dtype)))
        return pack

    # ----- plans -----
    def plan(self, ranks: Tuple[int, ...], tactic: int = 1) -> LaunchPlan:
        key = (tuple(ranks), tactic)
        p = self._plans.get(key)
        if p is None:
            p = build_plan(self.v, self.spec, ranks, tactic)
            self._plans[key] = p
        return p

    @property
    def tactics(self) -> int:
        return tactic_count(self.spec)

    @property
    def dynamic_shared_mem(self) -> Optional[Expr]:
        """The geometry's dynamic shared memory when it is not a constant within 48 KB (None): such a
        kernel's eager launch raises its function's limit first."""
        g = self.spec.geometry
        if not isinstance(g, Custom):
            return None
        smem = lift(g.shared_mem)
        if isinstance(smem, Const) and smem.value <= STATIC_SHARED_MEM:
            return None
        return smem

    @property
    def aot_unavailable(self) -> Optional[str]:
        """Why the TensorRT plugin cannot use an AOT impl, or None."""
        smem = self.dynamic_shared_mem
        if isinstance(smem, Const) and self.aot_fn is None:
            return (f"geometry.shared_mem is {smem.value} bytes, over the {STATIC_SHARED_MEM} a launch may use without "
                    "cuFuncSetAttribute's opt-in, which TensorRT's AOT plugin launch is not known to make")
        return None

    # ----- eager loading -----
    def loaded_kernel(self, dtype: torch.dtype, device: int) -> LoadedKernel:
        """The kernel image for ``dtype`` compiled for ``device``'s arch (CUBIN; PTX for ptx_op)."""
        major, minor = torch.cuda.get_device_capability(device)
        arch = f"sm_{major}{minor}"
        key = (dtype, arch)
        lk = self._loaded.get(key)
        if lk is None:
            big = self.dynamic_shared_mem is not None
            if self.ptx is not None:
                lk = LoadedKernel(self.ptx + b"\x00", self.spec.kernel_name, self.op_name, raise_dynamic_smem=big)
            else:
                prog = self.program(arch)
                lk = LoadedKernel(prog.cubin, prog.lowered[self.name_expression(dtype)], self.op_name,
                                  raise_dynamic_smem=big)
            self._loaded[key] = lk
        return lk


def _with_headers(source: str, kernel_dtypes, v: Validated) -> str:
    """Prepend ``#include <cuda_fp16.h>`` / ``<cuda_bf16.h>`` when a declared dtype needs it."""
    from . import dtypes as _dt

    needed = []
    for d in list(kernel_dtypes) + [t.dtype for t in v.tensor_decls if t.dtype is not None]:
        h = _dt.header(d)
        if h and h not in needed and h not in source:
            needed.append(h)
    if not needed:
        return source
    # '#line 1' after the includes: NVRTC's messages give the line numbers of the user's source
    return "".join(f"#include <{h}>\n" for h in needed) + "#line 1\n" + source


_REGISTRY: Dict[str, KernelOp] = {}
_REG_LOCK = threading.RLock()
_listeners: List[Callable[[KernelOp], None]] = []
_checkers: List[Callable[[KernelOp, Optional[KernelOp]], None]] = []  # before a (re-)declaration takes effect
_removers: List[Callable[[KernelOp], None]] = []  # after an op is unregistered

# Declarations and unregistering of one name are serialized (threads declaring the same name would
# otherwise race on torch's registration); different names proceed in parallel. A fixed set of
# locks, picked by the name's hash, so the locks do not grow with the names ever declared.
_NAME_LOCKS = tuple(threading.RLock() for _ in range(64))


def name_lock(op_name: str) -> threading.RLock:
    """The lock serializing declarations and unregistering of ``op_name``."""
    return _NAME_LOCKS[hash(op_name) % len(_NAME_LOCKS)]


_DEFER = threading.local()


@contextlib.contextmanager
def deferred_compile():
    """Declarations made in this thread inside the block compile nothing (the first launch, or the
    caller, compiles): for tools that import a user's module and then compile and report each op
    themselves (``trt-kernels inspect`` / ``compile``), so one op's error does not stop the import."""
    old = getattr(_DEFER, "on", False)
    _DEFER.on = True
    try:
        yield
    finally:
        _DEFER.on = old


def compile_deferred() -> bool:
    return getattr(_DEFER, "on", False)


def get(op_name: str) -> KernelOp:
    try:
        return _REGISTRY[op_name]
    except KeyError:
        raise KeyError(f"{op_name!r} was not registered with trt_kernels (registered: {sorted(_REGISTRY)})") from None


def all_ops() -> List[KernelOp]:
    with _REG_LOCK:
        return list(_REGISTRY.values())


def add(kop: KernelOp) -> None:
    with _REG_LOCK:
        _REGISTRY[kop.op_name] = kop
        listeners = list(_listeners)
    for fn in listeners:
        fn(kop)


def remove(op_name: str) -> Optional[KernelOp]:
    with _REG_LOCK:
        kop = _REGISTRY.pop(op_name, None)
        removers = list(_removers)
    if kop is not None:
        for fn in removers:
            fn(kop)
    return kop


def lookup(op_name: str) -> Optional[KernelOp]:
    """The op declared under ``op_name``, or None."""
    with _REG_LOCK:
        return _REGISTRY.get(op_name)


def check_declaration(kop: KernelOp, old: Optional[KernelOp]) -> None:
    """Ask every checker (the TensorRT side) whether ``kop`` may replace ``old``; they raise
    :class:`SpecError` before anything of ``old`` is touched."""
    with _REG_LOCK:
        checkers = list(_checkers)
    for fn in checkers:
        fn(kop, old)


def on_check(fn: Callable[[KernelOp, Optional[KernelOp]], None]) -> None:
    """Call ``fn(new, old)`` before every later declaration takes effect (it may refuse it)."""
    with _REG_LOCK:
        if fn not in _checkers:
            _checkers.append(fn)


def on_remove(fn: Callable[[KernelOp], None]) -> None:
    """Call ``fn(kop)`` after every later unregistering of an op."""
    with _REG_LOCK:
        if fn not in _removers:
            _removers.append(fn)


def on_register(fn: Callable[[KernelOp], None]) -> None:
    """Call ``fn(kop)`` for every op registered so far and every op registered later."""
    with _REG_LOCK:
        _listeners.append(fn)
        existing = list(_REGISTRY.values())
    for kop in existing:
        fn(kop)
