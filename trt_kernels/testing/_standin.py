"""Scoped TensorRT emulation: NVIDIA's ``tensorrt.plugin`` over the emulated native module, inside a
``with`` block, and a one-plugin build that shows what TensorRT would learn from a plugin.

::

    with standin() as env:
        trtp = env.trtp                     # NVIDIA's tensorrt.plugin
        ...@trtp.register / @trtp.aot_impl ...
        res = env.build("ns::name", inputs=[("FP32", (4, 1000))], attrs={...})
        res.output_shapes, res.grid, res.extra_arg_values, res.ptx

Every ``tensorrt`` / ``tensorrt.*`` entry of ``sys.modules`` (and every module under the
``purge`` prefixes) is set aside on entry and restored on exit, so code outside the block
sees what it saw before; each block gets a fresh plugin registry.
"""

import contextlib
import dataclasses
import sys
import typing
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import bootstrap

_ACTIVE = False


def unavailable_reason() -> Optional[str]:
    """``None`` when :func:`standin` can work, else why not (the bindings wheel is missing)."""
    path, reason = bootstrap().find_bindings_dir()
    return None if path is not None else reason


def as_dtype(trt, x: Any):
    """``trt.DataType`` from a DataType, a name ("FP32", "float16", "BF16", ...) or a torch/numpy dtype."""
    if isinstance(x, trt.DataType):
        return x
    aliases = {"FP32": "FLOAT", "FLOAT32": "FLOAT", "FP16": "HALF", "FLOAT16": "HALF", "BFLOAT16": "BF16"}
    name = str(x).split(".")[-1].upper()
    name = aliases.get(name, name)
    if name not in trt.DataType.__members__:
        raise ValueError(f"unknown dtype {x!r}")
    return trt.DataType[name]


def evaluate(x: Any, bindings: Optional[Mapping[str, int]] = None) -> Any:
    """Concrete value(s) of a symbolic object at ``bindings`` (symbol name -> int): ints, dimension
    expressions, ``trtp`` ShapeExpr / SymInt32 / SymExprs / TensorDesc / KernelLaunchParams, and
    lists or tuples of those."""
    bindings = bindings or {}
    if isinstance(x, int):
        return int(x)
    names = {c.__name__ for c in type(x).__mro__}
    if "IDimensionExpr" in names:
        return x._evaluate(bindings)
    if "KernelLaunchParams" in names:
        return {k: evaluate(getattr(x, k), bindings) for k in _LAUNCH_FIELDS}
    if "TensorDesc" in names:
        return tuple(evaluate(list(x.shape_expr), bindings))
    if "SymExprs" in names or isinstance(x, (list, tuple)):
        return [evaluate(e, bindings) for e in x]
    if "SymExprImpl" in names:
        return evaluate(x.expr, bindings)
    if "SymIntExpr" in names:
        if getattr(x, "_is_dummy", False):
            raise ValueError(f"{x!r} is a fake ShapeExpr (made outside a shape-calculation context)")
        if x._expr is None:
            raise ValueError(f"{type(x).__name__} has no expression: it was built from a non-int value or outside "
                             "a shape-calculation context (SymIntExpr._exprBuilder was None)")
        return x._expr._evaluate(bindings)
    raise TypeError(f"cannot evaluate {type(x).__name__}")


_LAUNCH_FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")
_CUDA_LIMITS = {"grid_x": (1, 2**31 - 1), "grid_y": (1, 65535), "grid_z": (1, 65535), "block_x": (1, 1024),
                "block_y": (1, 1024), "block_z": (1, 64), "shared_mem": (0, 227 * 1024)}


@dataclasses.dataclass
class BuildResult:
    """What a TensorRT build learned from one plugin layer (the emulator's build, driven through
    NVIDIA's plugin class). Symbolic fields hold dimension expressions over symbols named
    ``in{i}[{j}]`` (input ``i``, axis ``j``); ``bindings`` maps them to the build's concrete sizes."""

    plugin: Any
    is_aot: bool
    input_dtypes: List[Any]
    input_shapes: List[Tuple[int, ...]]
    input_dim_exprs: List[List[Any]]
    output_dtypes: List[Any]
    output_shape_exprs: List[List[Any]]
    output_shapes: List[Tuple[int, ...]]
    combinations: List[List[Tuple[Any, Any]]]
    chosen_combination: int
    tactics: List[int]
    tactic: int
    bindings: Dict[str, int]
    engine: bytes = b""
    kernel_name: Optional[Union[str, bytes]] = None
    ptx: Optional[bytes] = None
    launch: Dict[str, Any] = dataclasses.field(default_factory=dict)
    extra_args: List[Tuple[Any, Any]] = dataclasses.field(default_factory=list)
    serialized_fields: Optional[List[Any]] = None
    #: AOT tactics the build skipped (their PTX did not load or their launch exceeds the device's
    #: limits somewhere in the profile), with the reason
    skipped_tactics: Dict[int, str] = dataclasses.field(default_factory=dict)
    _native: Any = None

    def evaluate(self, expr: Any, bindings: Optional[Mapping[str, int]] = None) -> Any:
        return evaluate(expr, self.bindings if bindings is None else bindings)

    def bindings_for(self, shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
        """Bindings for other concrete input shapes (same ranks): no rebuild needed."""
        out = {}
        for exprs, shape in zip(self.input_dim_exprs, shapes):
            if len(exprs) != len(shape):
                raise ValueError(f"rank mismatch: {len(shape)} vs {len(exprs)}")
            for e, v in zip(exprs, shape):
                out.update({s: int(v) for s in e._symbols()})
        return out

    @property
    def launch_values(self) -> Dict[str, int]:
        return {k: v._evaluate(self.bindings) for k, v in self.launch.items()}

    @property
    def extra_arg_values(self) -> List[int]:
        return [e._evaluate(self.bindings) for _, e in self.extra_args]

    @property
    def grid(self) -> Tuple[int, int, int]:
        v = self.launch_values
        return v["grid_x"], v["grid_y"], v["grid_z"]

    @property
    def block(self) -> Tuple[int, int, int]:
        v = self.launch_values
        return v["block_x"], v["block_y"], v["block_z"]

    def launch_at(self, shapes: Sequence[Sequence[int]]) -> Dict[str, int]:
        b = self.bindings_for(shapes)
        return {k: v._evaluate(b) for k, v in self.launch.items()}

    def extra_args_at(self, shapes: Sequence[Sequence[int]]) -> List[int]:
        b = self.bindings_for(shapes)
        return [e._evaluate(b) for _, e in self.extra_args]

    def enqueue(self, input_ptrs: Sequence[int], output_ptrs: Sequence[int], stream: int = 0) -> None:
        """JIT plugins only: ``enqueue`` as TensorRT calls it at run time (runs ``@trtp.impl``). Pointers
        pass through untouched; strides are contiguous row-major, in elements."""
        if self.is_aot:
            raise TypeError("AOT plugins have no Python enqueue; TensorRT launches the PTX itself")
        types = [t for t, _ in self.combinations[self.chosen_combination]]
        self._native._engine.run_jit(self.plugin, self.input_shapes, self.enqueue_output_shapes, types, input_ptrs,
                                     output_ptrs, stream)

    @property
    def enqueue_output_shapes(self) -> List[Tuple[int, ...]]:
        """The output shapes a JIT ``enqueue`` is given: -1 in a data-dependent axis (a size tensor's, known once
        the plugin has written it), the others as :attr:`output_shapes`."""
        return [tuple(-1 if e._size_tensors() else v for e, v in zip(ex, shape))
                for ex, shape in zip(self.output_shape_exprs, self.output_shapes)]

    def problems(self, shapes: Optional[Sequence[Sequence[int]]] = None) -> List[str]:
        """CUDA launch-limit and argument-range violations at the given (or the build's) shapes."""
        b = self.bindings if shapes is None else self.bindings_for(shapes)
        vals = {k: v._evaluate(b) for k, v in self.launch.items()}
        out = [f"{k}={vals[k]} outside [{lo}, {hi}]" for k, (lo, hi) in _CUDA_LIMITS.items()
               if k in vals and not lo <= vals[k] <= hi]
        if all(k in vals for k in ("block_x", "block_y", "block_z")):
            threads = vals["block_x"] * vals["block_y"] * vals["block_z"]
            if threads > 1024:
                out.append(f"block has {threads} threads (> 1024)")
        for i, (dt, e) in enumerate(self.extra_args):
            v = e._evaluate(b)
            if not -(2**31) <= v < 2**31:
                out.append(f"extra arg {i} = {v} does not fit in {dt.name}")
        return out


class Standin:
    """One installed emulation: ``.trt`` (``tensorrt``), ``.trtp`` (NVIDIA's ``tensorrt.plugin``)."""

    def __init__(self, trt, trtp):
        self.trt, self.trtp = trt, trtp
        self.native = trt.tensorrt
        self.builder = self.native.IExprBuilder()
        self._tensor_mod = sys.modules["tensorrt.plugin._tensor"]
        self._lib = sys.modules["tensorrt.plugin._lib"]

    @property
    def log(self) -> List[Tuple[Any, str]]:
        """Every message an emulated ``Logger`` received (NVIDIA's code logs through it)."""
        return self.native._logging.RECORDS

    @property
    def registry(self) -> Dict[str, Any]:
        """NVIDIA's ``QDP_REGISTRY`` (plugin id -> PluginDef)."""
        return self._lib.QDP_REGISTRY

    def plugin_def(self, plugin_id: str):
        return self._lib.QDP_REGISTRY[plugin_id]

    @contextlib.contextmanager
    def symbolic(self):
        """The shape-calculation context that ``get_output_shapes``/``get_launch_params`` set up: inside
        it ``ShapeExpr`` arithmetic, ``SymInt32(int)``, ``desc.like()`` and ``KernelLaunchParams`` work."""
        cls = self._tensor_mod.SymIntExpr
        saved = cls._exprBuilder
        cls._exprBuilder = self.builder
        try:
            yield self.builder
        finally:
            cls._exprBuilder = saved

    def dim(self, name_or_value: Union[str, int]):
        """A ``trtp.ShapeExpr`` for a named symbol (str) or a constant (int)."""
        e = (self.builder._symbol(name_or_value) if isinstance(name_or_value, str)
             else self.builder.constant(int(name_or_value)))
        return self.trtp.ShapeExpr(e)

    def tensor_desc(self, dtype: Any, shape: Union[int, Sequence[Union[str, int]]], prefix: str = "d"):
        """An immutable input ``trtp.TensorDesc``: ``shape`` is a rank (symbols ``{prefix}0``...) or a
        sequence whose str items are symbols and int items constants."""
        if isinstance(shape, int):
            shape = [f"{prefix}{j}" for j in range(shape)]
        exprs = self.trtp.ShapeExprs(len(shape))
        for j, s in enumerate(shape):
            exprs[j] = self.dim(s)
        desc = self.trtp.TensorDesc(exprs, as_dtype(self.trt, dtype))
        desc._immutable = True
        return desc

    def evaluate(self, x: Any, bindings: Optional[Mapping[str, int]] = None, **kw: int) -> Any:
        b = dict(bindings or {})
        b.update(kw)
        return evaluate(x, b)

    def network(self, *flags):
        bits = 0
        for f in flags:
            bits |= 1 << int(f)
        return self.trt.Builder(self.trt.Logger()).create_network(bits)

    def attribute_values(self, plugin_id: str, attrs: Mapping[str, Any]) -> Dict[str, Any]:
        """``attrs`` as ``trtp.op.ns.name(...)`` takes them: a Python number (or a tuple or list of them) given
        for an attribute the plugin annotates as a numpy array (how trt_kernels' plugins declare float and int
        scalars, and tuples of them) becomes that array; anything else is passed as given."""
        import numpy as np

        desc = sys.modules["tensorrt.plugin._lib"].QDP_REGISTRY.get(plugin_id)
        out = dict(attrs)
        for key, value in attrs.items():
            ann = (desc.input_attrs or {}).get(key) if desc is not None else None
            origin = typing.get_origin(ann) or getattr(ann, "__origin__", None)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if origin is np.ndarray and (number or isinstance(value, (list, tuple))):
                args = typing.get_args(ann) or ann.__args__  # NDArray[dtype], or a class carrying the same
                out[key] = np.array([value] if number else list(value), dtype=typing.get_args(args[1])[0])
        return out

    def build(self, plugin_id: str, inputs: Sequence[Tuple[Any, Sequence[int]]] = (),
              attrs: Optional[Mapping[str, Any]] = None, *, aot: Optional[bool] = True, tactic: Optional[int] = None,
              static: bool = False, network_flags: Sequence[Any] = ()) -> BuildResult:
        """Build a network of one plugin layer (``network.add_plugin(trtp.op.ns.name(*inputs, **attrs),
        aot=aot)``) with the emulator's builder, exactly as an engine build drives the plugin. ``inputs``
        gives ``(dtype, concrete shape)`` per input; their dimensions reach the plugin as symbols (as
        dynamic dimensions do: ``-1`` in its tensor descriptors, the shape as the profile's min, opt and
        max) unless ``static``. Every advertised tactic's ``aot_impl`` runs; ``tactic`` pins one (else the
        first that can run: no timing). Errors propagate as exceptions (an engine build would log them
        and return None)."""
        if not inputs:
            raise ValueError("inputs=[(dtype, shape), ...] is required")
        trt, native = self.trt, self.native
        net = self.network(*network_flags)
        profile = trt.Builder(trt.Logger()).create_optimization_profile()
        itensors = []
        for i, (dt, shape) in enumerate(inputs):
            shape = tuple(int(s) for s in shape)
            itensors.append(net.add_input(f"in{i}", as_dtype(trt, dt), shape if static else [-1] * len(shape)))
            if not static:
                profile.set_shape(f"in{i}", shape, shape, shape)
        ns, name = plugin_id.split("::")
        fields = self.attribute_values(plugin_id, attrs or {})
        layer = net.add_plugin(getattr(getattr(self.trtp.op, ns), name)(*itensors, **fields), aot=aot)
        for k in range(layer.num_outputs):
            net.mark_output(layer.get_output(k))
        config = trt.Builder(trt.Logger()).create_builder_config()
        config.add_optimization_profile(profile)
        build = native._builder._Build(net, config, tactics={plugin_id: tactic} if tactic is not None else None,
                                       timing=False)
        plan = build.run()
        live = build.records[0]
        bindings = {}
        for t, (_, shape) in zip(itensors, inputs):
            for j, s in enumerate(shape):
                bindings[native._network.dim_symbol(t.name, j)] = int(s)
        res = BuildResult(
            plugin=live["plugin"], is_aot=live["aot"], input_dtypes=[t.dtype for t in itensors],
            input_shapes=[tuple(int(s) for s in shape) for _, shape in inputs],
            input_dim_exprs=[list(e) for e in live["in_exprs"]], output_dtypes=list(live["out_types"]),
            output_shape_exprs=live["out_exprs"],
            # a data-dependent axis (a size tensor's) at its upper bound: the buffer TensorRT allocates
            output_shapes=[tuple(e._evaluate(bindings, "upper") for e in ex) for ex in live["out_exprs"]],
            combinations=live["combinations"], chosen_combination=live["chosen"], tactics=live["tactics"],
            tactic=live["tactic"], bindings=bindings, engine=native._format.encode(plan),
            skipped_tactics=dict(live["skipped"]), _native=native)
        if res.is_aot:
            res.kernel_name, res.ptx = live["kernel_name"], live["ptx"]
            res.launch, res.extra_args = live["launch"], live["extra_args"]
        else:
            res.serialized_fields = live["fields"]
        return res


def _matches(name: str, prefixes: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


@contextlib.contextmanager
def standin(purge: Sequence[str] = ()) -> Iterator[Standin]:
    """Install the emulated ``tensorrt`` (NVIDIA's Python package over the emulated native module) for
    the ``with`` body; see the module docstring. Raises ``RuntimeError`` without the bindings wheel."""
    global _ACTIVE
    if _ACTIVE:
        raise RuntimeError("trt_kernels.testing.standin() is already active (nesting is not supported)")
    reason = unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    prefixes = ("tensorrt",) + tuple(purge)
    saved = {k: v for k, v in sys.modules.items() if _matches(k, prefixes)}
    parents_saved = {}
    for k in saved:
        parent, _, child = k.rpartition(".")
        if parent and parent in sys.modules and not _matches(parent, prefixes):
            parents_saved[k] = getattr(sys.modules[parent], child, None)
        del sys.modules[k]
    _ACTIVE = True
    try:
        trt = bootstrap().load()
        import tensorrt.plugin as trtp

        yield Standin(trt, trtp)
    finally:
        for k in [k for k in sys.modules if _matches(k, prefixes)]:
            mod = sys.modules.pop(k)
            parent, _, child = k.rpartition(".")
            if parent and parent in sys.modules and not _matches(parent, prefixes):
                if getattr(sys.modules[parent], child, None) is mod:
                    try:
                        delattr(sys.modules[parent], child)
                    except AttributeError:
                        pass
        sys.modules.update(saved)
        for k, old in parents_saved.items():
            parent, _, child = k.rpartition(".")
            if old is not None and parent in sys.modules:
                setattr(sys.modules[parent], child, old)
        _ACTIVE = False


def standin_fixture(purge: Sequence[str] = ()) -> Iterator[Standin]:
    """Body of a pytest fixture: skips without the bindings wheel, else yields a :class:`Standin`."""
    reason = unavailable_reason()
    if reason is not None:
        import pytest

        pytest.skip(f"NVIDIA tensorrt.plugin sources unavailable: {reason}")
    with standin(purge) as env:
        yield env
