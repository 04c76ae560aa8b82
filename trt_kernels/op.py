"""One declared op: its signature, its kernel source and the user's overrides.

A :class:`KernelOp` is ``(signature, source, overrides)``: what the kernel takes
(:class:`~trt_kernels.signature.Signature`), where its code comes from (a
:class:`~trt_kernels.sources.kernel_source.KernelSource`: CUDA C++, PTX or Triton) and the functions
the user gave in place of derived ones (``meta_fn``, ``eager_fn``, ``aot_fn``, ``backward``,
``setup_context``). Everything derived is computed lazily and memoized: the build (per arch),
the plan (per input ranks and tactic), the loaded kernel (per dtype, arch and tactic). What the
launches, the TensorRT side and the command line need is a method or field here; none of them
asks which source the op has.
"""

from __future__ import annotations

import threading
from dataclasses import field
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple

import torch

from trt_kernels._record import FACTORY, Frozen, plain_record, record_repr, replace
from trt_kernels.errors import ArchError, CompileError, NoCudaDeviceError, PtxVersionError
from trt_kernels.expr import Const, Expr, binop
from trt_kernels.limits import STATIC_SHARED_MEM
from trt_kernels.signature import Signature, scalar_c, scalar_len, scalar_type
from trt_kernels.sources import archs
from trt_kernels.sources.archs import normalize_arch
from trt_kernels.sources.kernel_source import Binary, KernelImage, KernelSource
from trt_kernels.sources.nvrtc import DEFAULT_ARCH, default_arch, env_arch

if TYPE_CHECKING:  # imported at the first plan (a call or a trace) / launch, not at declaration
    from trt_kernels.eager.driver import LoadedKernel, ParamPack
    from trt_kernels.plan import LaunchPlan
    from trt_kernels.recipe import LaunchRecipe

#: the arch a declaration compiles for when no GPU is visible and none is given (the one rule:
#: :func:`trt_kernels.sources.nvrtc.compile_arch`): the kernel's parameters and any compile error do not
#: depend on it, and Hopper accepts every feature an sm_80/sm_89 kernel uses (a kernel for newer archs
#: needs arch_override or TRT_KERNELS_ARCH)
CHECK_ARCH = DEFAULT_ARCH


#: how TensorRT runs the op's plugin: the PTX embedded in the engine with its launch parameters (no Python at
#: run time), or the plugin's Python impl called at run time (plain strings: an Enum costs ~0.07 ms of import)
AOT, JIT = "AOT", "JIT"


@plain_record
class AotDecision(Frozen):
    """How TensorRT runs the op's plugin (``mode``: :data:`AOT` or :data:`JIT`), and why; ``tactics``: the
    tactics the AOT plugin offers TensorRT (those whose kernels its AOT launch can take; empty: all)."""

    mode: str
    why: str
    tactics: Tuple[int, ...] = ()

    def __init__(self, mode: str, why: str, tactics: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(mode=mode, why=why, tactics=tactics)

    @property
    def aot(self) -> bool:
        return self.mode == AOT


class TensorRTSide:
    """What the TensorRT side made of the op (filled in by ``trt_kernels.plugins``)."""

    __slots__ = ("plugin", "converter", "aot", "level")

    def __init__(self, plugin: str = "", converter: str = "", aot: Optional[bool] = None, level: Optional[str] = None):
        self.plugin = plugin  # e.g. "AOT (PTX embedded in the engine) + JIT fallback", "not registered: ..."
        self.converter = converter
        self.aot = aot  # whether the registered plugin has an AOT impl (None: no plugin registered)
        # the hardware compatibility level of the engine the op's plugin is being built into, as the converter
        # last saw it ("AMPERE_PLUS"; None: a plain engine): the AOT impl runs inside TensorRT's build, later
        # than the converter, and reads it through KernelOp.aot_target
        self.level = level

    def __repr__(self) -> str:
        return (f"TensorRTSide(plugin={self.plugin!r}, converter={self.converter!r}, aot={self.aot!r}, "
                f"level={self.level!r})")


@plain_record
class KernelOp:
    """Everything trt_kernels knows about one registered op (compared and hashed by identity)."""

    sig: Signature
    source: KernelSource
    # the user's overrides of what is otherwise derived from the signature
    meta_fn: Optional[Callable[..., Any]] = None
    eager_fn: Optional[Callable[..., Any]] = None
    aot_fn: Optional[Callable[..., Any]] = None
    backward: Optional[Callable[..., Any]] = None
    setup_context: Optional[Callable[..., Any]] = None
    supports_dynamic_shapes: bool = True
    options: Dict[str, Any] = field(default_factory=dict)  # converter options (priority, capability_validator, ...)
    schema: str = ""
    # default values of the schema's trailing arguments (torch leaves out arguments equal to their
    # defaults when it calls a kernel, and in traced graphs): filled back in by every caller
    defaults: Tuple[Any, ...] = ()
    # filled in as the op is used
    library: Any = None
    cuda_impl: Any = None  # the function registered as the op's CUDA kernel
    tensorrt: TensorRTSide = field(default_factory=TensorRTSide)

    def __init__(self, sig: Signature, source: KernelSource, meta_fn: Optional[Callable[..., Any]] = None,
                 eager_fn: Optional[Callable[..., Any]] = None, aot_fn: Optional[Callable[..., Any]] = None,
                 backward: Optional[Callable[..., Any]] = None, setup_context: Optional[Callable[..., Any]] = None,
                 supports_dynamic_shapes: bool = True, options: Dict[str, Any] = FACTORY, schema: str = "",
                 defaults: Tuple[Any, ...] = (), library: Any = None, cuda_impl: Any = None,
                 tensorrt: TensorRTSide = FACTORY) -> None:
        self.sig = sig
        self.source = source
        self.meta_fn = meta_fn
        self.eager_fn = eager_fn
        self.aot_fn = aot_fn
        self.backward = backward
        self.setup_context = setup_context
        self.supports_dynamic_shapes = supports_dynamic_shapes
        self.options = {} if options is FACTORY else options
        self.schema = schema
        self.defaults = defaults
        self.library = library
        self.cuda_impl = cuda_impl
        self.tensorrt = TensorRTSide() if tensorrt is FACTORY else tensorrt
        # the op's own memos (not fields: made here, read through the methods below)
        self._binaries: Dict[Optional[str], Binary] = {}
        self._plans: Dict[Tuple, LaunchPlan] = {}
        self._loaded: Dict[Tuple, LoadedKernel] = {}
        self._packs: Dict[Tuple, ParamPack] = {}
        self._recipes: Dict[Tuple, LaunchRecipe] = {}
        self._meta: Dict[Tuple[int, ...], list] = {}
        self._variants: Dict[Tuple, "KernelOp"] = {}
        self._special: Dict[Tuple, KernelImage] = {}  # (dtype, tactic, arch, key) -> code (specialized_image)
        self._lock = threading.Lock()

    __repr__ = record_repr

    def __deepcopy__(self, memo: dict) -> "KernelOp":
        """A copy of the declaration's fields, with memos (builds, plans, loaded kernels) of its own, empty."""
        import copy

        return KernelOp(**{n: copy.deepcopy(getattr(self, n), memo) for n in self.__match_args__})

    # ----- identity -----
    @property
    def op_name(self) -> str:
        return self.sig.op_name

    @property
    def namespace(self) -> str:
        return self.sig.namespace

    @property
    def name(self) -> str:
        return self.sig.name

    @property
    def overload(self):
        """The ``OpOverload`` (``torch.ops.ns.name.default``)."""
        return getattr(getattr(torch.ops, self.namespace), self.name).default

    @property
    def dtypes(self) -> Tuple[torch.dtype, ...]:
        return self.sig.kernel_dtypes

    @property
    def tactics(self) -> int:
        return self.sig.tactics

    def with_defaults(self, args: Tuple[Any, ...]) -> Tuple[Any, ...]:
        """``args`` with the trailing arguments torch left out (equal to their defaults) filled in."""
        n = len(self.sig.arg_kinds)
        if len(args) >= n or not self.defaults:
            return args
        missing = n - len(args)
        if missing > len(self.defaults):
            return args  # too few arguments: the caller's own check names the missing one
        return tuple(args) + self.defaults[len(self.defaults) - missing:]

    @property
    def overrides(self) -> Tuple[str, ...]:
        """The names of the functions the user gave in place of derived ones."""
        given = {"meta_fn": self.meta_fn, "eager_fn": self.eager_fn, "aot_fn": self.aot_fn, "backward": self.backward,
                 "setup_context": self.setup_context}
        return tuple(n for n, fn in given.items() if fn is not None)

    # ----- builds -----
    def resolve_arch(self, arch: Optional[str] = None) -> str:
        arch = arch or self.source.arch_override or default_arch()
        if arch is None:
            raise NoCudaDeviceError(
                f"{self.op_name}: no GPU arch to compile for: no CUDA device is visible and none was given. "
                "Fix: run on a CUDA machine, or set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH=sm_90"
            )
        return normalize_arch(arch)

    def device_arch(self, device: int) -> Optional[str]:
        """The arch the op's builds for CUDA device ``device`` are for (None where one build serves every
        device: PTX the driver JIT-compiles). Every eager reader asks here; a GPU below the declaration's
        ``min_arch`` is refused (:class:`ArchError`)."""
        if not self.source.needs_arch:
            return None
        arch = normalize_arch(torch.cuda.get_device_capability(device))
        if self.source.min_arch is not None:
            if archs.below(arch, self.source.min_arch):
                raise ArchError(f"{self.op_name}: declared with min_arch={self.source.min_arch!r}, but CUDA device "
                                f"{device} is {arch}: the kernel needs a newer GPU. Fix: launch it on a GPU of "
                                f"{self.source.min_arch} or newer, or lower min_arch if the kernel has a path for "
                                f"{arch}")
        return arch

    def aot_target(self, given: Optional[str] = None, compile_arch: Optional[Tuple[str, str]] = None,
                   min_arch_env: Optional[str] = None) -> Tuple[Optional[str], str]:
        """The arch the op's TensorRT AOT code (the PTX an engine embeds) targets, and where that came from.

        The one rule: ``given`` (``register_plugin(..., arch=)``), else the lowest arch of the engine's hardware
        compatibility level (``tensorrt.level``, set by the converter from Torch-TensorRT's
        ``hardware_compatible``: sm_80), else ``TRT_KERNELS_MIN_ARCH``, else the declaration's ``min_arch``, else
        the compile arch (``compile_arch``, ``(arch, origin)``, where the caller knows it: a CLI command's
        ``--arch``; else :meth:`resolve_arch`: the building GPU's). Each of the first three is a floor every GPU
        of the fleet has: a ``min_arch`` it does not cover (the kernel needs a newer arch) raises
        :class:`ArchError` naming both. A PTX source has no choice: ``(None, ...)``, its own ``.target``, which
        the floor must cover too. Eager launches never ask (they compile for the GPU they run on).
        ``min_arch_env``: the value of ``TRT_KERNELS_MIN_ARCH`` to take instead of reading the environment (a CLI
        command's ``--min-arch``: what a build with the variable set so would target; messages name the variable)."""
        floor, origin = None, ""
        if given:
            floor, origin = normalize_arch(given), "the arch given to register_plugin"
        elif self.tensorrt.level in archs.LEVEL_FLOOR:
            floor = archs.LEVEL_FLOOR[self.tensorrt.level]
            origin = (f"the engine's hardware compatibility level {self.tensorrt.level} (Torch-TensorRT's "
                      "hardware_compatible=True)")
        else:
            floor = normalize_arch(min_arch_env) if min_arch_env else archs.env_min_arch()
            origin = archs.MIN_ARCH_ENV
        own = self.source.min_arch
        if not self.source.needs_arch:
            own = archs.ptx_target(next(iter(self.binary().kernels.values())).aot_ptx or b"")
        if floor is not None:
            if own is not None and not archs.covers(own, floor):
                what = (f"its PTX targets {own}" if not self.source.needs_arch
                        else f"it is declared with min_arch={own!r}")
                other = (f"declare it with PTX whose .target is {floor} or lower" if not self.source.needs_arch
                         else f"give the kernel a path for {floor} and declare min_arch={floor!r}")
                raise ArchError(
                    f"{self.op_name}: {origin} asks for code that loads on {archs.loads_on(floor)}, but "
                    f"{what}, which loads on {archs.loads_on(own)}. Fix: build this engine without that "
                    f"setting (the op's plugin cannot be in it), or {other}")
            return (floor if self.source.needs_arch else None), origin
        if not self.source.needs_arch:
            return None, "the PTX's own .target"
        if own is not None:
            return own, "the declaration's min_arch"
        if compile_arch is not None:
            return normalize_arch(compile_arch[0]), compile_arch[1]
        arch = self.resolve_arch()
        return arch, "the compile arch (the building GPU, arch_override or TRT_KERNELS_ARCH)"

    def known_arch(self) -> Optional[str]:
        """The arch builds are for when one is known without compiling (the override, TRT_KERNELS_ARCH,
        the GPU), else None."""
        try:
            return self.resolve_arch()
        except NoCudaDeviceError:
            return None

    def binary(self, arch: Optional[str] = None) -> Binary:
        """The kernel built for ``arch`` (default: :meth:`resolve_arch`); built and ABI-checked once."""
        arch = self.resolve_arch(arch) if self.source.needs_arch else None
        b = self._binaries.get(arch)
        if b is None:
            with self._lock:
                b = self._binaries.get(arch)
                if b is None:
                    b = self._binaries[arch] = self.source.build(arch)
        return b

    def builds(self) -> Dict[Optional[str], Binary]:
        """The builds made (or read from the cache) so far in this process, by arch (None: a build that
        serves every arch)."""
        return dict(self._binaries)

    def image(self, dtype: torch.dtype, tactic: int = 1, arch: Optional[str] = None) -> KernelImage:
        return self.binary(arch).kernel(dtype, tactic)

    def prepare(self) -> str:
        """At declaration: build (or find in the cache) and check the kernel's parameters.

        The arch comes from the source's ``arch_override`` or ``TRT_KERNELS_ARCH`` (no CUDA query).
        Without either, a cached build for any arch serves the ABI check (a kernel's parameter list
        in the PTX does not depend on the arch) and the build for the device's arch waits for the
        first launch, so a warm start neither initialises CUDA nor loads a compiler. Only when nothing
        is cached is the GPU asked for its arch (and the kernel built now, so errors surface here);
        with no GPU either, it is built for :data:`CHECK_ARCH`. Returns what was done, for logging.
        """
        if not self.source.needs_arch:
            self.binary()
            return "built (one build serves every arch)"
        arch = self.source.arch_override or env_arch()
        if arch is None and not torch.cuda.is_initialized():
            b = self.source.cached_build()
            if b is not None:
                with self._lock:
                    self._binaries.setdefault(b.arch, b)
                return f"checked against the cached build for {b.arch}"
        arch = arch or default_arch()
        if arch is None:
            arch = self._at_least(CHECK_ARCH)
            self.binary(arch)
            return f"built for {arch} to check it (no GPU visible and no arch given)"
        arch = self._at_least(normalize_arch(arch))
        self.binary(arch)
        return f"built for {arch}"

    def _at_least(self, arch: str) -> str:
        """``arch``, or the declaration's ``min_arch`` where that is higher (the kernel may not compile below it)."""
        own = self.source.min_arch
        if own is None:
            return arch
        return own if archs.below(arch, own) else arch

    def param_pack(self, recipe: LaunchRecipe, folded: Tuple[int, ...] = ()) -> ParamPack:
        """The packed-parameter layout of ``recipe`` (its parameters but those ``folded`` into the code, then the
        pointers appended after them, NULL unless set); one per layout, buffers are per thread."""
        codes = tuple(c for i, c in enumerate(recipe.codes) if i not in folded)
        key = (codes, len(recipe.scratch))
        pack = self._packs.get(key)
        if pack is None:
            from trt_kernels.eager.driver import ParamPack

            pack = self._packs.setdefault(key, ParamPack(codes, len(recipe.scratch)))
        return pack

    def recipe(self, kdt: Any, ranks: Tuple[int, ...], tactic: int = 1, arch: Optional[str] = None) -> LaunchRecipe:
        """The launch of the kernel at kernel dtype ``kdt`` and input ``ranks`` for ``tactic``, with the code
        built for ``arch`` (default: :meth:`resolve_arch`), made once (:mod:`trt_kernels.recipe`)."""
        arch = self.resolve_arch(arch) if self.source.needs_arch else None
        key = (kdt, tuple(ranks), tactic, arch)
        r = self._recipes.get(key)
        if r is None:
            from trt_kernels.recipe import make

            plan = self.plan(tuple(ranks), tactic, arch)
            r = self._recipes.setdefault(key, make(self.sig, kdt, plan, self.image(kdt, plan.tactic, arch),
                                                   spec=self.source.specialization(kdt)))
        return r

    def specialized_image(self, kdt: Any, tactic: int = 1, arch: Optional[str] = None, key: int = 0) -> KernelImage:
        """The code for launches whose specialization key is ``key`` (:mod:`trt_kernels.recipe`), compiled once
        per (dtype, tactic, arch, key) and cached on disk like a build. Key 0 (nothing assumed) and a source that
        does not specialize give the unspecialized image, as does code that would not compile or launch as the plan
        does (:meth:`_specialize`). The code's shared memory may differ from the unspecialized one's (Triton's
        layouts follow the facts): launches pass the larger of the two."""
        base = self.image(kdt, tactic, arch)
        if not key:
            return base
        arch = self.resolve_arch(arch) if self.source.needs_arch else None
        memo = (kdt, tactic, arch, key)
        img = self._special.get(memo)
        if img is None:
            from trt_kernels.recipe import spec_facts

            aligned, ones = spec_facts(self.source.specialization(kdt), key)
            with self._lock:
                img = self._special.get(memo)
                if img is None:
                    img = self._special[memo] = self._specialize(kdt, tactic, arch, key, aligned, ones, base)
        return img

    def _specialize(self, kdt, tactic: int, arch: Optional[str], key: int, aligned, ones, base: KernelImage
                    ) -> KernelImage:
        """:meth:`specialized_image`'s compile. A kernel that does not compile with a parameter made the constant 1
        (Triton's own launcher fails then too: e.g. ``n.to(tl.int64)`` on a constant) is compiled without that, and
        one that does not compile with the facts at all, or needs other scratch buffers, launches the unspecialized
        code: a call never fails where the declaration's compile worked."""
        import logging

        log = logging.getLogger("trt_kernels")
        tries = [(aligned, ones)] + ([(aligned, frozenset())] if ones else [])
        for facts in tries:
            try:
                img = self.source.specialized(kdt, tactic, arch, *facts)
            except CompileError as e:
                log.debug("trt_kernels: %s: no code for key %#x with facts %s: %s", self.op_name, key, facts, e)
                continue
            if img.scratch == base.scratch:
                return img
            log.debug("trt_kernels: %s: the code for key %#x needs scratch %s (unspecialized: %s)", self.op_name, key,
                      img.scratch, base.scratch)
            break
        log.debug("trt_kernels: %s: launches with key %#x take the unspecialized code", self.op_name, key)
        return base

    # ----- plans -----
    def plan(self, ranks: Tuple[int, ...], tactic: int = 1, arch: Optional[str] = None) -> LaunchPlan:
        """The launch plan at input ``ranks`` for ``tactic``. Where the source knows the kernel's shared
        memory only once built (Triton), it is the largest over the op's dtypes for ``arch`` (default: the
        known arch; 0 while none is known: shapes alone need none)."""
        arch = (arch or self.known_arch()) if self.source.shared_mem_from_build else None
        key = (tuple(ranks), tactic, arch)
        p = self._plans.get(key)
        if p is None:
            from trt_kernels.plan import build_plan

            p = build_plan(self.sig, ranks, tactic)
            if arch is not None:
                need = max(self.image(d, p.tactic, arch).shared_mem for d in self.dtypes)
                if need:
                    smem = p.shared_mem
                    p = _with_shared_mem(p, Const(need) if smem == Const(0) else binop("max", smem, Const(need)))
            self._plans[key] = p
        return p

    def meta_outputs(self, ranks: Optional[Tuple[int, ...]] = None) -> list:
        """An override-path op's outputs (shape expressions and dtypes) from its ``meta_fn``, run once per
        input ``ranks`` (default: each input's ``ndim``, else 1) on symbolic fake tensors."""
        ranks = tuple(ranks) if ranks else tuple(d.ndim or 1 for d in self.sig.tensor_decls)
        outs = self._meta.get(ranks)
        if outs is None:
            from trt_kernels.symbolic import meta_outputs

            one = {float: 1.0, int: 1, bool: True}
            scalars = [one[scalar_type(d)] if scalar_len(d) is None else (one[scalar_type(d)],) * scalar_len(d)
                       for d in self.sig.scalar_decls]
            outs = self._meta.setdefault(ranks, meta_outputs(self.op_name, self.meta_fn, self.sig.arg_kinds, ranks,
                                                             self.sig.in_dtypes(self.dtypes[0]), scalars))
        return outs

    def io_dtypes(self, kdt: torch.dtype, ranks: Optional[Tuple[int, ...]] = None) -> list:
        """dtypes of the tensor inputs then the outputs at kernel dtype ``kdt`` (the outputs' from ``meta_fn``
        at ``ranks`` for an op whose declaration has none)."""
        if self.sig.has_outputs:
            return self.sig.io_dtypes(kdt)
        return self.sig.in_dtypes(kdt) + [m.dtype for m in self.meta_outputs(ranks)]

    @property
    def dynamic_shared_mem(self) -> Optional[Expr]:
        """The geometry's dynamic shared memory when it is not a constant within 48 KB (None): such a
        kernel's eager launch raises its function's limit first."""
        for g in self.sig.launches:
            if not (isinstance(g.shared_mem, Const) and g.shared_mem.value <= STATIC_SHARED_MEM):
                return g.shared_mem
        return None

    # ----- configs computed per call (a Triton LaunchRule) -----
    @property
    def varies(self) -> bool:
        """Whether a call computes its launch config (constexprs from sizes, heuristics, an autotuner)."""
        return getattr(self.source, "varies", False)

    def variant(self, cfg) -> "KernelOp":
        """The op as it launches the concrete config ``cfg`` (its own signature, source and memos; registered
        nowhere): what a call that computed ``cfg`` runs."""
        from trt_kernels.sources.triton_source import config_key

        key = config_key(cfg)
        v = self._variants.get(key)
        if v is None:
            sig, source = self.source.variant(cfg)
            v = self._variants.setdefault(key, KernelOp(sig=sig, source=source, schema=self.schema,
                                                        defaults=self.defaults, options=dict(self.options)))
        return v

    def call_variants(self, args: Tuple) -> list:
        """The variants a call with ``args`` (the op's arguments, defaults filled in) may launch: one per
        tactic, each with its launch-time values computed."""
        kinds = self.sig.arg_kinds
        tensors = [a for a, k in zip(args, kinds) if k == "tensor"]
        scalars = [a for a, k in zip(args, kinds) if k == "scalar"]
        return [self.variant(c) for c in self.source.call_configs(tensors, scalars)]

    def tune_key(self, args: Tuple) -> Tuple:
        kinds = self.sig.arg_kinds
        return self.source.tune_key([a for a, k in zip(args, kinds) if k == "tensor"],
                                    [a for a, k in zip(args, kinds) if k == "scalar"])

    # ----- TensorRT -----
    @property
    def aot(self) -> AotDecision:
        """Whether TensorRT's plugin can run the kernel ahead of time (PTX in the engine), and why: for the builds
        of the arch known without compiling (:meth:`known_arch`; see :meth:`aot_at`)."""
        return self.aot_at(self.known_arch())

    def aot_of(self, build: Optional[Binary]) -> AotDecision:
        """:attr:`aot` for a build a report made or found (for its arch, which ``--arch`` may give where nothing
        else names one); the op's own where there is none, or it serves every arch."""
        return self.aot_at(build.arch) if build is not None and build.arch else self.aot

    def aot_at(self, arch: Optional[str]) -> AotDecision:
        """:attr:`aot` for the op's builds for ``arch`` (a report's compile arch, ``--arch``); None: no arch known,
        so what only a build would tell (a Triton config's shared memory) is assumed to fit."""
        if self.sig.mutated:
            names = ", ".join(repr(self.sig.tensor_names[t]) for t in self.sig.mutated)
            return AotDecision(JIT, f"it writes {names} in place: TensorRT's plugin inputs are read-only, and "
                               "aliased plugin I/O needs PreviewFeature.ALIASED_PLUGIN_IO_10_03 in the builder config, "
                               "which Torch-TensorRT does not set; so the plugin outputs the new value in a buffer "
                               "of its own, and its JIT impl copies the input there and runs the kernel on it (an "
                               "AOT launch is one kernel, with no copy before it)")
        if self.aot_fn is not None:
            return AotDecision(AOT, "aot_fn given: TensorRT launches the PTX with its launch parameters; no Python "
                                        "at run time")
        if not (self.sig.has_outputs and self.sig.has_geometry):
            return AotDecision(JIT, "override path without aot_fn: TensorRT calls the op's Python (trtp.impl) at "
                                        "run time, so the engine needs trt_kernels imported to run. Fix for AOT: "
                                        "declare outputs and geometry, or pass aot_fn=")
        if self.varies and self.source.rule.per_call:
            return AotDecision(JIT, f"a call computes its launch config ({self.source.rule.describe()}), and "
                               "TensorRT's AOT launch embeds one PTX per tactic: the JIT impl launches the variant "
                               "each call's sizes select")
        reasons = {t: self._aot_unavailable(t, arch) for t in range(1, self.sig.tactics + 1)}
        fit = tuple(t for t, r in reasons.items() if r is None)
        if not fit:
            return AotDecision(JIT, "AOT unavailable: " + "; ".join(dict.fromkeys(reasons.values()))
                               + "; the JIT impl runs the kernel instead")
        why = "outputs and geometry are declared, so the plan gives TensorRT the PTX, grid, block and extra arguments"
        if self._needs_layout():
            why += ("; the PTX entry is rewritten to TensorRT's argument layout (input pointers, arguments, output "
                    "pointers; 64-bit sizes and scalars taken as 32-bit)")
        if self.sig.scalar_decls:
            why += ("; scalars (" + ", ".join(d.name for d in self.sig.scalar_decls)
                    + ") are baked into the extra arguments when the engine is built")
            wide = [d.name for d in self.sig.scalar_decls if scalar_c(d).kind == "int" and scalar_c(d).size == 8]
            if wide:
                why += (f"; a layer whose 64-bit scalar ({', '.join(wide)}) is outside the 32 bits of TensorRT's "
                        "extra arguments takes the JIT impl, which launches the exact value")
        if len(fit) < len(reasons):
            why += "; left out of the plugin's tactics: " + "; ".join(r for r in reasons.values() if r)
            return AotDecision(AOT, why, fit)
        return AotDecision(AOT, why)

    def _aot_unavailable(self, tactic: int, arch: Optional[str]) -> Optional[str]:
        """Why TensorRT's AOT launch cannot run ``tactic`` with the builds for ``arch`` (None: it can; what is not
        known yet, without an arch, is assumed to fit)."""
        smem = self.sig.launch(tactic).shared_mem
        if isinstance(smem, Const) and smem.value > STATIC_SHARED_MEM:
            return (f"tactic {tactic}: geometry.shared_mem is {smem.value} bytes, over the {STATIC_SHARED_MEM} a "
                    "launch may use without cuFuncSetAttribute's opt-in, which TensorRT's AOT plugin launch is not "
                    "known to make")
        if arch is None:
            return None
        if self.source.aot_from_build:
            b = self.binary(arch)
            for d in self.dtypes:
                reason = b.kernel(d, tactic).aot_reason
                if reason:
                    return reason
        if self._needs_layout():
            for d in self.dtypes:
                ptx, why = self._tensorrt_ptx(d, tactic, arch)
                if ptx is None:
                    return f"tactic {tactic}: the kernel's parameters cannot take TensorRT's AOT layout: {why}"
        return None

    def aot_kernel(self, dtype: torch.dtype, tactic: int = 1, arch: Optional[str] = None,
                   key: Optional[int] = None) -> Tuple[str, bytes]:
        """``(symbol, PTX)`` for TensorRT's AOT launch at ``dtype`` and ``tactic``; :class:`PtxVersionError`
        when there is none, or when the CUDA driver here could not load it. ``key``: what the code may assume
        of every launch of the engine (:meth:`LaunchRecipe.aot_key`; default: TensorRT's aligned pointers)."""
        b = self.binary(arch)
        if b.kernel(dtype, tactic).aot_ptx is None:
            raise PtxVersionError(f"{self.op_name}: {b.aot_reason}")
        from trt_kernels.eager.driver import driver_version

        key, k = self.aot_code(dtype, tactic, arch, key)
        note = self.source.ptx_note(b, driver_version())
        if note:
            isa = f" (PTX ISA {k.ptx_isa[0]}.{k.ptx_isa[1]})" if k.ptx_isa else ""
            raise PtxVersionError(f"{self.op_name}: PTX for TensorRT{isa}: {note}")
        ptx, why = self._tensorrt_ptx(dtype, tactic, arch, key)
        if ptx is None:
            raise PtxVersionError(f"{self.op_name}: the kernel's parameters cannot take TensorRT's AOT layout: {why}")
        return k.symbol, ptx

    def aot_code(self, dtype: torch.dtype, tactic: int = 1, arch: Optional[str] = None,
                 key: Optional[int] = None) -> Tuple[int, KernelImage]:
        """``(the key, the code)`` TensorRT's AOT launch embeds for ``key`` (default: aligned pointers only,
        :func:`~trt_kernels.recipe.aot_key`); the launch gives it the code's own shared memory where that is more
        than the plan's. The unspecialized code, key 0, where the specialized one would need more than the 48 KB an
        AOT launch may use and the unspecialized one does not."""
        if key is None:
            from trt_kernels.recipe import aot_key

            key = aot_key(self.source.specialization(dtype), self.sig.params(dtype))
        base = self.image(dtype, tactic, arch)
        k = self.specialized_image(dtype, tactic, arch, key)
        return (0, base) if k.shared_mem > max(base.shared_mem, STATIC_SHARED_MEM) else (key, k)

    def _needs_layout(self) -> bool:
        """Whether TensorRT's AOT layout differs from the kernel's parameters (their order, or 64-bit sizes and
        scalars)."""
        from trt_kernels.recipe import tensorrt_narrowed, tensorrt_order

        params = self.sig.params(self.dtypes[0])
        return tensorrt_order(params) != list(range(len(params))) or bool(tensorrt_narrowed(params))

    def _tensorrt_ptx(self, dtype, tactic: int, arch: Optional[str], key: int = 0) -> Tuple[Optional[bytes], str]:
        """The AOT PTX at ``dtype`` and ``tactic`` (specialized for ``key``) in TensorRT's argument layout, or
        ``(None, why)``."""
        from trt_kernels.recipe import tensorrt_narrowed, tensorrt_order
        from trt_kernels.sources.ptx_entry import rearranged

        k = self.specialized_image(dtype, tactic, arch, key)
        params = self.sig.params(dtype)
        order, narrow = tensorrt_order(params), tensorrt_narrowed(params)
        if k.aot_ptx is None or (order == list(range(len(params))) and not narrow):
            return k.aot_ptx, ""
        return rearranged(k.aot_ptx, k.symbol, order, narrow)

    # ----- eager loading -----
    def loaded_kernel(self, dtype: torch.dtype, device: int, tactic: int = 1, key: int = 0) -> LoadedKernel:
        """The kernel for ``dtype`` and ``tactic`` built for ``device``'s arch (specialized for ``key``,
        :meth:`specialized_image`), loaded."""
        arch = self.device_arch(device)
        b = self.binary(arch)
        k = self.specialized_image(dtype, tactic, arch, key)
        memo = (dtype, arch, 0 if (dtype, 0) in b.kernels else tactic, key if k is not b.kernel(dtype, tactic) else 0)
        lk = self._loaded.get(memo)
        if lk is None:
            from trt_kernels.eager.driver import LoadedKernel

            # the code's own need (Triton's shared memory), the largest over the dtypes (and this specialization's),
            # is what launches pass
            need = max([b.kernel(d, tactic).shared_mem for d in self.dtypes] + [k.shared_mem])
            lk = self._loaded.setdefault(memo, LoadedKernel(
                k.image, k.symbol, self.op_name, raise_dynamic_smem=self.dynamic_shared_mem is not None,
                shared_mem=need))
        return lk


def _with_shared_mem(p: LaunchPlan, smem: Expr) -> LaunchPlan:
    return replace(p, shared_mem=smem)
