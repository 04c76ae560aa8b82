"""``Runtime``, ``ICudaEngine`` and ``IExecutionContext``: running an emulated engine on the GPU.

``execute_async_v3(stream)`` evaluates every layer's shapes and launch at the bound input
shapes and enqueues the work on ``stream``: an AOT plugin layer's PTX is JIT-loaded by the
driver (once per context) and launched as TensorRT launches AOT plugin kernels,
``(input pointers..., extra arguments as 32-bit ints..., output pointers...)``; a JIT layer
calls the plugin's ``enqueue`` (its ``@trtp.impl``); TensorRT's standard layers are computed by torch
(``_compute``) on the same stream, as are casts and copies.
Intermediate tensors live in stream-ordered allocations freed at the end of the call. A plugin's
inputs are read-only, as in TensorRT (which may share an input's buffer with other layers): after each
plugin layer (inputs up to 64 MiB) the emulator checks they are unchanged and fails the call if not;
an input the plugin aliases to an output (built with PreviewFeature.ALIASED_PLUGIN_IO_10_03) is
copied into the output's buffer first and the plugin given that buffer for both.

Data-dependent shapes (size tensors, ``IExprBuilder.declare_size_tensor``): an extent a plugin's kernel
decides is -1 in every shape the engine and the context report (TensorRT reports it through
``IOutputAllocator.notify_shape``); ``get_max_output_size`` gives an output's bytes with each such extent
at its upper bound. At enqueue, every tensor with a data-dependent extent gets a buffer sized for the
upper bound (an output: the address set for it, assumed large enough, as TensorRT's "preallocate" use;
or what its ``IOutputAllocator`` returns, asked for the bound's bytes); the size tensor's own buffer is
filled with 0xFF bytes (-1) before its plugin layer runs, so a kernel that never writes its count is
caught; right after that layer, the stream is synchronized and the count read back, refused when
negative or above the bound, and bound, so that the layers after it see the actual extent (a JIT
plugin sees -1 for the extents it writes itself, as ``tensorrt.plugin``'s ``Tensor.is_data_dependent``
expects). Each output with an allocator is told its shape (``notify_shape``) once the engine ran.

Failures are TensorRT's: ``deserialize_cuda_engine`` returns ``None`` and logs for a plan this runtime and
device may not run (``Runtime.deserialize_cuda_engine``: TensorRT version, version compatibility and its lean
runtime, compute capability and hardware compatibility level, plugin PTX the device's driver would refuse, a
JIT plugin not registered); ``set_tensor_address``
returns ``False`` and logs for an unknown name or an address not 256-byte aligned; and
``execute_async_v3`` returns ``False`` and logs when a layer cannot run (a launch CUDA would refuse,
a zero grid or block dimension among them, checked before anything is enqueued). Note that
Torch-TensorRT 2.11's Python runtime ignores both return values: its outputs then stay unwritten,
and only the log says why (tests of the emulated tier check the log for that).
"""

import operator
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

from . import _cuda, _device, _ptx, _version
from ._dims import Dims, evaluate, expr_from_json, size_key, size_tensors_of, symbols_of
from ._enums import (
    ITEMSIZE,
    DataType,
    HardwareCompatibilityLevel,
    Severity,
    TensorFormat,
    TensorIOMode,
    TensorLocation,
    TensorRTPhase,
)
from ._format import decode, encode
from ._logging import report
from ._plugin import PluginFieldCollection, PluginTensorDesc, field_from_json
from ._strict import Strict, unpicklable


def _numel(shape: Sequence[int]) -> int:
    n = 1
    for s in shape:
        n *= int(s)
    return n


def _strides(shape: Sequence[int]) -> List[int]:
    """Row-major strides; -1 for a stride that depends on an extent not known yet (-1 in ``shape``: a
    data-dependent extent the plugin itself decides; what TensorRT passes there is not documented)."""
    return [-1 if any(int(s) < 0 for s in shape[k + 1:]) else _numel(shape[k + 1:]) for k in range(len(shape))]


#: the alignment asked of output allocators (and of addresses: IExecutionContext::setTensorAddress)
ALIGNMENT = 256


def aot_launch(launch: Dict[str, Any], extras: Sequence[Any], bindings, layer: str, fn=None):
    """An AOT plugin launch evaluated at ``bindings`` (launch and extras as stored JSON expressions):
    ``(grid, block, shared_mem, extra values)``; raises ``RuntimeError`` naming what CUDA would refuse
    (a zero or oversized grid or block dimension, too much shared memory: ``_device.launch_problems``,
    with the loaded function's attributes ``fn`` where known) or an extra argument that does not fit
    32 bits."""
    v = {k: evaluate(e, bindings) for k, e in launch.items()}
    fn = fn or {}
    problems = _device.launch_problems(v, _device.current(), fn.get("static_smem", 0), fn.get("max_dynamic_smem"),
                                       fn.get("max_threads"), at_enqueue=True)
    values = []
    for i, e in enumerate(extras):
        x = evaluate(e, bindings)
        if not -(2**31) <= x < 2**31:
            problems.append(f"extra argument {i} = {x} does not fit 32 bits")
        values.append(x)
    if problems:
        raise RuntimeError(f"layer {layer!r}: cannot launch: " + "; ".join(problems))
    return ((v["grid_x"], v["grid_y"], v["grid_z"]), (v["block_x"], v["block_y"], v["block_z"]), v["shared_mem"],
            values)


def run_aot(kernel, launch: Dict[str, Any], extras: Sequence[Any], bindings, in_ptrs, out_ptrs, stream: int,
            layer: str) -> None:
    """One AOT plugin launch at ``bindings`` (launch and extras as stored JSON expressions)."""
    grid, block, smem, values = aot_launch(launch, extras, bindings, layer, kernel.attributes())
    args = [("ptr", p) for p in in_ptrs] + [("i32", x) for x in values] + [("ptr", p) for p in out_ptrs]
    kernel.launch(grid, block, smem, stream, args)


def run_jit(plugin, in_shapes, out_shapes, types, in_ptrs, out_ptrs, stream: int) -> None:
    """One JIT plugin ``enqueue``, with the descriptors and strides TensorRT passes (LINEAR formats)."""
    shapes = list(in_shapes) + list(out_shapes)
    descs = [PluginTensorDesc(s, t, TensorFormat.LINEAR) for s, t in zip(shapes, types)]
    n_in = len(in_shapes)
    strides = [_strides(s) for s in shapes]
    plugin.enqueue(descs[:n_in], descs[n_in:], list(in_ptrs), list(out_ptrs), strides[:n_in], strides[n_in:],
                   int(stream))


_CAI = {DataType.FLOAT: "<f4", DataType.HALF: "<f2", DataType.BF16: "<i2", DataType.INT8: "|i1",
        DataType.INT32: "<i4", DataType.INT64: "<i8", DataType.BOOL: "|b1", DataType.UINT8: "|u1"}


class _DeviceArray:
    def __init__(self, ptr: int, n: int, dt):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": _CAI[dt], "data": (int(ptr), False), "version": 2}


def tensor_at(ptr: int, dt, shape: Sequence[int]):
    """The device buffer at ``ptr`` as a torch tensor of TensorRT type ``dt`` and ``shape`` (a fresh empty
    tensor where the shape holds no element)."""
    import torch

    from ._compute import DTYPES

    n = _numel(shape)
    if n == 0 or not ptr:
        return torch.empty([int(s) for s in shape], dtype=DTYPES[dt.name], device="cuda")
    t = torch.as_tensor(_DeviceArray(ptr, n, dt), device="cuda")
    return (t.view(torch.bfloat16) if dt == DataType.BF16 else t).view([int(s) for s in shape])


def run_standard(layer: Dict[str, Any], tensors: Dict[str, Any], ptrs: Dict[str, int], shapes, bindings,
                 stream: int) -> None:
    """One standard layer (``_compute``'s torch implementation) on ``stream``, into its outputs' buffers."""
    import torch

    from . import _compute

    def view(name):
        return tensor_at(ptrs[name], DataType[tensors[name]["dtype"]], shapes[name])

    with torch.cuda.stream(torch.cuda.ExternalStream(int(stream))):
        xs = [view(n) if n is not None else None for n in layer["inputs"]]
        ys = _compute.run(layer["type"], layer["params"], xs, [shapes[n] for n in layer["outputs"]],
                          lambda j: evaluate(j, bindings))
        for name, y in zip(layer["outputs"], ys):
            if _numel(shapes[name]):
                view(name).copy_(y)


def run_cast(src: int, dst: int, n: int, src_dt, dst_dt, stream: int) -> None:
    if src_dt == dst_dt:
        _cuda.copy(dst, src, n * ITEMSIZE[src_dt], stream)
        return
    import torch  # a dtype conversion is done by torch (the emulator has no conversion kernels of its own)

    if n == 0:
        return
    with torch.cuda.stream(torch.cuda.ExternalStream(int(stream))):
        tensor_at(dst, dst_dt, [n]).copy_(tensor_at(src, src_dt, [n]))


class _OutputAllocatorType(type):
    """pybind11's check for an interface class implemented in Python: the base ``__init__`` must run."""

    def __call__(cls, *args, **kwargs):
        obj = super().__call__(*args, **kwargs)
        if not obj.__dict__.get("_base_initialized"):
            raise TypeError("tensorrt.tensorrt.IOutputAllocator.__init__() must be called when overriding __init__")
        return obj


class IOutputAllocator(metaclass=_OutputAllocatorType):
    """Interface users subclass to control an output's memory (``IExecutionContext.set_output_allocator``).
    A subclass calls ``trt.IOutputAllocator.__init__(self)`` and implements

    - ``reallocate_output_async(tensor_name, memory, size, alignment, stream) -> int``: the address of at least
      ``size`` bytes (always positive, even for an empty tensor) aligned to ``alignment``, or ``None`` (then
      ``execute_async_v3`` fails); ``memory`` is the output's current address (0 if none). Where a subclass
      only has the deprecated ``reallocate_output(tensor_name, memory, size, alignment)`` (no stream), that
      is called, as TensorRT's bindings do;
    - ``notify_shape(tensor_name, shape)``: the output's actual shape (a ``Dims``), once the engine ran.

    The base class itself implements neither (as in TensorRT's bindings)."""

    def __init__(self):
        self.__dict__["_base_initialized"] = True


def _release(version) -> Optional[Tuple[int, ...]]:
    """``(10, 15, 1, 29)`` from ``"10.15.1.29"``; ``None`` for anything else."""
    try:
        return tuple(int(p) for p in str(version).split("."))
    except ValueError:
        return None


_USAGE = "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error ("


@unpicklable
class Runtime(Strict):
    """Deserializes plans where TensorRT would (:meth:`deserialize_cuda_engine`)."""

    def __init__(self, logger):
        self._logger = logger
        self._host_code = False

    @property
    def logger(self):
        return self._logger

    @property
    def engine_host_code_allowed(self) -> bool:
        """Whether this runtime may deserialize engines that contain host executable code (default ``False``):
        a VERSION_COMPATIBLE plan carrying its lean runtime needs it (NvInferRuntime.h,
        ``IRuntime::setEngineHostCodeAllowed``)."""
        return self._host_code

    @engine_host_code_allowed.setter
    def engine_host_code_allowed(self, allowed) -> None:
        self._host_code = bool(allowed)

    def load_runtime(self, path: str) -> Optional["Runtime"]:
        """NvInferRuntime.h, ``IRuntime::loadRuntime``: a runtime loaded from a lean runtime library, to run plans
        built with VERSION_COMPATIBLE and EXCLUDE_LEAN_RUNTIME by that library's TensorRT version; ``None`` where it
        cannot be loaded. The emulator loads no library: always ``None``, the reason logged."""
        report(self._logger, Severity.ERROR, f"IRuntime::loadRuntime: Runtime load failed: {str(path)!r}: the TensorRT "
               "emulator cannot load a lean runtime library; a plan built with VERSION_COMPATIBLE and "
               f"EXCLUDE_LEAN_RUNTIME deserializes in the emulator only under the TensorRT version that built it "
               f"(this is {_version.VERSION}), with a plain Runtime")
        return None

    def deserialize_cuda_engine(self, serialized_engine) -> Optional["ICudaEngine"]:
        """The engine, or ``None`` with the reason logged where TensorRT would refuse the plan here:

        - a VERSION_COMPATIBLE plan that carries its lean runtime (built without EXCLUDE_LEAN_RUNTIME) needs
          ``engine_host_code_allowed`` (TensorRT's words: "Cannot deserialize engine with lean runtime since
          IRuntime::getEngineHostCodeAllowed() is false.");
        - version: the plan's TensorRT version must be this one, unless the plan is VERSION_COMPATIBLE and this
          runtime is newer (never older). A newer runtime runs such a plan with the lean runtime it carries; a
          plan built with EXCLUDE_LEAN_RUNTIME needs ``load_runtime`` of the building version's lean library,
          which the emulator cannot load: refused, saying so;
        - compute capability: NONE and SAME_COMPUTE_CAPABILITY plans only on a device of the plan's; AMPERE_PLUS
          plans on any device of compute 8.0 and up (TensorRT's words for a device below);
        - every AOT plugin layer's PTX is checked against the device (without a GPU, or under a stood-in one:
          ``_ptx.check``; on a real GPU its driver loads it when the layer first runs), and every JIT plugin layer
          needs its plugin registered in this process.

        TensorRT's texts are quoted where known (notes/fleet_engines.md, sections A, B and G); the rest is the
        emulator's."""
        try:
            plan = decode(serialized_engine)
        except Exception as e:  # noqa: BLE001 - TensorRT reports a failed deserialization and returns None
            report(self._logger, Severity.ERROR, f"Error deserializing the engine (TensorRT emulator): {e}")
            return None
        problem = self._incompatible(plan)
        if problem:
            report(self._logger, Severity.ERROR, problem)
            return None
        try:
            return ICudaEngine(plan, self._logger)
        except Exception as e:  # noqa: BLE001
            report(self._logger, Severity.ERROR, f"Error deserializing the engine (TensorRT emulator): {e}")
            return None

    def _incompatible(self, plan: Dict[str, Any]) -> Optional[str]:
        """Why this runtime, on this device, may not deserialize ``plan`` (TensorRT's checks), or ``None``."""
        flags = set(plan.get("config", {}).get("flags", []))
        vc = "VERSION_COMPATIBLE" in flags
        lean = vc and "EXCLUDE_LEAN_RUNTIME" not in flags  # the plan carries its own lean runtime
        if lean and not self._host_code:
            # the lean runtime is host code inside the plan: the application must opt in (trtexec does for every
            # version-compatible plan, samples/common/sampleEngines.cpp; TensorRT's text, libnvinfer_lean)
            return ("IRuntime::deserializeCudaEngine: Cannot deserialize engine with lean runtime since "
                    "IRuntime::getEngineHostCodeAllowed() is false. (Set Runtime.engine_host_code_allowed = True "
                    "for a plan built with BuilderFlag.VERSION_COMPATIBLE, or build it with EXCLUDE_LEAN_RUNTIME.)")
        got, want = plan.get("tensorrt_version"), _version.VERSION
        if got != want:
            mine, theirs = _release(want), _release(got)
            if not (vc and mine is not None and theirs is not None and mine > theirs):
                # a plan of another version, or a version-compatible plan of a newer one (never backwards)
                return (f"{_USAGE}The engine plan file is not compatible with this version of TensorRT, expecting "
                        f"library version {want} got {got}, please rebuild.)")
            if not lean:
                return (f"IRuntime::deserializeCudaEngine: the engine plan was built by TensorRT {got} with "
                        "BuilderFlag.VERSION_COMPATIBLE and BuilderFlag.EXCLUDE_LEAN_RUNTIME, so it carries no lean "
                        f"runtime: TensorRT {want} runs it only through the runtime Runtime.load_runtime() loads from "
                        f"the lean runtime library of TensorRT {got}, which the TensorRT emulator does not emulate; "
                        f"deserialize it with TensorRT {got}, or build it without EXCLUDE_LEAN_RUNTIME (and set "
                        "Runtime.engine_host_code_allowed = True)")
        level = plan.get("hardware_compatibility_level", "NONE")
        if level not in HardwareCompatibilityLevel.__members__:
            return f"Error deserializing the engine (TensorRT emulator): unknown hardware compatibility level {level!r}"
        dev = _device.current()
        if level == "AMPERE_PLUS":
            if dev.cc < (8, 0):
                return (f"{_USAGE}The current device is not compatible with this hardware-compatible engine. Expected "
                        f"compute capability >= 8.0 but got compute capability = {dev.compute}. Please rebuild the "
                        "engine.)")
        elif plan.get("compute_capability") != dev.compute:  # NONE, SAME_COMPUTE_CAPABILITY
            return (f"{_USAGE}The engine plan file is generated on an incompatible device, expecting compute "
                    f"{dev.compute} got compute {plan.get('compute_capability')}, please rebuild.)")
        return None


@unpicklable
class ICudaEngine(Strict):
    def __init__(self, plan: Dict[str, Any], logger):
        self._plan, self._logger = plan, logger
        self._inputs = {r["name"]: r for r in plan["inputs"]}
        self._outputs = {r["name"]: r for r in plan["outputs"]}
        self._io = [r["name"] for r in plan["inputs"]] + [r["name"] for r in plan["outputs"]]
        self._tensors = plan["tensors"]
        self._kernels, self._plugins = {}, {}
        dev = _device.current()
        for i, layer in enumerate(plan["layers"]):
            if layer["kind"] == "aot_plugin":
                ptx, name = layer["ptx"].encode("latin-1"), layer["kernel_name"]
                if not dev.gpu or dev.stand_in:  # what this (stood-in) device's driver would refuse
                    try:
                        _ptx.check(ptx, name, dev.cc)
                    except _ptx.PtxError as e:
                        raise ValueError(f"plugin layer {layer['name']!r}: its kernel {name!r} does not load on this "
                                         f"device (compute {dev.compute}): {e}") from None
                self._kernels[i] = _cuda.Kernel(ptx, name)
            elif layer["kind"] == "jit_plugin":
                self._plugins[i] = self._runtime_plugin(layer)
        for t in self._tensors.values():
            for e in t["dims"]:
                expr_from_json(e)  # validates every stored expression
        #: the size tensors (data-dependent extents) each tensor's dimensions depend on, per axis
        self._size_deps = {n: [size_tensors_of(d) for d in t["dims"]] for n, t in self._tensors.items()}
        #: the tensors with a data-dependent extent
        self._dd = {n for n, deps in self._size_deps.items() if any(deps)}
        written = {n for layer in plan["layers"] for n in layer.get("size_tensors", {})}
        for n, deps in self._size_deps.items():
            unknown = set().union(*deps) - written if deps else set()
            if unknown:
                raise ValueError(f"tensor {n!r} depends on size tensor(s) {sorted(unknown)}, which no layer writes")

    def _runtime_plugin(self, layer):
        from ._plugin import REGISTRY

        ns, name = layer["plugin"].split("::")
        creator = REGISTRY.get_creator(name, layer["version"], ns)
        if creator is None:
            raise LookupError("Cannot deserialize plugin since corresponding IPluginCreatorInterface not found in "
                              f"Plugin Registry: the engine's JIT plugin layer {layer['name']!r} needs plugin "
                              f"{layer['plugin']!r} (version {layer['version']}), which is not registered in this "
                              "process: import the library that registers it before deserializing (AOT plugin "
                              "layers need nothing)")
        fields = PluginFieldCollection([field_from_json(f) for f in layer["fields"]])
        plugin = creator.create_plugin(name, ns, fields, TensorRTPhase.RUNTIME)
        plugin.set_tactic(layer["tactic"])
        return plugin

    # ----- I/O -----
    @property
    def name(self) -> str:
        return self._plan["name"]

    @property
    def num_io_tensors(self) -> int:
        return len(self._io)

    @property
    def num_layers(self) -> int:
        return len(self._plan["layers"])

    @property
    def num_optimization_profiles(self) -> int:
        return 1

    @property
    def hardware_compatibility_level(self):
        """The level the engine was built with (``IBuilderConfig.hardware_compatibility_level``)."""
        return HardwareCompatibilityLevel[self._plan.get("hardware_compatibility_level", "NONE")]

    def get_tensor_name(self, index: int) -> str:
        return self._io[index]

    def _known(self, name: str) -> None:
        if name not in self._tensors or name not in self._io:
            raise KeyError(f"the engine has no I/O tensor named {name!r} (it has {self._io})")

    def get_tensor_mode(self, name: str):
        if name in self._inputs:
            return TensorIOMode.INPUT
        if name in self._outputs:
            return TensorIOMode.OUTPUT
        return TensorIOMode.NONE

    def get_tensor_dtype(self, name: str):
        self._known(name)
        return DataType[self._tensors[name]["dtype"]]

    def get_tensor_shape(self, name: str) -> Dims:
        self._known(name)
        if name in self._inputs:
            return Dims(self._inputs[name]["shape"])
        return Dims([e if isinstance(e, int) else -1 for e in self._tensors[name]["dims"]])

    def get_tensor_profile_shape(self, name: str, profile_index: int) -> List[Dims]:
        rec = self._inputs.get(name)
        if rec is None or profile_index != 0:
            raise ValueError(f"no profile shape for {name!r} in profile {profile_index}")
        if rec["profile"] is None:
            return [Dims(rec["shape"])] * 3
        return [Dims(d) for d in rec["profile"]]

    def get_tensor_location(self, name: str):
        self._known(name)
        return TensorLocation.DEVICE

    def get_tensor_format(self, name: str, profile_index: int = 0):
        self._known(name)
        return TensorFormat.LINEAR

    def is_shape_inference_io(self, name: str) -> bool:
        self._known(name)
        return False

    def create_execution_context(self) -> "IExecutionContext":
        return IExecutionContext(self)

    def serialize(self):
        from ._builder import IHostMemory

        return IHostMemory(encode(self._plan))


@unpicklable
class IExecutionContext(Strict):
    def __init__(self, engine: ICudaEngine):
        self._engine = engine
        self._shapes: Dict[str, tuple] = {}
        self._addresses: Dict[str, int] = {}
        self._constants: Dict[str, int] = {}
        self._allocators: Dict[str, IOutputAllocator] = {}
        self._allocated: Dict[str, int] = {}  # output -> the address its allocator last returned
        self.name = ""

    @property
    def engine(self) -> ICudaEngine:
        return self._engine

    @property
    def active_optimization_profile(self) -> int:
        return 0

    def set_optimization_profile_async(self, profile_index: int, stream_handle: int) -> bool:
        return profile_index == 0

    # ----- shapes -----
    def set_input_shape(self, name: str, shape) -> bool:
        e = self._engine
        rec = e._inputs.get(name)
        shape = tuple(int(s) for s in shape)
        problem = None
        if rec is None:
            problem = f"{name!r} is not an input of the engine (inputs: {list(e._inputs)})"
        elif len(shape) != len(rec["shape"]):
            problem = f"input {name!r} has rank {len(rec['shape'])}, got shape {shape}"
        else:
            mn, _, mx = rec["profile"] or (rec["shape"], rec["shape"], rec["shape"])
            for j, (s, lo, hi) in enumerate(zip(shape, mn, mx)):
                if not lo <= s <= hi:
                    problem = (f"input {name!r} shape {shape}: dimension {j} = {s} is outside the optimization "
                               f"profile's [{lo}, {hi}]")
                    break
        if problem:
            report(e._logger, Severity.ERROR, f"IExecutionContext::setInputShape: {problem}")
            return False
        self._shapes[name] = shape
        return True

    def _bindings(self) -> Dict[str, int]:
        b = {}
        for name, rec in self._engine._inputs.items():
            shape = self._shapes.get(name)
            if shape is None:
                if -1 in rec["shape"]:
                    continue
                shape = tuple(rec["shape"])
            for dim, s in zip(rec["dims"], shape):
                if isinstance(dim, str):
                    b[dim] = s
        return b

    def infer_shapes(self) -> List[str]:
        """Names of the inputs whose shape is still unknown (empty when every shape can be computed)."""
        return [n for n, r in self._engine._inputs.items() if -1 in r["shape"] and n not in self._shapes]

    def get_tensor_shape(self, name: str) -> Dims:
        """-1 for an extent not known yet: a dynamic input dimension before ``set_input_shape``, and a
        data-dependent extent (a size tensor's) always (TensorRT reports it through
        ``IOutputAllocator.notify_shape``)."""
        e = self._engine
        e._known(name)
        b = self._bindings()
        dims = e._tensors[name]["dims"]
        return Dims([evaluate(d, b) if symbols_of(d) <= set(b) else -1 for d in dims])

    def get_max_output_size(self, name: str) -> int:
        """NvInferRuntime.h, IExecutionContext::getMaxOutputSize: the upper bound of output ``name``'s size in bytes
        for the current profile and input shapes (each data-dependent extent at its declared upper bound); -1
        while input shapes are not all set, or for a name that is not an output."""
        e = self._engine
        if name not in e._outputs or self.infer_shapes():
            return -1
        b = self._bindings()
        return self._bound_bytes(name, b)

    def _bound_bytes(self, name: str, bindings) -> int:
        t = self._engine._tensors[name]
        return _numel([evaluate(d, bindings, "upper") for d in t["dims"]]) * ITEMSIZE[DataType[t["dtype"]]]

    # ----- output allocators -----
    def set_output_allocator(self, name: str, output_allocator) -> bool:
        """The allocator ``execute_async_v3`` asks for output ``name``'s memory (``None`` unsets it); ``False`` (and
        logged) where ``name`` is not an output of the engine."""
        if output_allocator is not None and not isinstance(output_allocator, IOutputAllocator):
            raise TypeError("set_output_allocator(): incompatible function arguments: output_allocator must be a "
                            f"tensorrt.IOutputAllocator or None, got {type(output_allocator).__name__}")
        if name not in self._engine._outputs:
            report(self._engine._logger, Severity.ERROR, "IExecutionContext::setOutputAllocator: Error Code 3: API "
                   f"Usage Error (Parameter check failed, condition: {name!r} is the name of an output tensor of the "
                   f"engine {list(self._engine._outputs)}.)")
            return False
        if output_allocator is None:
            self._allocators.pop(name, None)
        else:
            self._allocators[name] = output_allocator
        return True

    def get_output_allocator(self, name: str) -> Optional[IOutputAllocator]:
        return self._allocators.get(name)

    # ----- addresses -----
    def set_tensor_address(self, name: str, memory: int) -> bool:
        # NvInferRuntime.h, IExecutionContext::setTensorAddress: "The pointer must have at least 256-byte
        # alignment"; returns false "if the provided name does not map to an input or output tensor, does
        # not meet alignment requirements, or some other error occurred" and reports through the logger
        # (the "Error Code 3: API Usage Error (Parameter check failed, condition: ...)" form is TensorRT's;
        # the condition texts are the emulator's)
        memory = int(memory)
        condition = None
        if name not in self._engine._io:
            condition = f"{name!r} is the name of an input or output tensor of the engine {self._engine._io}"
        elif memory % 256:
            condition = (f"the address of tensor {name!r} ({memory:#x}) is 256-byte aligned "
                         f"(it is {memory % 256} bytes past a multiple of 256)")
        if condition:
            report(self._engine._logger, Severity.ERROR, "IExecutionContext::setTensorAddress: Error Code 3: API "
                   f"Usage Error (Parameter check failed, condition: {condition}.)")
            return False
        self._addresses[name] = memory
        return True

    def get_tensor_address(self, name: str) -> int:
        return self._addresses.get(name, 0)

    # ----- execution -----
    def execute_async_v3(self, stream_handle: int) -> bool:
        """``False`` (and the reason logged) when the engine cannot run, as TensorRT's ``enqueueV3``."""
        try:
            self._execute(int(stream_handle))
        except Exception as exc:  # noqa: BLE001 - TensorRT reports enqueue failures through the logger
            report(self._engine._logger, Severity.ERROR, f"IExecutionContext::enqueueV3: {exc}")
            return False
        return True

    def _tensor_shapes(self, bindings) -> Tuple[Dict[str, List[int]], Dict[str, int]]:
        """Every tensor's shape at ``bindings`` (-1 for a data-dependent extent whose size tensor is not bound
        yet) and its bytes (for such a tensor: the upper bound's, what its buffer holds)."""
        e = self._engine
        shapes, nbytes = {}, {}
        for n, t in e._tensors.items():
            deps = e._size_deps[n]
            shapes[n] = [-1 if any(size_key(s) not in bindings for s in dep) else evaluate(d, bindings)
                         for d, dep in zip(t["dims"], deps)]
            if -1 in shapes[n] and n in e._dd:
                nbytes[n] = self._bound_bytes(n, bindings)
            else:
                nbytes[n] = _numel(shapes[n]) * ITEMSIZE[DataType[t["dtype"]]]
        return shapes, nbytes

    def _execute(self, stream: int) -> None:
        e = self._engine
        missing = self.infer_shapes()
        if missing:
            raise ValueError(f"input shapes not set: {missing} (IExecutionContext.set_input_shape)")
        b = self._bindings()  # the size tensors' values join it as the layers writing them run
        shapes, nbytes = self._tensor_shapes(b)
        unknown: Set[str] = {n for n, s in shapes.items() if n in e._dd and -1 in s}
        ptrs: Dict[str, int] = {}
        allocators = {n: a for n, a in self._allocators.items() if n in e._outputs}
        for n in e._io:
            p = self._addresses.get(n, 0)
            if n in allocators and n not in e._inputs:
                continue  # its memory comes from its allocator, once every check has passed
            if not p and n in e._dd:
                # NvInferRuntime.h, IExecutionContext::setTensorAddress: before enqueueV3 an output needs an address
                # or an IOutputAllocator; with a data-dependent shape the emulator sizes neither itself
                raise ValueError(f"no address set for {n!r} and no output allocator: its shape {tuple(shapes[n])} "
                                 "is data-dependent (-1: a size tensor's extent), so TensorRT needs the address of a "
                                 f"buffer large enough for its upper bound ({nbytes[n]} bytes, "
                                 "IExecutionContext.get_max_output_size; set_tensor_address) or an IOutputAllocator "
                                 "(IExecutionContext.set_output_allocator)")
            if not p and nbytes[n]:
                raise ValueError(f"no address set for {n!r} (IExecutionContext.set_tensor_address)")
            ptrs[n] = p
        for i, layer in enumerate(e._plan["layers"]):  # every launch checked before any work is enqueued
            # (a layer reading or writing a data-dependent tensor: when it runs, once the extents are known)
            if (layer["kind"] == "aot_plugin" and not unknown & set(layer["inputs"] + layer["outputs"])
                    and self._launches(layer, nbytes)):
                aot_launch(layer["launch"], [a["expr"] for a in layer["extra_args"]], b, layer["name"])
        _cuda.current_context()
        dest: Dict[str, int] = {}
        for n, alloc in allocators.items():
            # NvInferRuntime.h, IOutputAllocator::reallocateOutputAsync: size in bytes, "always positive, even for
            # an empty tensor"; the emulator asks once per enqueue for the output's upper bound (its exact size
            # where its shape does not depend on data)
            dest[n] = self._allocated[n] = self._reallocate(alloc, n, self._allocated.get(n) or
                                                            self._addresses.get(n, 0), max(nbytes[n], 1), stream)
            if n not in e._inputs:
                ptrs[n] = dest[n]
        scratch = []
        try:
            for n in e._tensors:
                if n not in ptrs and n not in self._constant_names():
                    ptrs[n] = _cuda.alloc(nbytes[n], stream)
                    scratch.append(ptrs[n])
            for i, layer in enumerate(e._plan["layers"]):
                self._run_layer(i, layer, ptrs, shapes, nbytes, b, stream)
                if layer.get("size_tensors"):
                    self._read_size_tensors(layer, ptrs, b, stream)
                    shapes, nbytes = self._tensor_shapes(b)
            # an input marked as an output directly: copy it
            for n in e._outputs:
                if n in e._inputs and ptrs[n] != self._addresses.get(n):
                    _cuda.copy(self._addresses[n], ptrs[n], nbytes[n], stream)
                if n in e._inputs and n in dest and dest[n] != ptrs[n]:
                    _cuda.copy(dest[n], ptrs[n], nbytes[n], stream)
        finally:
            for p in scratch:
                _cuda.free(p, stream)
        for n, alloc in allocators.items():
            self._notify_shape(alloc, n, shapes[n])

    def _reallocate(self, alloc, name: str, current: int, size: int, stream: int) -> int:
        """The memory ``alloc`` gives output ``name`` (TensorRT's bindings: ``reallocate_output_async``, else the
        deprecated ``reallocate_output``, else none); ``RuntimeError`` where it gives none, as the enqueue fails."""
        method = "reallocate_output_async"
        fn = getattr(alloc, method, None)
        args = (name, int(current), int(size), ALIGNMENT, int(stream))
        if fn is None:
            method = "reallocate_output"
            fn = getattr(alloc, method, None)
            args = args[:4]
        call = f"IOutputAllocator.{method}({', '.join(repr(a) for a in args)})"
        if fn is None:
            raise RuntimeError(f"the output allocator of {name!r} implements neither reallocate_output_async nor "
                               "reallocate_output: no memory for the output")
        try:
            got = fn(*args)
        except Exception as exc:  # noqa: BLE001 - TensorRT's bindings catch it and take it as nullptr
            raise RuntimeError(f"{call} raised {type(exc).__name__}: {exc}: no memory for output {name!r}") from None
        if got is None:
            raise RuntimeError(f"{call} returned None: no memory for output {name!r}")
        try:
            ptr = operator.index(got)
        except TypeError:
            raise RuntimeError(f"{call} returned a {type(got).__name__}, not an address (an int): no memory for "
                               f"output {name!r}") from None
        if ptr == 0:
            raise RuntimeError(f"{call} returned 0 (nullptr): no memory for output {name!r}")
        if ptr % ALIGNMENT:
            raise RuntimeError(f"{call} returned {ptr:#x}, which is not aligned to {ALIGNMENT} bytes (the alignment "
                               "asked for)")
        return ptr

    def _notify_shape(self, alloc, name: str, shape: List[int]) -> None:
        """``notify_shape`` (TensorRT's bindings print what it raises and go on; the emulator logs it)."""
        fn = getattr(alloc, "notify_shape", None)
        try:
            if fn is None:
                raise RuntimeError('Tried to call pure virtual function "IOutputAllocator::notify_shape"')
            fn(name, Dims(shape))
        except Exception as exc:  # noqa: BLE001
            report(self._engine._logger, Severity.ERROR,
                   f"IOutputAllocator::notifyShape({name!r}): exception caught: {type(exc).__name__}: {exc}")

    def _read_size_tensors(self, layer, ptrs, bindings, stream) -> None:
        """Right after a plugin layer that writes size tensors: each count, read back (the stream synchronized),
        checked and bound, so that the layers after it see the actual extents.

        A count below 0 or above its upper bound (evaluated at the current input shapes) fails the enqueue.
        TensorRT's behaviour there is not documented; the emulator refuses it because TensorRT sized the
        data-dependent buffers from the bound, so a kernel that counts past it has written past them. The
        buffer was filled with 0xFF bytes before the layer ran: a kernel that never writes its count leaves -1."""
        for name, st in layer["size_tensors"].items():
            dt = DataType[st["dtype"]]
            raw = _cuda.download(ptrs[name], ITEMSIZE[dt], stream)  # synchronizes the stream
            value = int.from_bytes(raw, "little", signed=True)
            upper = evaluate(st["upper"], bindings)
            if not 0 <= value <= upper:
                why = (" (the emulator's poison: the plugin never wrote its size tensor)" if value == -1 else "")
                raise RuntimeError(f"plugin layer {layer['name']!r} wrote {value} to its size tensor output {name!r} "
                                   f"({dt.name}){why}: a size tensor's value must be in [0, {upper}] (its upper bound "
                                   "at the current input shapes, from which TensorRT sized the data-dependent buffers)")
            bindings[size_key(name)] = value

    @staticmethod
    def _launches(layer, nbytes) -> bool:
        """An AOT layer whose inputs and outputs are all empty is not launched (nothing to read or write)."""
        return any(nbytes[n] for n in layer["outputs"]) or any(nbytes[n] for n in layer["inputs"])

    def _constant_names(self):
        return {layer["outputs"][0] for layer in self._engine._plan["layers"] if layer["kind"] == "constant"}

    def _run_layer(self, i, layer, ptrs, shapes, nbytes, bindings, stream) -> None:
        e = self._engine
        kind = layer["kind"]
        if kind == "layer":
            run_standard(layer, e._tensors, ptrs, shapes, bindings, stream)
            return
        ins = [ptrs[n] for n in layer["inputs"]]
        if kind == "constant":
            out = layer["outputs"][0]
            if out not in self._constants:
                data = bytes.fromhex(layer["data"])
                p = _cuda.alloc(len(data), stream)
                _cuda.upload(p, data, stream)
                self._constants[out] = p
            if out in ptrs:  # also a network output
                _cuda.copy(ptrs[out], self._constants[out], nbytes[out], stream)
            else:
                ptrs[out] = self._constants[out]
            return
        outs = [ptrs[n] for n in layer["outputs"]]
        if kind in ("aot_plugin", "jit_plugin"):
            # a size tensor's buffer is poisoned (0xFF bytes: -1) before the layer that writes it runs: a kernel that
            # never writes its count is caught when the count is read back (TensorRT does not clear it: NVIDIA's
            # C++ non-zero sample clears its counter itself)
            for n in layer.get("size_tensors", {}):
                _cuda.fill(ptrs[n], 0xFF, nbytes[n], stream)
            # an aliased pair shares one buffer: TensorRT "may insert copies to facilitate this capability"
            # (IPluginV3OneBuildV2::getAliasedInput); the emulator always does, so the plugin reads and
            # writes the output's buffer and the input tensor stays as it was for its other readers
            for o, j in layer.get("aliased", {}).items():
                _cuda.copy(outs[int(o)], ins[j], nbytes[layer["inputs"][j]], stream)
                ins[j] = outs[int(o)]
            watched = self._read_only_inputs(layer, ins, nbytes, stream)
        if kind == "aot_plugin":
            if self._launches(layer, nbytes):
                run_aot(e._kernels[i], layer["launch"], [a["expr"] for a in layer["extra_args"]], bindings, ins,
                        outs, stream, layer["name"])
        elif kind == "jit_plugin":
            types = [DataType[t] for t in layer["types"]]
            run_jit(e._plugins[i], [shapes[n] for n in layer["inputs"]], [shapes[n] for n in layer["outputs"]],
                    types, ins, outs, stream)
        if kind in ("aot_plugin", "jit_plugin"):
            for k, before in watched:
                if _cuda.download(ins[k], len(before), stream) != before:
                    raise RuntimeError(
                        f"plugin layer {layer['name']!r} wrote its input {k} ({layer['inputs'][k]!r}), which is "
                        "read-only: TensorRT may share that buffer with other layers and engine inputs; a plugin "
                        "writes only its outputs, or an input aliased to an output (getAliasedInput, with "
                        "PreviewFeature::kALIASED_PLUGIN_IO_10_03)")
        elif kind in ("cast", "identity"):
            src, dst = layer["inputs"][0], layer["outputs"][0]
            run_cast(ins[0], outs[0], _numel(shapes[src]), DataType[e._tensors[src]["dtype"]],
                     DataType[e._tensors[dst]["dtype"]], stream)
        else:
            raise ValueError(f"layer {layer['name']!r} of kind {kind!r} is not emulated")

    #: the inputs of a plugin layer up to this many bytes in all are checked for writes after it runs
    _READ_ONLY_CHECK_BYTES = 64 << 20

    def _read_only_inputs(self, layer, ins, nbytes, stream) -> List[Tuple[int, bytes]]:
        """``(input index, its bytes now)`` for each input of ``layer`` that is not aliased to an output (a
        plugin must not write it), when they are small enough to compare after the layer runs."""
        aliased = set(layer.get("aliased", {}).values())
        idx = [k for k in range(len(ins)) if k not in aliased and nbytes[layer["inputs"][k]]]
        if sum(nbytes[layer["inputs"][k]] for k in idx) > self._READ_ONLY_CHECK_BYTES:
            return []
        return [(k, _cuda.download(ins[k], nbytes[layer["inputs"][k]], stream)) for k in idx]

    def __del__(self):
        try:
            for p in self._constants.values():
                _cuda.free(p, 0)
        except Exception:  # noqa: BLE001 - interpreter shutdown, no driver: nothing to free
            pass
