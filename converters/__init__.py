"""The Torch-TensorRT side (``trt_kernels.converters``): one dynamo converter per op.

The converter turns the FX node's arguments into ITensors (tensor inputs) and plugin
attributes (scalar inputs), reordering when tensors and scalars interleave in the op's
signature, adds the op's QDP plugin layer (``aot=True`` whenever an AOT impl exists)
and returns one ITensor, or a tuple for multi-output ops.

An op that writes inputs in place never reaches a converter as itself: ``torch.export``
functionalizes it into ``torch.ops.higher_order.auto_functionalized_v2(op, **arguments,
_<name>_base_index=k, _all_bases=[...])``, whose results are the op's outputs then each base's new
value. Its converter is registered for that higher-order op and claims only the nodes that call
this op on whole tensors (:func:`in_place_call`); its plugin's outputs are the op's outputs then
each mutated input's new value (see :mod:`trt_kernels.plugins.qdp`). A node that writes into a
view (``_<name>_size``, ``_<name>_slice_dim`` ...) is left to PyTorch.

:func:`convert` holds the logic and takes its TensorRT pieces as arguments, so it is
tested without TensorRT; :func:`register_converter` binds it to Torch-TensorRT.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from trt_kernels.errors import InputError, UnregisteredOpError
from trt_kernels.registry import lookup
from trt_kernels.signature import scalar_len, scalar_value


def split_arguments(kop, args: Sequence[Any], kwargs: Dict[str, Any]) -> Tuple[List[Tuple[str, Any]], Dict[str, Any]]:
    """``([(tensor name, value) ...], {scalar name: python value})`` from FX args/kwargs in schema order."""
    decls = list(kop.sig.inputs)
    values = list(args)
    n_defaults = len(kop.defaults)
    for i, d in enumerate(decls[len(values):], start=len(values)):
        if d.name in kwargs:
            values.append(kwargs[d.name])
        elif i >= len(decls) - n_defaults:  # torch leaves out arguments equal to their schema defaults
            values.append(kop.defaults[i - (len(decls) - n_defaults)])
        else:
            raise InputError(f"{kop.op_name}: argument {d.name!r} is missing in the traced call")
    tensors, attrs = [], {}
    for d, kind, val in zip(decls, kop.sig.arg_kinds, values):
        if kind == "tensor":
            tensors.append((d.name, val))
        else:
            items = val if isinstance(val, (list, tuple)) else [val]
            if any(hasattr(v, "meta") or type(v).__name__ in ("ITensor", "Node") for v in items):
                raise InputError(
                    f"{kop.op_name}: scalar {d.name!r} is not a constant in the traced graph; TensorRT plugin "
                    "attributes are fixed when the engine is built. Fix: pass a Python number"
                    + ("" if scalar_len(d) is None else f" for each of its {scalar_len(d)} values")
                )
            attrs[d.name] = scalar_value(kop.op_name, d, val)
    return tensors, attrs


def check_sizes(kop, itensors: Sequence[Any]) -> None:
    """The spec's size checks (``SameShape`` / ``SameDim``) at the ITensors' shapes, where TensorRT knows
    them when the layer is added: a relation between static sizes that do not agree raises
    :class:`InputError`; one involving a dynamic size (-1) is left to the graph's fake impl, which
    recorded it when the model was traced."""
    if not kop.sig.checks:
        return
    try:
        shapes = [tuple(int(d) for d in t.shape) for t in itensors]
    except (AttributeError, TypeError, ValueError):  # no static shape to read here
        return
    from trt_kernels.expr import Dim, NumelOf, SizesEvaluator, evaluate, leaves
    from trt_kernels.plan import check_message

    plan = kop.plan(tuple(len(s) for s in shapes))

    def known(e) -> bool:
        for leaf in leaves(e):
            if isinstance(leaf, Dim) and shapes[leaf.tensor][leaf.axis] < 0:
                return False
            if isinstance(leaf, NumelOf) and any(d < 0 for d in shapes[leaf.tensor]):
                return False
        return True

    ev = SizesEvaluator(shapes)
    for c in plan.checks:
        for a, b in c.pairs:
            if not (known(a) and known(b)):
                continue
            try:
                va, vb = int(evaluate(a, ev)), int(evaluate(b, ev))
            except ZeroDivisionError:
                continue
            if va != vb:
                values = None
                if c.kind == "dims":
                    values = [evaluate(e, ev) if known(e) else "?" for e in (c.pairs[0][0], *(q for _, q in c.pairs))]
                shown = [tuple("?" if d < 0 else d for d in s) for s in shapes]
                raise InputError(check_message(plan, c, shown, kop.sig.tensor_names, values)
                                 + " (found when adding the TensorRT layer)")


def convert(kop, ctx, args, kwargs, name: str, *, get_trt_tensor: Callable, plugin_op: Callable, aot: bool,
            attr_field: Callable):
    """Add the op's plugin layer to ``ctx.net``; return its output ITensor(s). ``attr_field(decl, value)``:
    a scalar argument as the plugin's attribute (the plugin's side decides, :mod:`trt_kernels.plugins`)."""
    tensors, attrs = split_arguments(kop, args, kwargs)
    # the engine's hardware compatibility level, for the AOT code's arch (KernelOp.aot_target), which the AOT impl
    # reads later, inside TensorRT's build; an op whose code cannot target it is refused here, naming the fix
    from trt_kernels.sources.archs import level_of

    kop.tensorrt.level = level_of(getattr(ctx, "compilation_settings", None))
    if aot:
        kop.aot_target()
    decls = {d.name: d for d in kop.sig.scalar_decls}
    fields = {n: attr_field(decls[n], v) for n, v in attrs.items()}
    itensors = [get_trt_tensor(ctx, v, f"{name}_{n}") for n, v in tensors]
    check_sizes(kop, itensors)
    if aot:  # a 64-bit scalar whose value TensorRT's 32-bit AOT extra arguments cannot carry: the JIT impl
        from trt_kernels.recipe import aot_scalar_refusal

        why = aot_scalar_refusal(kop.sig, attrs)
        if why is not None:
            import logging

            logging.getLogger("trt_kernels").warning("%s: layer %s is added with the JIT impl (aot=False): %s",
                                                     kop.op_name, name, why)
            aot = False
    layer = ctx.net.add_plugin(plugin_op(*itensors, **fields), aot=aot)
    layer.name = name
    # the op's results: every plugin output but the size tensors of the sizes the kernel writes (the plugin's
    # last outputs; TensorRT keeps them as they shape the outputs that follow)
    n_out = layer.num_outputs - len(kop.sig.counts)
    outs = [layer.get_output(i) for i in range(n_out)]
    return outs[0] if n_out == 1 else tuple(outs)


def in_place_call(kop, kwargs: Dict[str, Any]) -> Optional[Tuple[Dict[str, Any], List[int]]]:
    """For an ``auto_functionalized_v2`` node calling ``kop``: ``(the op's arguments by name, the base
    index of each mutated input)``, with each mutated input bound to its base; None when the node is
    not one this converter can take (a mutated input that is a view of its base, two sharing one base,
    or an argument it does not know)."""
    names = [kop.sig.tensor_names[t] for t in kop.sig.mutated]
    bases = kwargs.get("_all_bases")
    index_keys = {f"_{n}_base_index": n for n in names}
    known = {d.name for d in kop.sig.inputs} | set(index_keys) | {"_all_bases"}
    if not isinstance(bases, (list, tuple)) or len(bases) != len(names) or set(kwargs) - known:
        return None
    at = [kwargs.get(f"_{n}_base_index") for n in names]
    if not all(isinstance(i, int) and 0 <= i < len(bases) for i in at) or len(set(at)) != len(at):
        return None
    call = {k: v for k, v in kwargs.items() if k in known and k not in index_keys and k != "_all_bases"}
    call.update({n: bases[i] for n, i in zip(names, at)})
    return call, at


def convert_in_place(kop, ctx, kwargs, name: str, **how):
    """The results of an ``auto_functionalized_v2`` node calling ``kop`` (``how``: :func:`convert`'s
    keyword arguments): the op's outputs (None when it returns nothing), then each base's new value,
    which is the plugin's output for the input written into it."""
    got = in_place_call(kop, kwargs)
    if got is None:
        raise InputError(f"{kop.op_name}: this call writes into a view of a tensor, which the TensorRT plugin cannot "
                         "take (the converter's validator should have left it to PyTorch)")
    call, at = got
    res = convert(kop, ctx, (), call, name, **how)
    outs = list(res) if isinstance(res, tuple) else [res]
    fresh = len(kop.sig.outputs)
    new = [None] * len(at)
    for out, i in zip(outs[fresh:], at):
        new[i] = out
    head = outs[:fresh] if fresh > 1 else [outs[0] if fresh else None]
    return (*head, *new)


def register_converter(kop, attr_field: Callable) -> None:
    """Register the dynamo converter for ``kop.overload`` (needs torch_tensorrt); ``attr_field``: see
    :func:`convert` (this package imports nothing of the plugins' side)."""
    import tensorrt.plugin as trtp
    from torch_tensorrt.dynamo.conversion import dynamo_tensorrt_converter
    from torch_tensorrt.dynamo.conversion.converter_utils import get_trt_tensor

    aot = bool(kop.tensorrt.aot)  # the plugin registered for the op has an AOT impl
    plugin_op = getattr(getattr(trtp.op, kop.namespace), kop.name)
    opts = {k: v for k, v in kop.options.items() if v is not None}
    opts.setdefault("supports_dynamic_shapes", kop.supports_dynamic_shapes)
    if kop.sig.counts:  # a size the kernel writes: the engine runs with Torch-TensorRT's output allocator
        opts["requires_output_allocator"] = True
    overload = kop.overload

    op_name = kop.op_name

    in_place = bool(kop.sig.mutated)
    del kop  # the converter outlives re-declarations: it converts with the op's current declaration

    def current():
        kop = lookup(op_name)
        if kop is None:
            raise UnregisteredOpError(f"{op_name} was unregistered (trt_kernels.unregister). "
                                      "Fix: declare it again before compiling a model that calls it")
        return kop

    how = dict(get_trt_tensor=get_trt_tensor, plugin_op=plugin_op, aot=aot, attr_field=attr_field)

    def converter(ctx, target, args, kwargs, name):
        return convert(current(), ctx, args, kwargs, name, **how)

    def converter_in_place(ctx, target, args, kwargs, name):
        return convert_in_place(current(), ctx, kwargs, name, **how)

    # the user's capability_validator, for an op written in place, sees the auto_functionalized_v2 node
    user_validator = opts.pop("capability_validator", None) if in_place else None

    def takes(node, settings=None) -> bool:
        kop = lookup(op_name)
        return (bool(node.args) and node.args[0] is overload and kop is not None
                and in_place_call(kop, dict(node.kwargs)) is not None
                and (user_validator is None or bool(user_validator(node, settings))))

    ns, name = op_name.split("::")
    converter.__name__ = f"convert_{ns}_{name}"
    converter_in_place.__name__ = f"convert_{ns}_{name}_in_place"
    if in_place:
        dynamo_tensorrt_converter(auto_functionalized_v2(), capability_validator=takes, **opts)(converter_in_place)
    else:
        dynamo_tensorrt_converter(overload, **opts)(converter)


def auto_functionalized_v2():
    """The higher-order op ``torch.export`` wraps a call of an op that writes inputs in place in."""
    import torch

    return torch.ops.higher_order.auto_functionalized_v2
