"""The PyTorch side: schema, fake (meta) impl and the eager CUDA launch.

Ops are defined with a ``torch.library.Library`` fragment (one per op) rather
than ``torch.library.custom_op``: on the H100 the same launch body costs
9.7 us per call as a Library op and 18.6 us under ``custom_op`` (see
docs/design.md), and the overhead goal is 1.5x ``torch.sigmoid``. The fake impl is
registered with ``torch.library.register_fake``, so ``torch.compile`` and
``torch.export`` trace through the op.
"""

from __future__ import annotations

import struct
import threading
from dataclasses import field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from trt_kernels import dtypes as _dt
from trt_kernels._record import FACTORY, Record, plain_record
from trt_kernels.eager.dispatcher import build_dispatcher, new_shell, release_dispatcher, retarget
from trt_kernels.errors import InputError, NoCudaDeviceError, SpecError, UnregisteredOpError
from trt_kernels.expr import ShapeEvaluator, evaluate
from trt_kernels.op import KernelOp
from trt_kernels.signature import SCALAR_TYPES, scalar_len, scalar_type, scalar_type_name, scalar_value


def build_schema(kop: KernelOp) -> str:
    """``(Tensor x, float alpha) -> Tensor`` from the spec (declaration order of inputs)."""
    if not kop.sig.has_outputs:  # override path: the meta function's annotations say it
        return torch.library.infer_schema(kop.meta_fn, mutates_args=())
    args = [f"Tensor {d.name}" if kind == "tensor" else f"{scalar_type_name(d)} {d.name}" + _default_text(d)
            for d, kind in zip(kop.sig.inputs, kop.sig.arg_kinds)]
    n = len(kop.sig.outputs)
    ret = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _default_text(d) -> str:
    """``=1e-06`` / ``=[1, 1]`` for a scalar input with a default (schema syntax), else ``""``."""
    if d.default is None:
        return ""

    def one(v) -> str:
        return ("True" if v else "False") if isinstance(v, bool) else repr(v)

    v = d.default
    return "=" + ("[" + ", ".join(one(x) for x in v) + "]" if isinstance(v, tuple) else one(v))


def check_schema(kop: KernelOp) -> None:
    """Check the op's schema (derived or given) against its declaration and record the defaults of
    its trailing arguments in ``kop.defaults``; :class:`SpecError` naming the argument otherwise."""
    op = kop.op_name
    parsed = parse_schema(op, kop.schema)
    decls = list(kop.sig.inputs)
    args = list(parsed.arguments)

    def bad(where: str, msg: str, fix: str) -> SpecError:
        return SpecError(f"{op}: schema {kop.schema!r}: {where}: {msg}. Fix: {fix}")

    if parsed.is_mutable or any(a.alias_info is not None for a in args) or \
            any(r.alias_info is not None for r in parsed.returns):
        raise bad("aliasing", "the op is declared to mutate or alias an argument, but its kernels write only "
                  "fresh outputs", "drop the (a!) / (a) annotations")
    if len(args) != len(decls):
        raise bad("arguments", f"{len(args)} arguments but the spec declares {len(decls)} inputs "
                  f"({', '.join(d.name for d in decls)})", "list one schema argument per declared input, in order")
    defaults = []
    for i, (a, d, kind) in enumerate(zip(args, decls, kop.sig.arg_kinds)):
        where = f"argument {i} ({a.name!r})"
        if a.kwarg_only:
            raise bad(where, "keyword-only arguments are not supported", "remove the '*' from the schema")
        if a.name != d.name:
            raise bad(where, f"the spec's input {i} is named {d.name!r}", f"name it {d.name!r} in the schema")
        want = "Tensor" if kind == "tensor" else scalar_type_name(d)  # torch prints SymInt as int
        n = None if kind == "tensor" else scalar_len(d)
        if n is None and str(a.type) != want or \
                n is not None and (str(a.type) != f"List[{want.split('[')[0]}]" or
                                   getattr(a, "N", None) not in (n, None)):
            raise bad(where, f"has type {_schema_type(a)} but the spec declares {want}",
                      f"declare it as '{want} {d.name}'")
        spec_default = None if kind == "tensor" else d.default
        if a.has_default_value():
            if kind == "tensor":
                raise bad(where, "a tensor argument cannot have a default", "drop its default")
            value = a.default_value
            items = list(value) if n is not None else [value]
            try:
                if n is not None and len(items) != n:
                    raise struct.error
                for x in items:
                    struct.pack("=" + SCALAR_TYPES[scalar_type(d)][2], x)
            except (struct.error, OverflowError, TypeError):
                raise bad(where, f"default {value!r} does not fit the kernel's C {want}",
                          "give a default in range") from None
            value = tuple(items) if n is not None else value
            if spec_default is not None and value != spec_default:
                raise bad(where, f"default {value!r} differs from the spec's ScalarInput default {spec_default!r}",
                          "give the same default in both, or one of them only")
            defaults.append(value)
        elif spec_default is not None:
            raise bad(where, f"has no default but the spec's ScalarInput gives {spec_default!r}",
                      f"write '{want} {d.name}{_default_text(d)}' in the schema, or leave schema out")
        elif defaults:
            raise bad(where, "has no default but an earlier argument has one",
                      "give defaults to trailing arguments only")
    if kop.sig.has_outputs:
        rets = [str(r.type) for r in parsed.returns]
        if rets != ["Tensor"] * len(kop.sig.outputs):
            raise bad("returns", f"returns ({', '.join(rets)}) but the spec declares {len(kop.sig.outputs)} "
                      "output tensor(s)", "return one Tensor per declared output")
    kop.defaults = tuple(defaults)


# ---------------- fake ----------------


def check_tensor_args(kop: KernelOp, ts: Sequence[Any]):
    """dtype rules shared by fake and eager: the kernel's dtype comes from the first input whose
    dtype is T; fixed-dtype inputs must match exactly. Returns the kernel dtype (with several type
    parameters, the declared combination the inputs' dtypes select)."""
    op = kop.op_name
    decls = kop.sig.tensor_decls
    for d, t in zip(decls, ts):
        if not isinstance(t, torch.Tensor):
            raise InputError(f"{op}: argument {d.name!r} must be a Tensor, got {type(t).__name__}")
    if len(kop.sig.type_params) > 1:
        return _combination(kop, ts)
    kdt = None
    for d, t in zip(decls, ts):
        if kop.sig.type_param_of(d) is not None and kdt is None:
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
    for d, t, want in zip(decls, ts, kop.sig.in_dtypes(kdt)):
        if t.dtype != want:
            raise InputError(
                f"{op}: input {d.name!r} has dtype {_dt.short(t.dtype)} but the kernel takes "
                f"{_dt.short(want)} there. Fix: pass a {_dt.short(want)} tensor "
                f"(e.g. {d.name}.to(torch.{_dt.short(want)}))"
            )
    return kdt


def check_scalar_args(kop: KernelOp, args: Sequence[Any]) -> List[Any]:
    """The scalar arguments of a call (in schema order), each tuple input checked for its length and
    element types (:class:`InputError` naming the op, the argument and the fix); torch's own parsing
    of an ``int[4]`` argument checks neither."""
    out = []
    for d, a, kind in zip(kop.sig.inputs, args, kop.sig.arg_kinds):
        if kind == "scalar":
            out.append(a if scalar_len(d) is None else scalar_value(kop.op_name, d, a))
    return out


def _combination(kop: KernelOp, ts: Sequence[Any]):
    """The declared combination of type parameters the inputs' dtypes select (several type parameters)."""
    sig = kop.sig
    op = kop.op_name
    got = [t.dtype for t in ts]
    kdt = sig.kernel_dtype_of(got)
    if kdt is not None:
        return kdt
    names = sig.tensor_names
    for d, t in zip(sig.tensor_decls, ts):  # a fixed-dtype input: the plain message
        if isinstance(d.dtype, torch.dtype) and t.dtype != d.dtype:
            want = _dt.short(d.dtype)
            raise InputError(f"{op}: input {d.name!r} has dtype {_dt.short(t.dtype)} but the kernel takes {want} "
                             f"there. Fix: pass a {want} tensor (e.g. {d.name}.to(torch.{want}))")
    typed = [(sig.type_param_of(d), n) for d, n in zip(sig.tensor_decls, names)]
    declared = "; ".join(", ".join(f"{n}: {_dt.short(dt)}" for (p, n), dt in zip(typed, sig.in_dtypes(k)) if p)
                         for k in kop.dtypes)
    passed = ", ".join(f"{n}: {_dt.short(dt)}" for (p, n), dt in zip(typed, got) if p)
    raise InputError(f"{op}: input dtypes ({passed}) are not a combination the kernel declares ({declared}); "
                     "the kernel would misread the bytes. Fix: convert the inputs to a declared combination (e.g. "
                     + ", ".join(f"{n}.to(torch.{_dt.short(dt)})"
                                 for (p, n), dt in zip(typed, sig.in_dtypes(kop.dtypes[0])) if p)
                     + ")")


def check_sizes(kop: KernelOp, plan, ts: Sequence[Any], scalars: Sequence[Any] = ()) -> None:
    """The spec's size checks at the inputs' shapes: :class:`InputError` at static sizes; with symbolic
    sizes (``torch.compile`` / ``torch.export``) each equality is a guard (``torch._check``), so a trace
    records it rather than assuming it."""
    if not plan.checks:
        return
    shapes = [tuple(t.shape) for t in ts]
    from trt_kernels.plan import check_message, concrete

    if all(type(d) is int for s in shapes for d in s):
        concrete(plan, shapes, kop.sig.tensor_names, scalars)
        return
    ev = ShapeEvaluator(ts, scalars)
    for c in plan.checks:
        vals = [evaluate(a, ev) for a, _ in c.pairs[:1]] + [evaluate(b, ev) for _, b in c.pairs]
        for a, b in c.pairs:
            va, vb = evaluate(a, ev), evaluate(b, ev)
            torch._check_with(InputError, va == vb,
                              lambda c=c, vals=vals: check_message(plan, c, shapes, kop.sig.tensor_names, vals))


def make_size_check(kop: KernelOp):
    """``check(args)``: the spec's size checks on the op's arguments, for ops whose ``meta_fn`` /
    ``eager_fn`` replace the derived fake impl / launch (which check them themselves)."""
    tpos = kop.sig.tensor_pos

    def check(args) -> None:
        args = kop.with_defaults(tuple(args))
        ts = [args[i] for i in tpos]
        if all(isinstance(t, torch.Tensor) for t in ts):
            scalars = [a for a, k in zip(args, kop.sig.arg_kinds) if k == "scalar"]
            check_sizes(kop, kop.plan(tuple(t.dim() for t in ts)), ts, scalars)

    return check


def _checked_meta_fn(kop: KernelOp):
    check = make_size_check(kop)
    meta_fn = kop.meta_fn

    def fake(*args, **kwargs):
        check(args)
        return meta_fn(*args, **kwargs)

    fake.__name__ = f"{kop.name}_fake"
    return fake


def make_fake_impl(kop: KernelOp):
    tpos = kop.sig.tensor_pos
    single = len(kop.sig.outputs) == 1
    snames = [d.name for d in kop.sig.scalar_decls]

    def fake(*args):
        args = kop.with_defaults(args)
        ts = [args[i] for i in tpos]
        check_tensor_args(kop, ts)
        scalars = check_scalar_args(kop, args)
        plan = kop.plan(tuple(t.dim() for t in ts))
        shapes = [tuple(t.shape) for t in ts]
        static = all(type(d) is int for s in shapes for d in s) and \
            all(type(v) is not torch.SymInt for s in scalars for v in (s if isinstance(s, (list, tuple)) else (s,)))
        if static:  # static sizes: the eager launch's checks, here too
            from trt_kernels.plan import concrete

            out_shapes = concrete(plan, shapes, kop.sig.tensor_names, scalars, snames).outputs
        else:
            check_sizes(kop, plan, ts, scalars)
            ev = ShapeEvaluator(ts, scalars)
            try:
                out_shapes = [[evaluate(e, ev) for e in o.shape] for o in plan.outputs]
            except ZeroDivisionError:
                raise InputError(f"{kop.op_name}: an output size expression divides by zero at input sizes "
                                 f"{shapes}. Fix: pass inputs whose sizes keep the divisor non-zero") from None
        outs = []
        for shape, dt in zip(out_shapes, kop.sig.out_dtypes([t.dtype for t in ts])):
            outs.append(ts[0].new_empty(shape, dtype=dt))
        return outs[0] if single else tuple(outs)

    fake.__name__ = f"{kop.name}_fake"
    return fake


def _meta_args(args) -> str:
    """The call's tensor arguments as meta tensors, written out: ``(torch.empty(4, 128, device='meta'),)``."""
    def one(a):
        dims = ", ".join(str(int(n)) for n in a.shape) if a.dim() else "()"
        dtype = "" if a.dtype == torch.float32 else f", dtype={a.dtype}"
        return f"torch.empty({dims}, device='meta'{dtype})"

    try:
        items = [one(a) for a in args if isinstance(a, torch.Tensor)] or ["torch.empty(4, 128, device='meta')"]
    except Exception:  # noqa: BLE001 - an odd argument only costs the example its shapes
        items = ["torch.empty(4, 128, device='meta')"]
    return f"({', '.join(items)},)" if len(items) == 1 else f"({', '.join(items)})"


def make_cpu_impl(kop: KernelOp):
    op = kop.op_name

    def cpu(*args):
        args = kop.with_defaults(args)
        tensors = [f"{d.name} on {args[i].device}" for i, d in enumerate(kop.sig.inputs)
                   if isinstance(args[i], torch.Tensor)]
        if torch.cuda.is_available():
            raise InputError(f"{op} runs on CUDA devices only; got {', '.join(tensors)}. "
                             "Move the inputs to the GPU (x.cuda())")
        # torch.export / torch.compile trace through the fake impl, which needs no GPU: say so
        raise NoCudaDeviceError(
            f"{op} runs on CUDA devices only; got {', '.join(tensors)}. No CUDA device is visible here "
            "(torch.cuda.is_available() is False). To trace or export without a GPU, pass meta tensors as the example "
            f"inputs, e.g. torch.export.export(model, {_meta_args(args)})")

    return cpu


# ---------------- eager CUDA ----------------


def make_cuda_impl(kop: KernelOp, shell=None, definition=None):
    """The eager CUDA kernel: look up (or build) the launcher for the inputs' dtype and ranks.

    Launchers are specialized functions from :mod:`trt_kernels.eager.fastpath`; building one checks
    the dtypes and ranks (clear errors), later calls only look it up.
    """
    tpos = kop.sig.tensor_pos
    entries: Dict[Tuple, Any] = {}
    lock = threading.Lock()

    def new_entry(key, args):
        ts = [args[i] for i in tpos]
        for t in ts:
            if not isinstance(t, torch.Tensor):
                break
            if t.device.type != "cuda":
                raise InputError(f"{kop.op_name}: inputs are on different devices "
                                 f"({', '.join(str(t.device) for t in ts)}). "
                                 "Fix: move them to one CUDA device")
        kdt = check_tensor_args(kop, ts)
        dev = ts[0].get_device()
        recipe = kop.recipe(kdt, tuple(t.dim() for t in ts), 1, _arch_of(kop, dev))
        with lock:
            fn = entries.get(key)
            if fn is None:
                from trt_kernels.eager.fastpath import (
                    build_launcher,  # (with the CUDA launch modules) at the first launch
                )

                kernel = kop.loaded_kernel(kdt, dev)
                fn = build_launcher(kop, recipe, kernel)
                entries[key] = fn
                slot = definition.native if definition is not None else None
                if slot is not None:  # the native kernel launches this key from now on
                    from trt_kernels.eager import native

                    kernel.handle(dev)
                    native.add_variant(slot, kop, key, recipe, kernel)
        return fn

    impl = build_dispatcher(kop, entries, new_entry, shell=shell)
    impl.__name__ = f"{kop.name}_cuda"
    return impl


def _arch_of(kop: KernelOp, device: int):
    """The arch the op's builds for ``device`` are for (None where one build serves every device)."""
    if not kop.source.needs_arch:
        return None
    major, minor = torch.cuda.get_device_capability(device)
    return f"sm_{major}{minor}"


def launch_into(kop: KernelOp, args: Sequence[Any], outs: Sequence[torch.Tensor], stream: int, tactic: int = 1) -> None:
    """Launch the kernel of ``tactic`` on ``stream`` writing into the given ``outs`` (TensorRT's JIT
    plugin impl and the replay checks).

    ``args`` are the op's arguments in schema order (tensors contiguous, on one device). Override-path
    ops run their ``eager_fn`` on that stream and copy its results into ``outs``. A kernel whose
    compiler appended scratch-buffer pointers (Triton) gets buffers allocated here on ``stream``.
    """
    kinds = kop.sig.arg_kinds
    args = kop.with_defaults(tuple(args))
    tensors = [a for a, k in zip(args, kinds) if k == "tensor"]
    dev = tensors[0].get_device()
    if kop.eager_fn is not None:
        make_size_check(kop)(args)
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
            res = kop.eager_fn(*args)
            for o, r in zip(outs, res if isinstance(res, (tuple, list)) else (res,)):
                o.copy_(r)
        return
    kdt = check_tensor_args(kop, tensors)
    scalars = check_scalar_args(kop, args)
    tactic = min(max(int(tactic or 1), 1), kop.tactics)
    ranks = tuple(t.dim() for t in tensors)
    plan = kop.plan(ranks, tactic)
    from trt_kernels.eager.driver import driver
    from trt_kernels.eager.fastpath import relaunch, scalar_error, scratch_buffers, unwritten_error
    from trt_kernels.plan import concrete

    # the sizes first: a size check or an out-of-range size raises before anything is built or loaded
    sizes = concrete(plan, [tuple(t.shape) for t in tensors], kop.sig.tensor_names, scalars,
                     [d.name for d in kop.sig.scalar_decls])
    grid = list(sizes.grid)
    if not all(grid):
        if any(o.numel() for o in outs):
            raise unwritten_error(kop.op_name, grid)
        return
    recipe = kop.recipe(kdt, ranks, tactic, _arch_of(kop, dev))
    image = recipe.image
    pack = kop.param_pack(recipe)
    buf, addr, _keep = pack.buffer()
    try:
        pack.struct.pack_into(buf, 0, *recipe.values(tensors, scalars, sizes.extras, outs))
    except (struct.error, OverflowError, TypeError, IndexError) as exc:
        raise scalar_error(kop, args, exc) from None
    scratch = []
    if recipe.needs_scratch:
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
            scratch = scratch_buffers(recipe.scratch, grid[0] * grid[1] * grid[2], tensors[0].device)
        pack.set_hidden(buf, [p for _, p in scratch])
    kernel = kop.loaded_kernel(kdt, dev, tactic)
    smem = max(sizes.shared_mem, image.shared_mem)
    (err,) = driver().cuLaunchKernel(kernel.function(dev), *grid, *plan.block, smem, stream, addr, 0)
    if scratch:
        pack.set_hidden(buf, [])
    if err:
        relaunch(kop, kernel, err, dev, grid, plan.block, smem, addr, stream)


# ---------------- autograd ----------------


def make_setup_context(kop: KernelOp):
    if kop.setup_context is not None:
        return kop.setup_context
    kinds = kop.sig.arg_kinds
    names = [d.name for d in kop.sig.inputs]

    def setup_context(ctx, inputs, output):
        outs = output if isinstance(output, (tuple, list)) else (output,)
        ctx.save_for_backward(*[a for a, k in zip(inputs, kinds) if k == "tensor"], *outs)
        ctx.scalars = {n: a for n, a, k in zip(names, inputs, kinds) if k == "scalar"}

    return setup_context


def make_backward(kop: KernelOp):
    n_in = len(kop.sig.inputs)
    op = kop.op_name

    def backward(ctx, *grads):
        res = kop.backward(ctx, *grads)
        res = tuple(res) if isinstance(res, (tuple, list)) else (res,)
        if len(res) != n_in:
            raise RuntimeError(f"{op}: backward returned {len(res)} gradients; the op has {n_in} inputs "
                               "(return None for scalars and inputs without a gradient)")
        return res

    return backward


# ---------------- registration ----------------
#
# torch's dispatcher does not synchronize its tables with calls in flight (registering or removing
# a kernel while another thread calls the op can crash the process), so each op name is registered
# with torch once: a definition and one set of kernels (fake, CUDA, CPU, autograd when declared)
# whose Python functions stay the same objects. A declaration points them at itself; a
# re-declaration with the same schema points them at the new one, and unregistering points them
# at UnregisteredOpError, all without touching torch's tables. A call racing either runs the old or
# the new declaration, or gets this package's error; an OpOverload kept from before keeps working.
# torch's tables change again only when the schema changes or autograd comes or goes (the name is
# then defined anew; a call racing that is not protected). Nothing registered holds a declaration
# that was replaced or unregistered, so its record is freed.


@plain_record
class _Definition(Record):
    op_name: str
    schema: str
    def_lib: Any
    kernel_lib: Any = None
    autograd: bool = False
    shell: Any = None  # the Python CUDA kernel (dispatcher.new_shell)
    boxes: Dict[str, List[Any]] = field(default_factory=dict)  # role -> [current function or None]
    why: str = ""  # what a call gets while no declaration is current
    native: Optional[int] = None  # the native kernel's slot, where torch calls it in place of the shell

    def __init__(self, op_name: str, schema: str, def_lib: Any, kernel_lib: Any = None, autograd: bool = False,
                 shell: Any = None, boxes: Dict[str, List[Any]] = FACTORY, why: str = "", native: Optional[int] = None
                 ) -> None:
        self.op_name = op_name
        self.schema = schema
        self.def_lib = def_lib
        self.kernel_lib = kernel_lib
        self.autograd = autograd
        self.shell = shell
        self.native = native
        self.boxes = {} if boxes is FACTORY else boxes
        self.why = why

    def boxed(self, role: str) -> Callable[..., Any]:
        """The function registered for ``role``: it calls whatever the box holds now."""
        box = self.boxes.setdefault(role, [None])

        def kernel(*args, **kwargs):
            f = box[0]
            if f is None:
                raise UnregisteredOpError(self.why)
            return f(*args, **kwargs)

        kernel.__name__ = kernel.__qualname__ = f"{self.op_name.replace('::', '_')}_{role}"
        return kernel


_DEFS: Dict[str, _Definition] = {}


def _schema_type(a) -> str:
    """An argument's type as a schema writes it (``int[4]``, not ``List[int]``)."""
    t = str(a.type)
    if t.startswith("List[") and t.endswith("]"):
        n = getattr(a, "N", None)
        return f"{t[5:-1]}[{n if n is not None else ''}]"
    return t


def parse_schema(op_name: str, schema: str):
    """torch's parsed ``FunctionSchema`` of ``op_name`` + ``schema``; :class:`SpecError` if it does not parse."""
    if not isinstance(schema, str) or not schema.strip().startswith("("):
        raise SpecError(f"{op_name}: schema: {schema!r} is not an argument list and return type. "
                        "Fix: e.g. schema='(Tensor x, float alpha) -> Tensor', or leave schema out to derive it")
    try:
        return torch._C.parse_schema(f"{op_name}{schema}")
    except RuntimeError as e:
        raise SpecError(f"{op_name}: schema: {schema!r} does not parse ({str(e).splitlines()[0]}). "
                        "Fix: e.g. schema='(Tensor x, float alpha) -> Tensor'") from None


def _foreign(op_name: str) -> bool:
    """Whether torch has an op of that name that this package did not define."""
    if op_name in _DEFS:
        return False
    ns, name = op_name.split("::")
    try:
        return hasattr(getattr(torch.ops, ns), name)
    except Exception:  # noqa: BLE001 - an unusable namespace holds no op
        return False


def _register_kernels(d: _Definition, kop: KernelOp, autograd: bool):
    """One Library fragment with the definition's fake, CUDA and CPU kernels (and autograd). The CUDA
    kernel is the native one where it can be had (:mod:`trt_kernels.eager.native`, with the shell behind
    it), else the shell."""
    ns, name = kop.namespace, kop.name
    lib = torch.library.Library(ns, "FRAGMENT")
    try:
        # torch records where a fake impl was registered, for its messages, by inspecting the frame
        # _stacklevel above its own. For a frame in a file `inspect` has not mapped yet (this one, in a
        # fresh process) `inspect.getmodule` walks every loaded module: ~2 ms on the CPU machine, a fifth
        # of a warm start's seven declarations. _stacklevel=0 names torch.library's own frame instead (its
        # file was mapped while torch was imported), so torch's messages cite a line of torch/library.py
        # rather than this one as where the fake impl was registered.
        torch.library.register_fake(d.op_name, d.boxed("fake"), lib=lib, _stacklevel=0)
        d.native = _native_register(kop, d.shell)
        if d.native is None:
            lib.impl(name, d.shell, "CUDA")
        lib.impl(name, d.boxed("cpu"), "CPU")
        if autograd:
            torch.library.register_autograd(d.op_name, d.boxed("backward"), setup_context=d.boxed("setup_context"),
                                            lib=lib)
    except Exception:
        _drop_native(d)
        lib._destroy()
        raise
    return lib


def native_slot(op_name: str):
    """The native kernel's slot of an op this package defined (:mod:`trt_kernels.eager.native`), or None
    where torch calls its Python kernel."""
    d = _DEFS.get(op_name)
    return d.native if d is not None else None


def _native_register(kop: KernelOp, shell) -> Optional[int]:
    """The native kernel's slot for ``kop``'s new definition, or None (register ``shell``). A torch
    without CUDA launches nothing: trt_kernels.eager.native is not even imported then."""
    if torch.version.cuda is None:
        return None
    from trt_kernels.eager import native

    return native.register(kop, shell)


def _drop_native(d: _Definition) -> None:
    if d.native is not None:
        from trt_kernels.eager import native

        native.release(d.native)
        d.native = None


def _point(d: _Definition, kop: KernelOp) -> None:
    """Make the definition's kernels run ``kop``."""
    d.why = f"{kop.op_name} has no current declaration"
    if kop.eager_fn is not None:
        names = {"eager": kop.eager_fn}
        if kop.sig.checks:  # eager_fn replaces the derived launch, which checks the sizes
            names["check"] = make_size_check(kop)
        retarget(d.shell, names, f"<trt_kernels eager_fn {kop.op_name}>")
    else:
        make_cuda_impl(kop, shell=d.shell, definition=d)
    kop.cuda_impl = d.shell
    fake = make_fake_impl(kop) if kop.meta_fn is None else _checked_meta_fn(kop) if kop.sig.checks else kop.meta_fn
    roles = {"fake": fake, "cpu": make_cpu_impl(kop)}
    if kop.backward is not None:
        roles.update(backward=make_backward(kop), setup_context=make_setup_context(kop))
    for role, box in d.boxes.items():
        box[0] = roles.get(role)
    for role, fn in roles.items():
        d.boxes.setdefault(role, [fn])


def register(kop: KernelOp) -> None:
    """Give ``kop`` its torch op: define it (or keep the definition and kernels of an earlier
    declaration with the same schema, pointing them at ``kop``)."""
    op = kop.op_name
    autograd = kop.backward is not None
    d = _DEFS.get(op)
    if d is not None and d.schema != kop.schema:  # another signature: the name is defined anew
        forget(op)
        d = None
    if d is None:
        if _foreign(op):
            raise SpecError(f"{op}: torch already has an op of that name that trt_kernels did not register. "
                            "Fix: choose another name")
        lib = torch.library.Library(kop.namespace, "FRAGMENT")
        try:
            lib.define(f"{kop.name}{kop.schema}")
        except RuntimeError as e:
            lib._destroy()
            raise SpecError(f"{op}: torch refused the definition {kop.name}{kop.schema} ({str(e).splitlines()[0]}). "
                            "Fix: choose another name") from None
        d = _DEFS[op] = _Definition(op_name=op, schema=kop.schema, def_lib=lib, shell=new_shell(op))
    elif d.autograd != autograd and d.kernel_lib is not None:  # autograd comes or goes: new kernels
        _drop_native(d)
        d.kernel_lib._destroy()
        d.kernel_lib = None
    _point(d, kop)
    if d.kernel_lib is None:
        d.kernel_lib = _register_kernels(d, kop, autograd)
        d.autograd = autograd
    if d.native is not None:  # its launches become native as this declaration's launchers are built
        from trt_kernels.eager import native

        native.reset(d.native, kop)
    kop.library = d.kernel_lib


def unregister(kop: KernelOp) -> None:
    """Point the op's kernels at :class:`UnregisteredOpError` until the name is declared again; what
    they held of ``kop`` is let go of."""
    d = _DEFS.get(kop.op_name)
    kop.library = None
    kop.cuda_impl = None
    if d is None:
        return
    d.why = f"{kop.op_name} was unregistered (trt_kernels.unregister). Fix: declare it again before calling it"
    for box in d.boxes.values():
        box[0] = None
    if d.native is not None:
        from trt_kernels.eager import native

        native.reset(d.native, None)
    release_dispatcher(d.shell, d.why, UnregisteredOpError)


def forget(op_name: str) -> None:
    """Remove ``op_name`` from torch (a first declaration that failed, or a schema that changed)."""
    d = _DEFS.pop(op_name, None)
    if d is not None:
        d.why = f"{op_name} was defined anew"
        for box in d.boxes.values():
            box[0] = None
        release_dispatcher(d.shell, d.why, UnregisteredOpError)
        _drop_native(d)
        for lib in (d.kernel_lib, d.def_lib):
            if lib is not None:
                lib._destroy()
