"""The eager hot path: one specialized Python function per (kernel dtype, input ranks).

Why generated code: the per-call budget is a few microseconds (goal: at most 1.5x
``torch.sigmoid``), and a generic interpreter of the plan (loops over inputs, a
closure per expression node) measured 1.88x ``torch.sigmoid`` under inference mode
where this generated code measured 1.55x (docs/design.md). So, once per (dtype, ranks), the plan's resolved size
expressions are written out as Python source and compiled. The source is built
only from this package's own templates, argument positions and integers; no
user-provided string reaches it. The function it defines does, in order:

1. device agreement of the tensor inputs; for an op without a backward, refusal when an
   input requires grad in grad mode (the gradient would be silently missing);
2. every size the launch needs (each ``numel()``/``shape`` read once), with the spec's
   size checks between inputs (``SameShape`` / ``SameDim``) first, the int32 range of each
   extra and CUDA's grid limits checked, so mismatched or oversized inputs raise before
   anything is copied or allocated;
3. ``contiguous()`` copies where needed, output allocation;
4. launch on torch's current stream of the inputs' device: with the compiled launcher
   (:mod:`trt_kernels.eager.compiled_launcher`), one call that converts the parameters and calls
   ``cuLaunchKernel``; with cuda.bindings, pack the parameters into this thread's buffer and
   call its ``cuLaunchKernel``.
"""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from trt_kernels.dtypes import INT_NAMES, INT_RANGES, SIZE_TYPES
from trt_kernels.eager.driver import RETRY_CONTEXT_ERRORS, PrimaryContext, driver, error_text
from trt_kernels.errors import InputError, LaunchError
from trt_kernels.expr import BinOp, Const, Dim, Expr, NumelOf, ScalarOf
from trt_kernels.limits import GRID_LIMITS, INT64_MAX
from trt_kernels.signature import scalar_c, scalar_len, scalar_misfit, scalar_value

if TYPE_CHECKING:  # trt_kernels.plan is imported at the first launch, not at declaration
    from trt_kernels.recipe import LaunchRecipe

# ---------------- failure paths shared with cuda_kernel.launch_into (the JIT plugin) ----------------


def relaunch(kop, kernel, err, dev: int, grid, block, smem: int, addr: int, stream=None, again=None) -> None:
    """A launch failed: if the calling thread had another (or no) context current, make the
    tensor's device current and launch again (``again(stream)``, the compiled launcher's call, where
    given; else cuda.bindings' with the parameter array at ``addr``); otherwise report the driver's error."""
    cu = driver()
    if int(err) in RETRY_CONTEXT_ERRORS:
        ctx_prev = cu.cuCtxGetCurrent()[1]
        PrimaryContext.make_current(dev)
        try:
            if stream is None:
                stream = torch._C._cuda_getCurrentRawStream(dev)
            if again is not None:
                err2 = again(stream)
            else:
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


def unwritten_error(op_name: str, grid) -> InputError:
    """The error for a launch whose grid is empty while an output is not (it would stay unwritten)."""
    return InputError(f"{op_name}: the grid {tuple(grid)} is empty but an output is not: the kernel would leave it "
                      "unwritten. Fix: make the geometry cover every non-empty output")


def scalar_error(kop, args, exc) -> InputError:
    """The clear error for a scalar argument that does not fit its C type (or a tuple input of the
    wrong length)."""
    for i, d in enumerate(kop.sig.inputs):
        if kop.sig.arg_kinds[i] != "scalar":
            continue
        val = args[i]
        n = scalar_len(d)
        if n is not None:
            try:
                scalar_value(kop.op_name, d, val)  # the length and the element types
            except InputError as e:
                return e
        misfit = scalar_misfit(kop.op_name, d, val)
        if misfit is not None:
            return misfit
    return InputError(f"{kop.op_name}: could not pack the kernel arguments: {exc}")


def scratch_buffers(scratch, blocks: int, device) -> List[Tuple[Any, int]]:
    """``[(tensor, aligned address), ...]``: a buffer of ``size * blocks`` bytes for each ``(size,
    alignment)`` of ``scratch`` (a kernel's scratch-pointer parameters), ``(None, 0)`` (NULL) where the
    size is 0. Allocated on the current stream: freed after the launch is enqueued, the allocator
    reuses the memory in stream order."""
    out: List[Tuple[Any, int]] = []
    for size, align in scratch:
        if size <= 0:
            out.append((None, 0))
            continue
        t = torch.empty(blocks * size + align, dtype=torch.uint8, device=device)
        out.append((t, (t.data_ptr() + align - 1) // align * align))
    return out


# ---------------- specialization (one code per key, trt_kernels.recipe) ----------------


class Specialized:
    """The code a launch with one specialization key runs, loaded: ``kernel`` (its LoadedKernel) and
    ``handles`` (that kernel's {device: CUfunction}), ``codes`` for the compiled launcher (``x`` where the code
    took a parameter as a constant), ``kept`` (the positions of the values it is passed), ``pack`` (its
    layout for cuda.bindings) and ``smem`` (the dynamic shared memory the code itself needs)."""

    __slots__ = ("key", "kernel", "handles", "codes", "kept", "pack", "smem")

    def __init__(self, kop, recipe: LaunchRecipe, key: int, device: int):
        arch = kop.device_arch(device)
        image = kop.specialized_image(recipe.kdt, recipe.plan.tactic, arch, key)
        self.key = key
        self.kernel = kop.loaded_kernel(recipe.kdt, device, recipe.plan.tactic, key)
        self.handles = self.kernel.handles
        folded = set(image.folded)
        self.kept = tuple(i for i in range(len(recipe.params)) if i not in folded)
        self.codes = ("".join("x" if i in folded else p.code for i, p in enumerate(recipe.params)).encode()
                      + b"Q" * len(recipe.scratch))
        self.pack = kop.param_pack(recipe, image.folded)
        self.smem = image.shared_mem  # what the code itself needs: launches pass at least this much


def key_source(spec, value_names: Sequence[str]) -> str:
    """Python source of :func:`trt_kernels.recipe.spec_key` over the locals ``value_names`` (each parameter's
    value, in the kernel's order): the same bits, written out."""
    from trt_kernels.recipe import ALIGNED, FACT_BITS, ONE

    terms, bit = [], 0
    for pos, flags in spec:
        v = value_names[pos]
        if flags & ALIGNED:
            terms.append(f"((({v}) & {FACT_BITS - 1}) == 0)" + (f" << {bit}" if bit else ""))
            bit += 1
        if flags & ONE:
            terms.append(f"(({v}) == 1)" + (f" << {bit}" if bit else ""))
            bit += 1
    return " | ".join(f"({t})" for t in terms) if terms else "0"


# ---------------- code generation ----------------

_PY_OPS = {"add": "+", "sub": "-", "mul": "*", "floordiv": "//"}


class _Names:
    """Hoisted reads of sizes: ``n{t} = a.numel()``, ``s{t} = a.shape``, ``c{s}_{i} = a[i]`` (an int
    scalar input, or an element of an int tuple input, read by a size expression)."""

    def __init__(self, arg_of_tensor: List[int], arg_of_scalar: Sequence[int] = (), scalar_codes: Sequence[str] = ()):
        self.arg_of_tensor = arg_of_tensor
        self.arg_of_scalar = arg_of_scalar
        self.scalar_codes = scalar_codes  # each scalar input's struct code (default: a C int's)
        self.lines: List[str] = []
        self.have: set = set()
        # the hoisted scalar names with their struct codes, whose C int range the launcher checks
        self.scalars: List[Tuple[str, str]] = []

    def scalar(self, s: int, index: Optional[int]) -> str:
        name = f"c{s}" if index is None else f"c{s}_{int(index)}"
        if name not in self.have:
            self.scalars.append((name, self.scalar_codes[s] if s < len(self.scalar_codes) else "i"))
        arg = f"a{self.arg_of_scalar[s]}"
        return self._bound(name, arg if index is None else f"{arg}[{int(index)}]")

    def _bound(self, name: str, code: str) -> str:
        """``name``, bound to ``code`` by a line of the generated function the first time it is asked for."""
        if name not in self.have:
            self.have.add(name)
            self.lines.append(f"    {name} = {code}")
        return name

    def numel(self, t: int) -> str:
        return self._bound(f"n{t}", f"a{self.arg_of_tensor[t]}.numel()")

    def shape(self, t: int) -> str:
        return self._bound(f"s{t}", f"a{self.arg_of_tensor[t]}.shape")


def py_source(e: Expr, names: _Names) -> str:
    """Python source of a resolved expression over hoisted size reads."""
    if isinstance(e, Const):
        return str(int(e.value))
    if isinstance(e, NumelOf):
        return names.numel(e.tensor)
    if isinstance(e, Dim):
        return f"{names.shape(e.tensor)}[{int(e.axis)}]"
    if isinstance(e, ScalarOf):
        return names.scalar(e.scalar, e.index)
    if isinstance(e, BinOp):
        lhs, rhs = py_source(e.lhs, names), py_source(e.rhs, names)
        if e.op in _PY_OPS:
            return f"({lhs} {_PY_OPS[e.op]} {rhs})"
        if e.op == "cdiv":  # by a size (by a constant, LaunchRecipe.eager has it as an add and a floor division)
            return f"(-(-{lhs} // {rhs}))"
        return f"{e.op}({lhs}, {rhs})"  # max / min builtins
    raise TypeError(f"unresolved expression node {e!r}")


def _may_be_negative(e: Expr) -> bool:
    """Whether a size expression can be negative (it subtracts, or holds a negative constant)."""
    if isinstance(e, Const):
        return e.value < 0
    if isinstance(e, ScalarOf):  # a scalar input's value may be anything
        return True
    if isinstance(e, BinOp):
        return e.op == "sub" or _may_be_negative(e.lhs) or _may_be_negative(e.rhs)
    return False


def _may_divide_by_zero(e: Expr) -> bool:
    """Whether a size expression divides by something that is not a non-zero constant."""
    if isinstance(e, BinOp):
        if e.op in ("floordiv", "cdiv") and not (isinstance(e.rhs, Const) and e.rhs.value != 0):
            return True
        return _may_divide_by_zero(e.lhs) or _may_divide_by_zero(e.rhs)
    return False


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


def launcher_parts(kop, recipe: LaunchRecipe, kernel, *, launch=None, stream=None, prefix: str = "_",
                   claunch=None, specs: Optional[Dict[int, Specialized]] = None,
                   on_spec: Optional[Callable[[Specialized], None]] = None) -> Launcher:
    """The launch code of ``recipe`` (one (dtype, ranks) of ``kop``): statements over ``a0..aN`` (the op's
    arguments) that end in ``return``, and the namespace they need. The recipe's scratch pointers (those
    the compiler appended after the declared parameters) are NULL where 0 bytes, a buffer per launch
    otherwise. ``claunch``: the compiled launcher's ``launch(func, gx, gy, gz, bx, by, bz, smem, stream,
    codes, *values) -> CUresult`` to call; None: cuda.bindings' ``cuLaunchKernel`` (or ``launch``) with a
    packed buffer. A recipe with a ``spec`` computes each call's specialization key from the parameters'
    values and launches the code for it (``specs``: key -> :class:`Specialized`, shared by the launchers of the
    recipe; ``on_spec(s)`` is told of each new one: the native kernel takes that key's calls from then on)."""
    op = kop.op_name
    plan, out_dtypes, in_dtypes, scratch = recipe.eager, recipe.out_dtypes, recipe.in_dtypes, recipe.scratch
    kinds = kop.sig.arg_kinds
    nargs = len(kinds)
    tpos = list(kop.sig.tensor_pos)
    spos = [i for i, k in enumerate(kinds) if k == "scalar"]
    names = _Names(tpos, spos, [scalar_c(d).code for d in kop.sig.scalar_decls])
    tuples = [(p, scalar_len(d)) for p, d in zip(spos, kop.sig.scalar_decls) if scalar_len(d) is not None]
    pack = kop.param_pack(recipe)
    P = prefix
    has_scratch = any(n > 0 for n, _ in scratch)

    def too_big(i: int, v: int):
        code = SIZE_TYPES[kop.sig.extra_ctype(i)].code
        lo, hi = INT_RANGES[code]
        raise InputError(f"{op}: extras[{i}] ({kop.sig.extra_labels[i]}) = {v} does not fit the kernel's "
                         f"{INT_NAMES[code]} ([{lo}, {hi}]). Fix: split the input into chunks of at most {hi} "
                         "elements, or declare the parameter 64-bit (ttk.SizeArg(name, value, ctype='long long')) if "
                         "the kernel takes one")

    def not_contiguous(t: int):
        raise InputError(f"{op}: input {kop.sig.tensor_names[t]!r} is written in place (mutated=True) but is not "
                         "contiguous, so the kernel cannot write it where the caller sees it. Fix: pass a contiguous "
                         "tensor (x = x.contiguous(), then use x)")

    def bad_grid(gx, gy, gz):
        raise InputError(f"{op}: grid ({gx}, {gy}, {gz}) exceeds CUDA's limits {GRID_LIMITS}. "
                         "Fix: use smaller inputs or a geometry with fewer blocks along that axis")

    def bad_device(i: int, t0, t):
        raise InputError(f"{op}: inputs are on different devices ({kop.sig.tensor_names[0]} on {t0.device}, "
                         f"{kop.sig.tensor_names[i]} on {t.device}). Fix: move them to one CUDA device")

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

    def bad_scalars(args):
        raise scalar_error(kop, args, None)

    def size_error(args):
        shapes = [tuple(args[p].shape) for p in tpos]
        from trt_kernels.plan import concrete

        concrete(recipe.plan, shapes, kop.sig.tensor_names, [args[p] for p in spos],
                 [d.name for d in kop.sig.scalar_decls])  # raises the InputError that names the expression
        raise InputError(f"{op}: the launch sizes at input sizes {shapes} are out of range")

    def unwritten(gx, gy, gz):
        raise unwritten_error(op, (gx, gy, gz))

    def scratch_(buf, blocks: int, device):
        held = scratch_buffers(scratch, blocks, device)
        pack.set_hidden(buf, [p for _, p in held])
        return held

    codes = "".join(pack.codes).encode() + b"Q" * len(scratch)  # the compiled launcher's parameter codes

    def crelaunch_(err, dev, gx, gy, gz, smem, vals, sp=None):
        kern, cds = (kernel, codes) if sp is None else (sp.kernel, sp.codes)

        def again(stream):
            return claunch(kern.handle(dev), gx, gy, gz, *plan.block, smem, stream, cds, *vals)

        relaunch(kop, kern, err, dev, (gx, gy, gz), plan.block, smem, 0, again=again)

    specs = {} if specs is None else specs

    def new_spec(key: int, dev: int) -> Specialized:
        sp = specs.get(key)
        if sp is None:  # (the op memoizes the code: a racing thread makes another record of the same kernel)
            made = Specialized(kop, recipe, key, dev)
            sp = specs.setdefault(key, made)
            if sp is made and on_spec is not None:
                sp.kernel.handle(dev)  # loaded on the call's device before the native kernel takes the key
                on_spec(sp)
        return sp

    def spec_launch_(sp, args, dev, gx, gy, gz, smem, vals, device):
        """cuda.bindings' launch of a specialization (the path without the compiled launcher)."""
        pk = sp.pack
        b = pk.buffer()
        try:
            pk.struct.pack_into(b[0], 0, *[vals[i] for i in sp.kept])
        except (struct.error, OverflowError, TypeError) as exc:
            raise scalar_error(kop, args, exc) from None
        held = scratch_buffers(scratch, gx * gy * gz, device) if has_scratch else []
        if held:
            pk.set_hidden(b[0], [p for _, p in held])
        f = sp.kernel.function(dev)
        s = (stream or torch._C._cuda_getCurrentRawStream)(dev)
        (err,) = (launch or driver().cuLaunchKernel)(f, gx, gy, gz, *plan.block, smem, s, b[1], 0)
        if held:
            pk.set_hidden(b[0], [])
        if err:
            relaunch(kop, sp.kernel, err, dev, (gx, gy, gz), plan.block, smem, b[1])

    def cscratch_(blocks: int, device):
        return scratch_buffers(scratch, blocks, device)

    ns: Dict[str, Any] = {
        f"{P}too_big": too_big, f"{P}bad_grid": bad_grid, f"{P}not_contiguous": not_contiguous,
        f"{P}bad_device": bad_device,
        f"{P}no_backward": no_backward, f"{P}unwritten": unwritten, f"{P}size_error": size_error,
        f"{P}grad_enabled": torch.is_grad_enabled,
        f"{P}new_buffer": new_buffer, f"{P}relaunch": relaunch_, f"{P}scalar_error": scalar_error_,
        f"{P}tls": pack.per_thread, f"{P}pack": pack.struct.pack_into,
        f"{P}launch": launch or driver().cuLaunchKernel,
        f"{P}stream": stream or getattr(torch._C, "_cuda_getCurrentRawStream", None),
        f"{P}funcs": kernel.functions, f"{P}load": kernel.function, f"{P}empty": torch.empty,
        f"{P}empty_like": torch.empty_like, f"{P}struct_error": (struct.error, OverflowError),
        f"{P}scratch": scratch_, f"{P}bad_scalars": bad_scalars,
    }
    if recipe.spec:
        ns.update({f"{P}spec": specs, f"{P}new_spec": new_spec, f"{P}spec_launch": spec_launch_})
    if claunch is not None:
        ns.update({f"{P}claunch": claunch, f"{P}codes": codes, f"{P}handles": kernel.handles,
                   f"{P}handle": kernel.handle, f"{P}crelaunch": crelaunch_, f"{P}cscratch": cscratch_,
                   f"{P}conv_error": (OverflowError, TypeError)})
    for i, d in enumerate(out_dtypes):
        ns[f"{P}odt{i}"] = d
    params = ", ".join(f"a{i}" for i in range(nargs))
    body: List[str] = [f"    dev = a{tpos[0]}.get_device()"]
    if kop.backward is None:  # a gradient through this op would be silently missing: refuse
        body.append(f"    if ({' or '.join(f'a{p}.requires_grad' for p in tpos)}) and {P}grad_enabled(): "
                    f"{P}no_backward()")
    for t in range(1, len(tpos)):
        body.append(f"    if a{tpos[t]}.get_device() != dev: {P}bad_device({t}, a{tpos[0]}, a{tpos[t]})")
    if tuples:  # torch does not check the length of an int[n] / float[n] argument
        body.append(f"    if {' or '.join(f'len(a{p}) != {n}' for p, n in tuples)}: {P}bad_scalars(({params},))")
    # sizes: extras, grid, shared memory, non-trivial output shapes
    extra_src = [py_source(e, names) for e in plan.extras]
    grid_src = [py_source(e, names) for e in plan.grid]
    smem_src = py_source(plan.shared_mem, names)
    out_shape_src = [None if o.like is not None else [py_source(e, names) for e in o.shape] for o in plan.outputs]
    # the spec's size checks (SameShape / SameDim) come first: a mismatch raises before anything else
    checks: List[str] = []
    for c in plan.checks:
        if c.kind == "shape":
            conds = [f"{names.shape(c.tensors[0])} != {names.shape(t)}" for t in c.tensors[1:]]
        else:
            conds = [f"{py_source(a, names)} != {py_source(b, names)}" for a, b in c.pairs]
        checks += [f"if {' or '.join(conds)}: {P}size_error(({params},))"] if conds else []
    body += names.lines
    if names.scalars:  # a scalar read by a size: its C int range first (it sizes what is allocated)
        ranges = [f"not {INT_RANGES[k][0]} <= {c} <= {INT_RANGES[k][1]}" for c, k in names.scalars]
        body.append(f"    if {' or '.join(ranges)}: {P}bad_scalars(({params},))")
    sizes: List[str] = checks + [f"x{i} = {src}" for i, src in enumerate(extra_src)]
    sizes.append(f"gx = {grid_src[0]}; gy = {grid_src[1]}; gz = {grid_src[2]}")
    negative = [g for g, e in zip(("gx", "gy", "gz"), plan.grid) if _may_be_negative(e)]
    if not smem_src.isdigit():
        sizes.append(f"sm = {smem_src}")
        smem_src = "sm"
        negative += ["sm"] if _may_be_negative(plan.shared_mem) else []
    dims_of: List[List[str]] = []
    for i, (o, shp) in enumerate(zip(plan.outputs, out_shape_src)):
        dims = []
        for j, (src, e) in enumerate(zip(shp or (), o.shape)):
            if src.isdigit():
                dims.append(src)
                continue
            sizes.append(f"d{i}_{j} = {src}")
            dims.append(f"d{i}_{j}")
            negative += [f"d{i}_{j}"] if _may_be_negative(e) else []
        dims_of.append(dims)
    exprs = list(plan.extras) + list(plan.grid) + [plan.shared_mem] + [e for o in plan.outputs if o.like is None
                                                                        for e in o.shape]
    exprs += [e for c in plan.checks for pair in c.pairs for e in pair]
    if any(_may_divide_by_zero(e) for e in exprs):  # a size read as a divisor may be 0: our error, not Python's
        body += ["    try:"] + [f"        {ln}" for ln in sizes]
        body += ["    except ZeroDivisionError:", f"        {P}size_error(({params},))"]
    else:
        body += [f"    {ln}" for ln in sizes]
    for i in range(len(extra_src)):
        lo, hi = INT_RANGES[SIZE_TYPES[kop.sig.extra_ctype(i)].code]
        body.append(f"    if x{i} > {hi} or x{i} < {lo}: {P}too_big({i}, x{i})")
    big = [" * ".join(d) + f" > {INT64_MAX}" for d, o in zip(dims_of, plan.outputs)
           if o.like is None and sum(not x.isdigit() for x in d) and len(d) > 1]
    if negative or big:
        body.append(f"    if {' or '.join([f'{n} < 0' for n in negative] + big)}: {P}size_error(({params},))")
    over = [f"{g} > {lim}" for g, src, lim in zip(("gx", "gy", "gz"), grid_src, GRID_LIMITS) if not src.isdigit()]
    over += [f"{src} > {lim}" for src, lim in zip(grid_src, GRID_LIMITS) if src.isdigit() and int(src) > lim]
    if over:
        body.append(f"    if {' or '.join(over)}: {P}bad_grid(gx, gy, gz)")
    mutated = set(kop.sig.mutated)
    for t, p in enumerate(tpos):
        if t in mutated:  # written in place: a copy would take the writes away from the caller's tensor
            body.append(f"    if not a{p}.is_contiguous(): {P}not_contiguous({t})")
        else:
            body.append(f"    if not a{p}.is_contiguous(): a{p} = a{p}.contiguous()")
    for i, (o, shp) in enumerate(zip(plan.outputs, out_shape_src)):
        if o.like is not None and out_dtypes[i] == in_dtypes[o.like]:
            body.append(f"    o{i} = {P}empty_like(a{tpos[o.like]})")
        elif o.like is not None:
            body.append(f"    o{i} = {P}empty_like(a{tpos[o.like]}, dtype={P}odt{i})")
        else:
            dims = "".join(f"{d}, " for d in dims_of[i])
            body.append(f"    o{i} = {P}empty(({dims}), dtype={P}odt{i}, device=a{tpos[0]}.device)")
    vals = [_value_source(p, tpos, spos) for p in recipe.params]
    pick: List[str] = []  # a specialized kernel: the values it is keyed on, the key, the code for the key
    if recipe.spec:
        for pos, _ in recipe.spec:
            pick.append(f"        v{pos} = {vals[pos]}")
            vals[pos] = f"v{pos}"
        pick += [f"        k = {key_source(recipe.spec, vals)}",
                 f"        sp = {P}spec.get(k)",
                 "        if sp is None:",
                 f"            sp = {P}new_spec(k, dev)",
                 # the code's own shared memory (Triton's, per compile) where it exceeds the plan's
                 f"        smem = {smem_src} if {smem_src} >= sp.smem else sp.smem"]
        smem_src = "smem"
    bx, by, bz = plan.block
    # a grid axis that is a constant (1 for most geometries) needs no emptiness test
    nonempty = [g for g, src in zip(("gx", "gy", "gz"), grid_src) if not (src.isdigit() and int(src) > 0)]
    if claunch is not None:  # one call converts the parameters and launches
        hidden = [f"held[{i}][1]" if has_scratch else "0" for i in range(len(scratch))]
        cvals = ", ".join(vals + hidden)
        handles, handle, cds, sp = ((f"{P}handles", f"{P}handle", f"{P}codes", "") if not recipe.spec
                                    else ("sp.handles", "sp.kernel.handle", "sp.codes", ", sp"))
        body += [
            f"    if {' and '.join(nonempty) if nonempty else 'True'}:",
            *pick,
            f"        f = {handles}.get(dev)",
            "        if f is None:",
            f"            f = {handle}(dev)",
            *([f"        held = {P}cscratch(gx * gy * gz, a{tpos[0]}.device)"] if has_scratch else []),
            "        try:",
            (f"            err = {P}claunch(f, gx, gy, gz, {bx}, {by}, {bz}, {smem_src}, {P}stream(dev), "
             f"{cds}, {cvals})"),
            f"        except {P}conv_error as exc:",
            f"            {P}scalar_error(({params},), exc)",
            "        if err:",
            f"            {P}crelaunch(err, dev, gx, gy, gz, {smem_src}, ({cvals},){sp})",
        ]
    elif recipe.spec:  # cuda.bindings: the specialization's own layout
        body += [
            f"    if {' and '.join(nonempty) if nonempty else 'True'}:",
            *pick,
            f"        {P}spec_launch(sp, ({params},), dev, gx, gy, gz, {smem_src}, ({', '.join(vals)},), "
            f"a{tpos[0]}.device)",
        ]
    body += [] if claunch is not None or recipe.spec else [
        f"    if {' and '.join(nonempty) if nonempty else 'True'}:",
        "        try:",
        f"            b = {P}tls.b",
        "        except AttributeError:",
        f"            b = {P}new_buffer()",
        "        try:",
        f"            {P}pack(b[0], 0, {', '.join(vals)})",
        f"        except {P}struct_error as exc:",
        f"            {P}scalar_error(({params},), exc)",
        *([f"        held = {P}scratch(b[0], gx * gy * gz, a{tpos[0]}.device)"] if has_scratch else []),
        f"        f = {P}funcs.get(dev)",
        "        if f is None:",
        f"            f = {P}load(dev)",
        f"        err, = {P}launch(f, gx, gy, gz, {bx}, {by}, {bz}, {smem_src}, {P}stream(dev), b[1], 0)",
        "        if err:",
        f"            {P}relaunch(err, dev, gx, gy, gz, {smem_src}, b[1])",
    ]
    outs = [f"o{i}" for i in range(len(plan.outputs))]
    data = [f"o{i}" for i, o in enumerate(plan.outputs) if not o.bounds]  # (a count: the caller's, see cuda_kernel)
    if data:
        body += ["    elif " + " or ".join(f"{o}.numel()" for o in data) + ":", f"        {P}unwritten(gx, gy, gz)"]
    body.append(f"    return {outs[0]}" if len(outs) == 1 else f"    return ({', '.join(outs)})" if outs
                else "    return None")
    return Launcher(body, ns, pack, P)


def _value_source(p, tpos: Sequence[int], spos: Sequence[int]) -> str:
    """The Python expression of a parameter's value over the op's arguments ``a0..aN``, the sizes ``x{i}``
    and the outputs ``o{i}`` (:class:`~trt_kernels.signature.Param`'s roles)."""
    if p.role == "input":
        return f"a{tpos[p.index]}.data_ptr()"
    if p.role == "scalar":
        return f"a{spos[p.index]}" if p.element is None else f"a{spos[p.index]}[{int(p.element)}]"
    if p.role == "extra":
        return f"x{int(p.index)}"
    if p.role == "output":
        return f"o{int(p.index)}.data_ptr()"
    raise ValueError(f"unknown parameter role {p.role!r}")


def build_launcher(kop, recipe: LaunchRecipe, kernel, *, launch=None, stream=None,
                   claunch: Any = "auto", on_spec: Optional[Callable[[Specialized], None]] = None
                   ) -> Callable[..., Any]:
    """Compile the specialized launch function of ``recipe`` (one (dtype, ranks) of ``kop``).

    ``kernel`` is the :class:`~trt_kernels.eager.driver.LoadedKernel`; ``launch`` and ``stream``
    default to ``cuLaunchKernel`` and torch's current raw stream (tests pass recorders).
    ``claunch``: ``"auto"`` asks :mod:`trt_kernels.eager.compiled_launcher` for the compiled launcher (where
    ``launch`` is not given; prepared on the process's first call), None takes cuda.bindings', a
    callable is the compiled launcher's ``launch`` (tests pass recorders). ``on_spec``: see :func:`launcher_parts`.
    The function has ``.parts`` (its :class:`Launcher`), ``.source``, ``.pack``, ``.recipe``, ``.claunch`` and
    ``.specs`` (the specializations launched so far, by key).
    """
    if isinstance(claunch, str):  # "auto"
        claunch = None
        if launch is None:
            from trt_kernels.eager import compiled_launcher

            chosen = compiled_launcher.for_new_launcher(len(recipe.params) + len(recipe.scratch))
            claunch = chosen.launch if chosen is not None else None
    specs: Dict[int, Specialized] = {}
    parts = launcher_parts(kop, recipe, kernel, launch=launch, stream=stream, claunch=claunch, specs=specs,
                           on_spec=on_spec)
    params = ", ".join(f"a{i}" for i in range(len(kop.sig.arg_kinds)))
    src = f"def launch({params}):\n" + "\n".join(parts.body) + "\n"
    ns = dict(parts.ns)
    code = compile(src, f"<trt_kernels launcher {kop.op_name} {recipe.kdt} ranks={recipe.plan.ranks}>", "exec")
    exec(code, ns)  # noqa: S102 - source built above from our own templates and ints only
    fn = ns["launch"]
    fn.source = src
    fn.pack = parts.pack
    fn.parts = parts
    fn.claunch = claunch
    fn.recipe = recipe
    fn.specs = specs
    fn.rebuild = lambda prefix: launcher_parts(kop, recipe, kernel, launch=launch, stream=stream, prefix=prefix,
                                               claunch=claunch, specs=specs, on_spec=on_spec)
    return fn
