"""Triton kernels as a second source: the declaration and the op record (:class:`TritonKernelOp`).

A ``@triton.jit`` function takes the place of CUDA C++ source; everything else is the
:class:`~trt_kernels.KernelSpec` vocabulary (inputs, scalar inputs, outputs, extras) and one
plan. What differs, and where it is handled:

- geometry: ``grid`` (size expressions, or ``grid(meta)`` returning them, as Triton's own
  ``kernel[grid]`` idiom) and block ``= num_warps * 32``; dynamic shared memory is what Triton
  reports (``metadata.shared``). Each is a ``Custom`` geometry per tactic, so eager, fake and
  TensorRT evaluate the same plan as for CUDA ops.
- tactics: each :class:`TritonConfig` (constexprs, ``num_warps``, ``num_stages``) is a separate
  compiled kernel; TensorRT times them (tactic ``k`` is config ``k - 1``), eager uses the first.
- hidden parameters: the eager parameter buffer carries Triton's two trailing scratch pointers
  (NULL, or a per-launch buffer when the size is non-zero); the AOT PTX has them stripped
  (:func:`trt_kernels.triton_source.strip_hidden_params`) or the plugin falls back to JIT.

The record subclasses :class:`~trt_kernels.registry.KernelOp` and overrides the few methods
that differ (program, symbol, plan, packing, loading), so the torch op, the eager fast path,
the converter and most of the plugin are the CUDA ones.
"""

from __future__ import annotations

import ctypes
import dataclasses
import struct
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import torch

from . import abi as _abi
from .errors import InputError, KernelABIError, LaunchError, NoCudaDeviceError, PtxVersionError, SpecError
from .expr import Const, Expr
from .launch import LoadedKernel, ParamPack, check, driver, driver_version
from .plan import LaunchPlan, build_plan, concrete
from .registry import KernelOp
from .spec import Custom, InputDecl, KernelSpec, OutputDecl, ScalarInput, validate
from . import triton_source as _ts

_MAX_STATIC_SMEM = 48 * 1024


@dataclass(frozen=True)
class TritonConfig:
    """One launch variant of a Triton kernel: constexpr values, ``num_warps``, ``num_stages``.

    As ``tactics=`` of :func:`triton_kernel_op`, its constexprs are merged over the declaration's."""

    constexprs: Mapping[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3


@dataclass
class TritonProgram:
    """Every compiled (dtype, tactic) of one op for one arch, and what TensorRT can embed."""

    arch: str
    kernels: Dict[Tuple[torch.dtype, int], _ts.TritonKernel]
    aot_ptx: Dict[Tuple[torch.dtype, int], bytes]
    aot_reason: Optional[str]  # why no AOT launch is defined (None: AOT is fine)
    n_hidden: int

    @property
    def ptx(self) -> bytes:  # the CUDA path's attribute; first variant, as TensorRT would get it
        return next(iter(self.aot_ptx.values()), b"")


class HiddenParamPack(ParamPack):
    """A :class:`ParamPack` for the declared parameters whose ``void*[]`` array has ``n_hidden`` more
    entries, each pointing at an 8-byte slot after the packed values (zero unless set): the fast
    path packs the declared parameters and the hidden scratch pointers stay NULL."""

    def __init__(self, codes: Sequence[str], n_hidden: int):
        super().__init__(codes)
        self.n_hidden = n_hidden
        self.hidden_offset = (self.struct.size + 7) // 8 * 8

    def buffer(self):
        try:
            return self._tls.b
        except AttributeError:
            buf = ctypes.create_string_buffer(self.hidden_offset + 8 * self.n_hidden + 8)
            base = ctypes.addressof(buf)
            ptrs = [base + o for o in self.offsets] + [base + self.hidden_offset + 8 * i for i in range(self.n_hidden)]
            arr = (ctypes.c_void_p * max(len(ptrs), 1))(*ptrs)
            self._tls.b = (buf, ctypes.addressof(arr), arr)
            return self._tls.b

    def set_hidden(self, buf, values: Sequence[int]) -> None:
        for i in range(self.n_hidden):
            struct.pack_into("=Q", buf, self.hidden_offset + 8 * i, int(values[i]) if i < len(values) else 0)


class TritonLoadedKernel(LoadedKernel):
    """A Triton CUBIN; a kernel using more than 48 KB of dynamic shared memory gets its limit raised
    (``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``) before its function is handed out."""

    def __init__(self, image: bytes, symbol: str, label: str, shared: int):
        super().__init__(image, symbol, label)
        self.shared = shared

    def _configure(self, cu, f) -> None:
        if self.shared > _MAX_STATIC_SMEM:
            check(cu.cuFuncSetAttribute(
                f, cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, self.shared),
                f"{self.label}: cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES={self.shared}) (the device "
                "has less shared memory per block than this Triton config needs; use a smaller BLOCK or "
                "fewer num_stages)")


@dataclass
class TritonKernelOp(KernelOp):
    """A :class:`KernelOp` whose kernel is a ``@triton.jit`` function."""

    fn: Any = None
    configs: Tuple[TritonConfig, ...] = ()
    tactic_specs: Tuple[KernelSpec, ...] = ()
    signatures: Dict[torch.dtype, Dict[str, str]] = field(default_factory=dict)
    constexpr_names: Tuple[str, ...] = ()
    constexpr_defaults: Dict[str, Any] = field(default_factory=dict)
    triton_options: Dict[str, Any] = field(default_factory=dict)

    # ----- tactics and plans -----
    @property
    def tactics(self) -> int:
        return len(self.configs)

    def _plan_arch(self) -> Optional[str]:
        try:
            return self.resolve_arch()
        except NoCudaDeviceError:
            return None

    def plan(self, ranks: Tuple[int, ...], tactic: int = 1) -> LaunchPlan:
        tactic = min(max(int(tactic or 1), 1), self.tactics)
        arch = self._plan_arch()
        key = (tuple(ranks), tactic, arch)
        p = self._plans.get(key)
        if p is None:
            p = build_plan(self.v, self.tactic_specs[tactic - 1], ranks, 1)
            # dynamic shared memory: what Triton reports, the largest over the dtypes (a fake impl
            # without a GPU arch needs shapes only: 0)
            smem = 0 if arch is None else max(self.kernel(d, tactic, arch).shared for d in self.dtypes)
            p = dataclasses.replace(p, tactic=tactic, shared_mem=Const(smem))
            self._plans[key] = p
        return p

    # ----- compile -----
    def kernel(self, dtype: torch.dtype, tactic: int = 1, arch: Optional[str] = None) -> _ts.TritonKernel:
        return self.program(arch).kernels[(dtype, tactic)]

    def compile_one(self, dtype: torch.dtype, tactic: int, arch: str) -> _ts.TritonKernel:
        cfg = self.configs[tactic - 1]
        consts = {n: cfg.constexprs.get(n, self.constexpr_defaults.get(n)) for n in self.constexpr_names}
        opts = dict(self.triton_options, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        label = f"{self.op_name} (dtype {str(dtype).replace('torch.', '')}, tactic {tactic})"
        return _ts.compile_triton(self.fn, self.signatures[dtype], consts, arch=arch, options=opts, label=label)

    def program(self, arch: Optional[str] = None) -> TritonProgram:
        arch = self.resolve_arch(arch)
        prog = self._programs.get(arch)
        if prog is not None:
            return prog
        with self._lock:
            prog = self._programs.get(arch)
            if prog is None:
                prog = self._build_program(arch)
                self._programs[arch] = prog
        return prog

    def _build_program(self, arch: str) -> TritonProgram:
        n_user = len(_abi.expected_params(self.spec, self.v, self.dtypes[0]))
        kernels, aot, reasons, hidden = {}, {}, [], set()
        for d in self.dtypes:
            for t in range(1, self.tactics + 1):
                k = self.compile_one(d, t, arch)
                hidden.add(self._check_compiled(k, d, t, n_user))
                kernels[(d, t)] = k
                why = None
                if k.needs_scratch:
                    why = (f"tactic {t} ({str(d).replace('torch.', '')}) needs a Triton scratch buffer "
                           f"(global_scratch_size={k.global_scratch_size}, profile_scratch_size={k.profile_scratch_size}), "
                           "which TensorRT's AOT launch cannot pass")
                elif k.shared > _MAX_STATIC_SMEM:
                    why = (f"tactic {t} needs {k.shared} bytes of dynamic shared memory (> 48 KB); raising a kernel's "
                           "limit is not part of TensorRT's AOT launch as far as verified here")
                else:
                    ptx, why = _ts.strip_hidden_params(k.ptx, k.name, n_user)
                    if ptx is not None:
                        _abi.check_abi(self.op_name, k.name, k.name, ptx, _abi.expected_params(self.spec, self.v, d))
                        aot[(d, t)] = ptx
                        why = None
                if why:
                    reasons.append(why)
        if len(hidden) != 1:
            raise KernelABIError(f"{self.op_name}: Triton's configs disagree on the number of hidden parameters "
                                 f"{sorted(hidden)}. Fix: give every tactic the same Triton options (the hidden "
                                 "parameters depend on the Triton version and backend, not on constexprs)")
        reason = None
        if reasons:
            reason = "AOT unavailable: " + "; ".join(dict.fromkeys(reasons)) + "; the JIT impl runs the kernel instead"
        return TritonProgram(arch=arch, kernels=kernels, aot_ptx=aot, aot_reason=reason, n_hidden=hidden.pop())

    def _check_compiled(self, k: _ts.TritonKernel, dtype: torch.dtype, tactic: int, n_user: int) -> int:
        """The compiled ``.entry`` against the spec: the declared parameters, then 64-bit hidden ones."""
        cfg = self.configs[tactic - 1]
        if k.num_ctas != 1 or k.launch_cooperative_grid or k.launch_pdl:
            raise SpecError(f"{self.op_name}: tactic {tactic}: Triton asks for num_ctas={k.num_ctas}, "
                            f"cooperative={k.launch_cooperative_grid}, pdl={k.launch_pdl}; trt_kernels launches with "
                            "cuLaunchKernel (one CTA per program, no launch attributes). Fix: use the defaults")
        if k.num_warps != cfg.num_warps:
            raise SpecError(f"{self.op_name}: tactic {tactic}: Triton compiled num_warps={k.num_warps}, not "
                            f"{cfg.num_warps}. Fix: pass num_warps through TritonConfig(num_warps=...), not "
                            "compile_options")
        found = _abi.ptx_params(k.ptx, k.name)
        expected = _abi.expected_params(self.spec, self.v, dtype)
        if found is None:
            raise KernelABIError(f"{self.op_name}: no .entry {k.name!r} in Triton's PTX")
        hidden = found[n_user:]
        bad = len(found) < n_user or any(
            size != p.size or not _abi._kind_ok(p.kind, t) for (t, size), p in zip(found[:n_user], expected)
        ) or any(size != 8 for _, size in hidden)
        if bad:
            got = ", ".join(t for t, _ in found)
            want = ", ".join(p.label for p in expected)
            raise KernelABIError(
                f"{self.op_name}: Triton kernel {self.fn.__name__!r} compiled to {len(found)} parameters ({got}); the "
                f"declaration implies ({want}) followed by Triton's hidden scratch pointers. Fix: make the kernel's "
                "non-constexpr parameters (tensor inputs, scalar inputs, extras, outputs) agree with the declaration")
        return len(hidden)

    def symbol(self, dtype: torch.dtype, arch: Optional[str] = None) -> str:
        return self.kernel(dtype, 1, arch).name

    def check_abi(self, ptx: bytes, symbols: Dict[str, str]) -> None:  # done per compiled kernel
        return None

    def param_pack(self, dtype: torch.dtype) -> ParamPack:
        pack = self._packs.get(dtype)
        if pack is None:
            pack = self._packs.setdefault(dtype, HiddenParamPack(self.param_codes(dtype), self.program().n_hidden))
        return pack

    # ----- eager -----
    def loaded_kernel(self, dtype: torch.dtype, device: int, tactic: int = 1, scratch_ok: bool = False) -> LoadedKernel:
        """The CUBIN of ``(dtype, tactic)`` for ``device``'s arch. Its dynamic shared-memory limit is
        raised to the plan's value (the largest over the op's dtypes), which is what launches pass.
        ``scratch_ok``: the caller passes Triton's scratch buffers (``launch_into``); the fast path does
        not, and a kernel that needs them is refused there rather than launched with NULL."""
        major, minor = torch.cuda.get_device_capability(device)
        arch = f"sm_{major}{minor}"
        k = self.kernel(dtype, tactic, arch)
        if k.needs_scratch and not scratch_ok:
            raise LaunchError(
                f"{self.op_name}: the Triton kernel for {arch} ({str(dtype).replace('torch.', '')}, tactic {tactic}) "
                f"needs a scratch buffer (global_scratch_size={k.global_scratch_size}), which this op's eager fast "
                "path does not pass: it was declared without that arch known (a deferred compile, or "
                "arch_override / TRT_KERNELS_ARCH naming another arch). Fix: declare it on the GPU it runs on, "
                "without an arch override")
        key = (dtype, arch, tactic)
        lk = self._loaded.get(key)
        if lk is None:
            need = max(self.kernel(d, tactic, arch).shared for d in self.dtypes)
            lk = self._loaded.setdefault(key, TritonLoadedKernel(k.cubin, k.name, self.op_name, need))
        return lk

    def launch_into(self, args: Sequence[Any], outs: Sequence[torch.Tensor], stream: int, tactic: int = 1) -> None:
        """Launch the kernel of ``tactic`` on ``stream`` into ``outs`` (TensorRT's JIT impl, replay, and eager
        for kernels that need a scratch buffer, which is allocated here on ``stream``)."""
        from .torch_op import _check_tensor_args, relaunch, scalar_error, unwritten_error

        kinds = self.v.arg_kinds
        tensors = [a for a, k in zip(args, kinds) if k == "tensor"]
        dev = tensors[0].get_device()
        kdt = _check_tensor_args(self, tensors)
        tactic = min(max(int(tactic or 1), 1), self.tactics)
        plan = self.plan(tuple(t.dim() for t in tensors), tactic)
        sizes = concrete(plan, [tuple(t.shape) for t in tensors], self.v.tensor_names)
        grid = list(sizes.grid)
        if not all(grid):
            if any(o.numel() for o in outs):
                raise unwritten_error(self.op_name, grid)
            return
        extras = list(sizes.extras)
        vals = [t.data_ptr() for t in tensors] + [a for a, k in zip(args, kinds) if k == "scalar"]
        vals += extras + [o.data_ptr() for o in outs]
        pack = self.param_pack(kdt)
        buf, addr, _keep = pack.buffer()
        try:
            pack.struct.pack_into(buf, 0, *vals)
        except (struct.error, OverflowError) as exc:
            raise scalar_error(self, args, exc) from None
        major, minor = torch.cuda.get_device_capability(dev)
        k = self.kernel(kdt, tactic, f"sm_{major}{minor}")
        scratch: List[torch.Tensor] = []
        ptrs = []
        for size, align in ((k.global_scratch_size, k.global_scratch_align),
                            (k.profile_scratch_size, k.profile_scratch_align)):
            if size <= 0:
                ptrs.append(0)
                continue
            nbytes = grid[0] * grid[1] * grid[2] * k.num_ctas * size
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
                t = torch.empty(nbytes + align, dtype=torch.uint8, device=tensors[0].device)
            scratch.append(t)  # freed after the launch is enqueued: the allocator reuses it in stream order
            ptrs.append((t.data_ptr() + align - 1) // align * align)
        pack.set_hidden(buf, ptrs)
        lk = self.loaded_kernel(kdt, dev, tactic, scratch_ok=True)
        smem = max(sizes.shared_mem, k.shared)
        (err,) = driver().cuLaunchKernel(lk.function(dev), *grid, *plan.block, smem, stream, addr, 0)
        if scratch:
            pack.set_hidden(buf, [])
        if err:
            relaunch(self, lk, err, dev, grid, plan.block, smem, addr, stream)

    def eager_with_scratch(self, *args):
        """The eager impl of an op whose first config needs a scratch buffer (the fast path passes NULL)."""
        tensors = [a for a, k in zip(args, self.v.arg_kinds) if k == "tensor"]
        devs = {t.device for t in tensors}
        if len(devs) != 1:
            raise InputError(f"{self.op_name}: inputs are on different devices ({', '.join(map(str, devs))}). "
                             "Fix: move them to one CUDA device")
        if self.backward is None and torch.is_grad_enabled() and any(t.requires_grad for t in tensors):
            raise InputError(f"{self.op_name} has no backward, and an input requires grad in grad mode: its gradient "
                             "would be silently missing. Fix: declare backward=, or call it under torch.no_grad()")
        from .torch_op import _check_tensor_args, _out_dtypes

        _check_tensor_args(self, tensors)
        args = [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args]
        tensors = [a for a, k in zip(args, self.v.arg_kinds) if k == "tensor"]
        plan = self.plan(tuple(t.dim() for t in tensors))
        shapes = concrete(plan, [tuple(t.shape) for t in tensors], self.v.tensor_names).outputs
        outs = [torch.empty(shape, dtype=dt, device=tensors[0].device)
                for shape, dt in zip(shapes, _out_dtypes(plan, tensors))]
        self.launch_into(args, outs, torch._C._cuda_getCurrentRawStream(tensors[0].get_device()), 1)
        return outs[0] if len(outs) == 1 else tuple(outs)

    # ----- TensorRT -----
    @property
    def aot_unavailable(self) -> Optional[str]:
        """Why the TensorRT plugin cannot use an AOT impl (None: it can, or no arch is known yet)."""
        arch = self._plan_arch()
        return None if arch is None else self.program(arch).aot_reason

    def aot_kernel(self, dtype: torch.dtype, tactic: int, arch: Optional[str] = None) -> Tuple[str, bytes]:
        """``(symbol, PTX)`` for TensorRT: Triton's PTX with the hidden parameters removed."""
        prog = self.program(arch)
        tactic = min(max(int(tactic or 1), 1), self.tactics)
        ptx = prog.aot_ptx.get((dtype, tactic))
        if ptx is None:
            raise PtxVersionError(f"{self.op_name}: {prog.aot_reason}")
        k = prog.kernels[(dtype, tactic)]
        note = _ts.ptx_driver_note(k, driver_version())
        if note:
            raise PtxVersionError(f"{self.op_name}: {note}")
        return k.name, ptx

    def status_fields(self) -> Dict[str, str]:
        cfgs = "; ".join(f"tactic {i + 1}: {dict(c.constexprs)} num_warps={c.num_warps} num_stages={c.num_stages}"
                         for i, c in enumerate(self.configs))
        row = {"source": f"Triton {self.fn.__name__!r} (triton {_ts.triton_version()}); {cfgs}"}
        arch = self._plan_arch()
        if arch is not None and arch in self._programs:
            prog = self._programs[arch]
            isas = {k.ptx_isa for k in prog.kernels.values()}
            row["source"] += f"; PTX ISA {', '.join(f'{a}.{b}' for a, b in sorted(i for i in isas if i))}"
            if prog.aot_reason:
                row["source"] += f"; {prog.aot_reason}"
        if self.eager_fn is not None and getattr(self.eager_fn, "__self__", None) is self:
            row["eager"] = "derived launch with a Triton scratch buffer per call (generic path)"
        return row


# ---------------- declaration ----------------

GridLike = Union[Sequence[Union[Expr, int]], Callable[[Dict[str, Any]], Sequence[Union[Expr, int]]]]


def _jit_function(op: str, kernel):
    params = getattr(kernel, "params", None)
    if params is None or not hasattr(kernel, "fn"):
        kind = type(kernel).__name__
        hint = " (an @triton.autotune/@triton.heuristics wrapper: pass the inner @triton.jit function and give its " \
               "configs as tactics=[ttk.TritonConfig(...)])" if hasattr(kernel, "fn") else ""
        raise SpecError(f"{op}: kernel: expected a @triton.jit function, got {kind}{hint}. Fix: decorate it with @triton.jit")
    return kernel


def _check_parameters(op: str, fn, v, spec: KernelSpec) -> Tuple[List[str], List[str]]:
    """The non-constexpr parameters must follow the calling convention, named as declared."""
    expected: List[Tuple[str, Optional[str]]] = [("tensor input", d.name) for d in v.tensor_decls]
    expected += [("scalar input", d.name) for d in v.scalar_decls]
    expected += [(f"extras[{i}] ({e})", None) for i, e in enumerate(spec.extras)]
    expected += [("output", o.name) for o in spec.outputs]
    runtime = [p for p in fn.params if not p.is_constexpr]
    constexprs = [p.name for p in fn.params if p.is_constexpr]
    order = ", ".join((n or f"<{w}>") for w, n in expected)
    fix = (f"write the kernel's parameters as ({order}{', ' if constexprs else ''}{', '.join(f'{c}: tl.constexpr' for c in constexprs)}): "
           "tensor inputs, scalar inputs, extras, outputs, each in declaration order (a tensor 'x' may be named "
           "'x' or 'x_ptr'; constexprs may go anywhere)")
    if len(runtime) != len(expected):
        raise SpecError(f"{op}: kernel {fn.__name__!r} has {len(runtime)} non-constexpr parameters "
                        f"({', '.join(p.name for p in runtime)}) but the declaration implies {len(expected)}. Fix: {fix}")
    for i, (p, (what, name)) in enumerate(zip(runtime, expected)):
        if name is None:
            continue
        ok = p.name == name or (what != "scalar input" and p.name == f"{name}_ptr")
        if not ok:
            raise SpecError(f"{op}: kernel {fn.__name__!r} parameter {i} is {p.name!r} where the calling convention "
                            f"puts {what} {name!r}. Fix: {fix}")
    return [p.name for p in runtime], constexprs


def _signature(fn, v, spec: KernelSpec, dtype: torch.dtype) -> Dict[str, str]:
    params = _abi.expected_params(spec, v, dtype)
    runtime = [p for p in fn.params if not p.is_constexpr]
    sig: Dict[str, str] = {}
    # dtypes per pointer parameter, read back from the ABI labels' positions
    tdt = [d.dtype or dtype for d in v.tensor_decls]
    odt = _out_dtypes_for(spec, v, dtype)
    types = ["*" + _ts.TRITON_TYPES[d] for d in tdt]
    types += [_ts.SCALAR_TYPES[d.py_type] for d in v.scalar_decls]
    types += ["i32"] * len(spec.extras)
    types += ["*" + _ts.TRITON_TYPES[d] for d in odt]
    assert len(types) == len(params) == len(runtime)
    it = iter(types)
    for p in fn.params:
        sig[p.name] = "constexpr" if p.is_constexpr else next(it)
    return sig


def _out_dtypes_for(spec: KernelSpec, v, dtype: torch.dtype) -> List[torch.dtype]:
    out = []
    for o in spec.outputs:
        if o.dtype is not None:
            out.append(o.dtype)
        elif o.dtype_from is not None:
            out.append(v.tensor_decls[v.tensor_names.index(o.dtype_from)].dtype or dtype)
        else:
            src = getattr(o.shape, "input_idx", 0)
            idx = v.tensor_names.index(src) if isinstance(src, str) else src
            out.append(v.tensor_decls[idx].dtype or dtype)
    return out


def _check_warps(op: str, where: str, w) -> None:
    if isinstance(w, bool) or not isinstance(w, int) or w <= 0 or w & (w - 1) or w * 32 > 1024:
        raise SpecError(f"{op}: {where}: num_warps={w!r}: Triton takes a power of two from 1 to 32. Fix: e.g. num_warps=4")


def declare(
    op_name: str,
    kernel,
    *,
    inputs: Sequence[Union[InputDecl, ScalarInput]],
    outputs: Sequence[OutputDecl],
    grid: GridLike,
    extras: Sequence[Any] = (),
    constexprs: Optional[Mapping[str, Any]] = None,
    num_warps: int = 4,
    num_stages: int = 3,
    tactics: Sequence[TritonConfig] = (),
    dtypes: Optional[Sequence[torch.dtype]] = None,
    arch_override: Optional[str] = None,
    compile_options: Optional[Mapping[str, Any]] = None,
    backward=None,
    setup_context=None,
    supports_dynamic_shapes: bool = True,
    options: Optional[Dict[str, Any]] = None,
) -> TritonKernelOp:
    """Validate a Triton declaration and build its record (registration is :func:`trt_kernels.triton_kernel_op`)."""
    _ts.require_triton("triton_kernel_op")
    fn = _jit_function(op_name, kernel)
    if setup_context is not None and backward is None:
        raise SpecError(f"{op_name}: setup_context: given without backward. Fix: pass backward= too, or drop setup_context")
    _check_warps(op_name, "num_warps", num_warps)
    base = TritonConfig(dict(constexprs or {}), num_warps, num_stages)
    configs = [base]
    for i, t in enumerate(tactics):
        if not isinstance(t, TritonConfig):
            raise SpecError(f"{op_name}: tactics[{i}]: expected ttk.TritonConfig, got {t!r}. "
                            "Fix: tactics=[ttk.TritonConfig({'BLOCK': 512}, num_warps=2)]")
        _check_warps(op_name, f"tactics[{i}].num_warps", t.num_warps)
        configs.append(TritonConfig({**base.constexprs, **dict(t.constexprs)}, t.num_warps, t.num_stages))

    multi = dtypes is not None and len(list(dtypes)) > 1
    kname = f"{fn.__name__}<T>" if multi else fn.__name__

    def spec_for(cfg: TritonConfig, where: str) -> KernelSpec:
        meta = dict(cfg.constexprs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        try:
            g = grid(meta) if callable(grid) else grid
        except KeyError as e:
            raise SpecError(f"{op_name}: grid: {where}: grid(meta) read {e} which is not a constexpr of the config "
                            f"(meta has {sorted(meta)}). Fix: give it in constexprs=") from None
        if isinstance(g, (int, Expr)):
            g = (g,)
        return KernelSpec(kernel_source="", kernel_name=kname, inputs=inputs, outputs=outputs, extras=list(extras),
                          geometry=Custom(grid=tuple(g), block=(cfg.num_warps * 32,)), arch_override=arch_override,
                          dtypes=dtypes)

    specs = tuple(spec_for(c, "tactic 1" if i == 0 else f"tactics[{i - 1}]") for i, c in enumerate(configs))
    v = validate(op_name, specs[0], needs_source=False)
    for s in specs[1:]:
        validate(op_name, s, needs_source=False)
    if not specs[0].outputs:
        raise SpecError(f"{op_name}: outputs: missing. Fix: declare outputs=[ttk.OutputDecl(...)]")
    _, cnames = _check_parameters(op_name, fn, v, specs[0])
    defaults = {p.name: p.default for p in fn.params if p.is_constexpr and p.default is not _EMPTY}
    for i, c in enumerate(configs):
        where = "constexprs" if i == 0 else f"tactics[{i - 1}].constexprs"
        unknown = sorted(set(c.constexprs) - set(cnames))
        if unknown:
            raise SpecError(f"{op_name}: {where}: {unknown} name no tl.constexpr parameter of {fn.__name__!r} "
                            f"(its constexprs: {cnames}). Fix: remove them or declare them in the kernel")
        missing = [n for n in cnames if n not in c.constexprs and n not in defaults]
        if missing:
            raise SpecError(f"{op_name}: {where}: no value for the constexpr parameter(s) {missing} of {fn.__name__!r}. "
                            f"Fix: constexprs={{{', '.join(repr(m) + ': ...' for m in missing)}}}")
    if v.templated and not multi:
        v = dataclasses.replace(v, templated=False)
    signatures = {d: _signature(fn, v, specs[0], d) for d in v.kernel_dtypes}
    for d in v.kernel_dtypes:
        if d not in _ts.TRITON_TYPES:
            raise SpecError(f"{op_name}: dtypes: {d} has no Triton type")
    opts = dict(compile_options or {})
    for bad in ("num_warps", "num_stages", "num_ctas"):
        if bad in opts:
            raise SpecError(f"{op_name}: compile_options: {bad!r} is set per config. Fix: use num_warps=/num_stages= "
                            "or tactics=[ttk.TritonConfig(...)] (num_ctas must stay 1)")
    return TritonKernelOp(
        op_name=op_name, spec=specs[0], v=v, backward=backward, setup_context=setup_context,
        supports_dynamic_shapes=supports_dynamic_shapes, options=dict(options or {}),
        fn=fn, configs=tuple(configs), tactic_specs=specs, signatures=signatures, constexpr_names=tuple(cnames),
        constexpr_defaults=defaults, triton_options=opts,
    )


import inspect as _inspect  # noqa: E402

_EMPTY = _inspect.Parameter.empty
