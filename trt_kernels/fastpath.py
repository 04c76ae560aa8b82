"""The eager hot path: one specialized Python function per (kernel dtype, input ranks).

Why generated code: the per-call budget is a few microseconds (goal: at most 1.5x
``torch.sigmoid``), and a generic interpreter of the plan (loops over inputs, a
closure per expression node) measured 1.88x ``torch.sigmoid`` under inference mode
where this generated code measured 1.55x (README, "Design"). So, once per (dtype, ranks), the plan's resolved size
expressions are written out as Python source and compiled. The source is built
only from this package's own templates, argument positions and integers; no
user-provided string reaches it. The function it defines does, in order:

1. device agreement of the tensor inputs; for an op without a backward, refusal when an
   input requires grad in grad mode (the gradient would be silently missing);
2. every size the launch needs (each ``numel()``/``shape`` read once), with the
   int32 range of each extra and CUDA's grid limits checked, so an oversized
   input raises before anything is copied or allocated;
3. ``contiguous()`` copies where needed, output allocation;
4. pack the parameters into this thread's buffer and ``cuLaunchKernel`` on
   torch's current stream of the inputs' device.
"""

from __future__ import annotations

import struct
from typing import Any, Callable, Dict, List

import torch

from .errors import InputError, LaunchError
from .expr import BinOp, Const, Dim, Expr, NumelOf
from .launch import RETRY_CONTEXT_ERRORS, PrimaryContext, driver, error_text
from .plan import GRID_LIMITS, INT32_MAX, LaunchPlan

# ---------------- failure paths shared with torch_op's JIT-plugin launch ----------------


def relaunch(kop, kernel, err, dev: int, grid, block, smem: int, addr: int, stream=None) -> None:
    """A launch failed: if the calling thread had another (or no) context current, make the
    tensor's device current and launch again; otherwise report the driver's error."""
    cu = driver()
    if int(err) in RETRY_CONTEXT_ERRORS:
        ctx_prev = cu.cuCtxGetCurrent()[1]
        PrimaryContext.make_current(dev)
        try:
            if stream is None:
                stream = torch._C._cuda_getCurrentRawStream(dev)
            (err2,) = cu.cuLaunchKernel(kernel.function(dev), *grid, *block, smem, stream, addr, 0)
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


def scalar_error(kop, args, exc) -> InputError:
    """The clear error for a scalar argument that does not fit its C type."""
    for i, d in enumerate(kop.spec.inputs):
        if kop.v.arg_kinds[i] != "scalar":
            continue
        val = args[i]
        try:
            struct.pack({float: "=f", int: "=i", bool: "=?"}[d.py_type], val)
        except (struct.error, OverflowError):
            kind = {float: "a 32-bit C float", int: "a 32-bit C int", bool: "a C bool"}[d.py_type]
            return InputError(f"{kop.op_name}: scalar {d.name!r} = {val!r} does not fit {kind}. Fix: pass a value in range")
    return InputError(f"{kop.op_name}: could not pack the kernel arguments: {exc}")


# ---------------- code generation ----------------

_PY_OPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//"}


class _Names:
    """Hoisted reads of sizes: ``n{t} = a.numel()``, ``s{t} = a.shape``."""

    def __init__(self, arg_of_tensor: List[int]):
        self.arg_of_tensor = arg_of_tensor
        self.lines: List[str] = []
        self.have: set = set()

    def numel(self, t: int) -> str:
        name = f"n{t}"
        if name not in self.have:
            self.have.add(name)
            self.lines.append(f"    {name} = a{self.arg_of_tensor[t]}.numel()")
        return name

    def shape(self, t: int) -> str:
        name = f"s{t}"
        if name not in self.have:
            self.have.add(name)
            self.lines.append(f"    {name} = a{self.arg_of_tensor[t]}.shape")
        return name


def py_source(e: Expr, names: _Names) -> str:
    """Python source of a resolved expression over hoisted size reads."""
    if isinstance(e, Const):
        return str(int(e.value))
    if isinstance(e, NumelOf):
        return names.numel(e.tensor)
    if isinstance(e, Dim):
        return f"{names.shape(e.tensor)}[{int(e.axis)}]"
    if isinstance(e, BinOp):
        lhs, rhs = py_source(e.lhs, names), py_source(e.rhs, names)
        if e.op in _PY_OPS:
            return f"({lhs} {_PY_OPS[e.op]} {rhs})"
        if e.op == "cdiv":
            if isinstance(e.rhs, Const):
                return f"(({lhs} + {int(e.rhs.value) - 1}) // {rhs})"
            return f"(-(-{lhs} // {rhs}))"
        return f"{e.op}({lhs}, {rhs})"  # max / min builtins
    raise TypeError(f"unresolved expression node {e!r}")


def build_launcher(kop, kdt: torch.dtype, plan: LaunchPlan, out_dtypes: List[torch.dtype],
                   in_dtypes: List[torch.dtype], kernel, *, launch=None, stream=None) -> Callable[..., Any]:
    """Compile the specialized launch function for one (dtype, ranks) of ``kop``.

    ``kernel`` is the :class:`~trt_kernels.launch.LoadedKernel`; ``launch`` and ``stream``
    default to ``cuLaunchKernel`` and torch's current raw stream (tests pass recorders).
    """
    op = kop.op_name
    kinds = kop.v.arg_kinds
    nargs = len(kinds)
    tpos = [i for i, k in enumerate(kinds) if k == "tensor"]
    spos = [i for i, k in enumerate(kinds) if k == "scalar"]
    names = _Names(tpos)
    pack = kop.param_pack(kdt)

    def too_big(i: int, v: int):
        raise InputError(f"{op}: extras[{i}] ({kop.spec.extras[i]}) = {v} does not fit the kernel's 32-bit int. "
                         "Fix: split the input into chunks of at most 2**31-1 elements")

    def bad_grid(gx, gy, gz):
        raise InputError(f"{op}: grid ({gx}, {gy}, {gz}) exceeds CUDA's limits {GRID_LIMITS}. "
                         "Fix: use smaller inputs or a geometry with fewer blocks along that axis")

    def bad_device(i: int, t0, t):
        raise InputError(f"{op}: inputs are on different devices ({kop.v.tensor_names[0]} on {t0.device}, "
                         f"{kop.v.tensor_names[i]} on {t.device}). Fix: move them to one CUDA device")

    def no_backward():
        raise InputError(
            f"{op} has no backward, and an input requires grad in grad mode: its gradient would be silently "
            "missing. Fix: declare backward= in cuda_kernel_op, or call it under torch.no_grad() / "
            "torch.inference_mode(), or pass x.detach()")

    def new_buffer():
        return pack.buffer()

    def relaunch_(err, dev, gx, gy, gz, smem, addr):
        relaunch(kop, kernel, err, dev, (gx, gy, gz), plan.block, smem, addr)

    def scalar_error_(args, exc):
        raise scalar_error(kop, args, exc) from None

    def unwritten(gx, gy, gz):
        raise InputError(f"{op}: the grid ({gx}, {gy}, {gz}) is empty but an output is not: the kernel would "
                         "leave it unwritten. Fix: make the geometry cover every non-empty output")

    ns: Dict[str, Any] = dict(
        _too_big=too_big, _bad_grid=bad_grid, _bad_device=bad_device, _no_backward=no_backward,
        _unwritten=unwritten, _grad_enabled=torch.is_grad_enabled, _new_buffer=new_buffer, _relaunch=relaunch_,
        _scalar_error=scalar_error_, _tls=pack._tls, _pack=pack.struct.pack_into,
        _launch=launch or driver().cuLaunchKernel,
        _stream=stream or getattr(torch._C, "_cuda_getCurrentRawStream", None),
        _funcs=kernel._functions, _load=kernel.function, _empty=torch.empty, _empty_like=torch.empty_like,
        _struct_error=(struct.error, OverflowError),
    )
    for i, d in enumerate(out_dtypes):
        ns[f"_odt{i}"] = d
    params = ", ".join(f"a{i}" for i in range(nargs))
    body: List[str] = [f"    dev = a{tpos[0]}.get_device()"]
    if kop.backward is None:  # a gradient through this op would be silently missing: refuse
        body.append(f"    if ({' or '.join(f'a{p}.requires_grad' for p in tpos)}) and _grad_enabled(): _no_backward()")
    for t in range(1, len(tpos)):
        body.append(f"    if a{tpos[t]}.get_device() != dev: _bad_device({t}, a{tpos[0]}, a{tpos[t]})")
    # sizes: extras, grid, shared memory, non-trivial output shapes
    extra_src = [py_source(e, names) for e in plan.extras]
    grid_src = [py_source(e, names) for e in plan.grid]
    smem_src = py_source(plan.shared_mem, names)
    out_shape_src = [None if o.like is not None else [py_source(e, names) for e in o.shape] for o in plan.outputs]
    body += names.lines
    for i, src in enumerate(extra_src):
        body.append(f"    x{i} = {src}")
        body.append(f"    if x{i} > {INT32_MAX} or x{i} < {-INT32_MAX - 1}: _too_big({i}, x{i})")
    body.append(f"    gx = {grid_src[0]}; gy = {grid_src[1]}; gz = {grid_src[2]}")
    over = [f"{g} > {lim}" for g, src, lim in zip(("gx", "gy", "gz"), grid_src, GRID_LIMITS) if not src.isdigit()]
    over += [f"{src} > {lim}" for src, lim in zip(grid_src, GRID_LIMITS) if src.isdigit() and int(src) > lim]
    if over:
        body.append(f"    if {' or '.join(over)}: _bad_grid(gx, gy, gz)")
    for p in tpos:
        body.append(f"    if not a{p}.is_contiguous(): a{p} = a{p}.contiguous()")
    for i, (o, shp) in enumerate(zip(plan.outputs, out_shape_src)):
        if o.like is not None and out_dtypes[i] == in_dtypes[o.like]:
            body.append(f"    o{i} = _empty_like(a{tpos[o.like]})")
        elif o.like is not None:
            body.append(f"    o{i} = _empty_like(a{tpos[o.like]}, dtype=_odt{i})")
        else:
            dims = "".join(f"{s}, " for s in shp)
            body.append(f"    o{i} = _empty(({dims}), dtype=_odt{i}, device=a{tpos[0]}.device)")
    vals = [f"a{p}.data_ptr()" for p in tpos] + [f"a{p}" for p in spos]
    vals += [f"x{i}" for i in range(len(extra_src))] + [f"o{i}.data_ptr()" for i in range(len(plan.outputs))]
    bx, by, bz = plan.block
    body += [
        "    if gx and gy and gz:",
        "        try:",
        "            b = _tls.b",
        "        except AttributeError:",
        "            b = _new_buffer()",
        "        try:",
        f"            _pack(b[0], 0, {', '.join(vals)})",
        "        except _struct_error as exc:",
        f"            _scalar_error(({params},), exc)",
        "        f = _funcs.get(dev)",
        "        if f is None:",
        "            f = _load(dev)",
        f"        smem = {smem_src}",
        f"        err, = _launch(f, gx, gy, gz, {bx}, {by}, {bz}, smem, _stream(dev), b[1], 0)",
        "        if err:",
        "            _relaunch(err, dev, gx, gy, gz, smem, b[1])",
    ]
    outs = [f"o{i}" for i in range(len(plan.outputs))]
    body += ["    elif " + " or ".join(f"{o}.numel()" for o in outs) + ":", "        _unwritten(gx, gy, gz)"]
    body.append(f"    return {outs[0]}" if len(outs) == 1 else f"    return ({', '.join(outs)})")
    src = f"def launch({params}):\n" + "\n".join(body) + "\n"
    code = compile(src, f"<trt_kernels launcher {op} {kdt} ranks={plan.ranks}>", "exec")
    exec(code, ns)  # noqa: S102 - source built above from our own templates and ints only
    fn = ns["launch"]
    fn.source = src
    fn.pack = pack
    return fn


def build_dispatcher(kop, entries: Dict, new_entry: Callable) -> Callable[..., Any]:
    """The function registered as the op's CUDA kernel: picks the launcher for the inputs'
    dtypes and ranks (building it on first use) and calls it. Written with the op's exact
    arity, so no argument tuple is packed and unpacked on the way."""
    kinds = kop.v.arg_kinds
    tpos = [i for i, k in enumerate(kinds) if k == "tensor"]
    params = ", ".join(f"a{i}" for i in range(len(kinds)))
    if len(tpos) == 1:
        key = f"(a{tpos[0]}.dtype, a{tpos[0]}.dim())"
    else:
        key = "(" + ", ".join([f"a{p}.dtype" for p in tpos] + [f"a{p}.dim()" for p in tpos]) + ")"
    src = (
        f"def dispatch({params}):\n"
        f"    key = {key}\n"
        f"    fn = _get(key)\n"
        f"    if fn is None:\n"
        f"        fn = _new(key, ({params},))\n"
        f"    return fn({params})\n"
    )
    ns: Dict[str, Any] = {"_get": entries.get, "_new": new_entry}
    exec(compile(src, f"<trt_kernels dispatcher {kop.op_name}>", "exec"), ns)  # noqa: S102 - our template
    fn = ns["dispatch"]
    fn.source = src
    return fn
