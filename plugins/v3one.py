"""The ONNX route: an ``IPluginV3One`` plugin per op, for TensorRT's and TensorRT-RTX's ONNX parser.

A model exported with :func:`trt_kernels.onnx_export.export` holds one node per op call whose
``op_type`` is the op's name and whose ``plugin_namespace`` / ``plugin_version`` attributes name
the creator registered here (version :data:`PLUGIN_VERSION`; version 1 is the op's quickly
deployable plugin on the Torch-TensorRT route). The parser asks the plugin registry for it, and
the builder then calls the plugin, which answers from the op's launch plan, as the QDP plugin does:

- ``get_output_shapes``: the plan's output expressions evaluated with the builder's real
  ``IExprBuilder`` (:class:`ExprBuilderEvaluator`), so a dynamic dimension stays symbolic;
- ``get_output_data_types`` / ``supports_format_combination``: the signature's dtype combinations
  (:meth:`Signature.io_dtypes`), LINEAR only; ``get_valid_tactics``: one per declared launch;
- scalar inputs are plugin fields, named as the op's arguments, serialized with the engine and
  read back by the creator;
- ``enqueue`` launches the kernel for the chosen tactic on TensorRT's stream through
  :func:`trt_kernels.eager.cuda_kernel.launch_into` (the CUBIN for the device, the eager argument layout).

TensorRT-RTX 1.7 has no ``add_plugin`` on its network and no quickly deployable plugins: the ONNX
parser is its only way in, and it takes ``IPluginV3One`` creators only. Its ONNX parser loads
``libtensorrt_rtx.so`` by that name, which the wheel does not ship (only ``libtensorrt_rtx.so.1``);
where the name does not resolve, parsing a plugin node aborts the process, so
:func:`register` refuses first (:func:`parser_problem` says what to do).

The plugin is Python: an engine holding it runs only in a process that registered it (this
package imported and :func:`register` called), unlike the AOT QDP plugin whose PTX is in the engine.
(No ``from __future__ import annotations``: the TensorRT bindings read nothing from annotations
here, but the classes are built against whichever ``tensorrt`` module is given.)
"""

import logging
import threading
import weakref
from typing import Any, Dict, List, Optional

import numpy as np
import torch

from trt_kernels.dtypes import TENSOR_TYPES
from trt_kernels.errors import InputError, UnregisteredOpError
from trt_kernels.expr import Evaluator, evaluate
from trt_kernels.onnx_export import PLUGIN_VERSION  # the version export() writes on every node
from trt_kernels.op import KernelOp
from trt_kernels.plugins.shapes import bound_shapes, torch_dtype, trt_dtype
from trt_kernels.registry import lookup
from trt_kernels.signature import scalar_items, scalar_len, scalar_type, scalar_value

_LOG = logging.getLogger("trt_kernels")
_LOCK = threading.RLock()
_CLASSES: Dict[int, tuple] = {}  # id(trt module) -> (plugin class, creator class)
# the plugin objects handed to TensorRT, weakly (the bindings keep what TensorRT holds alive): for checks
_KEEP: "weakref.WeakSet" = weakref.WeakSet()


class ExprBuilderEvaluator(Evaluator):
    """Evaluates plan expressions to TensorRT ``IDimensionExpr``s with the builder's ``IExprBuilder``."""

    def __init__(self, trt, builder, inputs):
        self.trt = trt
        self.builder = builder
        self.inputs = inputs
        self._ops = trt.DimensionOperation

    def _e(self, v):
        return self.builder.constant(int(v)) if isinstance(v, int) else v

    def _op(self, op, a, b):
        return self.builder.operation(op, self._e(a), self._e(b))

    def const(self, value: int):
        return int(value)

    def dim(self, tensor: int, axis: int):
        return self.inputs[tensor][axis]

    def numel(self, tensor: int):
        dims = self.inputs[tensor]
        out = self.builder.constant(1)
        for i in range(len(dims)):
            out = self._op(self._ops.PROD, out, dims[i])
        return out

    def add(self, a, b):
        return a + b if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.SUM, a, b)

    def sub(self, a, b):
        return a - b if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.SUB, a, b)

    def mul(self, a, b):
        return a * b if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.PROD, a, b)

    def floordiv(self, a, b):
        return a // b if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.FLOOR_DIV, a, b)

    def cdiv(self, a, b):
        return -(-a // b) if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.CEIL_DIV, a, b)

    def max(self, a, b):
        return max(a, b) if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.MAX, a, b)

    def min(self, a, b):
        return min(a, b) if isinstance(a, int) and isinstance(b, int) else self._op(self._ops.MIN, a, b)


def parser_problem(trt) -> Optional[str]:
    """Why this TensorRT's ONNX parser would abort the process on a plugin node, or None.

    TensorRT-RTX 1.7's parser opens ``libtensorrt_rtx.so`` by that name to add a plugin layer; the
    wheel ships ``libtensorrt_rtx.so.1`` only, and the failure ends in ``std::terminate``. The name is
    made to resolve in this process first (:mod:`trt_kernels.plugins.rtx_lib`); this says why not where
    that fails."""
    if not getattr(trt, "__name__", "").startswith("tensorrt_rtx"):
        return None
    from trt_kernels.plugins.rtx_lib import make_resolvable, rtx_library

    why = make_resolvable()
    if why is None:
        return None
    lib = rtx_library() or "libtensorrt_rtx.so.1 (tensorrt_rtx_libs)"
    return ("TensorRT-RTX's ONNX parser loads 'libtensorrt_rtx.so' by that name to add a plugin layer, and it "
            f"cannot be made to resolve in this process ({why}); parsing a plugin node would abort the process. "
            "Fix: before starting Python, make the name resolve, e.g. "
            f"mkdir -p ~/.trt_rtx_lib && ln -sf {lib} ~/.trt_rtx_lib/libtensorrt_rtx.so && "
            "export LD_LIBRARY_PATH=~/.trt_rtx_lib:$LD_LIBRARY_PATH")


def _fields_of(kop) -> List[tuple]:
    """(name, numpy type, Python type of an element, declaration) of each scalar input: the plugin's fields
    (a tuple input is one field of its length)."""
    return [(d.name, {float: np.float32, int: np.int32, bool: np.int32}[scalar_type(d)], scalar_type(d), d)
            for d in kop.sig.scalar_decls]


def _classes(trt):
    with _LOCK:
        made = _CLASSES.get(id(trt))
        if made is None:
            made = _CLASSES[id(trt)] = _make_classes(trt)
        return made


def _make_classes(trt):
    field_type = {float: trt.PluginFieldType.FLOAT32, int: trt.PluginFieldType.INT32,
                  bool: trt.PluginFieldType.INT32}

    class KernelPlugin(trt.IPluginV3, trt.IPluginV3OneCore, trt.IPluginV3OneBuild, trt.IPluginV3OneRuntime):
        """One op's plugin: everything is answered from the op's current declaration."""

        def __init__(self, op_name: str, scalars: Dict[str, Any], n_outputs: int, tactic: int = 1):
            # every base's __init__ first (without IPluginV3OneBuild's, TensorRT crashes in create_plugin)
            trt.IPluginV3.__init__(self)
            trt.IPluginV3OneCore.__init__(self)
            trt.IPluginV3OneBuild.__init__(self)
            trt.IPluginV3OneRuntime.__init__(self)
            ns, name = op_name.split("::")
            self.plugin_name, self.plugin_namespace, self.plugin_version = name, ns, PLUGIN_VERSION
            self.num_outputs = n_outputs
            self.timing_cache_id = ""
            self.op_name = op_name
            self.scalars = dict(scalars)
            self.tactic = tactic
            self.calls: List[tuple] = []  # what the builder asked, for checks (method, arguments)

        @property
        def kop(self):
            kop = lookup(self.op_name)
            if kop is None:
                raise UnregisteredOpError(f"{self.op_name} is not declared in this process: its plugin has no kernel. "
                                          "Fix: import the module that declares it before building or loading")
            return kop

        # ----- IPluginV3 / Core -----
        def get_capability_interface(self, type):
            return self

        def clone(self):
            c = KernelPlugin(self.op_name, self.scalars, self.num_outputs, self.tactic)
            c.calls = self.calls  # one log for a plugin and its clones
            _KEEP.add(c)
            return c

        # ----- IPluginV3OneBuild -----
        def _kdt(self, input_types):
            return self.kop.sig.declared_kernel_dtype([torch_dtype(trt, t) for t in input_types], "TensorRT gives")

        def get_output_data_types(self, input_types):
            kop = self.kop
            outs = kop.io_dtypes(self._kdt(input_types))[len(kop.sig.tensor_decls):]
            self.calls.append(("get_output_data_types", [str(t) for t in input_types]))
            return [trt_dtype(trt, d) for d in outs]

        def get_output_shapes(self, inputs, shape_inputs, expr_builder):
            kop = self.kop
            ranks = tuple(len(x) for x in inputs)
            ev = ExprBuilderEvaluator(trt, expr_builder, inputs)
            ev.scalars = [self.scalars[d.name] for d in kop.sig.scalar_decls]  # constants in the shapes
            out = []
            outs = kop.plan(ranks).outputs if kop.sig.has_outputs else kop.meta_outputs(ranks)

            def dim(v):
                return expr_builder.constant(v) if isinstance(v, int) else v

            # a size the kernel writes: a 0-D size-tensor output (IExprBuilder::declareSizeTensor with its
            # autotune value and upper bound), whose expression is the written axis of each output it sizes
            sizes = {i: expr_builder.declare_size_tensor(i, *(dim(evaluate(e, ev)) for e in o.bounds[::-1]))
                     for i, o in enumerate(outs) if getattr(o, "bounds", ())}
            for i, o in enumerate(outs):
                if i in sizes:
                    out.append(trt.DimsExprs())
                elif getattr(o, "like", None) is not None:
                    out.append(trt.DimsExprs(inputs[o.like]))
                else:
                    exprs = [dim(evaluate(e, ev)) for e in o.shape]
                    if getattr(o, "written", -1) >= 0:
                        exprs[o.written] = sizes[o.count]
                    out.append(trt.DimsExprs(exprs))
            self.calls.append(("get_output_shapes", ranks))
            return out

        def supports_format_combination(self, pos, in_out, num_inputs):
            desc = in_out[pos].desc
            if desc.format != trt.TensorFormat.LINEAR:
                return False
            kop = self.kop
            for kdt in kop.dtypes:
                try:
                    combo = [trt_dtype(trt, d) for d in kop.io_dtypes(kdt)]
                except TypeError:  # a dtype TensorRT does not have (float64)
                    continue
                if all(in_out[i].desc.type == combo[i] for i in range(pos + 1)):
                    return True
            return False

        def configure_plugin(self, inp, out):
            self.calls.append(("configure_plugin", [tuple(x.desc.dims) for x in inp], [tuple(x.min) for x in inp],
                               [tuple(x.max) for x in inp], [tuple(x.desc.dims) for x in out]))

        def get_workspace_size(self, inp, out):
            return 0

        def get_valid_tactics(self):
            tactics = list(range(1, self.kop.tactics + 1))
            self.calls.append(("get_valid_tactics", tactics))
            return tactics

        # ----- IPluginV3OneRuntime -----
        def set_tactic(self, tactic):
            self.tactic = max(int(tactic), 1)

        def on_shape_change(self, inp, out):
            pass

        def attach_to_context(self, context):
            return self.clone()

        def get_fields_to_serialize(self):
            kop = self.kop
            return trt.PluginFieldCollection([
                trt.PluginField(n, np.array(scalar_items(d, self.scalars[n]), dtype=npt), field_type[py])
                for n, npt, py, d in _fields_of(kop)])

        def enqueue(self, input_desc, output_desc, inputs, outputs, workspace, stream):
            from trt_kernels.eager.cuda_kernel import launch_into

            kop = self.kop
            tensors = iter(_device_tensor(trt, d, p) for d, p in zip(input_desc, inputs))
            args = [next(tensors) if k == "tensor" else scalar_value(self.op_name, s, self.scalars[s.name])
                    for k, s in zip(kop.sig.arg_kinds, kop.sig.inputs)]
            # an output whose size the kernel writes: its buffer holds the bound's shape
            scalars = [a for a, k in zip(args, kop.sig.arg_kinds) if k == "scalar"]
            bounds = (bound_shapes(kop, [tuple(int(x) for x in d.dims) for d in input_desc], scalars)
                      if kop.sig.counts else {})
            outs = [_device_tensor(trt, d, p, bounds.get(i)) for i, (d, p) in enumerate(zip(output_desc, outputs))]
            launch_into(kop, args, outs, int(stream), tactic=self.tactic)

    class KernelPluginCreator(trt.IPluginCreatorV3One):
        """The creator of one op's plugin (name = the op's name, namespace = its namespace)."""

        def __init__(self, kop):
            trt.IPluginCreatorV3One.__init__(self)
            self.op_name = kop.op_name
            self.name, self.plugin_namespace, self.plugin_version = kop.name, kop.namespace, PLUGIN_VERSION
            self.field_names = trt.PluginFieldCollection([
                trt.PluginField(n, np.array([], dtype=npt), field_type[py]) for n, npt, py, _ in _fields_of(kop)])

        def create_plugin(self, name, fc, phase):
            kop = lookup(self.op_name)
            if kop is None:
                raise UnregisteredOpError(f"{self.op_name} is not declared in this process. Fix: import the module "
                                          "that declares it before building or loading the engine")
            given = {f.name: np.asarray(f.data).reshape(-1) for f in fc}
            scalars = {}
            names = [d.name for d in kop.sig.inputs]
            for d in kop.sig.scalar_decls:
                v = given.get(d.name)
                size = scalar_len(d) or 1
                if v is None or v.size != size:
                    i = names.index(d.name) - (len(names) - len(kop.defaults))
                    if v is None and 0 <= i < len(kop.defaults):
                        scalars[d.name] = kop.defaults[i]
                        continue
                    raise InputError(f"{self.op_name}: plugin field {d.name!r} is missing or not {size} value"
                                     f"{'s' if size > 1 else ''} (fields given: {sorted(given)}). Fix: give the node "
                                     f"a {d.name} attribute")
                scalars[d.name] = scalar_value(self.op_name, d, v.tolist() if scalar_len(d) else v[0].item())
            n_out = len(kop.sig.outputs) or len(kop.meta_outputs())
            p = KernelPlugin(self.op_name, scalars, n_out)
            _KEEP.add(p)
            return p

    return KernelPlugin, KernelPluginCreator


class _DeviceArray:
    """A device pointer with ``__cuda_array_interface__``, for ``torch.as_tensor``."""

    def __init__(self, ptr: int, shape, typestr: str):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr, "data": (int(ptr), False),
                                         "version": 3, "strides": None}




def _device_tensor(trt, desc, ptr, shape=None) -> torch.Tensor:
    """A torch view of a TensorRT binding (no copy); ``shape``: view it as this shape instead of its own."""
    dt = torch_dtype(trt, desc.type)
    typestr, got = TENSOR_TYPES[dt].typestr, TENSOR_TYPES[dt].view
    t = torch.as_tensor(_DeviceArray(ptr, tuple(desc.dims) if shape is None else tuple(shape), typestr), device="cuda")
    return t if got is dt else t.view(dt)


class OnnxRoute:
    """The ONNX route: the ``IPluginV3One`` creator of each op, in the plugin registry of every ``tensorrt`` /
    ``tensorrt_rtx`` module it was given (:meth:`add`) or follows (:meth:`follow`: ops declared later too).

    A creator, once registered, answers from the op's current declaration (it looks the op up when
    TensorRT asks for a plugin), so a re-declaration needs nothing new and an unregistered op's
    creator refuses to make plugins (UnregisteredOpError): :meth:`check` and :meth:`forget` have
    nothing to do."""

    name = "onnx"

    def __init__(self):
        self._lock = threading.RLock()
        self._registered: Dict[tuple, Any] = {}  # (id(trt module), op name) -> the creator registered (kept alive)
        self._following: Dict[int, Any] = {}  # id(trt module) -> the module whose registry gets later ops too

    def follow(self, trt) -> None:
        """Register the creators of ops declared from now on in ``trt``'s plugin registry as well."""
        with self._lock:
            self._following.setdefault(id(trt), trt)

    def add(self, trt, kop: KernelOp) -> bool:
        """Register ``kop``'s creator in ``trt``'s plugin registry; False if it is there already. Raises
        RuntimeError where TensorRT refuses it (another creator holds the name)."""
        _, creator_cls = _classes(trt)
        key = (id(trt), kop.op_name)
        with self._lock:
            if key in self._registered:  # the creator answers from the op's current declaration
                return False
            creator = creator_cls(kop)
            if not trt.get_plugin_registry().register_creator(creator, kop.namespace):
                raise RuntimeError(f"{kop.op_name}: TensorRT refused to register its plugin creator "
                                   f"({kop.name}, version {PLUGIN_VERSION}, namespace {kop.namespace}): another "
                                   "creator holds that name. Fix: declare the op under a name no other plugin uses")
            self._registered[key] = (trt, creator)
            return True

    def check(self, kop: KernelOp, old: Optional[KernelOp]) -> None:
        """Nothing to refuse: the registered creator serves whichever declaration is current."""

    def register(self, kop: KernelOp) -> None:
        """Register ``kop``'s creator in every followed module; a refusal is logged (the eager op and the
        other routes stay usable), as :func:`register` would have raised it."""
        with self._lock:
            followed = list(self._following.values())
        for trt in followed:
            try:
                self.add(trt, kop)
            except Exception as e:  # noqa: BLE001 - report per op, keep the declaration
                _LOG.warning("trt_kernels: %s: IPluginV3One creator registration in %s failed: %s", kop.op_name,
                             getattr(trt, "__name__", "tensorrt"), e)

    def forget(self, kop: KernelOp) -> None:
        """Nothing to drop: TensorRT cannot unregister the creator, and it refuses to make plugins for an
        unregistered op (UnregisteredOpError) by itself."""

    def status(self, kop: KernelOp) -> str:
        with self._lock:
            where = sorted(getattr(trt, "__name__", "tensorrt") for (_, op), (trt, _) in self._registered.items()
                           if op == kop.op_name)
        if not where:
            return ("not registered (trt_kernels.plugins.v3one.register(trt) registers the IPluginV3One creators "
                    "for TensorRT's ONNX parser)")
        return f"IPluginV3One creator, version {PLUGIN_VERSION}, registered in {', '.join(where)}"


#: the ONNX route of this process (trt_kernels.plugins hooks it into the registry with the QDP route)
ROUTE = OnnxRoute()


def register(trt, ops: Optional[List[str]] = None) -> List[str]:
    """Register the ``IPluginV3One`` creator of every op declared so far (or of ``ops``) in ``trt``'s
    plugin registry (``trt`` is the ``tensorrt`` or ``tensorrt_rtx`` module); ops declared later are
    registered as they are declared. Returns the names registered now. Raises RuntimeError where
    this TensorRT's ONNX parser would abort the process on a plugin node (:func:`parser_problem`).

    Example::

        import tensorrt_rtx as trt
        from trt_kernels.plugins import v3one
        v3one.register(trt)          # then trt.OnnxParser(network, logger).parse_from_file(...)
    """
    from trt_kernels import registry

    problem = parser_problem(trt)
    if problem:
        raise RuntimeError(problem)
    done = [kop.op_name for kop in registry.all_ops() if (ops is None or kop.op_name in ops) and ROUTE.add(trt, kop)]
    if ops is None:  # once every op so far is in: later ones through the registry hooks (trt_kernels.plugins)
        ROUTE.follow(trt)
        done += [kop.op_name for kop in registry.all_ops() if ROUTE.add(trt, kop)]  # declared meanwhile
    return done
