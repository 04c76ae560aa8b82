"""Public entry points: :func:`cuda_kernel_op` (CUDA C++ source), :func:`triton_kernel_op` (a
``@triton.jit`` function) and :func:`ptx_op` (PTX)."""

from __future__ import annotations

import importlib.util
import inspect
import logging
import sys
from typing import Any, Callable, Optional, Sequence, Union

import torch

from trt_kernels import registry
from trt_kernels._record import Frozen, plain_record
from trt_kernels.errors import SpecError
from trt_kernels.library import definition
from trt_kernels.library import schema as torch_schema
from trt_kernels.op import KernelOp
from trt_kernels.sources.cuda_params import check_pointees, kernel_params
from trt_kernels.sources.cuda_source import CudaSource
from trt_kernels.spec import Geometry, InputDecl, KernelSpec, OutputDecl, ScalarInput
from trt_kernels.validate import parse_op_name, validate_signature

_LOG = logging.getLogger("trt_kernels")
_REPORTED_MISSING: list = []
_FOUND: dict = {}  # top-level module name -> installed (asked once per process)


def cuda_kernel_op(
    op_name: str,
    spec: KernelSpec,
    *,
    meta_fn: Optional[Callable[..., Any]] = None,
    eager_fn: Optional[Callable[..., Any]] = None,
    aot_fn: Optional[Callable[..., Any]] = None,
    schema: Optional[str] = None,
    backward: Optional[Callable[..., Any]] = None,
    setup_context: Optional[Callable[..., Any]] = None,
    supports_dynamic_shapes: bool = True,
    requires_output_allocator: bool = False,
    priority: Any = None,
    capability_validator: Optional[Callable[..., Any]] = None,
):
    """Declare a CUDA C++ kernel as a PyTorch op (and, where TensorRT is importable, a TensorRT
    plugin with a Torch-TensorRT converter).

    The spec is validated before anything compiles or registers (:class:`SpecError` names the
    op, the field and the fix). Then the kernel is compiled (or found in the cache) and its
    parameter list checked against the spec, for the compile arch: ``spec.arch_override``, else
    ``TRT_KERNELS_ARCH``, else the visible GPU's, else sm_90 on a machine without a GPU (one rule,
    :func:`trt_kernels.sources.nvrtc.compile_arch`). Launching on a GPU of another arch compiles
    for that arch at the first launch.

    Overrides: ``meta_fn`` replaces the derived fake impl (``spec.outputs`` may then be omitted,
    in which case ``eager_fn`` is required); ``eager_fn`` replaces the derived CUDA launch
    (``spec.geometry`` may then be omitted); ``aot_fn(inputs, outputs, tactic) ->
    (trtp.KernelLaunchParams, trtp.SymIntExprs)`` replaces the derived TensorRT launch.

    Autograd: ``backward(ctx, *grad_outputs)`` returns one gradient per input (``None`` for
    scalars and inputs without one); it may call other declared ops. ``setup_context(ctx,
    inputs, output)`` defaults to saving the tensor inputs then the outputs
    (``ctx.saved_tensors``) and the scalars (``ctx.scalars``, a dict). Registered with
    ``torch.library.register_autograd``. An op without ``backward`` keeps the fast path
    and raises when called in grad mode with an input that requires grad (its gradient
    would otherwise be silently missing); under ``torch.compile`` torch only warns, at the backward.

    Returns the op (``torch.ops.<ns>.<name>``).
    """
    ov = Overrides(meta_fn=meta_fn, eager_fn=eager_fn, aot_fn=aot_fn, backward=backward, setup_context=setup_context,
                   schema=schema, supports_dynamic_shapes=supports_dynamic_shapes,
                   options=_options(requires_output_allocator, priority, capability_validator))
    ov.check(op_name)
    if not isinstance(spec, KernelSpec):
        raise SpecError(f"{op_name}: spec: expected a trt_kernels.KernelSpec, got {type(spec).__name__}. "
                        "Fix: pass ttk.KernelSpec(...)")
    CudaSource.check(op_name, spec)
    params = kernel_params(spec.kernel_source, spec.kernel_name)
    label = f"kernel {spec.kernel_name!r}"
    sig = validate_signature(op_name, inputs=spec.inputs, outputs=spec.outputs, extras=spec.extras,
                             geometries=[spec.geometry], dtypes=spec.dtypes, type_params=spec.type_params,
                             checks=spec.checks, has_meta_fn=meta_fn is not None,
                             has_eager_fn=eager_fn is not None, params=spec.params,
                             kernel_params=None if params is None else [name for _, name in params],
                             kernel_label=label)
    if params is not None and sig.has_outputs:
        check_pointees(op_name, sig, params, label)
    return _declare(sig, CudaSource(sig, spec), ov)


def ptx_op(
    op_name: str,
    ptx: Union[bytes, str],
    kernel_name: str,
    meta_fn: Optional[Callable[..., Any]] = None,
    eager_fn: Optional[Callable[..., Any]] = None,
    aot_fn: Optional[Callable[..., Any]] = None,
    *,
    inputs: Optional[Sequence[Union[InputDecl, ScalarInput]]] = None,
    outputs: Optional[Sequence[OutputDecl]] = None,
    extras: Sequence[Any] = (),
    geometry: Optional[Geometry] = None,
    checks: Sequence[Any] = (),
    schema: Optional[str] = None,
    supports_dynamic_shapes: bool = False,
    requires_output_allocator: bool = False,
    priority: Any = None,
    capability_validator: Optional[Callable[..., Any]] = None,
):
    """Declare an op from precompiled PTX (Triton output, a PTX file...): NVRTC is skipped.

    ``kernel_name`` is the PTX symbol (the lowered name for C++ kernels). Either give
    ``meta_fn``/``eager_fn``/``aot_fn`` (as ``torch_tensorrt.kernels.ptx_op``), or the same
    declarative ``inputs``/``outputs``/``extras``/``geometry`` (and ``checks``) as :class:`KernelSpec`; then the
    PTX entry is checked against them and the eager launch loads the PTX through the driver's
    JIT. ``inputs`` default to the tensor/float/int/bool parameters of ``meta_fn``.
    """
    ov = Overrides(meta_fn=meta_fn, eager_fn=eager_fn, aot_fn=aot_fn, schema=schema,
                   supports_dynamic_shapes=supports_dynamic_shapes,
                   options=_options(requires_output_allocator, priority, capability_validator))
    ov.check(op_name)
    from trt_kernels.sources.ptx_source import PtxSource

    ptx = PtxSource.check(op_name, ptx)
    if inputs is None and meta_fn is not None:
        inputs = _inputs_from_signature(op_name, meta_fn)
    sig = validate_signature(op_name, inputs=inputs, outputs=outputs, extras=extras, geometries=[geometry],
                             checks=checks, has_meta_fn=meta_fn is not None, has_eager_fn=eager_fn is not None)
    return _declare(sig, PtxSource(sig, ptx, kernel_name), ov)  # compiles nothing: the PTX is checked


def triton_kernel_op(
    op_name: str,
    kernel: Any,
    *,
    inputs: Sequence[Union[InputDecl, ScalarInput]],
    outputs: Sequence[OutputDecl],
    grid: Any,
    extras: Sequence[Any] = (),
    constexprs: Optional[dict] = None,
    num_warps: int = 4,
    num_stages: int = 3,
    tactics: Sequence[Any] = (),
    dtypes: Optional[Sequence[Any]] = None,
    type_params: Optional[Sequence[str]] = None,
    checks: Sequence[Any] = (),
    arch_override: Optional[str] = None,
    compile_options: Optional[dict] = None,
    schema: Optional[str] = None,
    backward: Optional[Callable[..., Any]] = None,
    setup_context: Optional[Callable[..., Any]] = None,
    supports_dynamic_shapes: bool = True,
    requires_output_allocator: bool = False,
    priority: Any = None,
    capability_validator: Optional[Callable[..., Any]] = None,
    params: Optional[Sequence[str]] = None,
    min_arch: Optional[str] = None,
):
    """Declare a ``@triton.jit`` kernel as a PyTorch op (and, where TensorRT is importable, a TensorRT
    plugin with a Torch-TensorRT converter): :func:`cuda_kernel_op` with Triton as the source.

    ``inputs``/``outputs``/``extras`` are the :class:`KernelSpec` vocabulary; the kernel's
    non-constexpr parameters are matched to them by name (a tensor ``x`` may be named ``x`` or ``x_ptr``;
    name extras with :class:`SizeArg`), in the kernel's own order; ``params`` lists the declared names in
    the kernel's order where they differ from its parameters' names. ``grid``: 1 to 3 size
    expressions, or ``grid(meta)`` returning them (``meta`` holds the config's constexprs and
    ``num_warps``); the block is ``num_warps * 32``. ``constexprs``: values of the kernel's
    ``tl.constexpr`` parameters. ``tactics``: more :class:`TritonConfig` objects for TensorRT to time
    (eager uses the first config). ``dtypes``: one kernel is compiled per dtype (the ``T`` of the
    tensors without a fixed dtype); with ``type_params=("T", "W")``, ``dtypes`` lists combinations and
    inputs name their parameter (``InputDecl("w", dtype="W")``), as in :class:`KernelSpec`. ``checks``:
    size relations between inputs (:class:`SameShape`, :class:`SameDim`). ``compile_options``: other
    ``triton.compile`` options (e.g. ``{"ptx_version": 87}``). ``min_arch``: as :class:`KernelSpec`'s (the
    lowest arch the TensorRT AOT plugin's PTX must load on, or the kernel's own minimum). Needs
    ``pip install 'trt-kernels[triton]'``.
    """
    from trt_kernels.sources.triton_source import declare

    ov = Overrides(backward=backward, setup_context=setup_context, schema=schema,
                   supports_dynamic_shapes=supports_dynamic_shapes,
                   options=_options(requires_output_allocator, priority, capability_validator))
    ov.check(op_name)
    sig, source = declare(op_name, kernel, inputs=inputs, outputs=outputs, grid=grid, extras=extras,
                          constexprs=constexprs, num_warps=num_warps, num_stages=num_stages, tactics=tactics,
                          dtypes=dtypes, type_params=type_params, checks=checks, arch_override=arch_override,
                          compile_options=compile_options, params=params, min_arch=min_arch)
    return _declare(sig, source, ov)


def _options(requires_output_allocator: bool, priority: Any, capability_validator: Any) -> dict:
    """The converter's registration options, as Torch-TensorRT names them."""
    return dict(requires_output_allocator=requires_output_allocator, priority=priority,
                capability_validator=capability_validator)


@plain_record
class Overrides(Frozen):
    """What the user gave beside the kernel and its signature, the same record for every source: functions
    that replace a derived part (``meta_fn``, ``eager_fn``, ``aot_fn``), autograd, the schema, and the
    converter's options."""

    meta_fn: Optional[Callable[..., Any]] = None
    eager_fn: Optional[Callable[..., Any]] = None
    aot_fn: Optional[Callable[..., Any]] = None
    backward: Optional[Callable[..., Any]] = None
    setup_context: Optional[Callable[..., Any]] = None
    schema: Optional[str] = None
    supports_dynamic_shapes: bool = True
    options: Optional[dict] = None

    def __init__(self, meta_fn: Optional[Callable[..., Any]] = None, eager_fn: Optional[Callable[..., Any]] = None,
                 aot_fn: Optional[Callable[..., Any]] = None, backward: Optional[Callable[..., Any]] = None,
                 setup_context: Optional[Callable[..., Any]] = None, schema: Optional[str] = None,
                 supports_dynamic_shapes: bool = True, options: Optional[dict] = None) -> None:
        self.__dict__.update(meta_fn=meta_fn, eager_fn=eager_fn, aot_fn=aot_fn, backward=backward,
                             setup_context=setup_context, schema=schema,
                             supports_dynamic_shapes=supports_dynamic_shapes, options=options)

    def check(self, op_name: str) -> None:
        """The op name, and the functions (each callable; ``setup_context`` only with ``backward``)."""
        parse_op_name(op_name)
        fns = dict(meta_fn=self.meta_fn, eager_fn=self.eager_fn, aot_fn=self.aot_fn, backward=self.backward,
                   setup_context=self.setup_context,
                   capability_validator=(self.options or {}).get("capability_validator"))
        for field_name, fn in fns.items():
            if fn is not None and not callable(fn):
                raise SpecError(f"{op_name}: {field_name}: expected a function, got {type(fn).__name__} {fn!r}"[:300]
                                + f". Fix: pass a function, or leave {field_name} out")
        if self.setup_context is not None and self.backward is None:
            raise SpecError(f"{op_name}: setup_context: given without backward. "
                            "Fix: pass backward= too, or drop setup_context")


def _declare(sig, source, ov: Overrides):
    """The one declaration pipeline every source ends in: the op record, its build (now, or deferred), and
    its registration."""
    if sig.mutated and ov.backward is not None:
        raise SpecError(f"{sig.op_name}: backward: given for an op that writes "
                        f"{', '.join(repr(sig.tensor_names[t]) for t in sig.mutated)} in place, whose gradient "
                        "autograd cannot record. Fix: drop backward (call the op under torch.no_grad(), as optimizer "
                        "steps run), or declare a fresh output instead of mutated=True")
    kop = KernelOp(sig=sig, source=source, meta_fn=ov.meta_fn, eager_fn=ov.eager_fn, aot_fn=ov.aot_fn,
                   backward=ov.backward, setup_context=ov.setup_context,
                   supports_dynamic_shapes=ov.supports_dynamic_shapes, options=dict(ov.options or {}))
    done = "compiling deferred" if registry.compile_deferred() else kop.prepare()  # errors surface here
    _LOG.debug("%s: %s", sig.op_name, done)
    return _register(kop, ov.schema)


def _inputs_from_signature(op_name: str, fn: Callable[..., Any]):
    out = []
    for p in inspect.signature(fn).parameters.values():
        ann = p.annotation
        if ann in (torch.Tensor, "torch.Tensor", "Tensor"):
            out.append(InputDecl(p.name))
        elif ann in (float, int, bool) or ann in ("float", "int", "bool"):
            default = None if p.default is inspect.Parameter.empty else p.default  # kept, as in the schema
            out.append(ScalarInput(p.name, {"float": float, "int": int, "bool": bool}.get(ann, ann), default))
        else:
            raise SpecError(f"{op_name}: meta_fn parameter {p.name!r} has annotation {ann!r}. "
                            "Fix: annotate it torch.Tensor, float, int or bool, or pass inputs=[...]")
    return out


def _register(kop: KernelOp, schema: Optional[str]):
    """Make ``kop`` the op of its name: everything that can refuse it is asked first (its schema, the
    TensorRT side), so a refused re-declaration leaves the earlier one working; if torch refuses
    the new kernels, the earlier declaration is put back."""
    op = kop.op_name
    if schema is not None and not isinstance(schema, str):
        raise SpecError(f"{op}: schema: expected a str such as '(Tensor x) -> Tensor', got {type(schema).__name__}. "
                        "Fix: pass the schema text, or leave schema out to derive it from the spec")
    kop.schema = schema if schema is not None else torch_schema.build_schema(kop)
    if schema is None and kop.sig.has_outputs:  # derived from the spec, whose validation checked what it says
        kop.defaults = torch_schema.spec_defaults(kop)
    else:  # the user's, or the meta function's: checked
        torch_schema.check_schema(kop)
    with registry.name_lock(op):
        old = registry.lookup(op)
        registry.check_declaration(kop, old)
        try:
            definition.register(kop)
        except Exception:
            if old is not None:
                definition.register(old)  # the earlier declaration keeps working
            else:
                definition.forget(op)
            raise
        if old is not None:
            _LOG.info("%s: re-declared (the previous declaration is replaced)", op)
        registry.add(kop)
    _init_tensorrt_side()
    return getattr(getattr(torch.ops, kop.namespace), kop.name)


def _installed(name: str) -> bool:
    """Whether ``name`` is importable, asked without importing it."""
    if name in sys.modules:
        return True
    found = _FOUND.get(name)
    if found is None:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        _FOUND[name] = found
    return found


def _init_tensorrt_side() -> None:
    """Register plugins and converters where TensorRT is usable (once; later ops via the registry).

    ``trt_kernels.plugins`` (and through it tensorrt) is imported only where both tensorrt and
    torch_tensorrt are installed: elsewhere declaring an op imports nothing of the TensorRT side.
    """
    missing = [n for n in ("tensorrt", "torch_tensorrt") if not _installed(n)]
    if missing:
        if missing != _REPORTED_MISSING:
            _REPORTED_MISSING[:] = missing
            _LOG.info("trt_kernels: ops are eager-only: %s is not installed (pip install 'trt-kernels[tensorrt]')",
                      " and ".join(missing))
        return
    try:
        from trt_kernels.plugins import init
    except ImportError as e:  # a core installed without its plugins package
        _LOG.info("trt_kernels: TensorRT side unavailable: %s", e)
        return
    init()


def unregister(op_name: str) -> None:
    """Remove an op declared with trt_kernels: its kernels leave torch, and until the name is declared
    again, calling it raises :class:`~trt_kernels.errors.UnregisteredOpError`.

    Example::

        ttk.unregister("my_kernels::sigmoid")
    """
    with registry.name_lock(op_name):
        kop = registry.remove(op_name)
        if kop is None:
            from trt_kernels.errors import UnknownOpError

            names = [k.op_name for k in registry.all_ops()]
            declared = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "") or "none"
            raise UnknownOpError(f"{op_name!r} was not registered with trt_kernels (or was unregistered already). Fix: "
                                 f"unregister a name declared in this process (declared now: {declared})")
        definition.unregister(kop)
