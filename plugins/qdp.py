"""A TensorRT quickly-deployable plugin for each op, from the op's launch plan.

For op ``ns::name`` this registers with ``tensorrt.plugin``:

- the descriptor (``trtp.register``): output shapes and dtypes = the plan's output
  expressions evaluated with TensorRT shape expressions;
- ``trtp.aot_impl``: (lowered kernel name, PTX, ``KernelLaunchParams``, ``SymIntExprs``)
  from the same plan; scalar inputs are baked into the extra arguments (a float as its
  IEEE-754 bit pattern, an int range-checked, a bool as 0/1, each a ``SymInt32``) ahead of
  the extras, where the kernel ABI puts them, so engines with scalar ops run without Python;
- ``trtp.impl`` (JIT): the same kernel through the eager launcher on TensorRT's stream,
  for override-path ops without an ``aot_fn`` and as a fallback;
- ``trtp.autotune``: the dtype combinations the spec supports and one tactic per
  candidate block.

Functions are built with explicit ``__signature__``s (inputs as ``trtp.TensorDesc``,
then the scalar attributes, then ``outputs``/``tactic``/``stream``), which NVIDIA's
validators read with ``inspect.signature``. (No ``from __future__ import annotations`` here:
NVIDIA's validators need real annotation objects.)

Extra arguments are all ``trtp.SymInt32`` (``tensorrt.plugin``'s build step rejects
``SymInt8``/``SymInt16``: asserted on the pinned 10.15.1 and 11.0), so a bool scalar travels as a
``SymInt32`` 0/1; with the kernel's parameter a 1-byte C ``bool``, the launch reads its low byte (little-endian).
"""

import inspect
import struct
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

from trt_kernels.dtypes import INT_RANGES, TENSOR_TYPES, c_scalar_text, trt_name
from trt_kernels.errors import InputError, UnregisteredOpError
from trt_kernels.expr import Const, SizesEvaluator, binop, evaluate
from trt_kernels.op import KernelOp, TensorRTSide
from trt_kernels.plugins.shapes import TrtEvaluator, autotune_type_string, bound_shapes, torch_dtype, trt_dtype
from trt_kernels.signature import scalar_c, scalar_items, scalar_len, scalar_type, scalar_type_name, scalar_value


# Scalar inputs are plugin attributes annotated as one-element numpy arrays (float32 / int32), not
# as ``float`` / ``int``: TensorRT's tensorrt.plugin before 11.2 turns a field back into an attribute
# with ``float(field.data)`` / ``int(field.data)`` on a one-element array, which numpy >= 2.4 refuses
# ("only 0-dimensional arrays can be converted to Python scalars"), so a plugin with a float or int
# attribute cannot be created on TensorRT 10.15 (torch 2.11's) or 11.0/11.1 with a current numpy.
# Array attributes take another path there (``field.data.astype(dtype)``) in every version. bool
# attributes are unaffected (``bool()`` of a one-element array is allowed) and stay ``bool``.
# The annotation is a class, not ``numpy.typing.NDArray[...]``: TensorRT's validator before 11.2 calls
# ``issubclass(annotation, TensorDesc)`` on every parameter without checking for a class first, which
# raises TypeError for a generic alias on Python 3.12 (seen over NVIDIA's 10.15.1 layer on the H100).
# The classes carry ``__origin__`` / ``__args__`` as ``NDArray[dtype]`` does, which is what every
# version's ``_is_numpy_array`` / ``_infer_numpy_type`` read.
def _array_annotation(np_type) -> type:
    name = f"{np.dtype(np_type).name.capitalize()}Attribute"
    return type(name, (np.ndarray,), {"__origin__": np.ndarray, "__args__": (Any, np.dtype[np_type]),
                                      "__module__": __name__,
                                      "__doc__": f"A plugin attribute: a one-element {np.dtype(np_type).name} array."})


Float32Attribute = _array_annotation(np.float32)
Int32Attribute = _array_annotation(np.int32)
Int64Attribute = _array_annotation(np.int64)
_ATTR_ARRAY = {float: (np.float32, Float32Attribute), int: (np.int32, Int32Attribute)}
# an int scalar's array by its C type's struct code: a C int as int32; an unsigned or 64-bit one as int64, the
# widest attribute type tensorrt.plugin has (it has no unsigned ones: a uint64 over 2**63-1 travels as its bits)
_INT_ARRAY = {"i": (np.int32, Int32Attribute), "I": (np.int64, Int64Attribute), "q": (np.int64, Int64Attribute),
              "Q": (np.int64, Int64Attribute)}


def _array_of(decl):
    """``(numpy type, annotation)`` of a scalar input's attribute array (``decl``: a ScalarInput, or the Python
    type of one with its default C type), or None (a bool)."""
    if not hasattr(decl, "py_type"):
        return _ATTR_ARRAY.get(decl[0] if isinstance(decl, tuple) else decl)
    if scalar_type(decl) is int:
        return _INT_ARRAY[scalar_c(decl).code]
    return _ATTR_ARRAY.get(scalar_type(decl))


def attr_annotation(decl):
    """The plugin attribute annotation of a scalar input (``decl``: its ScalarInput; its Python type alone
    stands for the default C type). A tuple ``(int, n)`` is an int array attribute of ``n`` elements, as
    TensorRT's own samples pass ``pads``; an int whose C type is unsigned or 64-bit is an int64 array."""
    entry = _array_of(decl)
    return entry[1] if entry is not None else getattr(decl, "py_type", decl)


def attr_value(decl, value, op: str = ""):
    """A plugin attribute (a one-element array, or a Python scalar from a caller) as ``decl.py_type``;
    a tuple input's (an array of its length, or a tuple / list) as a tuple. An array of a 64-bit unsigned
    input holds its bits (an int64 array): read back as the unsigned value."""
    unsigned64 = scalar_type(decl) is int and scalar_c(decl).code == "Q" and isinstance(value, np.ndarray)
    if scalar_len(decl) is not None:
        out = scalar_value(op or "plugin", decl, value)
        return tuple(v % 2**64 for v in out) if unsigned64 else out
    if isinstance(value, np.ndarray):
        if value.size != 1:
            raise InputError(f"scalar {decl.name!r}: expected one value, got an array of {value.size}")
        value = value.reshape(-1)[0].item()
    value = decl.py_type(value)
    return value % 2**64 if unsigned64 else value


def attr_field(decl, value):
    """What the converter passes to ``trtp.op.ns.name(..., name=value)`` for a scalar input; :class:`InputError`
    for a value its C type cannot hold."""
    entry = _array_of(decl)
    if entry is None:
        return decl.py_type(value)
    np_type = entry[0]
    items = [value] if scalar_len(decl) is None else list(value)
    if scalar_type(decl) is int:
        st = scalar_c(decl)
        lo, hi = INT_RANGES[st.code]
        for k, v in enumerate(items):
            if not lo <= int(v) <= hi:
                label = repr(decl.name) if scalar_len(decl) is None else f"{decl.name!r}[{k}]"
                raise InputError(f"scalar {label} = {v} does not fit {c_scalar_text(st)}")
        items = [int(v) - 2**64 if int(v) > 2**63 - 1 else int(v) for v in items]  # a uint64's bits
    return np.array(items, dtype=np_type)


def float_bits(value: float) -> int:
    """The IEEE-754 single-precision bit pattern of ``value`` as a signed 32-bit int."""
    return struct.unpack("<i", struct.pack("<f", float(value)))[0]



class _DeviceArray:
    """A CUDA array interface (version 3) written out by hand, for the bytes of a plugin tensor."""

    __slots__ = ("__cuda_array_interface__",)

    def __init__(self, desc: Dict[str, Any]):
        self.__cuda_array_interface__ = desc


def device_tensor(t, trt, shape: Optional[Sequence[int]] = None) -> torch.Tensor:
    """A torch view of a ``tensorrt.plugin`` Tensor's device memory (JIT ``impl``). A bfloat16 tensor has
    no CUDA array interface (NVIDIA's Tensor refuses: the interface has no type code for it), so its
    bytes are viewed as int16 and reinterpreted; the launch itself is on TensorRT's stream. ``shape``: view
    the memory as this contiguous shape instead (a data-dependent output, whose shape holds -1 where the
    kernel decides the size: its buffer holds the bound)."""
    if t.dtype != trt.DataType.BF16 and shape is None:
        return torch.as_tensor(t, device="cuda")
    dtype = torch_dtype(trt, t.dtype)
    kind = TENSOR_TYPES[dtype]
    if shape is None:
        dims, strides = tuple(int(d) for d in t.shape), tuple(int(s) for s in t.strides)
    else:
        dims = tuple(int(d) for d in shape)
        strides = torch.empty(dims, device="meta").stride()
    item = torch.empty((), dtype=dtype, device="meta").element_size()
    desc = {"shape": dims, "typestr": kind.typestr, "data": (int(t.data_ptr), False),
            "strides": tuple(item * s for s in strides), "version": 3, "stream": None}
    out = torch.as_tensor(_DeviceArray(desc), device="cuda")
    return out if kind.view is dtype else out.view(dtype)


class PluginBuilder:
    """The four plugin functions of one op, against a given ``tensorrt`` / ``tensorrt.plugin``."""

    def __init__(self, kop: KernelOp, trt, trtp, arch: Optional[str] = None):
        self.op_name = kop.op_name
        # the arch the AOT impl embeds PTX for (None: the op's rule, KernelOp.aot_target: the engine's hardware
        # compatibility level, TRT_KERNELS_MIN_ARCH, the declaration's min_arch, else the building GPU's)
        self.arch = arch
        self.kop = kop  # the current declaration of the op (a re-declaration replaces it; unregistering clears it)
        self.trt = trt
        self.trtp = trtp
        sig = kop.sig
        self.tensor_names = list(sig.tensor_names)
        self.scalar_decls = list(sig.scalar_decls)
        self.decision = kop.aot
        self.has_aot = self.decision.aot
        self.mutated = list(sig.mutated)
        if sig.has_outputs:  # the fresh outputs, then one output per input written in place (its new value)
            self.n_out = len(sig.outputs) + len(self.mutated)
        else:
            self.n_out = len(kop.meta_outputs())

    @property
    def kop(self) -> KernelOp:
        kop = self._kop
        if kop is None:
            raise UnregisteredOpError(f"{self.op_name} was unregistered (trt_kernels.unregister); its TensorRT "
                                      "plugin has no kernel. Fix: declare the op again before building an engine")
        return kop

    @kop.setter
    def kop(self, kop: Optional[KernelOp]) -> None:
        self._kop = kop

    @property
    def kop_or_none(self) -> Optional[KernelOp]:
        return self._kop

    def unsupported_outputs(self) -> Optional[str]:
        """Why TensorRT cannot hold this op's plugin layer, or None: a plugin output of dtype bool or
        uint8 (TensorRT's IPluginV3OneBuild::getOutputDataTypes: "DataType::kBOOL and
        DataType::kUINT8 are not supported")."""
        kop = self.kop
        for kdt in kop.dtypes:
            outs = self.io_dtypes(kdt)[len(kop.sig.tensor_decls):]
            names = ([o.name for o in kop.sig.outputs] + [kop.sig.tensor_names[t] for t in self.mutated]
                     if kop.sig.has_outputs else [f"output {i}" for i in range(len(outs))])
            for name, dt in zip(names, outs):
                if dt in (torch.bool, torch.uint8):
                    return (f"output {name!r} is {str(dt).replace('torch.', '')}, which TensorRT plugins cannot "
                            "produce (only bool/uint8-free plugin outputs are supported); the op stays in PyTorch "
                            "inside Torch-TensorRT graphs")
        return None

    def io_dtypes(self, kdt, ranks=None) -> list:
        """The plugin's input then output dtypes at kernel dtype ``kdt``: the op's, then (an input written in
        place is also an output of the plugin) each mutated input's."""
        io = self.kop.io_dtypes(kdt, ranks)
        return io + [io[t] for t in self.mutated]

    def signature(self) -> tuple:
        """What TensorRT's plugin registry fixed when the plugin was registered: the descriptor's inputs
        and attributes, the number of outputs, whether there is an AOT implementation, and the inputs
        written in place (each one an output too)."""
        scalars = tuple((d.name, scalar_type_name(d), scalar_c(d).c) for d in self.scalar_decls)
        return tuple(self.tensor_names), scalars, self.n_out, self.has_aot, tuple(self.mutated)

    # ----- signatures -----
    def _params(self, tensor_ann, extra: List[Tuple[str, Any]]) -> List[inspect.Parameter]:
        P = inspect.Parameter
        ps = [P(n, P.POSITIONAL_OR_KEYWORD, annotation=tensor_ann) for n in self.tensor_names]
        ps += [P(d.name, P.POSITIONAL_OR_KEYWORD, annotation=attr_annotation(d)) for d in self.scalar_decls]
        ps += [P(n, P.POSITIONAL_OR_KEYWORD, annotation=a) for n, a in extra]
        return ps

    def _outs_ann(self, t):
        return Tuple[tuple([t] * self.n_out)] if self.n_out > 1 else Tuple[t]

    def _make(self, name: str, body, params, ret):
        sig = inspect.Signature(params, return_annotation=ret)

        def fn(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)
            return body(bound.arguments)

        fn.__name__ = fn.__qualname__ = f"{self.kop.name}_{name}"
        fn.__signature__ = sig
        fn.__annotations__ = {p.name: p.annotation for p in params}
        fn.__annotations__["return"] = ret
        return fn

    # ----- shared pieces -----
    def _kernel_dtype(self, inputs):
        """The kernel dtype (a declared combination, with several type parameters) of the inputs' dtypes."""
        got = [torch_dtype(self.trt, desc.dtype) for desc in inputs]
        return self.kop.sig.declared_kernel_dtype(got, "TensorRT chose")

    def scalars(self, a: Dict[str, Any]) -> List[Any]:
        """The scalar attributes' values (TensorRT gives them when it builds), in declaration order."""
        return [attr_value(d, a[d.name], self.op_name) for d in self.scalar_decls]

    def output_shapes(self, inputs, scalars=()) -> List[Tuple[Any, torch.dtype, Any]]:
        """``(shape expressions or None for 'like input k', dtype, like)`` per output; ``scalars``: the
        attributes' values, constants in the shape expressions that read them. A size the kernel writes
        (:class:`~trt_kernels.spec.Written`) is a ``trtp.size_tensor`` output (its shape: the size tensor),
        and its expression the written axis of each output it sizes."""
        ranks = tuple(len(d.shape_expr) for d in inputs)
        kdt = self._kernel_dtype(inputs)
        ev = TrtEvaluator(self.trtp, inputs, scalars)
        if self.kop.sig.has_outputs:
            plan = self.kop.plan(ranks)
            dts = self.kop.sig.io_dtypes(kdt)[len(inputs):]
            sizes = {}
            for i, (o, dt) in enumerate(zip(plan.outputs, dts)):
                if o.bounds:  # TensorRT: the size's autotune value and upper bound, expressions of the inputs
                    upper, opt = (self._shape_expr(evaluate(e, ev)) for e in o.bounds)
                    sizes[i] = self.trtp.size_tensor(opt, upper)
                    sizes[i].dtype = trt_dtype(self.trt, dt)
            out = []
            for i, (o, dt) in enumerate(zip(plan.outputs, dts)):
                if i in sizes:
                    out.append((sizes[i], dt, None))
                    continue
                shape = None if o.like is not None else [evaluate(e, ev) for e in o.shape]
                if o.written >= 0:
                    shape[o.written] = sizes[o.count].expr()
                out.append((shape, dt, o.like))
            return out
        return [([evaluate(e, ev) for e in m.shape], m.dtype, None) for m in self.kop.meta_outputs(ranks)]

    def _shape_expr(self, v):
        return self.trtp.ShapeExpr(v) if isinstance(v, int) else v

    # ----- the four functions -----
    def descriptor(self):
        trtp = self.trtp
        ret = trtp.TensorDesc if self.n_out == 1 else Tuple[tuple([trtp.TensorDesc] * self.n_out)]

        def body(a: Dict[str, Any]):
            inputs = [a[n] for n in self.tensor_names]
            outs = []
            for shape, dt, like in self.output_shapes(inputs, self.scalars(a)):
                if getattr(shape, "is_size_tensor", False):  # a trtp.size_tensor: an output of its own
                    outs.append(shape)
                    continue
                desc = inputs[like if like is not None else 0].like()
                if shape is not None:
                    se = trtp.ShapeExprs(len(shape))
                    for i, s in enumerate(shape):
                        se[i] = s
                    desc.shape_expr = se
                desc.dtype = trt_dtype(self.trt, dt)
                outs.append(desc)
            # an input the kernel writes in place: an output like it, in a buffer of its own. Not
            # ``inputs[t].aliased()``: TensorRT fails the build of a plugin with aliased I/O unless the builder
            # config enables PreviewFeature.ALIASED_PLUGIN_IO_10_03, which Torch-TensorRT does not (``impl``
            # copies the input into this output and runs the kernel on it)
            outs += [inputs[t].like() for t in self.mutated]
            return outs[0] if self.n_out == 1 else tuple(outs)

        return self._make("desc", body, self._params(trtp.TensorDesc, []), ret)

    def aot_impl(self):
        trtp = self.trtp
        ret = Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]
        params = self._params(trtp.TensorDesc, [("outputs", self._outs_ann(trtp.TensorDesc)), ("tactic", int)])

        def body(a: Dict[str, Any]):
            inputs = [a[n] for n in self.tensor_names]
            kdt = self._kernel_dtype(inputs)
            kop = self.kop
            tactic = a["tactic"] if a["tactic"] and a["tactic"] >= 1 else 1
            arch = kop.aot_target(self.arch)[0]
            if kop.aot_fn is not None:
                symbol, ptx = kop.aot_kernel(kdt, tactic, arch)
                launch, extra = kop.aot_fn(inputs, a["outputs"], a["tactic"])
                return symbol, ptx, launch, extra
            recipe = kop.recipe(kdt, tuple(len(d.shape_expr) for d in inputs), tactic, arch)
            plan = recipe.plan
            scalars = self.scalars(a)
            ev = TrtEvaluator(trtp, inputs, scalars)
            # the PTX may assume what holds at every launch of the engine: aligned pointers, and the ints known
            # now (a scalar baked in, a size of static shapes) that are multiples of 16
            static = SizesEvaluator([tuple(_build_constant(x) for x in d.shape_expr) for d in inputs], scalars)
            key = recipe.aot_key(scalars, [_static_value(e, static) for e in plan.extras])
            symbol, ptx = kop.aot_kernel(kdt, tactic, arch, key)
            need = kop.aot_code(kdt, tactic, arch, key)[1].shared_mem  # the specialized code's own
            launch = trtp.KernelLaunchParams()
            launch.grid_x, launch.grid_y, launch.grid_z = (evaluate(e, ev) for e in plan.grid)
            launch.block_x, launch.block_y, launch.block_z = plan.block
            launch.shared_mem = evaluate(binop("max", plan.shared_mem, Const(need)), ev)
            # the arguments between the input and the output pointers, in the kernel's order: each scalar
            # baked in (a tuple input as its elements), each size a SymInt32 expression
            decls = self.scalar_decls
            args = recipe.aot_extras(
                lambda s, k: self.scalar_arg(decls[s], scalar_items(decls[s], scalars[s])[k], k),
                lambda j: trtp.SymInt32(evaluate(plan.extras[j], ev)))
            extra = trtp.SymIntExprs(len(args))
            for i, arg in enumerate(args):
                extra[i] = arg
            return symbol, ptx, launch, extra

        return self._make("aot_impl", body, params, ret)

    def scalar_arg(self, decl, value, index: int = 0):
        """One scalar (element ``index`` of a tuple input) as the extra argument the kernel reads: a float as its
        IEEE-754 bits, a bool as 0/1, an int as its 32 bits (a 64-bit parameter is narrowed in the PTX);
        :class:`InputError` for an int that 32 bits cannot carry exactly (never a truncated value)."""
        trtp = self.trtp
        t = scalar_type(decl)
        label = repr(decl.name) if scalar_len(decl) is None else f"{decl.name!r}[{index}]"
        if t is float:
            try:
                return trtp.SymInt32(float_bits(value))
            except (OverflowError, struct.error):
                raise InputError(f"{self.kop.op_name}: scalar {label} = {value!r} "
                                 "does not fit a 32-bit C float") from None
        if t is bool:
            return trtp.SymInt32(1 if value else 0)
        from trt_kernels.recipe import aot_int

        st = scalar_c(decl)
        v = int(value)
        lo, hi = INT_RANGES[st.code]
        if not lo <= v <= hi:
            raise InputError(f"{self.kop.op_name}: scalar {label} = {v} does not fit {c_scalar_text(st)}")
        bits = aot_int(st.code, v)
        if bits is None:
            raise InputError(
                f"{self.kop.op_name}: scalar {label} = {v} ({c_scalar_text(st)}) does not fit the 32 bits of "
                "TensorRT's AOT extra arguments (SymInt32), and a truncated value would be wrong. Fix: add the layer "
                "with aot=False (trt_kernels' converter does so for such values): the JIT impl launches the exact "
                "value")
        return trtp.SymInt32(bits)

    def impl(self):
        trtp = self.trtp
        params = self._params(trtp.Tensor, [("outputs", self._outs_ann(trtp.Tensor)), ("stream", int), ("tactic", int)])

        def body(a: Dict[str, Any]):
            from trt_kernels.eager.cuda_kernel import launch_into

            kop = self.kop
            stream = int(a["stream"])
            # an output whose size the kernel writes comes with -1 there: its buffer holds the bound's shape
            bounds = bound_shapes(kop, [tuple(int(d) for d in a[n].shape) for n in self.tensor_names],
                                  self.scalars(a)) if kop.sig.counts else {}
            outs = [device_tensor(o, self.trt, bounds.get(i)) for i, o in enumerate(a["outputs"])]
            fresh = len(outs) - len(self.mutated)
            # an input written in place runs in its output's buffer, holding a copy of the input (TensorRT's
            # plugin inputs are read-only)
            in_place = dict(zip(self.mutated, outs[fresh:]))
            if in_place:
                ts = [device_tensor(a[self.tensor_names[t]], self.trt) for t in in_place]
                with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=ts[0].device)):
                    for src, dst in zip(ts, in_place.values()):
                        dst.copy_(src)
            args = []
            si = iter(self.scalar_decls)
            t = 0
            for kind in kop.sig.arg_kinds:
                if kind == "tensor":
                    args.append(in_place[t] if t in in_place else device_tensor(a[self.tensor_names[t]], self.trt))
                    t += 1
                else:
                    d = next(si)
                    args.append(attr_value(d, a[d.name], kop.op_name))
            launch_into(kop, args, outs[:fresh], stream, tactic=int(a.get("tactic") or 1))

        return self._make("impl", body, params, None)

    def autotune(self):
        trtp = self.trtp
        params = self._params(trtp.TensorDesc, [("outputs", self._outs_ann(trtp.TensorDesc))])
        ret = List[trtp.AutoTuneCombination]

        def body(a: Dict[str, Any]):
            kop = self.kop
            ranks = tuple(len(a[n].shape_expr) for n in self.tensor_names)
            combos = [self.io_dtypes(d, ranks) for d in kop.dtypes]
            # TensorRT has no float64: advertise the combinations it can hold
            combos = [c for c in combos if all(trt_name(d) is not None for d in c)]
            if not combos:
                raise TypeError(f"{kop.op_name}: none of the kernel's dtypes exists in TensorRT")
            types = autotune_type_string(combos)
            # an AOT plugin offers the tactics its AOT launch can take (the op's decision names the others)
            tactics = list((self.has_aot and kop.aot.tactics) or range(1, kop.tactics + 1))
            return [trtp.AutoTuneCombination(types, "LINEAR", tactics)]

        return self._make("autotune", body, params, ret)


def _build_constant(x) -> Optional[int]:
    """The value of a ``trtp.ShapeExpr`` (a dimension) where it is a build-time constant, else None."""
    try:
        return int(x.constant_value()) if x.is_constant else None
    except RuntimeError:  # a fake expression (tensorrt.plugin raises for those)
        return None


def _static_value(e, static: SizesEvaluator) -> Optional[int]:
    """A size expression's value where every dimension it reads is static (None where one varies)."""
    try:
        return int(evaluate(e, static))
    except (TypeError, ZeroDivisionError):
        return None


def register_plugin(kop: KernelOp, trt, trtp, arch: Optional[str] = None) -> TensorRTSide:
    """Register the op's plugin with ``tensorrt.plugin``; returns what was registered. ``arch``: the arch
    its AOT impl embeds PTX for (default: :meth:`KernelOp.aot_target`'s rule)."""
    return register_plugin_builder(kop, trt, trtp, PluginBuilder(kop, trt, trtp, arch))[1]


def register_plugin_builder(kop: KernelOp, trt, trtp, b: Optional[PluginBuilder] = None
                            ) -> Tuple[PluginBuilder, TensorRTSide]:
    """:func:`register_plugin`, also returning the :class:`PluginBuilder` whose functions were registered
    (``b``, when the caller has built it already)."""
    b = b if b is not None else PluginBuilder(kop, trt, trtp)
    trtp.register(kop.op_name)(b.descriptor())
    trtp.autotune(kop.op_name)(b.autotune())
    trtp.impl(kop.op_name)(b.impl())
    if b.has_aot:
        trtp.aot_impl(kop.op_name)(b.aot_impl())
    return b, TensorRTSide(plugin="AOT (PTX embedded in the engine) + JIT fallback" if b.has_aot else
                           f"JIT (Python at run time): {b.decision.why}", aot=b.has_aot)

