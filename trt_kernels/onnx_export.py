"""ONNX export of a model that calls trt_kernels ops: each op call becomes one TensorRT plugin node.

:func:`export` runs torch's ONNX exporter (the ``torch.export``-based one, ``dynamo=True``) with
:func:`translation_table` as its ``custom_translation_table``. Every call of a trt_kernels op
``ns::name`` becomes one ONNX node that TensorRT's ONNX parser (and TensorRT-RTX's, the same
parser) imports as the op's ONNX-route plugin, the creator ``name`` / namespace ``ns`` / version
``"2"`` that ``trt_kernels.plugins`` registers (version ``"1"`` is the op's plugin on the
Torch-TensorRT route):

- ``op_type`` = ``name``; ``domain`` = ``ns`` (opset version 1, listed in the model's
  ``opset_import``). The parser picks the importer by ``op_type`` alone and ignores the domain; the
  domain is the op namespace so that ONNX tools see ``(domain, op_type)`` as torch's ``ns::name``.
- inputs: the op's tensor arguments in declaration order (scalars removed); outputs: the op's
  outputs in declaration order, then each size the kernel writes (``ttk.Written``: the plugin's size
  tensors, unused in the graph).
- attributes: each scalar argument under its own name (``float`` -> ``FLOAT``, ``int`` -> ``INT``
  within int32, whatever its C type, ``bool`` -> ``INT`` 0/1: the parser turns them into ``kFLOAT32`` / ``kINT32``
  plugin fields), plus ``plugin_namespace = ns`` and ``plugin_version = "2"``, which the parser
  reads to find the creator in the plugin registry.

:func:`export` captures the model itself with ``torch.export.export(..., strict=False)`` and hands
the ExportedProgram to ``torch.onnx.export``: where torch.export refuses a trace, torch.onnx.export
would retry with the offending dynamic dims made static and then with ``strict=True``, and either
can return a model whose plugin attribute or input shape silently holds the example's value.

A scalar must be a constant in the traced graph (a plugin field is fixed when the engine is
built): one computed from a tensor (``.item()``) is an :class:`~trt_kernels.errors.OnnxExportError`
naming the op and the argument; one computed from a dynamic size specializes that size, which
torch.export reports as a constraint violation. Output shapes and
dtypes come from the exported program, i.e. from the op's fake impl: the graph's ``value_info``
and outputs carry them, with dynamic dims as ``dim_param`` (``torch.export.Dim`` names).

An op whose name is also a standard ONNX operator's (``Relu``, ``Add``, ...) draws a warning:
the parser tries its built-in importer for such an ``op_type`` first (newer parsers take the
plugin when a ``plugin_namespace`` attribute is present and the plugin is registered).

How the node is made: the exporter calls each translation function with the traced call's
arguments, tensors as onnxscript values and constants as Python values, while an onnxscript
evaluator of its own records the ONNX ops that the function calls. onnxscript finds an op of a
domain by looking its schema up in onnx's schema registry, and a custom domain has none there, so
the function calls an ``onnxscript.values.Op`` made with an ``onnx.defs.OpSchema`` of its own
(inputs, outputs and attributes of the op; not registered with onnx): torch up to at least 2.13
records such an op from its schema, newer onnxscript evaluators from the signature derived from it.

Why not the TorchScript exporter (``torch.onnx.export(..., dynamo=False)`` with
``torch.onnx.register_custom_op_symbolic``): it is deprecated (torch 2.9 made ``dynamo=True`` the
default; with ``dynamo=False`` torch 2.11 and 2.13 warn with a ``DeprecationWarning`` and keep
``register_custom_op_symbolic`` only as a deprecated name outside ``torch.onnx.__all__``); it
traces by running the model eagerly, and a trt_kernels op runs eagerly only on a CUDA device,
while the ``torch.export`` route traces with the ops' fake impls on any machine; and it takes
dynamic dims only as ``dynamic_axes`` names, not ``torch.export.Dim`` ranges.

Needs ``onnx`` and ``onnxscript`` (``pip install 'trt-kernels[onnx]'``), imported only when used:
onnxscript 0.6 or newer (torch 2.11's exporter imports ``onnxscript._framework_apis.torch_2_11``,
first shipped in 0.6.0), which itself needs onnx 1.17 or newer.

Example::

    import torch
    from trt_kernels import onnx_export

    # kern_ex::scale was declared (ttk.cuda_kernel_op("kern_ex::scale", spec)): (Tensor x, float alpha) -> Tensor
    class Model(torch.nn.Module):
        def forward(self, x):
            return torch.ops.kern_ex.scale(x, 2.0)

    batch = torch.export.Dim("batch")
    proto = onnx_export.export(Model().eval(), (torch.randn(4, 128),), "model.onnx",
                               dynamic_shapes=({0: batch},))
    node = proto.graph.node[0]
    # node.op_type == "scale", node.domain == "kern_ex", node.input == ["x"], attributes
    # alpha=2.0 (FLOAT), plugin_namespace="kern_ex", plugin_version="2"; the graph output is
    # float32 [batch, 128]. TensorRT's parser (trtexec --onnx=model.onnx, or
    # tensorrt.OnnxParser) builds it once the op's version-"2" plugin is registered.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import warnings
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Union

import torch

from trt_kernels import registry
from trt_kernels.dtypes import SUPPORTED, TENSOR_TYPES
from trt_kernels.errors import OnnxExportError
from trt_kernels.op import KernelOp
from trt_kernels.signature import scalar_c, scalar_len, scalar_type, scalar_type_name

#: the plugin version of an op's ONNX-route plugin (``"1"`` is its plugin on the Torch-TensorRT route)
PLUGIN_VERSION = "2"
#: the opset version of each op namespace's ONNX domain
DOMAIN_VERSION = 1
#: the default ``ai.onnx`` opset: the one torch's ONNX functions are written for, so torch converts
#: no versions, and one every TensorRT 10 / 11 and TensorRT-RTX parser imports
DEFAULT_OPSET = 18
INSTALL = "pip install 'trt-kernels[onnx]'"
#: node attributes the TensorRT ONNX parser reads itself: no scalar argument may take these names
RESERVED_ATTRIBUTES = ("plugin_namespace", "plugin_version", "tensorrt_plugin_shape_input_indices")

_INT32_MIN, _INT32_MAX = -(2 ** 31), 2 ** 31 - 1

OpRef = Union[str, KernelOp, "torch._ops.OpOverload", "torch._ops.OpOverloadPacket"]


def _import_onnx():
    try:
        import onnx
        import onnxscript
    except ImportError as e:
        raise ImportError(f"trt_kernels.onnx_export needs the onnx and onnxscript packages ({e}). "
                          f"Fix: {INSTALL}") from e
    return onnx, onnxscript


# ---------------- which ops ----------------


def _op_name(ref: Any) -> str:
    if isinstance(ref, str):
        return ref
    if isinstance(ref, KernelOp):
        return ref.op_name
    if isinstance(ref, torch._ops.OpOverloadPacket):
        ref = getattr(ref, "default", ref)
    if isinstance(ref, torch._ops.OpOverload):
        return ref.name()  # "ns::name" for the default overload
    raise TypeError(f"ops: {ref!r} is not an op. Fix: name ops as 'ns::name' strings (or give "
                    "torch.ops.ns.name / torch.ops.ns.name.default)")


def _selected(ops: Optional[Iterable[OpRef]]) -> List[KernelOp]:
    if ops is None:
        return registry.all_ops()
    if isinstance(ops, (str, KernelOp, torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
        ops = [ops]
    out: Dict[str, KernelOp] = {}
    for ref in ops:
        name = _op_name(ref)
        kop = registry.lookup(name)
        if kop is None:
            known = ", ".join(sorted(k.op_name for k in registry.all_ops())) or "none"
            raise OnnxExportError(
                f"{name}: not an op registered with trt_kernels (registered: {known}), so there is no plugin "
                "node to export it as. Fix: import the module that declares it (cuda_kernel_op, ptx_op or "
                "triton_kernel_op) before exporting, or leave it out of ops=")
        out[name] = kop
    return list(out.values())


# ---------------- one op's node ----------------


def _output_count(kop: KernelOp) -> int:
    returns = kop.overload._schema.returns
    kinds = [str(r.type) for r in returns]
    if not kinds or any(k != "Tensor" for k in kinds):
        raise OnnxExportError(
            f"{kop.op_name}: returns ({', '.join(kinds) or 'nothing'}); a plugin node has one output per "
            "returned Tensor. Fix: make the op (its meta_fn's annotation) return a Tensor or a tuple of Tensors")
    return len(kinds)


def _type_strings(dtypes: Iterable[torch.dtype]) -> List[str]:
    types = sorted({TENSOR_TYPES[d].onnx for d in dtypes if d in TENSOR_TYPES})
    return types or sorted({t.onnx for t in TENSOR_TYPES.values()})


def _node_schema(kop: KernelOp, onnx):
    """An ``onnx.defs.OpSchema`` of the op's plugin node (not registered with onnx)."""
    sig = kop.sig
    op_schema = onnx.defs.OpSchema
    formal, attribute, attr_type = op_schema.FormalParameter, op_schema.Attribute, op_schema.AttrType
    for s in sig.scalar_decls:
        if s.name in RESERVED_ATTRIBUTES:
            raise OnnxExportError(
                f"{kop.op_name}: scalar argument {s.name!r} has the name of an attribute the TensorRT ONNX parser "
                f"reads itself ({', '.join(RESERVED_ATTRIBUTES)}). Fix: rename the argument")
    n_out = _output_count(kop)

    constraints, inputs, outputs = [], [], []
    for i, d in enumerate(sig.tensor_decls):
        constraints.append((f"T_{d.name}",
                            _type_strings(list(dict.fromkeys(sig.in_dtypes(k)[i] for k in kop.dtypes))), ""))
        inputs.append(formal(d.name, f"T_{d.name}"))
    if sig.has_outputs:
        names = [o.name for o in sig.outputs]
        out_types = [set() for _ in names]
        for kdt in kop.dtypes:
            for j, dt in enumerate(sig.out_dtypes(sig.in_dtypes(kdt))):
                out_types[j].add(dt)
    else:  # meta_fn says the outputs: any dtype
        names = [f"output{j}" for j in range(n_out)]
        out_types = [SUPPORTED] * n_out
    for j, (name, dts) in enumerate(zip(names, out_types)):
        constraints.append((f"O{j}", _type_strings(dts), ""))
        outputs.append(formal(name, f"O{j}"))

    kinds = {float: attr_type.FLOAT, int: attr_type.INT, bool: attr_type.INT}
    lists = {float: attr_type.FLOATS, int: attr_type.INTS}  # a tuple input: one list attribute
    attributes = [attribute(s.name, (kinds if scalar_len(s) is None else lists)[scalar_type(s)],
                            f"{scalar_type_name(s)} argument") for s in sig.scalar_decls]
    attributes += [attribute("plugin_namespace", attr_type.STRING, "the plugin creator's namespace"),
                   attribute("plugin_version", attr_type.STRING, "the plugin creator's version")]
    return op_schema(kop.name, kop.namespace, DOMAIN_VERSION,
                     f"trt_kernels op {kop.op_name} as its TensorRT plugin (version {PLUGIN_VERSION})",
                     inputs=inputs, outputs=outputs, type_constraints=constraints, attributes=attributes)


def _attribute(kop: KernelOp, decl, value: Any) -> Union[int, float, List[Union[int, float]]]:
    """The node attribute for scalar argument ``decl`` traced as ``value`` (a list for a tuple input)."""
    n = scalar_len(decl)
    if n is None:
        return _attribute_one(kop, decl, value, scalar_type(decl), repr(decl.name))
    if not isinstance(value, (list, tuple)) or len(value) != n:
        raise OnnxExportError(
            f"{kop.op_name}: argument {decl.name!r} takes {n} {scalar_type(decl).__name__}s, traced as {value!r}"[:300]
            + f". Fix: pass a tuple or list of {n} Python {scalar_type(decl).__name__}s")
    return [_attribute_one(kop, decl, v, scalar_type(decl), f"{decl.name!r}[{k}]") for k, v in enumerate(value)]


def _attribute_one(kop: KernelOp, decl, value: Any, t: type, label: str) -> Union[int, float]:
    """One node attribute value (an element of a list attribute) of type ``t``."""
    is_number = isinstance(value, (bool, int, float))
    if t is float and is_number and not isinstance(value, bool):
        return float(value)
    if t is int and is_number and isinstance(value, int) and not isinstance(value, bool):
        if not _INT32_MIN <= value <= _INT32_MAX:
            st = scalar_c(decl)
            if st.code == "i":
                raise OnnxExportError(
                    f"{kop.op_name}: int argument {label} is {value}, outside int32: the kernel takes a C int and "
                    "TensorRT reads the attribute as an INT32 plugin field. Fix: pass a value in int32 range")
            raise OnnxExportError(
                f"{kop.op_name}: int argument {label} is {value}, outside int32: the kernel takes a {st.c}, but "
                "TensorRT's ONNX parser reads an int node attribute as an INT32 plugin field, so this route cannot "
                "carry it exactly. Fix: pass a value in int32 range, or build the engine through Torch-TensorRT "
                "(trt_kernels' converter gives such a value to the plugin's JIT impl exactly)")
        return int(value)
    if t is bool and is_number and value in (0, 1) and not isinstance(value, float):
        return int(value)
    if is_number:
        raise OnnxExportError(
            f"{kop.op_name}: {t.__name__} argument {label} was traced as {type(value).__name__} {value!r}. "
            f"Fix: pass a Python {t.__name__}")
    raise OnnxExportError(
        f"{kop.op_name}: {t.__name__} argument {label} is not a constant in the traced graph: it is computed "
        f"while the model runs ({value!r}), e.g. from a tensor's value (.item()) or from a dynamic size. The TensorRT "
        f"plugin takes {decl.name!r} as a node attribute, fixed when the engine is built. Fix: pass a Python "
        f"{t.__name__} constant (e.g. a module attribute set before export), "
        "or make the value a tensor input of the op")


def _translation(kop: KernelOp, node_op) -> Callable:
    """The exporter's translation function of ``kop``: records the op's plugin node."""
    sig = kop.sig
    n = len(sig.inputs)
    first_default = n - len(kop.defaults)
    params, annotations = [], {}
    for i, (d, kind) in enumerate(zip(sig.inputs, sig.arg_kinds)):
        default = kop.defaults[i - first_default] if i >= first_default else inspect.Parameter.empty
        params.append(inspect.Parameter(d.name, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=default))
        if kind == "scalar":  # torch reads an annotated float/int/bool (Sequence[int/float]) parameter as an attribute
            annotations[d.name] = scalar_type(d) if scalar_len(d) is None else Sequence[scalar_type(d)]
    signature = inspect.Signature(params)

    def translate(*args, **kwargs):
        try:
            bound = signature.bind(*args, **kwargs)
        except TypeError as e:
            raise OnnxExportError(f"{kop.op_name}: the traced call does not match the op's arguments "
                                  f"{signature} ({e})") from None
        bound.apply_defaults()
        values = bound.arguments
        tensors = [values[d.name] for d in sig.tensor_decls]
        attributes = {s.name: _attribute(kop, s, values[s.name]) for s in sig.scalar_decls}
        out = node_op(*tensors, **attributes, plugin_namespace=kop.namespace, plugin_version=PLUGIN_VERSION)
        if not sig.counts:
            return out
        # the node's last outputs are the sizes the kernel writes (the plugin's size tensors), which the op does not
        # return: the graph leaves them unused
        kept = list(out)[:len(sig.returned)]
        return kept[0] if len(kept) == 1 else tuple(kept)

    translate.__signature__ = signature  # type: ignore[attr-defined]
    translate.__annotations__ = annotations
    translate.__name__ = translate.__qualname__ = f"{kop.namespace}__{kop.name}"
    translate.__doc__ = (f"{kop.op_name} -> one node {kop.namespace}::{kop.name} "
                         f"(TensorRT plugin version {PLUGIN_VERSION})")
    return translate


# ---------------- public ----------------


def translation_table(ops: Optional[Iterable[OpRef]] = None) -> Dict[Any, Callable]:
    """``{OpOverload: translation function}`` for every op registered with trt_kernels (or the ops
    named in ``ops``: ``'ns::name'`` strings, ``torch.ops.ns.name(.default)`` or ``KernelOp``s), for
    ``torch.onnx.export(..., dynamo=True, custom_translation_table=...)``. Each function emits one
    plugin node (see the module docstring). :class:`~trt_kernels.errors.OnnxExportError` for a name
    not registered with trt_kernels; ImportError without onnx / onnxscript."""
    onnx, onnxscript = _import_onnx()
    table: Dict[Any, Callable] = {}
    for kop in _selected(ops):
        if kop.sig.mutated:  # named: refused; among all ops: left out (the exporter then names it, see export)
            if ops is None:
                continue
            raise OnnxExportError(
                f"{kop.op_name}: it writes {', '.join(repr(kop.sig.tensor_names[t]) for t in kop.sig.mutated)} in "
                "place, which the ONNX route does not export (an ONNX node has no in-place outputs). Fix: declare "
                "a fresh output for the result, or keep the op out of the exported graph")
        if onnx.defs.has(kop.name):
            warnings.warn(
                f"{kop.op_name}: its ONNX node's op_type {kop.name!r} is also a standard ONNX operator's name, and "
                "TensorRT's ONNX parser may import it with its built-in importer instead of the plugin. Fix: declare "
                "the op under another name", stacklevel=2)
        node_op = onnxscript.values.Op(onnxscript.values.Opset(kop.namespace, DOMAIN_VERSION), kop.name,
                                       _node_schema(kop, onnx))
        table[kop.overload] = _translation(kop, node_op)
    return table


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _untranslated(exc: BaseException, table: Dict[Any, Callable]) -> List[str]:
    """trt_kernels ops left out of ``table`` that the exporter found no function for."""
    messages = [str(e) for e in _chain(exc) if "No ONNX function found" in str(e)]
    out = []
    for kop in registry.all_ops():
        pattern = rf"(?<![\w.]){re.escape(kop.namespace)}(\.|::){re.escape(kop.name)}(?!\w)"
        if kop.overload not in table and any(re.search(pattern, m) for m in messages):
            out.append(kop.op_name)
    return out


_SYM_SCALAR = re.compile(r"(\w+)::(\w+)\(\) Expected a value of type '(\w+)' for argument '(\w+)' but instead "
                         r"found type '(Sym\w+)'")


def _symbolic_scalar(exc: BaseException) -> Optional[str]:
    """The message for a trt_kernels op's scalar argument that torch.export saw as symbolic (``.item()``)."""
    for e in _chain(exc):
        m = _SYM_SCALAR.search(str(e))
        if m and registry.lookup(f"{m.group(1)}::{m.group(2)}") is not None:
            ns, name, typ, arg, sym = m.groups()
            return (f"{ns}::{name}: {typ} argument {arg!r} is not a constant in the traced graph: "
                    f"torch.export traced it as a {sym} computed while the model runs (e.g. from a tensor's value, "
                    f".item()). The TensorRT plugin takes {arg!r} as a node attribute, fixed when the engine is built. "
                    f"Fix: pass a Python {typ} constant (e.g. a module attribute set before export), or make the value "
                    "a tensor input of the op")
    return None


def _capture(model: Any, args: Any, dynamic_shapes: Any, model_kwargs: Any):
    """``torch.export.export(..., strict=False)`` of ``model``; an ExportedProgram is taken as it is.

    Captured here rather than by torch.onnx.export, whose fallbacks return a wrong model for a
    plugin attribute without a word: where torch.export refuses a trace because a dim marked dynamic
    was specialized, torch.onnx.export retries with that dim made static, then with
    ``strict=True``, which can bake a scalar computed from a dynamic size (``x.shape[0] * 1.0``) into
    the graph as the example's value while the dim stays dynamic (torch 2.13)."""
    if isinstance(model, torch.export.ExportedProgram):
        return model
    if not isinstance(model, torch.nn.Module):
        raise TypeError(f"export: model must be a torch.nn.Module or a torch.export.ExportedProgram, "
                        f"got {type(model).__name__}")
    config = torch.fx.experimental._config
    # as torch.onnx.export captures: a dynamic dim whose example size is 0 or 1 stays dynamic
    patch = (config.patch(backed_size_oblivious=True) if hasattr(config, "backed_size_oblivious")
             else contextlib.nullcontext())
    if dynamic_shapes is not None:  # torch.onnx.export's axis names: a string marks a dynamic dim
        dynamic_shapes = torch.utils._pytree.tree_map(
            lambda d: torch.export.Dim.DYNAMIC if isinstance(d, str) else d, dynamic_shapes)
    with patch:
        return torch.export.export(model, tuple(args), kwargs=model_kwargs, dynamic_shapes=dynamic_shapes,
                                   strict=False)


def export(model: Any, args: Any = (), path: Any = None, *, dynamic_shapes: Any = None,
           ops: Optional[Iterable[OpRef]] = None, opset_version: int = DEFAULT_OPSET, verbose: bool = False,
           **options: Any):
    """Export ``model`` (an ``nn.Module`` or a ``torch.export.ExportedProgram``) to ONNX with each
    trt_kernels op call as one TensorRT plugin node; returns the ``onnx.ModelProto`` and writes it to
    ``path`` if given.

    ``args`` and ``dynamic_shapes`` are ``torch.export``'s (e.g. ``dynamic_shapes=({0:
    torch.export.Dim("batch")},)``); ``ops`` limits the ops translated (default: every op registered
    with trt_kernels); ``opset_version`` is the ``ai.onnx`` opset; other keyword arguments go to
    ``torch.onnx.export`` (``input_names``, ``output_names``, ``kwargs``, ``external_data``,
    ``optimize``, ``report``, ...; a ``custom_translation_table`` there is merged over this
    module's). Raises :class:`~trt_kernels.errors.OnnxExportError` for a scalar argument that is not
    a constant, an op left out of ``ops``, or ``dynamo=False``; torch.export's and torch's ONNX
    exporter's errors otherwise. The model is captured with ``torch.export.export(..., strict=False)``
    before ONNX export, so a dim marked dynamic that the model specializes is torch.export's error
    (``torch.onnx.export`` would instead fall back to a static dim or to a strict trace).
    """
    _import_onnx()
    if options.pop("dynamo", True) is not True:
        raise OnnxExportError(
            "export: dynamo=False (the TorchScript exporter) is not supported: it is deprecated, and it runs the model "
            "eagerly, which a trt_kernels op does only on a CUDA device. Fix: leave dynamo out (torch.export traces "
            "the ops with their fake impls)")
    table = translation_table(ops)
    table.update(options.pop("custom_translation_table", None) or {})
    if isinstance(args, torch.Tensor):
        args = (args,)
    try:
        program = _capture(model, args, dynamic_shapes, options.pop("kwargs", None))
        # dynamic_shapes again: torch.onnx.export names the model's dynamic axes after its Dims and strings
        program = torch.onnx.export(program, (), path, dynamo=True, custom_translation_table=table,
                                    dynamic_shapes=dynamic_shapes, opset_version=opset_version, verbose=verbose,
                                    **options)
    except Exception as e:
        ours = next((c for c in _chain(e) if isinstance(c, OnnxExportError)), None)
        if ours is not None:  # torch wraps it in two layers of its own: raise the one that names the op
            raise OnnxExportError(str(ours)) from None
        symbolic = _symbolic_scalar(e)
        if symbolic is not None:
            raise OnnxExportError(symbolic) from e
        left_out = _untranslated(e, table)
        if left_out:
            raise OnnxExportError(
                f"{', '.join(left_out)}: called by the model but left out of ops=, so the exporter has no ONNX "
                "function for it. Fix: add it to ops=, or leave ops out to translate every registered op") from e
        raise
    return program.model_proto
