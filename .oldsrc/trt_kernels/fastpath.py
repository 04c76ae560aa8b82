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
import threading
from typing import Any, Callable, Dict, List, Tuple

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


class Launcher:
    """The generated body of one (dtype, ranks) launch: source lines and the names they use.

    Every global the body reads is spelled ``{prefix}name``, so several launchers' bodies can
    share one namespace (the op's registered function inlines some of them, see
    :func:`build_dispatcher`).
    """

    def __init__(self, body: List[str], ns: Dict[str, Any], pack, prefix: str):
        self.body = body
        self.ns = ns
        self.pack = pack
        self.prefix = prefix


def launcher_parts(kop, kdt: torch.dtype, plan: LaunchPlan, out_dtypes: List[torch.dtype],
                   in_dtypes: List[torch.dtype], kernel, *, launch=None, stream=None, prefix: str = "_") -> Launcher:
    """The launch code for one (dtype, ranks) of ``kop``: statements over ``a0..aN`` (the op's
    arguments) that end in ``return``, and the namespace they need."""
    op = kop.op_name
    kinds = kop.v.arg_kinds
    nargs = len(kinds)
    tpos = [i for i, k in enumerate(kinds) if k == "tensor"]
    spos = [i for i, k in enumerate(kinds) if k == "scalar"]
    names = _Names(tpos)
    pack = kop.param_pack(kdt)
    P = prefix

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

    ns: Dict[str, Any] = {
        f"{P}too_big": too_big, f"{P}bad_grid": bad_grid, f"{P}bad_device": bad_device,
        f"{P}no_backward": no_backward, f"{P}unwritten": unwritten, f"{P}grad_enabled": torch.is_grad_enabled,
        f"{P}new_buffer": new_buffer, f"{P}relaunch": relaunch_, f"{P}scalar_error": scalar_error_,
        f"{P}tls": pack._tls, f"{P}pack": pack.struct.pack_into,
        f"{P}launch": launch or driver().cuLaunchKernel,
        f"{P}stream": stream or getattr(torch._C, "_cuda_getCurrentRawStream", None),
        f"{P}funcs": kernel._functions, f"{P}load": kernel.function, f"{P}empty": torch.empty,
        f"{P}empty_like": torch.empty_like, f"{P}struct_error": (struct.error, OverflowError),
    }
    for i, d in enumerate(out_dtypes):
        ns[f"{P}odt{i}"] = d
    params = ", ".join(f"a{i}" for i in range(nargs))
    body: List[str] = [f"    dev = a{tpos[0]}.get_device()"]
    if kop.backward is None:  # a gradient through this op would be silently missing: refuse
        body.append(f"    if ({' or '.join(f'a{p}.requires_grad' for p in tpos)}) and {P}grad_enabled(): {P}no_backward()")
    for t in range(1, len(tpos)):
        body.append(f"    if a{tpos[t]}.get_device() != dev: {P}bad_device({t}, a{tpos[0]}, a{tpos[t]})")
    # sizes: extras, grid, shared memory, non-trivial output shapes
    extra_src = [py_source(e, names) for e in plan.extras]
    grid_src = [py_source(e, names) for e in plan.grid]
    smem_src = py_source(plan.shared_mem, names)
    out_shape_src = [None if o.like is not None else [py_source(e, names) for e in o.shape] for o in plan.outputs]
    body += names.lines
    for i, src in enumerate(extra_src):
        body.append(f"    x{i} = {src}")
        body.append(f"    if x{i} > {INT32_MAX} or x{i} < {-INT32_MAX - 1}: {P}too_big({i}, x{i})")
    body.append(f"    gx = {grid_src[0]}; gy = {grid_src[1]}; gz = {grid_src[2]}")
    over = [f"{g} > {lim}" for g, src, lim in zip(("gx", "gy", "gz"), grid_src, GRID_LIMITS) if not src.isdigit()]
    over += [f"{src} > {lim}" for src, lim in zip(grid_src, GRID_LIMITS) if src.isdigit() and int(src) > lim]
    if over:
        body.append(f"    if {' or '.join(over)}: {P}bad_grid(gx, gy, gz)")
    for p in tpos:
        body.append(f"    if not a{p}.is_contiguous(): a{p} = a{p}.contiguous()")
    for i, (o, shp) in enumerate(zip(plan.outputs, out_shape_src)):
        if o.like is not None and out_dtypes[i] == in_dtypes[o.like]:
            body.append(f"    o{i} = {P}empty_like(a{tpos[o.like]})")
        elif o.like is not None:
            body.append(f"    o{i} = {P}empty_like(a{tpos[o.like]}, dtype={P}odt{i})")
        else:
            dims = "".join(f"{s}, " for s in shp)
            body.append(f"    o{i} = {P}empty(({dims}), dtype={P}odt{i}, device=a{tpos[0]}.device)")
    vals = [f"a{p}.data_ptr()" for p in tpos] + [f"a{p}" for p in spos]
    vals += [f"x{i}" for i in range(len(extra_src))] + [f"o{i}.data_ptr()" for i in range(len(plan.outputs))]
    bx, by, bz = plan.block
    # a grid axis that is a constant (1 for most geometries) needs no emptiness test
    nonempty = [g for g, src in zip(("gx", "gy", "gz"), grid_src) if not (src.isdigit() and int(src) > 0)]
    body += [
        f"    if {' and '.join(nonempty) if nonempty else 'True'}:",
        "        try:",
        f"            b = {P}tls.b",
        "        except AttributeError:",
        f"            b = {P}new_buffer()",
        "        try:",
        f"            {P}pack(b[0], 0, {', '.join(vals)})",
        f"        except {P}struct_error as exc:",
        f"            {P}scalar_error(({params},), exc)",
        f"        f = {P}funcs.get(dev)",
        "        if f is None:",
        f"            f = {P}load(dev)",
        f"        err, = {P}launch(f, gx, gy, gz, {bx}, {by}, {bz}, {smem_src}, {P}stream(dev), b[1], 0)",
        "        if err:",
        f"            {P}relaunch(err, dev, gx, gy, gz, {smem_src}, b[1])",
    ]
    outs = [f"o{i}" for i in range(len(plan.outputs))]
    body += ["    elif " + " or ".join(f"{o}.numel()" for o in outs) + ":", f"        {P}unwritten(gx, gy, gz)"]
    body.append(f"    return {outs[0]}" if len(outs) == 1 else f"    return ({', '.join(outs)})")
    return Launcher(body, ns, pack, P)


def build_launcher(kop, kdt: torch.dtype, plan: LaunchPlan, out_dtypes: List[torch.dtype],
                   in_dtypes: List[torch.dtype], kernel, *, launch=None, stream=None) -> Callable[..., Any]:
    """Compile the specialized launch function for one (dtype, ranks) of ``kop``.

    ``kernel`` is the :class:`~trt_kernels.launch.LoadedKernel`; ``launch`` and ``stream``
    default to ``cuLaunchKernel`` and torch's current raw stream (tests pass recorders).
    The function has ``.parts`` (its :class:`Launcher`), ``.source`` and ``.pack``.
    """
    parts = launcher_parts(kop, kdt, plan, out_dtypes, in_dtypes, kernel, launch=launch, stream=stream)
    params = ", ".join(f"a{i}" for i in range(len(kop.v.arg_kinds)))
    src = f"def launch({params}):\n" + "\n".join(parts.body) + "\n"
    ns = dict(parts.ns)
    code = compile(src, f"<trt_kernels launcher {kop.op_name} {kdt} ranks={plan.ranks}>", "exec")
    exec(code, ns)  # noqa: S102 - source built above from our own templates and ints only
    fn = ns["launch"]
    fn.source = src
    fn.pack = parts.pack
    fn.parts = parts
    fn.rebuild = lambda prefix: launcher_parts(kop, kdt, plan, out_dtypes, in_dtypes, kernel, launch=launch,
                                               stream=stream, prefix=prefix)
    return fn


MAX_INLINED = 4  # (dtype, ranks) launchers written into the registered function itself


def build_dispatcher(kop, entries: Dict, new_entry: Callable, *, inline: bool = True) -> Callable[..., Any]:
    """The function registered as the op's CUDA kernel.

    It starts as a lookup: key = the tensor inputs' dtypes and ranks, ``entries[key]`` is the
    launcher (built by ``new_entry`` on first use). Once a launcher is built, the function's
    code is regenerated with that launcher's body *inlined* behind a guard on the key (up to
    :data:`MAX_INLINED` keys), so the common call runs one Python frame: the guard, the checks,
    the allocation and the launch, with no key tuple, dictionary lookup or second call. The
    function object registered with torch stays the same; only its ``__code__`` changes, and
    any key without an inlined body still takes the lookup. Launchers from :func:`build_launcher`
    carry ``rebuild(prefix)``, which writes their body again under the prefix used here.
    """
    kinds = kop.v.arg_kinds
    tpos = [i for i, k in enumerate(kinds) if k == "tensor"]
    params = ", ".join(f"a{i}" for i in range(len(kinds)))
    if len(tpos) == 1:
        key = f"(a{tpos[0]}.dtype, a{tpos[0]}.dim())"
    else:
        key = "(" + ", ".join([f"a{p}.dtype" for p in tpos] + [f"a{p}.dim()" for p in tpos]) + ")"
    lookup = [
        f"    key = {key}",
        "    fn = _get(key)",
        "    if fn is None:",
        f"        fn = _new(key, ({params},))",
        "        _specialize(key, fn)",
        f"    return fn({params})",
    ]
    ns: Dict[str, Any] = {"_get": entries.get}
    inlined: List[Tuple] = []
    lock = threading.Lock()
    label = f"<trt_kernels dispatcher {kop.op_name}>"

    def new(key, args):
        return new_entry(key, args)

    def source() -> str:
        lines = [f"def dispatch({params}):"]
        for i, (k, parts) in enumerate(inlined):
            dts, dims = k[: len(tpos)], k[len(tpos):]
            guard = [f"a{p}.dtype is _key{i}_{j}" for j, p in enumerate(tpos)]
            guard += [f"a{p}.dim() == {int(d)}" for p, d in zip(tpos, dims)]
            for j, dt in enumerate(dts):
                ns[f"_key{i}_{j}"] = dt
            lines.append(f"    if {' and '.join(guard)}:")
            lines += ["    " + ln for ln in parts.body]
        return "\n".join(lines + lookup) + "\n"

    def specialize(key, fn):
        rebuild = getattr(fn, "rebuild", None)
        if not inline or rebuild is None:
            return
        with lock:
            if len(inlined) >= MAX_INLINED or any(k == key for k, _ in inlined):
                return
            parts = rebuild(f"_k{len(inlined)}_")
            ns.update(parts.ns)
            inlined.append((tuple(key), parts))
            src = source()
            exec(compile(src, label, "exec"), ns)  # noqa: S102 - our templates and ints only
            dispatch.__code__ = ns.pop("dispatch").__code__  # same function object, torch keeps it
            dispatch.source = src

    ns["_new"] = new
    ns["_specialize"] = specialize
    src = source()
    exec(compile(src, label, "exec"), ns)  # noqa: S102 - our template
    dispatch = ns.pop("dispatch")
    dispatch.source = src
    dispatch.inlined = inlined
    return dispatch
