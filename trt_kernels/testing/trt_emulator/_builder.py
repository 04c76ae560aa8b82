"""``Builder``, ``IBuilderConfig``, ``IOptimizationProfile``, ``ITimingCache``, ``IHostMemory``, and the
build itself.

A build takes the network's layers in topological order. A standard layer (``_layers``) is inferred again
with the build's own expression builder and recorded with what the engine needs to compute it.

Building drives every QDP plugin layer through the calls TensorRT makes while building (output
dtypes and shapes, format combinations from ``@trtp.autotune``, ``configure_plugin``, valid
tactics, and for AOT plugins ``get_launch_params`` / ``get_kernel``, which run ``@trtp.aot_impl``)
with the input dimensions as symbols, and records what a real engine holds: for an AOT layer
the kernel name, the PTX, the launch parameters and extra arguments as expressions over the
input dimensions; for a JIT layer the plugin's name, namespace, version and serialized fields.

Where TensorRT is strict, so is the build: the plugin sees ``-1`` for every runtime dimension in
its ``DynamicPluginTensorDesc`` s (the profile in ``min``/``opt``/``max``); every tactic an AOT plugin
advertises has its ``aot_impl`` run, its PTX loaded (through the driver on a GPU, its structure
checked without one) and its launch checked against the build device's limits at the profile's
min/opt/max shapes (``_device``); a tactic that cannot run is skipped with a warning, a layer with
no tactic left fails; custom tactics must be unique and positive, plugin outputs cannot be BOOL or
UINT8, and a dimension expression made by another build's ``IExprBuilder`` is refused. Where a
plugin offers several runnable tactics and a GPU is present, each is launched and timed at the
profile's ``opt`` shapes on zero-filled buffers and the fastest is kept, as TensorRT times
tactics; without a GPU (or with ``timing=False``) the first runnable one is kept, and
``force_tactic`` in ``trt_kernels.testing`` pins one. The plan records the emulated TensorRT
version, the build device's compute capability (a stood-in one: ``_device.stand_in_device``), the
hardware compatibility level and the builder flags by name (VERSION_COMPATIBLE, EXCLUDE_LEAN_RUNTIME
among them): what ``Runtime.deserialize_cuda_engine`` checks. A failed build returns ``None`` and
reports the reason through the logger, as TensorRT does.

Engine compatibility at build (``_Build._check``, ``_Build._portable_problems``): AMPERE_PLUS is refused on a
build device below compute 8.0 and SAME_COMPUTE_CAPABILITY below 7.5 (NvInfer.h: "only supported for engines
built on NVIDIA Ampere and later GPUs" / "Turing and later"), VERSION_COMPATIBLE below 7.0 ("Volta and
later"), BuilderFlag.FP8 (10.15) with AMPERE_PLUS ("not supported"), and ``build_engine_with_config`` refuses
VERSION_COMPATIBLE ("does not support"; use ``build_serialized_network``). Under AMPERE_PLUS an AOT tactic whose
PTX does not load on every GPU of compute 8.0 and up (``.target`` above ``sm_80``, or an ``a``/``f`` target) is
refused at build: the emulator's rule, stricter than what is known of TensorRT (see ``_portable_problems``).

A plugin's size tensors (data-dependent extents, ``IExprBuilder.declare_size_tensor``) are checked as
TensorRT checks them (``_Build._size_tensors``: a 0-D INT32/INT64 output of the plugin, bounds free of
size tensors) and tied to the output holding them; the plan stores each such extent with its upper
bound and opt (``_dims``), and the plugin layer's record lists the size tensors it writes. An AOT
launch that depends on a size tensor is refused (``_Build._launch_expr``).
"""

import json
import traceback
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _cuda, _device, _ptx, _version
from ._dims import Dims, DimsExprs, IDimensionExpr, IExprBuilder, bind_size_tensors, foreign
from ._enums import (
    ITEMSIZE,
    BuilderFlag,
    DataType,
    DeviceType,
    EngineCapability,
    HardwareCompatibilityLevel,
    MemoryPoolType,
    PluginArgDataType,
    PluginCapabilityType,
    PreviewFeature,
    ProfilingVerbosity,
    Severity,
    TensorFormat,
    TilingOptimizationLevel,
)
from ._format import VERSION as FORMAT_VERSION
from ._format import encode
from ._layers import ICastLayer, IConstantLayer, IIdentityLayer
from ._logging import report
from ._network import INetworkDefinition, IPluginV3Layer
from ._plugin import DynamicPluginTensorDesc, LaunchParamsSink, PluginTensorDesc, SymExprSetter, field_to_json
from ._strict import Strict, missing_member, unpicklable
from ._tensor import Info, ITensor, LayerError, Shapes, dim_symbol

#: plugin id ("ns::name") -> tactic that builds must choose (set through trt_kernels.testing.force_tactic)
FORCED_TACTICS: Dict[str, int] = {}
_TIMING_CACHE_MAGIC = b"TRTKEMU-TIMINGCACHE-1\n"


@unpicklable
class IHostMemory(bytes):
    """Bytes owned by TensorRT (a serialized engine or timing cache); supports the buffer protocol."""

    @property
    def nbytes(self) -> int:
        return len(self)

    @property
    def dtype(self):
        return DataType.UINT8

    def __getattr__(self, name):
        raise AttributeError(f"tensorrt.IHostMemory.{name} is not implemented by the TensorRT emulator")


@unpicklable
class ITimingCache(Strict):
    def __init__(self):
        self._entries: Dict[str, int] = {}

    def serialize(self) -> IHostMemory:
        return IHostMemory(_TIMING_CACHE_MAGIC + json.dumps(self._entries, sort_keys=True).encode())

    def combine(self, input_cache: "ITimingCache", ignore_mismatch: bool) -> bool:
        self._entries.update(input_cache._entries)
        return True

    def reset(self) -> bool:
        self._entries.clear()
        return True


@unpicklable
class IOptimizationProfile(Strict):
    def __init__(self):
        self._shapes: Dict[str, Tuple[Dims, Dims, Dims]] = {}

    def set_shape(self, input: str, min, opt, max) -> None:  # noqa: A002 - the binding's names
        self._shapes[str(input)] = (Dims(min), Dims(opt), Dims(max))

    def get_shape(self, input: str) -> List[Dims]:  # noqa: A002
        if input not in self._shapes:
            return []
        return [Dims(d) for d in self._shapes[input]]

    def __bool__(self) -> bool:
        return True


_KNOBS = {
    "profiling_verbosity": ProfilingVerbosity.LAYER_NAMES_ONLY, "engine_capability": EngineCapability.STANDARD,
    "avg_timing_iterations": 1, "tiling_optimization_level": TilingOptimizationLevel.NONE,
    "l2_limit_for_tiling": -1, "builder_optimization_level": 3,
    "hardware_compatibility_level": HardwareCompatibilityLevel.NONE, "max_aux_streams": -1,
    "default_device_type": DeviceType.GPU, "DLA_core": -1, "progress_monitor": None, "flags": 0,
}


@unpicklable
class IBuilderConfig(Strict):
    """Builder knobs. None changes what the emulator builds for a plugin-only engine except those
    ``_check`` refuses (another engine capability, a DLA device); all are recorded."""

    def __init__(self):
        object.__setattr__(self, "_knobs", dict(_KNOBS))
        object.__setattr__(self, "_pools", {})
        object.__setattr__(self, "_profiles", [])
        object.__setattr__(self, "_timing_cache", None)
        object.__setattr__(self, "_preview", set())

    def __getattr__(self, name):
        if name in _KNOBS:
            return self._knobs[name]
        return Strict.__getattr__(self, name)

    def __setattr__(self, name, value):
        if name not in _KNOBS:
            raise AttributeError(missing_member(IBuilderConfig, name))
        if name == "hardware_compatibility_level" and not isinstance(value, HardwareCompatibilityLevel):
            # the binding's setter converts only the enum's own members
            raise TypeError(f"hardware_compatibility_level needs a tensorrt.HardwareCompatibilityLevel, got {value!r}")
        self._knobs[name] = value

    # flags and memory pools
    def set_flag(self, flag) -> None:
        if not isinstance(flag, BuilderFlag):
            raise TypeError(f"set_flag needs a tensorrt.BuilderFlag, got {flag!r}")
        self._knobs["flags"] |= 1 << int(flag)

    def clear_flag(self, flag) -> None:
        self._knobs["flags"] &= ~(1 << int(flag))

    def get_flag(self, flag) -> bool:
        return bool(self._knobs["flags"] & (1 << int(flag)))

    def set_memory_pool_limit(self, pool, pool_size: int) -> None:
        if not isinstance(pool, MemoryPoolType):
            raise TypeError(f"set_memory_pool_limit needs a tensorrt.MemoryPoolType, got {pool!r}")
        self._pools[pool] = int(pool_size)

    def get_memory_pool_limit(self, pool) -> int:
        return self._pools.get(pool, 0)

    # preview features (all off by default, as in TensorRT 10.15)
    def set_preview_feature(self, feature, enable: bool) -> None:
        if not isinstance(feature, PreviewFeature):
            raise TypeError(f"set_preview_feature needs a tensorrt.PreviewFeature, got {feature!r}")
        (self._preview.add if enable else self._preview.discard)(feature)

    def get_preview_feature(self, feature) -> bool:
        if not isinstance(feature, PreviewFeature):
            raise TypeError(f"get_preview_feature needs a tensorrt.PreviewFeature, got {feature!r}")
        return feature in self._preview

    # profiles
    def add_optimization_profile(self, profile: IOptimizationProfile) -> int:
        self._profiles.append(profile)
        return len(self._profiles) - 1

    @property
    def num_optimization_profiles(self) -> int:
        return len(self._profiles)

    # timing cache
    def create_timing_cache(self, serialized_timing_cache) -> ITimingCache:
        cache = ITimingCache()
        data = bytes(serialized_timing_cache)
        if data.startswith(_TIMING_CACHE_MAGIC):
            try:
                cache._entries.update(json.loads(data[len(_TIMING_CACHE_MAGIC):]))
            except ValueError:
                pass
        return cache

    def set_timing_cache(self, cache: ITimingCache, ignore_mismatch: bool) -> bool:
        object.__setattr__(self, "_timing_cache", cache)
        return True

    def get_timing_cache(self) -> Optional[ITimingCache]:
        return self._timing_cache


@unpicklable
class Builder(Strict):
    def __init__(self, logger):
        self._logger = logger

    @property
    def logger(self):
        return self._logger

    def create_network(self, flags: int = 0) -> INetworkDefinition:
        return INetworkDefinition(int(flags), self._logger)

    def create_builder_config(self) -> IBuilderConfig:
        return IBuilderConfig()

    def create_optimization_profile(self) -> IOptimizationProfile:
        return IOptimizationProfile()

    def build_serialized_network(self, network: INetworkDefinition, config: IBuilderConfig) -> Optional[IHostMemory]:
        try:
            plan = _Build(network, config, logger=self._logger).run()
        except Exception as e:  # noqa: BLE001 - TensorRT reports build failures through the logger
            detail = "".join(traceback.format_exception_only(type(e), e)).strip()
            report(self._logger, Severity.ERROR, f"Error building the engine (TensorRT emulator): {detail}\n"
                   + "".join(traceback.format_tb(e.__traceback__)[-4:]))
            return None
        return IHostMemory(encode(plan))

    def build_engine_with_config(self, network: INetworkDefinition, config: IBuilderConfig):
        from ._engine import Runtime

        if config.get_flag(BuilderFlag.VERSION_COMPATIBLE):
            # NvInfer.h, IBuilder::buildEngineWithConfig: "This function does not support
            # BuilderFlag::kVERSION_COMPATIBLE. Please use buildSerializedNetwork to get a version compatible engine."
            report(self._logger, Severity.ERROR, "IBuilder::buildEngineWithConfig: BuilderFlag.VERSION_COMPATIBLE is "
                   "not supported here; use build_serialized_network to get a version compatible engine")
            return None
        blob = self.build_serialized_network(network, config)
        if blob is None:
            return None
        return Runtime(self._logger).deserialize_cuda_engine(blob)


# ------------------------------------------------------------------------------------------
# the build


class BuildError(ValueError):
    pass


class _Build:
    """One build of ``network`` under ``config``: the engine plan (a JSON-able dict)."""

    def __init__(self, network: INetworkDefinition, config: IBuilderConfig,
                 tactics: Optional[Dict[str, int]] = None, timing: bool = True, logger=None):
        self.net, self.cfg, self.logger = network, config, logger
        self.forced = dict(FORCED_TACTICS, **(tactics or {}))
        self.timing = timing
        self.builder = IExprBuilder()  # this build's own: an expression from another builder is refused
        self.builder._logger = logger
        self.device = _device.current()  # the GPU built for (sm_90 where there is none): see _device
        self.exprs: Dict[int, List[IDimensionExpr]] = {}  # id(tensor) -> shape expressions
        self.shapes = Shapes(network, self.builder, self._unknown)  # every tensor's type, dims and values
        self.layers: List[Dict[str, Any]] = []
        self.records: List[Dict[str, Any]] = []  # per plugin layer, with live objects (for trt_kernels.testing)

    # ----- checks -----
    def _check(self) -> None:
        cfg, net = self.cfg, self.net
        if cfg.engine_capability != EngineCapability.STANDARD:
            raise BuildError(f"engine capability {cfg.engine_capability} is not emulated (STANDARD only)")
        if cfg.default_device_type != DeviceType.GPU:
            raise BuildError("DLA is not emulated")
        self._check_compatibility()
        if not net._outputs:
            raise BuildError("the network has no outputs (mark_output was never called)")
        if len(cfg._profiles) > 1:
            raise BuildError(f"{len(cfg._profiles)} optimization profiles: the emulator builds one")
        names = [t.name for t in net._inputs + net._outputs]
        dup = sorted({n for n in names if names.count(n) > 1 and not self._same_tensor(n)})
        if dup:
            raise BuildError(f"I/O tensor names are not unique: {dup}")

    def _check_compatibility(self) -> None:
        """What NvInfer.h says the hardware compatibility levels and version compatibility need of the build GPU
        (``HardwareCompatibilityLevel``, ``BuilderFlag::kVERSION_COMPATIBLE``, ``kFP8``); the texts are the
        emulator's."""
        cfg, dev = self.cfg, self.device
        level = cfg.hardware_compatibility_level
        where = f"the build device is compute {dev.compute} ({dev.name})"
        if level == HardwareCompatibilityLevel.AMPERE_PLUS and dev.cc < (8, 0):
            raise BuildError("HardwareCompatibilityLevel.AMPERE_PLUS is only supported for engines built on NVIDIA "
                             f"Ampere and later GPUs (compute capability 8.0 and up); {where}")
        if level == HardwareCompatibilityLevel.SAME_COMPUTE_CAPABILITY and dev.cc < (7, 5):
            raise BuildError("HardwareCompatibilityLevel.SAME_COMPUTE_CAPABILITY is only supported for engines built "
                             f"on NVIDIA Turing and later GPUs (compute capability 7.5 and up); {where}")
        if cfg.get_flag(BuilderFlag.VERSION_COMPATIBLE) and dev.cc < (7, 0):
            raise BuildError("BuilderFlag.VERSION_COMPATIBLE is only supported by NVIDIA Volta and later GPUs "
                             f"(compute capability 7.0 and up); {where}")
        if (level == HardwareCompatibilityLevel.AMPERE_PLUS and "FP8" in BuilderFlag.__members__
                and cfg.get_flag(BuilderFlag.__members__["FP8"])):
            raise BuildError("BuilderFlag.FP8 (plugins with FP8 input/output) is not supported when "
                             "HardwareCompatibilityLevel.AMPERE_PLUS is enabled")

    def _same_tensor(self, name) -> bool:
        ts = [t for t in self.net._inputs + self.net._outputs if t.name == name]
        return all(t is ts[0] for t in ts)

    # ----- inputs and profiles -----
    def _inputs(self):
        profile = self.cfg._profiles[0] if self.cfg._profiles else None
        out = []
        self.min_b, self.opt_b, self.max_b = {}, {}, {}
        for t in self.net._inputs:
            shape = list(t._shape)
            dyn = [j for j, d in enumerate(shape) if d < 0]
            rec = {"name": t.name, "dtype": t.dtype.name, "shape": shape, "profile": None}
            if dyn:
                if profile is None or t.name not in profile._shapes:
                    raise BuildError(f"input {t.name!r} has dynamic dimensions {tuple(shape)} but no optimization "
                                     "profile sets its shape (IOptimizationProfile.set_shape)")
                mn, op, mx = (list(d) for d in profile._shapes[t.name])
                for d in (mn, op, mx):
                    if len(d) != len(shape):
                        raise BuildError(f"profile shape {tuple(d)} of {t.name!r} has rank {len(d)}, "
                                         f"input has {len(shape)}")
                for j, s in enumerate(shape):
                    if s >= 0 and not mn[j] == op[j] == mx[j] == s:
                        raise BuildError(f"profile of {t.name!r} changes static dimension {j} ({s})")
                    if not 0 <= mn[j] <= op[j] <= mx[j]:
                        raise BuildError(f"profile of {t.name!r}: need 0 <= min <= opt <= max on axis {j}, "
                                         f"got {mn[j]}, {op[j]}, {mx[j]}")
                rec["profile"] = [mn, op, mx]
                for j in dyn:
                    sym = dim_symbol(t.name, j)
                    self.min_b[sym], self.opt_b[sym], self.max_b[sym] = mn[j], op[j], mx[j]
            b = self.builder
            self.exprs[id(t)] = [b._symbol(dim_symbol(t.name, j)) if d < 0 else b.constant(d)
                                 for j, d in enumerate(shape)]
            rec["dims"] = [e._to_json() for e in self.exprs[id(t)]]
            self.shapes.put(t, Info(t.dtype, self.exprs[id(t)]))
            out.append(rec)
        return out

    def _shape_at(self, t: ITensor, bindings, sizes: Optional[str] = None) -> List[int]:
        """``t``'s shape at ``bindings``, its data-dependent extents valued as ``sizes`` says (``_dims``)."""
        return [e._evaluate(bindings, sizes) for e in self.exprs[id(t)]]

    def _shape_or_unknown(self, t: ITensor, bindings) -> List[int]:
        """``t``'s shape at ``bindings``, -1 for each data-dependent extent."""
        return [-1 if e._size_tensors() else e._evaluate(bindings) for e in self.exprs[id(t)]]

    # ----- layers -----
    def _plugin_layer(self, layer: IPluginV3Layer) -> Dict[str, Any]:
        plg = layer._plugin
        ins, outs = layer._inputs, layer._outputs
        n_in = len(ins)
        for cap in PluginCapabilityType:
            plg.get_capability_interface(cap)
        in_types = [t.dtype for t in ins]
        out_types = list(plg.get_output_data_types(in_types, [len(self.exprs[id(t)]) for t in ins]))
        # NvInferRuntime.h, IPluginV3OneBuild::getOutputDataTypes: "DataType:kBOOL and DataType::kUINT8
        # are not supported" as plugin output types
        bad = [f"output {i} is {ty}" for i, ty in enumerate(out_types) if ty in (DataType.BOOL, DataType.UINT8)]
        if bad:
            raise BuildError(f"plugin layer {layer.name!r}: {'; '.join(bad)}: plugin outputs cannot be "
                             "DataType.BOOL or DataType.UINT8 (IPluginV3OneBuild::getOutputDataTypes)")
        aliased = self._aliased(layer, plg, n_in, len(out_types), in_types, out_types)
        in_exprs = [DimsExprs(self.exprs[id(t)]) for t in ins]
        declared_before = len(self.builder._declared)
        out_exprs = [list(e) for e in plg.get_output_shapes(in_exprs, [], self.builder)]
        if len(out_exprs) != len(outs) or len(out_types) != len(outs):
            raise BuildError(f"plugin layer {layer.name!r}: {len(out_exprs)} output shapes and {len(out_types)} "
                             f"dtypes for {len(outs)} outputs")
        for ex in out_exprs:
            for e in ex:
                self._expr_check(e, f"plugin layer {layer.name!r}: output shape")
        sizes = self._size_tensors(layer, out_exprs, out_types, self.builder._declared[declared_before:])
        out_exprs = [bind_size_tensors(ex, outs) for ex in out_exprs]
        for t, ex, ty in zip(outs, out_exprs, out_types):
            self.exprs[id(t)] = ex
            self.shapes.put(t, Info(ty, ex))

        def dyn_descs(types_formats):
            # NvInferRuntime.h, DynamicPluginTensorDesc: "desc.dims has -1 in place of any runtime
            # dimension"; min/opt/max carry the optimization profile's bounds. A data-dependent extent (a size
            # tensor) is -1 too; the emulator gives it 0 in min, its declared opt in opt and its upper bound in
            # max (its range; what TensorRT puts there is not documented)
            out = []
            for t, (ty, fmt) in zip(ins + outs, types_formats):
                dims = [e.get_constant_value() if e.is_constant() else -1 for e in self.exprs[id(t)]]
                mn, op, mx = (self._shape_at(t, b, s) for b, s in ((self.min_b, "lower"), (self.opt_b, "opt"),
                                                                    (self.max_b, "upper")))
                out.append(DynamicPluginTensorDesc(PluginTensorDesc(dims, ty, fmt), mn, op, mx))
            return out

        default = [(ty, TensorFormat.LINEAR) for ty in in_types + out_types]
        flat = plg.get_supported_format_combinations(dyn_descs(default), n_in)
        n_io = n_in + len(outs)
        if not flat or len(flat) % n_io:
            raise BuildError(f"plugin layer {layer.name!r}: {len(flat)} format descriptors for {n_io} inputs/outputs")
        combos = [[(d.type, d.format) for d in flat[k:k + n_io]] for k in range(0, len(flat), n_io)]
        matches = [c for c in combos if [ty for ty, _ in c[:n_in]] == in_types
                   and all(f == TensorFormat.LINEAR for _, f in c)]
        if not matches:
            raise BuildError(f"plugin layer {layer.name!r}: no supported combination takes input types "
                             f"{[ty.name for ty in in_types]} in LINEAR format; the plugin supports "
                             f"{[[ty.name for ty, _ in c] for c in combos]}")
        chosen = matches[0]
        if [ty for ty, _ in chosen[n_in:]] != out_types:
            raise BuildError(f"plugin layer {layer.name!r}: the chosen combination gives output types "
                             f"{[ty.name for ty, _ in chosen[n_in:]]} but the descriptor says "
                             f"{[ty.name for ty in out_types]}")
        io = dyn_descs(chosen)
        plg.configure_plugin(io[:n_in], io[n_in:])
        tactics = [int(t) for t in plg.get_valid_tactics()]
        # NvInferRuntime.h, IPluginV3OneBuild::getValidTactics: custom tactic values "must be unique and
        # non-zero. The tactic value 0 is reserved for the default tactic"; tensorrt.plugin's
        # AutoTuneCombination: "Each custom tactic must be a positive integer"
        if any(t <= 0 for t in tactics) or len(set(tactics)) != len(tactics):
            raise BuildError(f"plugin layer {layer.name!r}: getValidTactics returned {tactics}: custom tactics must "
                             "be unique positive integers (the tactic value 0 is reserved for the default tactic)")
        aot = hasattr(plg, "get_launch_params")
        pid = f"{plg.plugin_namespace}::{plg.plugin_name}"
        forced = self.forced.get(pid)
        candidates = tactics or [0]  # no custom tactic: the default one, 0
        if forced is not None and forced not in candidates:
            raise BuildError(f"{pid}: tactic {forced} is not among valid tactics "
                             f"{tactics or '[] (only the default tactic 0)'}")
        built: Dict[int, Dict[str, Any]] = {}
        skipped: Dict[int, str] = {}
        if aot:
            # TensorRT builds (and on a GPU times) every tactic the plugin advertises for the chosen
            # format combination, each through set_tactic / get_launch_params / get_kernel, i.e. each
            # tactic's aot_impl runs at build time, and loads each one's PTX; a tactic that cannot run is
            # skipped, as TensorRT's autotuner skips a failing tactic, and a layer none of whose tactics
            # can run fails the build (TensorRT: "Could not find any implementation for node ...")
            for t in candidates:
                plg.set_tactic(t)
                b = built[t] = self._aot_launch(layer, plg, in_exprs, io, n_in, t)
                problems = self._load_problems(b)
                problems += [] if problems else self._limit_problems(b)
                if problems:
                    skipped[t] = "; ".join(problems)
                    del built[t]
            if forced is not None and forced in skipped:
                raise BuildError(f"plugin layer {layer.name!r}: tactic {forced} (forced) cannot run: {skipped[forced]}")
            if not built:
                raise BuildError(f"Could not find any implementation for node {layer.name} ({pid}): "
                                 + "; ".join(f"tactic {t}: {why}" for t, why in skipped.items()))
            for t, why in skipped.items():
                report(self.logger, Severity.WARNING,
                       f"plugin layer {layer.name!r} ({pid}): skipping tactic {t}: {why}")
        runnable = [t for t in candidates if t in built] if aot else candidates
        if forced is not None:
            tactic = forced
        elif self.timing and len(runnable) > 1 and _cuda.available():
            tactic = self._fastest(layer, plg, aot, runnable, built, chosen)
        else:
            tactic = runnable[0]  # no timing (no GPU, or one tactic): the first that can run
        plg.set_tactic(tactic)
        rec = {"name": layer.name, "plugin": pid, "version": plg.plugin_version, "tactic": tactic,
               "tactics": tactics, "inputs": [t.name for t in ins], "outputs": [t.name for t in outs],
               "types": [ty.name for ty, _ in chosen], "aliased": aliased}
        if sizes:
            # what the run checks each count it reads back against (the engine's own; see _engine)
            rec["size_tensors"] = {outs[i].name: {"index": i, "dtype": out_types[i].name, "upper": d._upper._to_json(),
                                                  "opt": d._opt._to_json()} for i, d in sorted(sizes.items())}
        live = {"layer": layer, "plugin": plg, "aot": aot, "combinations": combos, "chosen": combos.index(chosen),
                "in_exprs": in_exprs, "out_exprs": out_exprs, "tactics": tactics, "tactic": tactic,
                "io": io, "out_types": out_types, "skipped": skipped, "size_tensors": sizes}
        if aot:
            b = built[tactic]
            rec.update(kind="aot_plugin", kernel_name=b["kernel_name"], ptx=b["ptx"].decode("latin-1"),
                       launch={k: e._to_json() for k, e in b["launch"].items()},
                       extra_args=[{"type": dt.name, "expr": e._to_json()} for dt, e in b["extra_args"]])
            live.update(launch=b["launch"], extra_args=b["extra_args"], kernel_name=b["kernel_name"], ptx=b["ptx"],
                        built={t: dict(v) for t, v in built.items()})
        else:
            fields = list(plg.get_fields_to_serialize())
            rec.update(kind="jit_plugin", fields=[field_to_json(f) for f in fields])
            live.update(fields=fields)
        self.records.append(live)
        return rec

    def _aliased(self, layer, plg, n_in: int, n_out: int, in_types, out_types) -> Dict[str, int]:
        """``{output index (as a str): input index}`` of the outputs the plugin aliases to an input
        (IPluginV3OneBuildV2::getAliasedInput). TensorRT fails the build of a plugin that declares one unless
        the config enables PreviewFeature::kALIASED_PLUGIN_IO_10_03 ("Aliased I/O used by plugin ... but
        PreviewFeature::kALIASED_PLUGIN_IO_10_03 not enabled"); "a given plugin input can only be aliased to
        a single plugin output"; the pair shares one buffer, so its dtypes must agree."""
        query = getattr(plg, "get_aliased_input", None)
        if query is None:
            return {}
        aliased: Dict[str, int] = {}
        for i in range(n_out):
            j = int(query(i))
            if j == -1:
                continue
            if not 0 <= j < n_in:
                raise BuildError(f"plugin layer {layer.name!r}: getAliasedInput({i}) returned {j}: valid values are "
                                 f"-1 and 0..{n_in - 1}")
            if j in aliased.values():
                raise BuildError(f"plugin layer {layer.name!r}: input {j} is aliased to two outputs; a plugin input "
                                 "can only be aliased to a single plugin output")
            if in_types[j] != out_types[i]:
                raise BuildError(f"plugin layer {layer.name!r}: output {i} ({out_types[i].name}) is aliased to input "
                                 f"{j} ({in_types[j].name}); an aliased pair shares one buffer and one data type")
            aliased[str(i)] = j
        if aliased and not self.cfg.get_preview_feature(PreviewFeature.ALIASED_PLUGIN_IO_10_03):
            raise BuildError(f"Aliased I/O used by plugin {layer.name} but PreviewFeature::kALIASED_PLUGIN_IO_10_03 "
                             "not enabled (IBuilderConfig.set_preview_feature)")
        return aliased

    def _expr_check(self, e, what: str) -> None:
        if not isinstance(e, IDimensionExpr):
            raise BuildError(f"{what}: {e!r} is not a dimension expression (a fake ShapeExpr or an int leaked out "
                             "of a plugin?)")
        why = foreign(e, self.builder)
        if why:
            raise BuildError(f"{what}: {why}")

    def _expr_json(self, e, what: str) -> Any:
        self._expr_check(e, what)
        return e._to_json()

    def _size_tensors(self, layer, out_exprs, out_types, declared) -> Dict[int, IDimensionExpr]:
        """``{output index: its declaration}`` of the plugin's size tensors: the outputs named by
        ``declare_size_tensor`` in this ``get_output_shapes`` call, checked as TensorRT requires them.

        NvInferRuntime.h: IExprBuilder::declareSizeTensor's ``outputIndex`` is "the index of an output tensor" of
        the plugin, its ``opt`` "must not depend on a size tensor" (nor may its upper bound here, TensorRT needing
        it "so that it can allocate memory for the output tensor" before the count exists; ``declare_size_tensor``
        refuses a size tensor operand at the call already); IPluginV3OneBuild::getOutputShapes: "size tensor
        outputs must be declared 0-D"; a size tensor is a scalar of INT32 or INT64 (the READMEs of NVIDIA's
        non-zero samples, whose size tensors are INT64 since 10.15; the header's getOutputDataTypes still says
        kINT32). TensorRT-RTX 1.7.1's builder (TensorRT's front end) fails the build of a FLOAT or INT8 size tensor
        ("Assertion canBeSizeTensor(*t) failed") and of one of rank 1 ("Assertion t->extent.nbDims == 0 failed"),
        and builds an ``opt`` above ``upper`` (notes/data_dependent_shapes.md, section G), as the emulator does.
        The emulator's rule, where nothing is documented: ``opt`` and ``upper`` must not be negative at the
        profile's min, opt and max shapes (a buffer cannot be sized from a negative bound): refused, strict."""
        where = f"plugin layer {layer.name!r}"
        leaves: List[IDimensionExpr] = list(declared)
        for ex in out_exprs:
            for e in ex:
                for x in e._size_tensors():
                    # bound: an earlier layer's size tensor, reaching this layer through its inputs' dimensions
                    if x._tensor is None and all(x is not y for y in leaves):
                        raise BuildError(f"{where}: output dimension {e!r} uses a size tensor declared outside this "
                                         "getOutputShapes call (kept from another call?): declare it with this "
                                         "call's IExprBuilder")
        sizes: Dict[int, IDimensionExpr] = {}
        n_out = len(out_exprs)
        for leaf in leaves:
            i = leaf._value
            if not 0 <= i < n_out:
                raise BuildError(f"{where}: declareSizeTensor names output {i}, but the plugin has {n_out} outputs "
                                 f"(0..{n_out - 1}): a size tensor must be an output of the plugin that declares it "
                                 "(IExprBuilder::declareSizeTensor)")
            for what, e in (("opt", leaf._opt), ("upper bound", leaf._upper)):
                if e._size_tensors():
                    raise BuildError(f"{where}: the {what} of size tensor output {i} is {e!r}, which depends on a size "
                                     "tensor: a size tensor's opt and upper bound must not depend on a size tensor "
                                     "(IExprBuilder::declareSizeTensor); use expressions of the input dimensions")
            sizes.setdefault(i, leaf)
        for i, leaf in sorted(sizes.items()):
            if out_exprs[i]:
                raise BuildError(f"Error Code 4: API Usage Error ({layer.name}: Assertion t->extent.nbDims == 0 "
                                 f"failed: output {i} is a size tensor but is declared with shape "
                                 f"({', '.join(repr(e) for e in out_exprs[i])}): size tensor outputs must be declared "
                                 "0-D (an empty DimsExprs; IPluginV3OneBuild::getOutputShapes))")
            if out_types[i] not in (DataType.INT32, DataType.INT64):
                raise BuildError(f"Error Code 4: API Usage Error ({layer.name}: Assertion canBeSizeTensor(*t) failed: "
                                 f"output {i} is a size tensor of type {out_types[i]}: a size tensor is a scalar of "
                                 "DataType.INT32 or DataType.INT64)")
            for corner, b in (("min", self.min_b), ("opt", self.opt_b), ("max", self.max_b)):
                try:
                    opt, upper = leaf._opt._evaluate(b), leaf._upper._evaluate(b)
                except (ArithmeticError, KeyError) as e:
                    raise BuildError(f"{where}: the opt/upper bound of size tensor output {i} cannot be evaluated at "
                                     f"the profile's {corner} shapes: {e}") from None
                if opt < 0 or upper < 0:
                    raise BuildError(f"{where}: size tensor output {i} has opt {leaf._opt!r} = {opt} and upper bound "
                                     f"{leaf._upper!r} = {upper} at the profile's {corner} shapes: the TensorRT "
                                     "emulator needs both >= 0 (its rule: TensorRT sizes the data-dependent buffers "
                                     "from the upper bound and tunes for opt; what it does with a negative one is not "
                                     "documented)")
        return sizes

    def _aot_launch(self, layer, plg, in_exprs, io, n_in, tactic: int) -> Dict[str, Any]:
        """One tactic's ``get_launch_params`` and ``get_kernel`` (the plugin's ``aot_impl``)."""
        where = f"plugin layer {layer.name!r}, tactic {tactic}"
        sink, setter = LaunchParamsSink(), SymExprSetter()
        plg.get_launch_params(in_exprs, io, n_in, sink, setter, self.builder)
        launch = {}
        for k in LaunchParamsSink.FIELDS:
            impl = getattr(sink, k, None)
            expr = getattr(impl, "expr", None)
            if expr is None:
                raise BuildError(f"{where}: launch parameter {k} has no expression (assigned a float or numpy "
                                 "scalar, or a SymInt32 made outside the aot_impl?)")
            self._launch_expr(layer, expr, f"{where}: launch parameter {k}")
            launch[k] = expr
        extras = []
        for i in range(setter.nbSymExprs):
            impl = setter.items.get(i)
            if impl is None or getattr(impl, "expr", None) is None:
                raise BuildError(f"{where}: extra argument {i} has no expression")
            if impl.dtype != PluginArgDataType.INT32:
                raise BuildError(f"{where}: extra argument {i} is {impl.dtype}; TensorRT launches 32-bit extra "
                                 "arguments only")
            self._launch_expr(layer, impl.expr, f"{where}: extra argument {i}")
            extras.append((impl.dtype, impl.expr))
        name, code = plg.get_kernel([d.desc for d in io[:n_in]], [d.desc for d in io[n_in:]])
        name = name.decode() if isinstance(name, bytes) else str(name)
        code = code.encode() if isinstance(code, str) else bytes(code)
        return {"tactic": tactic, "launch": launch, "extra_args": extras, "kernel_name": name,
                "ptx": code.rstrip(b"\x00"), "kernel": None, "static_smem": 0, "fn": {}}

    def _launch_expr(self, layer, e, what: str) -> None:
        """An AOT launch parameter or extra argument: a dimension expression of this build that does not depend on
        a size tensor. TensorRT evaluates an AOT kernel's launch before launching it, and a size tensor's value
        exists only once the kernel writing it has run: the plugin's own size tensors cannot size its launch. For
        a size tensor of an earlier layer (a plugin reading a data-dependent tensor) TensorRT's behaviour is not
        documented; the emulator's rule refuses that too (strict), so an AOT launch is sized from input
        dimensions and bounds only."""
        self._expr_check(e, what)
        deps = e._size_tensors()
        if deps:
            def name(d):  # the plugin keeps its own (unbound) size-tensor expressions: name them by output index
                bound = d._tensor is not None or not 0 <= d._value < len(layer._outputs)
                return repr(d._tensor_name() if bound else layer._outputs[d._value].name)

            raise BuildError(f"{what} is {e!r}, which depends on the size tensor {', '.join(name(d) for d in deps)}"
                             ": an AOT plugin's launch (grid, block, shared memory, extra arguments) is evaluated "
                             "before its kernel runs, and a data-dependent extent is known only after the kernel "
                             "writing it has run; size the launch from the input dimensions or the upper bound")
        e._to_json()

    def _load_problems(self, b: Dict[str, Any]) -> List[str]:
        """Load one tactic's PTX as TensorRT does: through the driver's JIT on a GPU (``cuModuleLoadData``,
        then ``cuModuleGetFunction`` of the kernel name); without one, the PTX's structure (``_ptx``)."""
        name, ptx = b["kernel_name"], b["ptx"]
        if self.device.gpu:
            kernel = _cuda.Kernel(ptx, name)
            try:
                b["fn"] = kernel.attributes()  # cuModuleLoadData + cuModuleGetFunction + cuFuncGetAttribute
            except RuntimeError as e:  # _cuda.check names the CUDA error
                return [f"the kernel {name!r} does not load: {e}"]
            b["kernel"], b["static_smem"] = kernel, b["fn"]["static_smem"]
            if not self.device.stand_in:
                return self._portable_problems(b)
        try:  # without a GPU, or for a stood-in card: what that card's driver would refuse
            static = _ptx.check(ptx, name, self.device.cc)
        except _ptx.PtxError as e:
            return [f"the kernel {name!r} does not load on compute {self.device.compute}: {e}"]
        if not self.device.gpu:
            b["static_smem"] = static
        return self._portable_problems(b)

    def _portable_problems(self, b: Dict[str, Any]) -> List[str]:
        """Under HardwareCompatibilityLevel.AMPERE_PLUS, the tactic's PTX must load on every GPU of compute
        capability 8.0 and up: it must load on compute 8.0 (``_ptx.runs_on``: ``.target sm_80`` or lower) and carry
        no ``a``/``f`` suffix (which ties it to one architecture or family).

        This is the emulator's rule, stricter than what is known of TensorRT: nothing NVIDIA documents says
        TensorRT looks at an AOT plugin's PTX target at build (notes/fleet_engines.md, open question F1); it
        would build the engine, and the engine would fail where the driver of an older GPU refuses the PTX
        (the emulator models that too, at deserialization). Refusing at build names the fix where it is cheap."""
        if self.cfg.hardware_compatibility_level != HardwareCompatibilityLevel.AMPERE_PLUS:
            return []
        target = _ptx.target(b["ptx"])
        if target is None:
            return []  # the load check reports it
        arch, suffix = target
        if _ptx.runs_on(arch, suffix, (8, 0)) and not suffix:
            return []
        return [f"the kernel {b['kernel_name']!r} is PTX for .target sm_{arch}{suffix}, but a "
                "HardwareCompatibilityLevel.AMPERE_PLUS engine must load on every GPU of compute capability 8.0 and "
                "up (8.0, 8.6, 8.9, 9.0, 10.x, 12.x), and the driver of a compute 8.0 device refuses it: compile the "
                "plugin's PTX for .target sm_80 with no 'a'/'f' suffix (e.g. NVRTC -arch=sm_80). (The TensorRT "
                "emulator's rule, stricter than what is known of TensorRT, which would build the engine and fail "
                "where an older GPU loads the PTX)"]

    def _limit_problems(self, b: Dict[str, Any]) -> List[str]:
        """The tactic's launch checked against the build device's limits at the optimization profile's
        min, opt and max shapes (a launch expression is evaluated at each corner). TensorRT itself would
        meet a violation when it launches the kernel (at opt while timing, else at run time); the emulator
        refuses it at build, where it is cheaper to find."""
        fn = b["fn"]
        seen: Dict[str, List[str]] = {}
        for corner, bindings in (("min", self.min_b), ("opt", self.opt_b), ("max", self.max_b)):
            try:
                v = {k: e._evaluate(bindings) for k, e in b["launch"].items()}
            except (ArithmeticError, KeyError, ValueError) as e:
                seen.setdefault(f"the launch cannot be evaluated ({e})", []).append(corner)
                continue
            for p in _device.launch_problems(v, self.device, b["static_smem"], fn.get("max_dynamic_smem"),
                                             fn.get("max_threads")):
                seen.setdefault(p, []).append(corner)
        return [f"{p} at the profile's {'/'.join(c)} shapes" for p, c in seen.items()]

    def _fastest(self, layer, plg, aot, tactics, built, chosen) -> int:
        """Launch every tactic at the opt shapes on zero-filled buffers; the fastest one."""
        from ._engine import run_aot, run_jit

        ctx_stream = _cuda.new_stream()
        tensors = layer._inputs + layer._outputs
        # a data-dependent tensor: its buffer at the upper bound; an input at its opt extent (what the builder
        # tunes for), the layer's own outputs with -1 there (as at run time)
        sizes = [max(1, _numel(self._shape_at(t, self.opt_b, "upper"))) * ITEMSIZE[ty]
                 for t, (ty, _) in zip(tensors, chosen)]
        ptrs = [_cuda.alloc(n, ctx_stream) for n in sizes]
        try:
            for p, n in zip(ptrs, sizes):
                _cuda.zero(p, n, ctx_stream)
            n_in = len(layer._inputs)
            shapes = ([self._shape_at(t, self.opt_b, "opt") for t in layer._inputs]
                      + [self._shape_or_unknown(t, self.opt_b) for t in layer._outputs])
            times = {}
            for t in tactics:
                plg.set_tactic(t)
                if aot:
                    b = built[t]
                    lj = {k: v._to_json() for k, v in b["launch"].items()}
                    ej = [e._to_json() for _, e in b["extra_args"]]

                    def run(b=b, lj=lj, ej=ej):
                        run_aot(b["kernel"], lj, ej, self.opt_b, ptrs[:n_in], ptrs[n_in:], ctx_stream, layer.name)
                else:
                    def run():
                        run_jit(plg, shapes[:n_in], shapes[n_in:], [ty for ty, _ in chosen], ptrs[:n_in],
                                ptrs[n_in:], ctx_stream)
                times[t] = _cuda.time_ms(run, ctx_stream)
            return min(tactics, key=lambda t: (times[t], t))
        finally:
            for p in ptrs:
                _cuda.free(p, ctx_stream)
            _cuda.synchronize(ctx_stream)
            _cuda.destroy_stream(ctx_stream)

    @staticmethod
    def _unknown(t: ITensor) -> Info:
        raise BuildError(f"tensor {t.name!r} is neither a network input nor the output of a layer of the network")

    def _standard_layer(self, layer) -> Dict[str, Any]:
        """A standard layer: its outputs inferred with this build's expressions, and what the engine runs."""
        try:
            infos = [self.shapes.info(t) for t in layer._outputs]
            params = layer._params(self.shapes)
        except LayerError as e:
            raise BuildError(str(e)) from None
        for t, info in zip(layer._outputs, infos):
            self.exprs[id(t)] = list(info.dims)
        rec = {"name": layer.name, "inputs": [t.name if t is not None else None for t in layer._inputs],
               "outputs": [t.name for t in layer._outputs]}
        if isinstance(layer, IConstantLayer):
            return dict(rec, kind="constant", dtype=layer.weights.dtype.name, data=layer.weights._data.hex())
        if isinstance(layer, (ICastLayer, IIdentityLayer)):
            return dict(rec, kind="cast" if isinstance(layer, ICastLayer) else "identity", to=infos[0].dtype.name)
        return dict(rec, kind="layer", type=layer._TYPE.name, params=params)

    def _topological(self) -> List[Any]:
        """The network's layers, each after the layers whose outputs it reads (a network is a graph: a layer
        may read a tensor made by a layer added after it)."""
        producer = {id(t): layer for layer in self.net._layers for t in layer._outputs}
        inputs = {id(t) for t in self.net._inputs}
        order: List[Any] = []
        state: Dict[int, int] = {}  # 1: its inputs' producers pending; 2: placed
        for root in self.net._layers:
            stack = [(root, False)]
            while stack:
                node, placed = stack.pop()
                if placed:
                    state[id(node)] = 2
                    order.append(node)
                    continue
                if state.get(id(node)) == 2:
                    continue
                if state.get(id(node)) == 1:
                    raise BuildError(f"the network has a cycle through layer {node.name!r}")
                state[id(node)] = 1
                stack.append((node, True))
                for t in node._inputs:
                    if t is None:
                        continue
                    p = producer.get(id(t))
                    if p is None:
                        if id(t) not in inputs:
                            raise BuildError(f"layer {node.name!r} reads {t.name!r}, which is neither a network "
                                             "input nor the output of a layer of the network")
                    elif state.get(id(p)) != 2:
                        stack.append((p, False))
        return order

    def run(self) -> Dict[str, Any]:
        self._check()
        inputs = self._inputs()
        for layer in self._topological():
            if isinstance(layer, IPluginV3Layer):
                self.layers.append(self._plugin_layer(layer))
            elif hasattr(layer, "_infer"):
                self.layers.append(self._standard_layer(layer))
            else:
                raise BuildError(f"layer {layer.name!r} of kind {layer.type} is not emulated")
        names = {}
        for layer_rec in self.layers:
            for n in layer_rec["outputs"]:
                if n in names:
                    raise BuildError(f"two tensors are named {n!r}")
                names[n] = True
        tensors = {}
        for t in self.net._inputs + [o for layer in self.net._layers for o in layer._outputs]:
            tensors[t.name] = {"dtype": self.shapes.info(t).dtype.name,
                               "dims": [e._to_json() for e in self.exprs[id(t)]]}
        outputs = [{"name": t.name, "dtype": self.shapes.info(t).dtype.name} for t in self.net._outputs]
        return {"format": FORMAT_VERSION, "name": self.net.name, "inputs": inputs, "outputs": outputs,
                "tensors": tensors, "layers": self.layers,
                # what deserialize_cuda_engine checks (as TensorRT checks a plan's library version and
                # compute capability): the emulated TensorRT's version and the build device's compute
                # capability ("9.0" for a build without a GPU, which targets sm_90: see _device)
                "tensorrt_version": _version.VERSION, "compute_capability": self.device.compute,
                # and where else it may run (_engine.Runtime.deserialize_cuda_engine): the hardware compatibility
                # level, and the VERSION_COMPATIBLE / EXCLUDE_LEAN_RUNTIME flags among config.flags
                "hardware_compatibility_level": self.cfg.hardware_compatibility_level.name,
                # flags by name: their values differ between TensorRT 10.15 and 11
                "config": {"flags": [f.name for f in BuilderFlag if self.cfg.get_flag(f)],
                           "profiling_verbosity": self.cfg.profiling_verbosity.name,
                           "pools": {k.name: v for k, v in self.cfg._pools.items()},
                           "preview_features": sorted(f.name for f in self.cfg._preview)}}


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n
