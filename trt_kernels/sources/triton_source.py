"""A ``@triton.jit`` function as a kernel source (``triton_kernel_op``).

Everything but the code is the :class:`~trt_kernels.spec.KernelSpec` vocabulary (inputs, scalar
inputs, outputs, extras) and one signature. What Triton adds, and where it goes:

- geometry: ``grid`` (size expressions, or ``grid(meta)`` returning them, as Triton's own
  ``kernel[grid]`` idiom) and block ``= num_warps * 32``: one ``Custom`` geometry per config, so
  the signature has one launch per tactic; dynamic shared memory is what Triton reports
  (``metadata.shared``), known once built (``shared_mem_from_build``, ``aot_from_build``).
- tactics: each :class:`TritonConfig` (constexprs, ``num_warps``, ``num_stages``) compiles to its
  own kernel; TensorRT times them (tactic ``k`` is config ``k - 1``), eager uses the first, or, for the
  configs of ``@triton.autotune``, times them at the first call per key as Triton does (:class:`AutotuneOptions`:
  ``prune_configs_by``, ``reset_to_zero``, ``restore_value``, the autotuner's hooks; the eager side is
  :func:`trt_kernels.eager.cuda_kernel._choose`).
- hidden parameters: Triton appends scratch pointers to the kernel's parameters
  (:mod:`trt_kernels.sources.triton_compile`); a :class:`~trt_kernels.sources.kernel_source.KernelImage` lists
  them in ``scratch`` (the launches pass NULL, or a per-launch buffer where the size is not 0),
  and its ``aot_ptx`` has them stripped, or ``aot_reason`` says why it cannot.
"""

from __future__ import annotations

import hashlib
import inspect
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from trt_kernels import dtypes as _dt
from trt_kernels._record import Frozen, plain_record
from trt_kernels.dtypes import SIZE_TYPES, TENSOR_TYPES
from trt_kernels.errors import KernelABIError, SpecError
from trt_kernels.expr import Expr
from trt_kernels.limits import STATIC_SHARED_MEM
from trt_kernels.recipe import ALIGNED, FACT_BITS, ONE
from trt_kernels.signature import Signature, scalar_c
from trt_kernels.sources import abi as _abi
from trt_kernels.sources import triton_compile as _tc
from trt_kernels.sources.kernel_source import Binary, KernelImage, KernelSource, Version
from trt_kernels.sources.ptx_entry import strip_hidden_params
from trt_kernels.spec import Custom, InputDecl, OutputDecl, ScalarInput
from trt_kernels.validate import constexpr_expr, validate_signature

#: Triton's spellings of an int annotation (``n: tl.int32``): such a parameter never becomes a constant
_INT_ANNOTATIONS = frozenset({"i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "int"})

GridLike = Union[Sequence[Union[Expr, int]], Callable[[Dict[str, Any]], Sequence[Union[Expr, int]]]]


@dataclass(frozen=True)
class TritonConfig:
    """One launch variant of a Triton kernel: constexpr values, ``num_warps``, ``num_stages``.

    As ``tactics=`` of :func:`triton_kernel_op`, its constexprs are merged over the declaration's."""

    constexprs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3


class TritonSource(KernelSource):
    """A ``@triton.jit`` function with its configs (one per tactic), compiled by Triton per dtype and tactic."""

    entry_point = "triton_kernel_op"
    needs_arch = True
    shared_mem_from_build = True
    aot_from_build = True

    def __init__(self, sig: Signature, fn, configs: Sequence[TritonConfig], constexpr_names: Sequence[str],
                 constexpr_defaults: Mapping[str, Any], options: Mapping[str, Any], arch_override: Optional[str],
                 rule: Optional["LaunchRule"] = None, min_arch: Optional[str] = None):
        self.rule = rule  # how a call picks its config (None: the first config, always)
        self.varies = rule is not None
        self.sig = sig
        self.op_name = sig.op_name
        self.fn = fn
        self.kernel_name = fn.__name__
        self.configs = tuple(configs)
        self.constexpr_names = tuple(constexpr_names)
        self.constexpr_defaults = dict(constexpr_defaults)
        self.options = dict(options)
        self.arch_override = arch_override
        self.min_arch = min_arch
        self.signatures = {d: _triton_signature(fn, sig, d) for d in sig.kernel_dtypes}

    # ----- the protocol -----
    def name_expression(self, dtype: torch.dtype) -> str:
        return self.kernel_name

    def key(self) -> str:
        text = repr((getattr(self.fn, "src", None) or inspect.getsource(self.fn.fn), self.configs,
                     sorted(self.options.items()), _tc.triton_version()))
        return hashlib.sha256(text.encode()).hexdigest()

    def compile_one(self, dtype: torch.dtype, tactic: int, arch: str, aligned: FrozenSet[int] = frozenset(),
                    ones: FrozenSet[int] = frozenset()) -> _tc.TritonKernel:
        """Triton's compile of ``dtype`` and ``tactic``; ``aligned`` / ``ones``: the kernel parameters (positions
        in :meth:`Signature.params`) it may assume multiples of 16 / equal to 1, as ``kernel[grid]`` tells
        Triton (``tt.divisibility`` 16; a parameter turned constant)."""
        signature, consts, attrs, opts = self.triton_args(dtype, tactic, aligned, ones)
        label = f"{self.op_name} (dtype {_dt.label(dtype, self.sig.type_params)}, tactic {tactic})"
        return _tc.compile_triton(self.fn, signature, consts, arch=arch, options=opts, label=label, attrs=attrs)

    def triton_args(self, dtype: torch.dtype, tactic: int, aligned: FrozenSet[int] = frozenset(),
                    ones: FrozenSet[int] = frozenset()) -> Tuple[Dict[str, str], Dict[str, Any], Dict, Dict[str, Any]]:
        """``(signature, constexprs, attrs, options)`` :meth:`compile_one` hands ``triton.compile``: what
        Triton's own launcher derives from a call whose facts are ``aligned`` and ``ones``."""
        cfg = self.configs[tactic - 1]
        consts = {n: cfg.constexprs.get(n, self.constexpr_defaults.get(n)) for n in self.constexpr_names}
        opts = _tc.fp_fusion_option(dict(self.options, num_warps=cfg.num_warps, num_stages=cfg.num_stages))
        signature, attrs = dict(self.signatures[dtype]), {}
        runtime = [i for i, p in enumerate(self.fn.params) if not p.is_constexpr]
        for pos in ones:
            name = self.fn.params[runtime[pos]].name
            signature[name], consts[name] = "constexpr", 1
        for pos in sorted(set(aligned) - set(ones)):  # never attributes on a constant (3.9 moves them onward)
            attrs[(runtime[pos],)] = [["tt.divisibility", FACT_BITS]]
        return signature, consts, attrs, opts

    def specialization(self, dtype: Any) -> Tuple[Tuple[int, int], ...]:
        """What ``kernel[grid]`` specializes, as Triton 3.x does at each launch: a pointer on its 16-byte
        alignment, an int (a size, an int scalar) on its divisibility by 16 and on being exactly 1; none of
        a parameter ``@triton.jit(do_not_specialize=...)`` names, no alignment of one in
        ``do_not_specialize_on_alignment``, never 1 for an int-annotated one (``n: tl.int32``); never a float
        or a bool."""
        out = []
        runtime = [p for p in self.fn.params if not p.is_constexpr]
        for pos, (fp, p) in enumerate(zip(runtime, self.sig.params(dtype))):
            if getattr(fp, "do_not_specialize", False) or p.kind not in ("ptr", "int"):
                continue
            flags = 0 if getattr(fp, "do_not_specialize_on_alignment", False) else ALIGNED
            if p.kind == "int" and str(getattr(fp, "annotation", "") or "") not in _INT_ANNOTATIONS:
                flags |= ONE
            if flags:
                out.append((pos, flags))
        return tuple(out)

    def specialized(self, dtype: Any, tactic: int, arch: Optional[str], aligned: FrozenSet[int],
                    ones: FrozenSet[int]) -> KernelImage:
        params = self.sig.params(dtype)
        kept = [p for i, p in enumerate(params) if i not in ones]
        k = self.compile_one(dtype, tactic, arch, frozenset(aligned), frozenset(ones))
        self._check_launch(k, tactic)
        n_hidden = _abi.check_abi(self.op_name, k.name, k.name, k.ptx, kept, hidden="Triton's hidden scratch pointers")
        return self._image(k, dtype, tactic, kept, n_hidden, folded=tuple(sorted(ones)))

    def build(self, arch: Optional[str], *, check_abi: bool = True) -> Binary:
        kernels: Dict[Tuple[torch.dtype, int], KernelImage] = {}
        hidden, entries, cached = set(), [], True
        for d in self.sig.kernel_dtypes:
            n_user = len(self.sig.params(d))
            for t in range(1, len(self.configs) + 1):
                k = self.compile_one(d, t, arch)
                self._check_launch(k, t)
                n_hidden = (_abi.check_abi(self.op_name, k.name, k.name, k.ptx, self.sig.params(d),
                                           hidden="Triton's hidden scratch pointers") if check_abi
                            else len(_abi.ptx_params(k.ptx, k.name) or ()) - n_user)
                hidden.add(n_hidden)
                kernels[(d, t)] = self._image(k, d, t, self.sig.params(d), n_hidden)
                cached = cached and k.from_cache
                if k.entry is not None:
                    entries.append(k.entry)
        if len(hidden) > 1:
            raise KernelABIError(f"{self.op_name}: Triton's configs disagree on the number of hidden parameters "
                                 f"{sorted(hidden)}. Fix: give every tactic the same Triton options (the hidden "
                                 "parameters depend on the Triton version and backend, not on constexprs)")
        return Binary(arch=arch, kernels=kernels, toolchain=f"Triton {_tc.triton_version()}", from_cache=cached,
                      entries=tuple(dict.fromkeys(entries)), details={"configs": self.config_text()})

    def _image(self, k: _tc.TritonKernel, dtype: torch.dtype, tactic: int, params: Sequence[Any], n_hidden: int,
               folded: Tuple[int, ...] = ()) -> KernelImage:
        """The kernel image of a compile whose ``.entry`` takes ``params`` then ``n_hidden`` scratch pointers, the
        declared parameters at ``folded`` compiled in as constants (then no AOT PTX: TensorRT passes them all)."""
        scratch = [(k.global_scratch_size, k.global_scratch_align), (k.profile_scratch_size, k.profile_scratch_align)]
        scratch = tuple((scratch + [(0, 1)] * n_hidden)[:n_hidden])
        n_user = len(params)
        aot_ptx, why = None, None
        if folded:
            why = "a parameter equal to 1 is folded into this code (eager only)"
        elif k.needs_scratch:
            why = (f"tactic {tactic} ({_dt.label(dtype, self.sig.type_params)}) needs a Triton scratch buffer "
                   f"(global_scratch_size={k.global_scratch_size}, profile_scratch_size={k.profile_scratch_size}), "
                   "which TensorRT's AOT launch cannot pass")
        elif k.shared > STATIC_SHARED_MEM:
            why = (f"tactic {tactic} needs {k.shared} bytes of dynamic shared memory (> 48 KB); raising a kernel's "
                   "limit is not part of TensorRT's AOT launch as far as verified here")
        else:
            aot_ptx, why = strip_hidden_params(k.ptx, k.name, n_user)
            if aot_ptx is not None:
                _abi.check_abi(self.op_name, k.name, k.name, aot_ptx, params)
                why = None
        return KernelImage(symbol=k.name, image=k.cubin, ptx=k.ptx, aot_ptx=aot_ptx, aot_reason=why or None,
                           shared_mem=k.shared, scratch=scratch, folded=folded)

    def _check_launch(self, k: _tc.TritonKernel, tactic: int) -> None:
        """What Triton compiled must be launchable as this package launches (one CTA, no attributes)."""
        cfg = self.configs[tactic - 1]
        if k.num_ctas != 1 or k.launch_cooperative_grid or k.launch_pdl:
            raise SpecError(f"{self.op_name}: tactic {tactic}: Triton asks for num_ctas={k.num_ctas}, "
                            f"cooperative={k.launch_cooperative_grid}, pdl={k.launch_pdl}; trt_kernels launches with "
                            "cuLaunchKernel (one CTA per program, no launch attributes). Fix: use the defaults")
        if k.num_warps != cfg.num_warps:
            raise SpecError(f"{self.op_name}: tactic {tactic}: Triton compiled num_warps={k.num_warps}, not "
                            f"{cfg.num_warps}. Fix: pass num_warps through TritonConfig(num_warps=...), not "
                            "compile_options")

    def cached_build(self) -> Optional[Binary]:
        return None  # Triton's cache key needs the arch: the declaration compiles (or reads) for a known one

    def ptx_note(self, binary: Binary, driver: Optional[Version]) -> Optional[str]:
        for k in binary.kernels.values():
            note = _tc.ptx_driver_note(k.ptx_isa, driver)
            if note:
                return note
        return None

    def config_text(self) -> str:
        return "; ".join(f"tactic {i + 1}: {dict(c.constexprs)} num_warps={c.num_warps} num_stages={c.num_stages}"
                         for i, c in enumerate(self.configs))

    def describe(self) -> str:
        text = f"Triton {self.kernel_name!r} (triton {_tc.triton_version()}); {self.config_text()}"
        return text + (f"; {self.rule.describe()}" if self.rule is not None else "")

    # ----- configs chosen per call (LaunchRule) -----
    def call_configs(self, tensors: Sequence[Any], scalars: Sequence[Any]) -> List[TritonConfig]:
        """The configs a call with these tensor inputs and scalar values may launch, with every launch-time
        value computed (one per tactic; eager times them where ``@triton.autotune`` declared several)."""
        return [self.rule.config(cfg, self, tensors, scalars) for cfg in self.configs]

    def tune_key(self, tensors: Sequence[Any], scalars: Sequence[Any]) -> Tuple:
        """What ``@triton.autotune`` keys its choice on: the values of its ``key`` arguments, and the dtype of
        every tensor argument (as Triton's Autotuner does)."""
        args = self.rule.named_args(self, tensors, scalars)
        return tuple(args[k] for k in self.rule.tune_key or () if k in args) + tuple(str(t.dtype) for t in tensors)

    def variant(self, cfg: TritonConfig) -> Tuple[Signature, "TritonSource"]:
        """The signature and source of one concrete config: what a call that computed ``cfg`` launches."""
        sig = self.rule.signature(cfg)
        return sig, TritonSource(sig, self.fn, [cfg], self.constexpr_names, self.constexpr_defaults, self.options,
                                 self.arch_override)

    # ----- @triton.autotune at an eager call -----
    @property
    def tuning(self) -> Optional["AutotuneOptions"]:
        """The autotuner's options where the kernel came with ``@triton.autotune`` (eager times its configs), else
        None (eager launches the first config; ``tactics=`` are TensorRT's to time)."""
        return self.rule.tuning if self.rule is not None else None

    def tuning_call(self, tensors: Sequence[Any], scalars: Sequence[Any], configs: Sequence[TritonConfig]
                    ) -> "TuningCall":
        """One tuning (the first call per autotune key): the arguments as Triton's autotuner names them, the
        configs left after ``prune_configs_by``, and the hooks around each timed launch. ``configs``: the
        concrete config of each tactic at this call (:meth:`call_configs`)."""
        rule = self.rule
        named = rule.named_args(self, tensors, scalars)
        # Triton's **kwargs of a launch: the constexprs the caller passes by keyword (here the declaration's
        # constexprs, fixed or computed from the sizes), not those the autotuner's configs or heuristics set
        tuned = {n for c in rule.tuning.configs for n in dict(getattr(c, "kwargs", None) or {})}
        first = rule.config(self.configs[0], self, tensors, scalars)
        kwargs = {n: v for n, v in first.constexprs.items()
                  if n not in tuned and n not in rule.heuristics and n not in named}
        return TuningCall(rule.tuning, self.op_name, named, kwargs, configs)


def config_key(cfg: TritonConfig) -> Tuple:
    """A hashable identity of a concrete config."""
    return tuple(sorted(cfg.constexprs.items())), cfg.num_warps, cfg.num_stages


@dataclass(frozen=True)
class LaunchRule:
    """How a Triton op computes its launch config at each call, as the author's launcher or Triton's
    decorators do: constexprs from sizes (``sized``: name -> resolved size expression), ``@triton.heuristics``
    (``heuristics``: name -> function of the named arguments), ``num_warps`` / ``num_stages`` as functions of
    the constexprs, and ``@triton.autotune``'s ``key`` (``tune_key``; its configs are the tactics)."""

    sized: Mapping[str, Expr]
    heuristics: Mapping[str, Callable[[Dict[str, Any]], Any]]
    num_warps: Optional[Callable[[Dict[str, Any]], int]]
    num_stages: Optional[Callable[[Dict[str, Any]], int]]
    tune_key: Optional[Tuple[str, ...]]
    signature: Callable[[TritonConfig], Signature]  # the signature of a concrete config (its grid and block)
    sized_text: Mapping[str, str] = field(default_factory=dict)  # each sized constexpr as the user wrote it
    tuning: Optional["AutotuneOptions"] = None  # the rest of @triton.autotune (pruning, reset/restore, hooks)

    @property
    def per_call(self) -> bool:
        """Whether a config's values depend on the call (else only the autotuner's choice does)."""
        return bool(self.sized or self.heuristics or self.num_warps or self.num_stages)

    def named_args(self, source: "TritonSource", tensors, scalars, consts: Optional[Mapping[str, Any]] = None
                   ) -> Dict[str, Any]:
        """The kernel's arguments by name, as Triton hands them to heuristics and its autotuner: tensors,
        scalars, the sizes the extras compute, and ``consts``."""
        from trt_kernels.expr import SizesEvaluator, evaluate

        sig = source.sig
        ev = SizesEvaluator([tuple(t.shape) for t in tensors], scalars)
        names = [p.name for p in source.fn.params if not p.is_constexpr]
        out: Dict[str, Any] = {}
        for name, p in zip(names, sig.params(sig.kernel_dtypes[0])):
            if p.role == "input":
                out[name] = tensors[p.index]
            elif p.role == "scalar":
                v = scalars[p.index]
                out[name] = v if p.element is None else v[p.element]
            elif p.role == "extra":
                out[name] = int(evaluate(sig.extras[p.index], ev))
        out.update(consts or {})
        return out

    def config(self, cfg: TritonConfig, source: "TritonSource", tensors, scalars) -> TritonConfig:
        from trt_kernels.expr import SizesEvaluator, evaluate

        if not self.per_call:
            return cfg
        ev = SizesEvaluator([tuple(t.shape) for t in tensors], scalars)
        consts = dict(cfg.constexprs)
        # at least 1: a size of 0 (an empty row) would ask Triton for a block of 0, which it cannot compile;
        # the launch then covers no element anyway
        consts.update({n: max(1, int(evaluate(e, ev))) for n, e in self.sized.items()})
        if self.heuristics:
            args = self.named_args(source, tensors, scalars, consts)
            for name, f in self.heuristics.items():  # in order: a later one sees the earlier ones, as in Triton
                try:
                    consts[name] = args[name] = f(args)
                except KeyError as e:
                    raise SpecError(f"{source.op_name}: @triton.heuristics {name!r} reads {e}, which is not known "
                                    f"before the launch (it sees {sorted(args)}; outputs are allocated by the "
                                    "launch). Fix: compute it from the inputs, scalars and sizes") from None
        meta = dict(consts, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        nw = _per_call(source.op_name, "num_warps", self.num_warps, meta) if self.num_warps else cfg.num_warps
        ns = _per_call(source.op_name, "num_stages", self.num_stages, meta) if self.num_stages else cfg.num_stages
        return TritonConfig(consts, nw, ns)

    def describe(self) -> str:
        parts = [f"{n} = {self.sized_text.get(n, e)}" for n, e in self.sized.items()]
        parts += [f"{n} by @triton.heuristics" for n in self.heuristics]
        parts += ["num_warps from the constexprs"] * bool(self.num_warps)
        parts += ["num_stages from the constexprs"] * bool(self.num_stages)
        if self.tune_key is not None:
            parts.append(f"@triton.autotune over the tactics, key {list(self.tune_key)}"
                         + (self.tuning.describe() if self.tuning is not None else ""))
        return "per call: " + ", ".join(parts)


# ---------------- @triton.autotune's options, at eager tuning ----------------


@plain_record
class AutotuneOptions(Frozen):
    """What ``@triton.autotune`` asks of a tuning besides its configs and ``key``, run as Triton runs it
    (``triton/runtime/autotuner.py``; read in Triton 3.3 to 3.9, the same there unless said):

    - ``prune_configs_by``: at the first call per key, before timing, ``early_config_prune(configs, named_args,
      **kwargs)`` keeps some of the configs (the autotuner's ``triton.Config`` objects, as written), then, where
      a ``perf_model`` is given, ``perf_model(**named_args, **kwargs, **config.all_kwargs())`` ranks them and the
      ``top_k`` first are kept (``Autotuner.prune_configs``). Where one config is left, it is used untimed
      (Triton 3.9's ``Autotuner.run``; earlier versions timed it alone, which chose it too).
    - ``reset_to_zero``: these tensors are zeroed before each timed launch, and once more after timing, before
      the chosen config's launch of that first call (``Autotuner.__init__``'s default ``pre_hook``, and
      ``pre_hook(..., reset_only=True)`` in ``run``'s ``benchmark``). Later calls, and a call whose choice comes
      from memory or disk, launch without a reset: the caller passes them zeroed, as Triton's caller does.
    - ``restore_value``: these tensors are copied before each timed launch and copied back after it (its default
      ``pre_hook`` / ``post_hook``), so the timing leaves them as the caller passed them and the call's own launch
      updates them once.
    - ``pre_hook`` / ``post_hook`` of the autotuner: run instead of those defaults around each timed launch, with
      the arguments by name (``post_hook`` also gets ``exception=``), and ``pre_hook(args, reset_only=True)`` after
      timing. They run only while tuning, as in Triton; TensorRT times its tactics on buffers of its own.

    Both name the kernel's parameters; here they must be inputs declared ``mutated=True`` (the declaration checks).
    """

    configs: Tuple[Any, ...]  # the autotuner's triton.Config objects, as the author wrote them
    reset_to_zero: Tuple[str, ...] = ()
    restore_value: Tuple[str, ...] = ()
    early_config_prune: Optional[Callable[..., Any]] = None
    perf_model: Optional[Callable[..., Any]] = None
    top_k: Any = 1.0
    pre_hook: Optional[Callable[..., Any]] = None  # the author's, replacing the reset/restore default (as in Triton)
    post_hook: Optional[Callable[..., Any]] = None
    outputs: Tuple[str, ...] = ()  # the kernel's output parameters (for messages: no hook sees them)

    def __init__(self, configs: Tuple[Any, ...], reset_to_zero: Tuple[str, ...] = (),
                 restore_value: Tuple[str, ...] = (), early_config_prune: Optional[Callable[..., Any]] = None,
                 perf_model: Optional[Callable[..., Any]] = None, top_k: Any = 1.0,
                 pre_hook: Optional[Callable[..., Any]] = None, post_hook: Optional[Callable[..., Any]] = None,
                 outputs: Tuple[str, ...] = ()) -> None:
        self.__dict__.update(configs=tuple(configs), reset_to_zero=tuple(reset_to_zero),
                             restore_value=tuple(restore_value), early_config_prune=early_config_prune,
                             perf_model=perf_model, top_k=top_k, pre_hook=pre_hook, post_hook=post_hook,
                             outputs=tuple(outputs))

    def prune(self, op: str, named: Dict[str, Any], kwargs: Dict[str, Any]) -> List[int]:
        """The indices of the configs to time at a call (all of them without ``prune_configs_by``)."""
        keep = list(range(len(self.configs)))
        if self.early_config_prune is not None:
            got = _call_user(op, "prune_configs_by['early_config_prune']", self.early_config_prune, set(named) | set(
                kwargs), self.outputs, list(self.configs), dict(named), **kwargs)
            keep = self._indices(op, got)
        if self.perf_model is not None:
            k = self.top_k
            if isinstance(k, float) and k <= 1.0:
                k = max(1, int(len(keep) * k))  # Triton 3.9 keeps at least one (3.6 could keep none, then failed)
            if len(keep) > k:
                est = {i: self._estimate(op, named, kwargs, self.configs[i]) for i in keep}
                keep = sorted(keep, key=est.__getitem__)[:k]  # stable: ties keep their order, as in Triton
        return keep

    def _indices(self, op: str, got) -> List[int]:
        if got is None or isinstance(got, (str, bytes)) or not hasattr(got, "__iter__"):
            raise SpecError(f"{op}: @triton.autotune's prune_configs_by['early_config_prune'] returned {got!r}, not a "
                            "list of configs. Fix: return some of the configs it is given")
        out: List[int] = []
        for c in got:
            i = next((i for i, o in enumerate(self.configs) if o is c), None)
            if i is None:
                i = next((i for i, o in enumerate(self.configs) if _same_config(o, c)), None)
            if i is None:
                raise SpecError(f"{op}: @triton.autotune's prune_configs_by['early_config_prune'] returned a config "
                                f"that is none of the autotuner's ({_config_label(c)}): trt_kernels compiles the "
                                "declared configs only (each is a TensorRT tactic). Fix: return some of the configs "
                                "it is given, or add that one to the autotuner's configs")
            if i not in out:
                out.append(i)
        if not out:
            raise SpecError(f"{op}: @triton.autotune's prune_configs_by['early_config_prune'] returned no config (as "
                            "Triton 3.9 says: it should return at least one). Fix: keep at least one")
        return out

    def _estimate(self, op: str, named: Dict[str, Any], kwargs: Dict[str, Any], cfg) -> Any:
        args = {**named, **kwargs, **_all_kwargs(cfg)}
        try:
            inspect.signature(self.perf_model).bind(**args)
        except TypeError as e:
            hidden = f"; outputs ({', '.join(self.outputs)}) are allocated by each launch, so no hook or " \
                     "pruning function gets them" if self.outputs else ""
            raise SpecError(f"{op}: @triton.autotune's prune_configs_by['perf_model'] cannot take a call's arguments "
                            f"({e}; it gets {sorted(args)}{hidden}). Fix: take those, and **kwargs") from None
        except ValueError:
            pass  # no signature to read (a builtin): call it and let it say
        return self.perf_model(**args)

    def describe(self) -> str:
        parts = [f"{n} {list(v)}" for n, v in (("reset_to_zero", self.reset_to_zero),
                                              ("restore_value", self.restore_value)) if v]
        parts += [f"prune_configs_by {n}" for n, v in (("early_config_prune", self.early_config_prune),
                                                       ("perf_model", self.perf_model)) if v is not None]
        parts += [f"the autotuner's {n}" for n, v in (("pre_hook", self.pre_hook), ("post_hook", self.post_hook))
                  if v is not None]
        return "".join(", " + p for p in parts)


class TuningCall:
    """One eager tuning (the first call per autotune key) of a ``@triton.autotune`` kernel: ``candidates``, the
    configs left after pruning (indices), and the hooks around each timed launch of config ``i``:
    :meth:`before`, :meth:`after` (also on a launch that raised), and :meth:`reset_only` once after timing,
    before the chosen config's launch. Each hook gets the arguments by name as Triton builds them for that
    config (``{**named_args, **kwargs, **config.all_kwargs()}``)."""

    def __init__(self, options: AutotuneOptions, op: str, named: Dict[str, Any], kwargs: Dict[str, Any],
                 configs: Sequence[TritonConfig]):
        self.options, self.op = options, op
        self.candidates = options.prune(op, named, kwargs)
        self.args = [{**named, **kwargs, **dict(c.constexprs), "num_warps": c.num_warps, "num_ctas": 1,
                      "num_stages": c.num_stages} for c in configs]
        self.saved: Dict[str, Any] = {}  # restore_value's copies, taken by the default pre_hook

    def before(self, i: int) -> None:
        o, args = self.options, self.args[i]
        if o.pre_hook is not None:
            self._user("pre_hook", o.pre_hook, args)
            return
        _zero(args, o.reset_to_zero)
        self.saved = {n: args[n].clone() for n in o.restore_value if args.get(n) is not None}

    def after(self, i: int, exception: Optional[BaseException] = None) -> None:
        o, args = self.options, self.args[i]
        if o.post_hook is not None:
            self._user("post_hook", o.post_hook, args, exception=exception)
            return
        saved, self.saved = self.saved, {}
        for n, v in saved.items():
            args[n].copy_(v)

    def reset_only(self, i: int) -> None:
        o, args = self.options, self.args[i]
        if o.pre_hook is not None:
            self._user("pre_hook", o.pre_hook, args, reset_only=True)
        else:
            _zero(args, o.reset_to_zero)

    def _user(self, what: str, fn, args: Dict[str, Any], **kw) -> None:
        _call_user(self.op, what, fn, set(args), self.options.outputs, args, **kw)


def _zero(args: Dict[str, Any], names: Sequence[str]) -> None:
    for n in names:
        if args.get(n) is not None:
            args[n].zero_()


def _call_user(op: str, what: str, fn, names, outputs: Sequence[str], *args, **kwargs):
    """``fn(*args, **kwargs)``; a KeyError for an argument it is not given becomes an error that says why."""
    try:
        return fn(*args, **kwargs)
    except KeyError as e:
        key = e.args[0] if len(e.args) == 1 else None
        if not isinstance(key, str) or key in names:
            raise
        why = (": an output, which each launch allocates, so no hook or pruning function gets it"
               if key in outputs else "")
        raise SpecError(f"{op}: @triton.autotune's {what} read {key!r}, which a trt_kernels call does not give it"
                        f"{why} (it gets {sorted(names)}). Fix: read only those; a tensor the kernel reads and writes "
                        f"is an input declared InputDecl(..., mutated=True)") from e


def _all_kwargs(cfg) -> Dict[str, Any]:
    f = getattr(cfg, "all_kwargs", None)
    if f is not None:
        return dict(f())
    return {**dict(cfg.kwargs), "num_warps": cfg.num_warps, "num_ctas": 1, "num_stages": cfg.num_stages}


def _same_config(a, b) -> bool:
    """Whether two ``triton.Config`` objects are the same config (what Triton 3.9's ``Config.__eq__`` compares;
    older versions compare identity)."""
    fields = ("kwargs", "num_warps", "num_stages", "num_ctas", "maxnreg", "pre_hook", "ir_override")
    return hasattr(b, "kwargs") and all(getattr(a, f, None) == getattr(b, f, None) for f in fields)


def _config_label(c) -> str:
    return (f"{dict(getattr(c, 'kwargs', None) or {})}, num_warps={getattr(c, 'num_warps', None)}, "
            f"num_stages={getattr(c, 'num_stages', None)}")


def _autotune_options(op: str, at, fn, sig: Signature) -> AutotuneOptions:
    """``@triton.autotune``'s options, checked against the declaration: a config ``pre_hook`` is refused (Triton
    runs it before every launch; a TensorRT engine cannot), ``reset_to_zero`` / ``restore_value`` must name
    inputs declared ``mutated=True``, ``top_k`` must be what Triton takes."""
    configs = tuple(at.configs)
    for i, c in enumerate(configs):
        if getattr(c, "num_ctas", 1) not in (None, 1):
            raise SpecError(f"{op}: kernel: @triton.autotune config {i} ({_config_label(c)}) has num_ctas="
                            f"{c.num_ctas}: thread block clusters are not supported (eager and TensorRT launch one "
                            "block per grid cell). Fix: leave num_ctas at 1")
        if getattr(c, "maxnreg", None) is not None:
            raise SpecError(f"{op}: kernel: @triton.autotune config {i} ({_config_label(c)}) has maxnreg={c.maxnreg}, "
                            "which a config here does not carry (it would be dropped). Fix: leave it out, or give "
                            f"compile_options={{'maxnreg': {c.maxnreg}}}, which every config is compiled with")
        if getattr(c, "ir_override", None) is not None:
            raise SpecError(f"{op}: kernel: @triton.autotune config {i} ({_config_label(c)}) has an ir_override, "
                            "which a config here does not carry (it would be dropped). Fix: leave it out")
        if getattr(c, "pre_hook", None) is not None:
            raise SpecError(f"{op}: kernel: @triton.autotune config {i} ({_config_label(c)}) has a pre_hook. Triton "
                            "runs it before every launch with that config, and a TensorRT engine launches the kernel "
                            "without Python, so the engine would skip it. Fix: drop it (to zero or restore arguments "
                            "while tuning, give the autotuner reset_to_zero= or restore_value=)")
    roles = _kernel_roles(fn, sig)
    reset = tuple(getattr(at, "reset_to_zero", None) or ())
    restore = tuple(getattr(at, "restore_value", None) or ())
    for what, names in (("reset_to_zero", reset), ("restore_value", restore)):
        for n in names:
            _check_written(op, what, n, roles, fn)
    perf_model = getattr(at, "perf_model", None)
    top_k = getattr(at, "configs_top_k", 1.0)
    if perf_model is not None and not ((isinstance(top_k, float) and 0 < top_k <= 1.0) or (
            isinstance(top_k, int) and not isinstance(top_k, bool) and top_k >= 1)):
        raise SpecError(f"{op}: kernel: @triton.autotune prune_configs_by['top_k']={top_k!r}: Triton takes a float in "
                        "(0, 1] (a fraction of the configs) or an int >= 1 (how many). Fix: e.g. 'top_k': 2")
    return AutotuneOptions(
        configs, reset, restore, getattr(at, "early_config_prune", None), perf_model, top_k,
        at.pre_hook if getattr(at, "user_defined_pre_hook", False) else None,
        at.post_hook if getattr(at, "user_defined_post_hook", False) else None,
        tuple(n for n, (role, _) in roles.items() if role == "output"))


def _kernel_roles(fn, sig: Signature) -> Dict[str, Tuple[str, Any]]:
    """Each parameter of the kernel by name: ``(what it is, its declaration)``."""
    out: Dict[str, Tuple[str, Any]] = {}
    runtime = [p.name for p in fn.params if not p.is_constexpr]
    for name, p in zip(runtime, sig.params(sig.kernel_dtypes[0])):
        if p.role == "input":
            out[name] = ("input", sig.tensor_decls[p.index])
        elif p.role == "output":
            out[name] = ("output", sig.outputs[p.index])
        else:
            out[name] = ("scalar input" if p.role == "scalar" else "size", None)
    for p in fn.params:
        if p.is_constexpr:
            out[p.name] = ("tl.constexpr", None)
    return out


def _check_written(op: str, what: str, name: str, roles: Dict[str, Tuple[str, Any]], fn) -> None:
    role, decl = roles.get(name, (None, None))
    tensors = [n for n, (r, _) in roles.items() if r in ("input", "output")]
    if role is None:
        raise SpecError(f"{op}: kernel: @triton.autotune {what} names {name!r}, which is no parameter of "
                        f"{fn.__name__!r} (its tensors: {tensors}). Fix: name the kernel's parameters")
    if role == "output":
        raise SpecError(f"{op}: kernel: @triton.autotune {what} names {name!r}, a declared output. trt_kernels "
                        "allocates outputs uninitialized at every launch (torch.empty; TensorRT's output buffers "
                        f"likewise), so a kernel that needs {name!r} {'zeroed' if what == 'reset_to_zero' else 'kept'}"
                        " reads garbage outside tuning too. Fix: declare it as an input the caller passes (zeroed, "
                        "for reset_to_zero) and the kernel writes: InputDecl(..., mutated=True), moved from "
                        "outputs= to inputs=")
    if role != "input":
        raise SpecError(f"{op}: kernel: @triton.autotune {what} names {name!r}, a {role}, not a tensor. "
                        f"Fix: name tensor parameters ({tensors})")
    if not decl.mutated:
        does = ("zeroes it while tuning and before the first launch, which writes the caller's tensor"
                if what == "reset_to_zero" else "saves it before each timed launch and writes it back after, "
                "which only a tensor the kernel writes needs")
        raise SpecError(f"{op}: kernel: @triton.autotune {what} names {name!r}, an input not declared mutated: "
                        f"Triton {does}. Fix: InputDecl({decl.name!r}, mutated=True) if the kernel writes it, else "
                        f"drop it from {what}")


# ---------------- declaration ----------------


def declare(
    op_name: str,
    kernel,
    *,
    inputs: Sequence[Union[InputDecl, ScalarInput]],
    outputs: Sequence[OutputDecl],
    grid: GridLike,
    extras: Sequence[Any] = (),
    constexprs: Optional[Mapping[str, Any]] = None,
    num_warps: Union[int, Callable[[Dict[str, Any]], int]] = 4,
    num_stages: Union[int, Callable[[Dict[str, Any]], int]] = 3,
    tactics: Sequence[TritonConfig] = (),
    dtypes: Optional[Sequence[Any]] = None,
    type_params: Optional[Sequence[str]] = None,
    checks: Sequence[Any] = (),
    arch_override: Optional[str] = None,
    compile_options: Optional[Mapping[str, Any]] = None,
    params: Optional[Sequence[str]] = None,
    min_arch: Optional[str] = None,
) -> Tuple[Signature, TritonSource]:
    """Check a Triton declaration; its signature and source (registration is :func:`trt_kernels.triton_kernel_op`)."""
    _tc.require_triton("triton_kernel_op")
    if min_arch is not None:
        from trt_kernels.sources.archs import check_min_arch

        min_arch = check_min_arch(op_name, min_arch)
    if arch_override is not None:
        from trt_kernels.sources.archs import check_arch_override

        check_arch_override(op_name, arch_override)
    fn, tuned, tune_key, heuristics, autotuner = _unwrap(op_name, kernel)
    constexprs = dict(constexprs or {})
    sized_raw = {n: v for n, v in constexprs.items() if isinstance(v, Expr)}
    warps_fn = num_warps if callable(num_warps) else None
    stages_fn = num_stages if callable(num_stages) else None
    if warps_fn is None:
        _check_warps(op_name, "num_warps", num_warps)
    # values a config reads at declaration stand for those computed per call (the grid's shape, the block)
    placeholder = {n: 1 for n in [*sized_raw, *heuristics]}
    base = TritonConfig({**{n: v for n, v in constexprs.items() if n not in sized_raw}, **placeholder},
                        4 if warps_fn else num_warps, 3 if stages_fn else num_stages)
    if tuned and tactics:
        raise SpecError(f"{op_name}: tactics: given with @triton.autotune, whose configs are the tactics. "
                        "Fix: leave tactics out, or list them in the autotune decorator")
    both = sorted({n for c in tuned or () for n in c.kwargs} & set(constexprs))
    if both:
        raise SpecError(f"{op_name}: constexprs: {both} also set by the @triton.autotune configs, whose values "
                        "would win (Triton refuses the same: 'Conflicting meta-parameters'). Fix: leave them out of "
                        "constexprs=")
    configs = [base]
    for i, t in enumerate(tuned or tactics):
        if tuned:
            t = TritonConfig(dict(t.kwargs), t.num_warps, t.num_stages)
        elif not isinstance(t, TritonConfig):
            raise SpecError(f"{op_name}: tactics[{i}]: expected ttk.TritonConfig, got {t!r}. "
                            "Fix: tactics=[ttk.TritonConfig({'BLOCK': 512}, num_warps=2)]")
        _check_warps(op_name, f"tactics[{i}].num_warps", t.num_warps)
        configs.append(TritonConfig({**base.constexprs, **dict(t.constexprs)}, t.num_warps, t.num_stages))
    if tuned:
        configs = configs[1:]  # the autotuner's configs are the tactics, its first the default

    for what, fn_ in (("grid", grid), ("num_warps", warps_fn), ("num_stages", stages_fn)):
        if callable(fn_):
            _check_meta_arity(op_name, what, fn_)

    def label(i: int) -> str:
        """Config ``i`` of ``configs`` as the user wrote it."""
        return f"@triton.autotune config {i}" if tuned else "constexprs" if i == 0 else f"tactics[{i - 1}]"

    def geometry(cfg: TritonConfig, where: str) -> Custom:
        meta = dict(cfg.constexprs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        try:
            g = grid(meta) if callable(grid) else grid
        except KeyError as e:
            fix = "give it in every @triton.autotune config" if tuned else "give it in constexprs="
            raise SpecError(f"{op_name}: grid: {where}: grid(meta) read {e} which is not a constexpr of the config "
                            f"(meta has {sorted(meta)}). Fix: {fix}") from None
        except (TypeError, ValueError, ArithmeticError) as e:
            raise SpecError(f"{op_name}: grid: {where}: grid(meta) raised {type(e).__name__}: {e} (meta: {meta}). "
                            "Fix: build the grid from ints and size expressions (ttk.cdiv(ttk.Numel('x'), "
                            "meta['BLOCK'])), with the constexprs it reads ints") from None
        if isinstance(g, (int, Expr)):
            g = (g,)
        return Custom(grid=tuple(g), block=(cfg.num_warps * 32,))

    geos = [geometry(c, label(i)) for i, c in enumerate(configs)]
    if not outputs and not any(isinstance(d, InputDecl) and d.mutated for d in inputs or ()):
        raise SpecError(f"{op_name}: outputs: missing. Fix: declare outputs=[ttk.OutputDecl(...)], or mark the "
                        "inputs the kernel writes InputDecl(name, mutated=True)")
    sig = validate_signature(op_name, inputs=inputs, outputs=outputs, extras=extras, geometries=geos, dtypes=dtypes,
                             type_params=type_params, checks=checks, params=params,
                             kernel_params=[p.name for p in fn.params if not p.is_constexpr],
                             kernel_label=f"kernel {fn.__name__!r}")
    cnames = _check_parameters(op_name, fn, sig, named=params is None)
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and p.default is not inspect.Parameter.empty}
    for i, c in enumerate(configs):
        where = label(i) if tuned or i == 0 else f"{label(i)}.constexprs"
        unknown = sorted(set(c.constexprs) - set(cnames))
        if unknown:
            raise SpecError(f"{op_name}: {where}: {unknown} name no tl.constexpr parameter of {fn.__name__!r} "
                            f"(its constexprs: {cnames}). Fix: remove them or declare them in the kernel")
        missing = [n for n in cnames if n not in c.constexprs and n not in defaults]
        if missing:
            given = f"constexprs={{{', '.join(repr(m) + ': ...' for m in missing)}}}"
            fix = f"add them to that config, or give values every config shares in {given}" if tuned else given
            raise SpecError(f"{op_name}: {where}: no value for the constexpr parameter(s) {missing} of "
                            f"{fn.__name__!r}. Fix: {fix}")
    for d in _dt.flat(sig.kernel_dtypes):
        if d not in TENSOR_TYPES:
            raise SpecError(f"{op_name}: dtypes: {d} has no Triton type")
    opts = dict(compile_options or {})
    known = _tc.option_names() if opts else None
    unknown = sorted(set(opts) - known) if known is not None else []
    if unknown:
        import difflib

        close = {n: difflib.get_close_matches(n, sorted(known), n=1) for n in unknown}
        fix = "; ".join(f"write {c[0]!r} for {n!r}" for n, c in close.items() if c) or \
            "leave them out (triton.backends.nvidia.compiler.CUDAOptions lists the options)"
        raise SpecError(f"{op_name}: compile_options: {unknown} are no options of triton.compile for NVIDIA GPUs "
                        f"(Triton {_tc.triton_version()} would ignore them silently). Fix: {fix}")
    for bad in ("num_warps", "num_stages", "num_ctas"):
        if bad in opts:
            raise SpecError(f"{op_name}: compile_options: {bad!r} is set per config. Fix: use num_warps=/num_stages= "
                            "or tactics=[ttk.TritonConfig(...)] (num_ctas must stay 1)")
    rule = None
    if sized_raw or heuristics or warps_fn or stages_fn or tuned:
        sized = {n: constexpr_expr(op_name, f"constexprs[{n!r}]", v, sig) for n, v in sized_raw.items()}
        for n in [*sized, *heuristics]:
            if n not in cnames:
                raise SpecError(f"{op_name}: {n!r} names no tl.constexpr parameter of {fn.__name__!r} "
                                f"(its constexprs: {cnames}). Fix: compute only the kernel's constexprs")

        def signature_of(cfg: TritonConfig) -> Signature:
            return validate_signature(op_name, inputs=inputs, outputs=outputs, extras=extras,
                                      geometries=[geometry(cfg, "a config computed for a call")], dtypes=dtypes,
                                      type_params=type_params, checks=checks, params=params,
                                      kernel_params=[p.name for p in fn.params if not p.is_constexpr],
                                      kernel_label=f"kernel {fn.__name__!r}")

        tuning = _autotune_options(op_name, autotuner, fn, sig) if autotuner is not None else None
        rule = LaunchRule(sized, dict(heuristics), warps_fn, stages_fn, tune_key, signature_of,
                          {n: str(v) for n, v in sized_raw.items()}, tuning)
    return sig, TritonSource(sig, fn, configs, cnames, defaults, opts, arch_override, rule, min_arch)


_META_FIX = {"grid": "grid=lambda meta: (ttk.cdiv(ttk.Numel('x'), meta['BLOCK']),)",
             "num_warps": "num_warps=lambda meta: 8 if meta['BLOCK'] >= 2048 else 4",
             "num_stages": "num_stages=lambda meta: 2 if meta['BLOCK'] >= 256 else 3"}


def _check_meta_arity(op: str, what: str, fn) -> None:
    """A function given as ``grid`` / ``num_warps`` / ``num_stages`` must take the config's ``meta`` dict as its one
    argument, as Triton calls ``grid(meta)``."""
    try:
        params = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # (no signature to read: a builtin; its call says)
    try:
        params.bind({})
    except TypeError:
        raise SpecError(f"{op}: {what}: {getattr(fn, '__name__', type(fn).__name__)}{params} cannot be called as "
                        f"{what}(meta), with the config's constexprs, num_warps and num_stages in one dict. Fix: "
                        f"{_META_FIX[what]}") from None


def _unwrap(op: str, kernel):
    """``(the @triton.jit function, the autotuner's configs or None, its key, the heuristics, the Autotuner or
    None)`` of a kernel as its author decorated it (``@triton.autotune`` over ``@triton.heuristics`` over
    ``@triton.jit``, each optional)."""
    tuned, key, heuristics, autotuner = None, None, {}, None
    seen = 0
    while hasattr(kernel, "fn") and not hasattr(kernel, "params") and seen < 4:
        seen += 1
        if hasattr(kernel, "configs") and hasattr(kernel, "keys"):  # triton.runtime.autotuner.Autotuner
            tuned, key, autotuner = list(kernel.configs), tuple(kernel.keys), kernel
        elif hasattr(kernel, "values"):  # triton.runtime.autotuner.Heuristics
            heuristics = {**heuristics, **dict(kernel.values)}  # an outer one runs first
        else:
            break
        kernel = kernel.fn
    return _jit_function(op, kernel), tuned, key, heuristics, autotuner


def _jit_function(op: str, kernel):
    params = getattr(kernel, "params", None)
    if params is None or not hasattr(kernel, "fn"):
        kind = type(kernel).__name__
        hint = " (an @triton.autotune/@triton.heuristics wrapper: pass the inner @triton.jit function and give its " \
               "configs as tactics=[ttk.TritonConfig(...)])" if hasattr(kernel, "fn") else ""
        raise SpecError(f"{op}: kernel: expected a @triton.jit function, got {kind}{hint}. "
                        "Fix: decorate it with @triton.jit")
    return kernel


def _check_parameters(op: str, fn, sig: Signature, named: bool = True) -> List[str]:
    """The non-constexpr parameters must be the declaration's kernel parameters (``Signature.params``), named
    as declared (``named``; else only as many: the user listed the order in ``params``); returns the constexpr
    parameters' names."""
    expected = [_expected_name(sig, p) for p in sig.params(sig.kernel_dtypes[0])]
    runtime = [p for p in fn.params if not p.is_constexpr]
    constexprs = [p.name for p in fn.params if p.is_constexpr]
    order = ", ".join((n or f"<{w}>") for w, n in expected)
    fix = (f"write the kernel's parameters as ({order}{', ' if constexprs else ''}"
           f"{', '.join(f'{c}: tl.constexpr' for c in constexprs)}): "
           "tensor inputs, scalar inputs, extras, outputs, each in declaration order (a tensor 'x' may be named "
           "'x' or 'x_ptr'; constexprs may go anywhere); or name every declared input, output and extra "
           "(ttk.SizeArg) as the kernel's parameters, in any order, or pass params=[...] in the kernel's order")
    if len(runtime) != len(expected):
        raise SpecError(f"{op}: kernel {fn.__name__!r} has {len(runtime)} non-constexpr parameters "
                        f"({', '.join(p.name for p in runtime)}) but the declaration implies {len(expected)}. "
                        f"Fix: {fix}")
    for i, (p, (what, name)) in enumerate(zip(runtime, expected)):
        if name is None or not named:
            continue
        ok = p.name == name or (what != "scalar input" and p.name == f"{name}_ptr")
        if not ok:
            raise SpecError(f"{op}: kernel {fn.__name__!r} parameter {i} is {p.name!r} where the calling convention "
                            f"puts {what} {name!r}. Fix: {fix}")
    return constexprs


def _expected_name(sig: Signature, p) -> Tuple[str, Optional[str]]:
    """``(what, name)`` of the kernel parameter ``p`` (a :class:`~trt_kernels.signature.Param`): the name a
    Triton kernel gives it (None: an extra, any name)."""
    if p.role == "input":
        return "tensor input", sig.tensor_decls[p.index].name
    if p.role == "scalar":  # a tuple input (int, n): n parameters, pads_0 .. pads_{n-1}
        name = sig.scalar_decls[p.index].name
        return "scalar input", name if p.element is None else f"{name}_{p.element}"
    if p.role == "extra":
        return f"extras[{p.index}] ({sig.extra_labels[p.index]})", None
    return "output", sig.outputs[p.index].name


def _triton_signature(fn, sig: Signature, dtype: torch.dtype) -> Dict[str, str]:
    """Triton's ``signature`` (parameter name -> type string) of the kernel at ``dtype``: the declaration's
    kernel parameters (``Signature.params``) in order, constexprs where the function has them."""
    ins = sig.in_dtypes(dtype)
    outs = sig.out_dtypes(ins)

    def triton_type(p) -> str:
        if p.role == "input":
            return "*" + TENSOR_TYPES[ins[p.index]].triton
        if p.role == "output":
            return "*" + TENSOR_TYPES[outs[p.index]].triton
        if p.role == "scalar":
            return scalar_c(sig.scalar_decls[p.index]).triton
        return SIZE_TYPES[sig.extra_ctype(p.index)].triton  # an extra: i32 unless a SizeArg says otherwise

    it = iter([triton_type(p) for p in sig.params(dtype)])
    return {p.name: "constexpr" if p.is_constexpr else next(it) for p in fn.params}


def _per_call(op: str, what: str, fn, meta: Dict[str, Any]) -> int:
    """``fn(meta)``, the ``num_warps`` / ``num_stages`` a declaration computes from a call's constexprs, checked
    (:class:`SpecError` naming the argument and the values it was given)."""
    import operator

    try:
        value = fn(meta)
    except (KeyError, TypeError, ValueError, ArithmeticError) as e:
        raise SpecError(f"{op}: {what}: the function given as {what}= raised {type(e).__name__}: {e} for {meta}. "
                        f"Fix: compute it from the constexprs it is given, e.g. {_META_FIX[what]}") from None
    try:
        value = operator.index(value)  # (a numpy int is an int here, as int() took it before)
    except TypeError:
        pass
    if what == "num_warps":
        if not _warps_ok(value):
            raise SpecError(f"{op}: num_warps: the function given as num_warps= returned {value!r} for {meta}: Triton "
                            "takes a power of two from 1 to 32. Fix: return one, e.g. 4")
    elif isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SpecError(f"{op}: num_stages: the function given as num_stages= returned {value!r} for {meta}: Triton "
                        "takes an int of at least 1. Fix: return one, e.g. 3")
    return value


def _warps_ok(w) -> bool:
    """Whether ``w`` is a num_warps Triton takes: a power of two from 1 to 32."""
    return not (isinstance(w, bool) or not isinstance(w, int) or w <= 0 or w & (w - 1) or w * 32 > 1024)


def _check_warps(op: str, where: str, w) -> None:
    if not _warps_ok(w):
        raise SpecError(f"{op}: {where}: num_warps={w!r}: Triton takes a power of two from 1 to 32. "
                        "Fix: e.g. num_warps=4")
