"""The PyTorch side: schema, fake (meta) impl and the eager CUDA launch.

Ops are defined with a ``torch.library.Library`` fragment (one per op) rather
than ``torch.library.custom_op``: on the H100 the same launch body costs
9.7 us per call as a Library op and 18.6 us under ``custom_op`` (see README,
"Design"), and the overhead goal is 1.5x ``torch.sigmoid``. The fake impl is
registered with ``torch.library.register_fake``, so ``torch.compile`` and
``torch.export`` trace through the op.
"""

from __future__ import annotations

import struct
from typing import Any, Dict, List, Sequence, Tuple

import torch

from . import dtypes as _dt
from .errors import InputError, LaunchError, NoCudaDeviceError
from .expr import ShapeEvaluator, compile_int, evaluate
from .launch import RETRY_CONTEXT_ERRORS, PrimaryContext, ParamPack, driver, error_text
from .plan import GRID_LIMITS, INT32_MAX, LaunchPlan
from .registry import KernelOp

_SCALAR_SCHEMA = {float: "float", int: "int", bool: "bool"}


def build_schema(kop: KernelOp) -> str:
    """``(Tensor x, float alpha) -> Tensor`` from the spec (declaration order of inputs)."""
    args = []
    for d in kop.spec.inputs:
        kind = "Tensor" if kop.v.arg_kinds[len(args)] == "tensor" else _SCALAR_SCHEMA[d.py_type]
        args.append(f"{kind} {d.name}")
    if kop.spec.outputs:
        n = len(kop.spec.outputs)
        ret = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    else:
        inferred = torch.library.infer_schema(kop.meta_fn, mutates_args=())
        return inferred
    return "(" + ", ".join(args) + ") -> " + ret


# ---------------- fake ----------------


def _check_tensor_args(kop: KernelOp, ts: Sequence[Any]) -> torch.dtype:
    """dtype rules shared by fake and eager: the kernel's dtype comes from the first input whose
    dtype is T; fixed-dtype inputs must match exactly. Returns the kernel dtype."""
    op = kop.op_name
    decls = kop.v.tensor_decls
    kdt = None
    for d, t in zip(decls, ts):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{op}: argument {d.name!r} must be a Tensor, got {type(t).__name__}")
        if d.dtype is None and kdt is None:
            kdt = t.dtype
    if kdt is None:
        kdt = kop.dtypes[0]
    if kdt not in kop.dtypes:
        raise InputError(
            f"{op}: input dtype {_dt.short(kdt)} is not one the kernel declares "
            f"({', '.join(_dt.short(d) for d in kop.dtypes)}); the kernel would misread the bytes. "
            f"Fix: convert the input (e.g. x.to(torch.{_dt.short(kop.dtypes[0])}))"
            + ("" if len(kop.dtypes) > 1 else ", or declare the kernel as a template with dtypes=[...]")
        )
    for d, t in zip(decls, ts):
        want = d.dtype or kdt
        if t.dtype != want:
            raise InputError(
                f"{op}: input {d.name!r} has dtype {_dt.short(t.dtype)} but the kernel takes "
                f"{_dt.short(want)} there. Fix: pass a {_dt.short(want)} tensor (e.g. {d.name}.to(torch.{_dt.short(want)}))"
            )
    return kdt


def _out_dtypes(plan: LaunchPlan, ts: Sequence[Any]) -> List[torch.dtype]:
    return [o.dtype if o.dtype is not None else ts[o.dtype_src].dtype for o in plan.outputs]


def make_fake_impl(kop: KernelOp):
    tpos = [i for i, k in enumerate(kop.v.arg_kinds) if k == "tensor"]
    single = len(kop.spec.outputs) == 1

    def fake(*args):
        ts = [args[i] for i in tpos]
        _check_tensor_args(kop, ts)
        plan = kop.plan(tuple(t.dim() for t in ts))
        ev = ShapeEvaluator(ts)
        outs = []
        for o, dt in zip(plan.outputs, _out_dtypes(plan, ts)):
            shape = [evaluate(e, ev) for e in o.shape]
            outs.append(ts[0].new_empty(shape, dtype=dt))
        return outs[0] if single else tuple(outs)

    fake.__name__ = f"{kop.name}_fake"
    return fake


def make_cpu_impl(kop: KernelOp):
    op = kop.op_name

    def cpu(*args):
        tensors = [f"{d.name} on {args[i].device}" for i, d in enumerate(kop.spec.inputs)
                   if isinstance(args[i], torch.Tensor)]
        where = "no CUDA device is visible here (torch.cuda.is_available() is False)" if not torch.cuda.is_available() \
            else "move the inputs to the GPU (x.cuda())"
        err = NoCudaDeviceError if not torch.cuda.is_available() else InputError
        raise err(f"{op} runs on CUDA devices only; got {', '.join(tensors)}. {where[0].upper() + where[1:]}")

    return cpu


# ---------------- eager CUDA ----------------


class _Entry:
    """Everything fixed for one (kernel dtype, input ranks): closures over the plan."""

    __slots__ = ("outs", "extras", "grid", "block", "smem", "pack", "kernel", "funcs", "dtypes")

    def __init__(self, kop: KernelOp, kdt: torch.dtype, plan: LaunchPlan, ts: Sequence[torch.Tensor]):
        self.dtypes = tuple(d.dtype or kdt for d in kop.v.tensor_decls)
        odts = _out_dtypes(plan, ts)
        outs = []
        for o, dt in zip(plan.outputs, odts):
            if o.like is not None and dt == self.dtypes[o.like]:
                t = o.like
                outs.append(lambda ts, _t=t: torch.empty_like(ts[_t]))
            elif o.like is not None:
                t = o.like
                outs.append(lambda ts, _t=t, _d=dt: torch.empty_like(ts[_t], dtype=_d))
            else:
                fns = [compile_int(e) for e in o.shape]
                outs.append(lambda ts, _f=fns, _d=dt: torch.empty([f(ts) for f in _f], dtype=_d, device=ts[0].device))
        self.outs = tuple(outs)
        self.extras = tuple((compile_int(e), i) for i, e in enumerate(plan.extras))
        self.grid = tuple(compile_int(e) for e in plan.grid)
        self.block = plan.block
        self.smem = compile_int(plan.shared_mem)
        self.pack = ParamPack(kop.param_codes(kdt))
        self.kernel = kop.loaded_kernel(kdt, ts[0].get_device())
        self.funcs = self.kernel._functions


def make_cuda_impl(kop: KernelOp):
    """The eager CUDA kernel: checks, allocation, one ``cuLaunchKernel`` on torch's current stream."""
    cu = driver()
    launch = cu.cuLaunchKernel
    raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None)  # absent from CPU builds
    op = kop.op_name
    kinds = kop.v.arg_kinds
    tpos = tuple(i for i, k in enumerate(kinds) if k == "tensor")
    spos = tuple(i for i, k in enumerate(kinds) if k == "scalar")
    single = len(tpos) == 1
    t_first = tpos[0]
    n_out = len(kop.spec.outputs)
    entries: Dict[Tuple, _Entry] = {}

    def new_entry(key, ts) -> _Entry:
        kdt = _check_tensor_args(kop, ts)
        plan = kop.plan(tuple(t.dim() for t in ts))
        e = _Entry(kop, kdt, plan, ts)
        entries[key] = e
        return e

    def impl(*args):
        if single:
            x = args[t_first]
            ts = [x]
            e = entries.get((x.dtype, x.dim()))
            if e is None:
                e = new_entry((x.dtype, x.dim()), ts)
            dev = x.get_device()
            if not x.is_contiguous():
                ts[0] = x.contiguous()
        else:
            ts = [args[i] for i in tpos]
            key = tuple([t.dtype for t in ts] + [t.dim() for t in ts])
            e = entries.get(key)
            if e is None:
                e = new_entry(key, ts)
            dev = ts[0].get_device()
            for i, t in enumerate(ts):
                if t.get_device() != dev:
                    raise InputError(
                        f"{op}: inputs are on different devices ({kop.v.tensor_names[0]} on {ts[0].device}, "
                        f"{kop.v.tensor_names[i]} on {t.device}). Fix: move them to one CUDA device"
                    )
                if not t.is_contiguous():
                    ts[i] = t.contiguous()
        outs = [f(ts) for f in e.outs]
        ints = []
        for f, i in e.extras:
            v = f(ts)
            if v > INT32_MAX or v < -INT32_MAX - 1:
                raise InputError(
                    f"{op}: extras[{i}] ({kop.spec.extras[i]}) = {v} does not fit the kernel's 32-bit int. "
                    "Fix: split the input into chunks of at most 2**31-1 elements"
                )
            ints.append(v)
        g = e.grid
        gx, gy, gz = g[0](ts), g[1](ts), g[2](ts)
        if gx and gy and gz:
            if gx > 2147483647 or gy > 65535 or gz > 65535:
                raise InputError(f"{op}: grid ({gx}, {gy}, {gz}) exceeds CUDA's limits {GRID_LIMITS}. "
                                 "Fix: use smaller inputs or a geometry with fewer blocks along that axis")
            vals = [t.data_ptr() for t in ts]
            if spos:
                vals += [args[i] for i in spos]
            vals += ints
            vals += [o.data_ptr() for o in outs]
            buf, addr, _ = e.pack.buffer()
            try:
                e.pack.struct.pack_into(buf, 0, *vals)
            except (struct.error, OverflowError) as exc:
                raise _scalar_error(kop, args, exc) from None
            func = e.funcs.get(dev)
            if func is None:
                func = e.kernel.function(dev)
            b = e.block
            (err,) = launch(func, gx, gy, gz, b[0], b[1], b[2], e.smem(ts), raw_stream(dev), addr, 0)
            if err:
                _relaunch(kop, e, err, dev, (gx, gy, gz), b, e.smem(ts), addr)
        return outs[0] if n_out == 1 else tuple(outs)

    impl.__name__ = f"{kop.name}_cuda"
    return impl


def _relaunch(kop: KernelOp, e: _Entry, err, dev: int, grid, block, smem: int, addr: int) -> None:
    """A launch failed: if the calling thread had another (or no) context current, make the
    tensor's device current and launch again; otherwise report the driver's error."""
    cu = driver()
    if int(err) in RETRY_CONTEXT_ERRORS:
        ctx_prev = cu.cuCtxGetCurrent()[1]
        PrimaryContext.make_current(dev)
        try:
            (err2,) = cu.cuLaunchKernel(e.kernel.function(dev), *grid, *block, smem,
                                        torch._C._cuda_getCurrentRawStream(dev), addr, 0)
        finally:
            if ctx_prev is not None and int(ctx_prev) != 0:
                cu.cuCtxSetCurrent(ctx_prev)
        if not err2:
            return
        err = err2
    raise LaunchError(
        f"{kop.op_name}: cuLaunchKernel failed on cuda:{dev} with grid {tuple(grid)}, block {tuple(block)}, "
        f"shared memory {smem} bytes: {error_text(err)}"
    )


def _scalar_error(kop: KernelOp, args, exc) -> InputError:
    for i, d in enumerate(kop.spec.inputs):
        if kop.v.arg_kinds[i] != "scalar":
            continue
        val = args[i]
        try:
            struct.pack({float: "f", int: "i", bool: "?"}[d.py_type], val)
        except (struct.error, OverflowError):
            kind = {float: "a 32-bit C float", int: "a 32-bit C int", bool: "a C bool"}[d.py_type]
            return InputError(f"{kop.op_name}: scalar {d.name!r} = {val!r} does not fit {kind}. Fix: pass a value in range")
    return InputError(f"{kop.op_name}: could not pack the kernel arguments: {exc}")


# ---------------- registration ----------------


def register(kop: KernelOp) -> None:
    """Define the torch op and register its fake, CUDA and CPU (error) implementations."""
    lib = torch.library.Library(kop.namespace, "FRAGMENT")
    try:
        lib.define(f"{kop.name}{kop.schema}")
        if kop.meta_fn is not None:
            torch.library.register_fake(kop.op_name, kop.meta_fn, lib=lib)
        else:
            torch.library.register_fake(kop.op_name, make_fake_impl(kop), lib=lib)
        lib.impl(kop.name, kop.eager_fn if kop.eager_fn is not None else make_cuda_impl(kop), "CUDA")
        lib.impl(kop.name, make_cpu_impl(kop), "CPU")
    except Exception:
        lib._destroy()
        raise
    kop.library = lib


def unregister(kop: KernelOp) -> None:
    if kop.library is not None:
        kop.library._destroy()
        kop.library = None
