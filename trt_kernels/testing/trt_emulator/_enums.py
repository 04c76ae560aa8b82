"""The enums of TensorRT's Python bindings that the emulator exposes, as the emulated version has them.

pybind11 enums behave like this, and so do these: members are instances of their enum,
``int()``/``operator.index`` give the value, ``.name``/``.value``/``__members__`` exist,
``==`` with anything that is not a member of the same enum is ``False`` (never an error),
members hash by value, and "arithmetic" enums (flags) also support ``|``, ``&`` and ordering.
Members and values follow the emulated line (``_version.PROFILE``; values from NVIDIA's
``NvInfer.h`` of that line): under 11.x a member TensorRT 11 removed (``BuilderFlag.FP16``, ...)
is absent and using it fails naming the version, and where the two lines number a flag
differently (``NetworkDefinitionCreationFlag``, ``BuilderFlag``) each gets its own values, so a
flag word built under one line means what that line's TensorRT would read from it.
"""

import enum

from . import _version


class _PybindEnumMeta(enum.EnumMeta):
    """A missing member says whether the emulated TensorRT lacks it (another line has it) or the
    emulator left it out, as the emulated classes do (see ``_strict``)."""

    def __getattr__(cls, name):
        if name.startswith("_"):
            raise AttributeError(name)
        members = cls.__dict__.get("_member_map_", {})
        if name in members:
            return members[name]
        raise AttributeError(_version.missing(f"{cls.__name__}.{name}"))


class _PybindEnum(enum.Enum, metaclass=_PybindEnumMeta):
    def __int__(self):
        return self.value

    def __index__(self):
        return self.value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        return type(other) is type(self) and other.value == self.value

    def __repr__(self):
        return f"<{type(self).__name__}.{self.name}: {self.value}>"

    def __str__(self):
        return f"{type(self).__name__}.{self.name}"


class _ArithmeticEnum(_PybindEnum):
    def __or__(self, other):
        return int(self) | int(other)

    __ror__ = __or__

    def __and__(self, other):
        return int(self) & int(other)

    __rand__ = __and__

    def __lt__(self, other):
        return int(self) < int(other)

    def __le__(self, other):
        return int(self) <= int(other)

    def __gt__(self, other):
        return int(self) > int(other)

    def __ge__(self, other):
        return int(self) >= int(other)

    __hash__ = _PybindEnum.__hash__
    __eq__ = _PybindEnum.__eq__


def _make(name, members, arithmetic=False):
    base = _ArithmeticEnum if arithmetic else _PybindEnum
    cls = base(name, members)
    cls.__module__ = "tensorrt.tensorrt"
    cls.__qualname__ = name
    return cls


DataType = _make("DataType", dict(FLOAT=0, HALF=1, INT8=2, INT32=3, BOOL=4, UINT8=5, FP8=6, BF16=7, INT64=8, INT4=9,
                                  FP4=10, E8M0=11))
TensorFormat = _make("TensorFormat", dict(LINEAR=0, CHW2=1, HWC8=2, CHW4=3, CHW16=4, CHW32=5, DHWC8=6, CDHW32=7, HWC=8,
                                          DLA_LINEAR=9, DLA_HWC4=10, HWC16=11, DHWC=12), arithmetic=True)
DimensionOperation = _make("DimensionOperation", dict(SUM=0, PROD=1, MAX=2, MIN=3, SUB=4, EQUAL=5, LESS=6,
                                                      FLOOR_DIV=7, CEIL_DIV=8))
PluginFieldType = _make("PluginFieldType", dict(FLOAT16=0, FLOAT32=1, FLOAT64=2, INT8=3, INT16=4, INT32=5, CHAR=6,
                                                DIMS=7, UNKNOWN=8, BF16=9, INT64=10, FP8=11, INT4=12, FP4=13))
QuickPluginCreationRequest = _make("QuickPluginCreationRequest", dict(UNKNOWN=0, PREFER_JIT=1, PREFER_AOT=2,
                                                                      STRICT_JIT=3, STRICT_AOT=4))
TensorRTPhase = _make("TensorRTPhase", dict(BUILD=0, RUNTIME=1))
PluginCapabilityType = _make("PluginCapabilityType", dict(CORE=0, BUILD=1, RUNTIME=2))
PluginArgType = _make("PluginArgType", dict(INT=0))
PluginArgDataType = _make("PluginArgDataType", dict(INT8=0, INT16=1, INT32=2))
if _version.PROFILE == "10.15":
    # NvInfer.h of 10.15: kEXPLICIT_BATCH (deprecated, ignored) = 0, kSTRONGLY_TYPED = 1, ...
    _NETWORK_FLAGS = dict(EXPLICIT_BATCH=0, STRONGLY_TYPED=1, PREFER_JIT_PYTHON_PLUGINS=2, PREFER_AOT_PYTHON_PLUGINS=3)
else:
    _NETWORK_FLAGS = dict(STRONGLY_TYPED=0, PREFER_JIT_PYTHON_PLUGINS=1, PREFER_AOT_PYTHON_PLUGINS=2)
NetworkDefinitionCreationFlag = _make("NetworkDefinitionCreationFlag", _NETWORK_FLAGS, arithmetic=True)
Severity = _make("Severity", dict(INTERNAL_ERROR=0, ERROR=1, WARNING=2, INFO=3, VERBOSE=4))
SerializationFlag = _make("SerializationFlag", dict(EXCLUDE_WEIGHTS=0, EXCLUDE_LEAN_RUNTIME=1, INCLUDE_REFIT=2),
                          arithmetic=True)
ElementWiseOperation = _make("ElementWiseOperation", dict(SUM=0, PROD=1, MAX=2, MIN=3, SUB=4, DIV=5, POW=6,
                                                          FLOOR_DIV=7, AND=8, OR=9, XOR=10, EQUAL=11, GREATER=12,
                                                          LESS=13))
ActivationType = _make("ActivationType", dict(RELU=0, SIGMOID=1, TANH=2, LEAKY_RELU=3, ELU=4, SELU=5, SOFTSIGN=6,
                                              SOFTPLUS=7, CLIP=8, HARD_SIGMOID=9, SCALED_TANH=10,
                                              THRESHOLDED_RELU=11, GELU_ERF=12, GELU_TANH=13))
UnaryOperation = _make("UnaryOperation", dict(EXP=0, LOG=1, SQRT=2, RECIP=3, ABS=4, NEG=5, SIN=6, COS=7, TAN=8,
                                              SINH=9, COSH=10, ASIN=11, ACOS=12, ATAN=13, ASINH=14, ACOSH=15,
                                              ATANH=16, CEIL=17, FLOOR=18, ERF=19, NOT=20, SIGN=21, ROUND=22,
                                              ISINF=23, ISNAN=24))
InterpolationMode = _make("InterpolationMode", dict(NEAREST=0, LINEAR=1, CUBIC=2))
SampleMode = _make("SampleMode", dict(STRICT_BOUNDS=0, WRAP=1, CLAMP=2, FILL=3, REFLECT=4))
MatrixOperation = _make("MatrixOperation", dict(NONE=0, TRANSPOSE=1, VECTOR=2))
TopKOperation = _make("TopKOperation", dict(MAX=0, MIN=1))
EngineCapability = _make("EngineCapability", dict(STANDARD=0, SAFETY=1, DLA_STANDALONE=2), arithmetic=True)
DeviceType = _make("DeviceType", dict(GPU=0, DLA=1))
ProfilingVerbosity = _make("ProfilingVerbosity", dict(LAYER_NAMES_ONLY=0, NONE=1, DETAILED=2))
TilingOptimizationLevel = _make("TilingOptimizationLevel", dict(NONE=0, FAST=1, MODERATE=2, FULL=3))
MemoryPoolType = _make("MemoryPoolType", dict(WORKSPACE=0, DLA_MANAGED_SRAM=1, DLA_LOCAL_DRAM=2, DLA_GLOBAL_DRAM=3,
                                              TACTIC_DRAM=4, TACTIC_SHARED_MEMORY=5))
TensorIOMode = _make("TensorIOMode", dict(NONE=0, INPUT=1, OUTPUT=2))
TensorLocation = _make("TensorLocation", dict(DEVICE=0, HOST=1))
HardwareCompatibilityLevel = _make("HardwareCompatibilityLevel", dict(NONE=0, AMPERE_PLUS=1,
                                                                      SAME_COMPUTE_CAPABILITY=2))
if _version.PROFILE == "10.15":
    # NvInfer.h of 10.15; the precision flags are deprecated there and gone in 11. kWEIGHTLESS is an alias of
    # kSTRIP_PLAN bound first, so (as with pybind11, which names a value by its first binding) the member's
    # name is WEIGHTLESS
    _BUILDER_FLAGS = dict(FP16=0, INT8=1, DEBUG=2, GPU_FALLBACK=3, REFIT=4, DISABLE_TIMING_CACHE=5, TF32=6,
                          SPARSE_WEIGHTS=7, SAFETY_SCOPE=8, OBEY_PRECISION_CONSTRAINTS=9,
                          PREFER_PRECISION_CONSTRAINTS=10, DIRECT_IO=11, REJECT_EMPTY_ALGORITHMS=12,
                          VERSION_COMPATIBLE=13, EXCLUDE_LEAN_RUNTIME=14, FP8=15, ERROR_ON_TIMING_CACHE_MISS=16,
                          BF16=17, DISABLE_COMPILATION_CACHE=18, WEIGHTLESS=19, STRIP_PLAN=19, REFIT_IDENTICAL=20,
                          WEIGHT_STREAMING=21, INT4=22, REFIT_INDIVIDUAL=23, STRICT_NANS=24, MONITOR_MEMORY=25,
                          FP4=26, EDITABLE_TIMING_CACHE=27, DISTRIBUTIVE_INDEPENDENCE=28)
else:
    _BUILDER_FLAGS = dict(DEBUG=2, GPU_FALLBACK=3, REFIT=4, DISABLE_TIMING_CACHE=5, TF32=6, SPARSE_WEIGHTS=7,
                          SAFETY_SCOPE=8, DIRECT_IO=11, VERSION_COMPATIBLE=12, EXCLUDE_LEAN_RUNTIME=13,
                          ERROR_ON_TIMING_CACHE_MISS=15, DISABLE_COMPILATION_CACHE=17, STRIP_PLAN=18,
                          REFIT_IDENTICAL=19, WEIGHT_STREAMING=20, REFIT_INDIVIDUAL=22, STRICT_NANS=23,
                          MONITOR_MEMORY=24, EDITABLE_TIMING_CACHE=26, DISTRIBUTIVE_INDEPENDENCE=27)
BuilderFlag = _make("BuilderFlag", _BUILDER_FLAGS, arithmetic=True)
# NvInfer.h of 10.15: kPROFILE_SHARING_0806 (deprecated), kALIASED_PLUGIN_IO_10_03, kRUNTIME_ACTIVATION_RESIZE_10_10;
# TensorRT 11's bindings no longer have the first (its values there are not known here: use the members by name)
PreviewFeature = _make("PreviewFeature", dict(PROFILE_SHARING_0806=0, ALIASED_PLUGIN_IO_10_03=1,
                                              RUNTIME_ACTIVATION_RESIZE_10_10=2) if _version.PROFILE == "10.15"
                       else dict(ALIASED_PLUGIN_IO_10_03=1, RUNTIME_ACTIVATION_RESIZE_10_10=2))
# NvInfer.h, enum class LayerType (the members of the layers the emulator models)
LayerType = _make("LayerType", dict(CONVOLUTION=0, CAST=1, ACTIVATION=2, POOLING=3, SCALE=5, SOFTMAX=6,
                                    CONCATENATION=8, ELEMENTWISE=9, UNARY=11, SHUFFLE=13, REDUCE=14, GATHER=16,
                                    MATRIX_MULTIPLY=17, CONSTANT=19, IDENTITY=20, PLUGIN_V2=21, SLICE=22, SHAPE=23,
                                    SELECT=30, NORMALIZATION=45, PLUGIN_V3=46, SQUEEZE=47, UNSQUEEZE=48))
ReduceOperation = _make("ReduceOperation", dict(SUM=0, PROD=1, MAX=2, MIN=3, AVG=4))
PoolingType = _make("PoolingType", dict(MAX=0, AVERAGE=1, MAX_AVERAGE_BLEND=2))
ScaleMode = _make("ScaleMode", dict(UNIFORM=0, CHANNEL=1, ELEMENTWISE=2))
PaddingMode = _make("PaddingMode", dict(EXPLICIT_ROUND_DOWN=0, EXPLICIT_ROUND_UP=1, SAME_UPPER=2, SAME_LOWER=3))
GatherMode = _make("GatherMode", dict(DEFAULT=0, ELEMENT=1, ND=2))

#: every enum above, by name (the public names of the native module)
ALL = {c.__name__: c for c in (
    DataType, TensorFormat, DimensionOperation, PluginFieldType, QuickPluginCreationRequest, TensorRTPhase,
    PluginCapabilityType, PluginArgType, PluginArgDataType, NetworkDefinitionCreationFlag, SerializationFlag,
    ElementWiseOperation, ActivationType, UnaryOperation, InterpolationMode, SampleMode, MatrixOperation,
    TopKOperation, EngineCapability, DeviceType, ProfilingVerbosity, TilingOptimizationLevel, MemoryPoolType,
    TensorIOMode, TensorLocation, HardwareCompatibilityLevel, BuilderFlag, PreviewFeature, LayerType, ReduceOperation,
    PoolingType, ScaleMode, PaddingMode, GatherMode)}

#: bytes per element (``DataType.itemsize`` is added by NVIDIA's pure-Python ``__init__``)
ITEMSIZE = {DataType.FLOAT: 4, DataType.HALF: 2, DataType.BF16: 2, DataType.INT8: 1, DataType.INT32: 4,
            DataType.INT64: 8, DataType.BOOL: 1, DataType.UINT8: 1, DataType.FP8: 1}
