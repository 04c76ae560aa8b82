"""Which TensorRT the emulator models: the version of the bindings wheel whose pure-Python
``tensorrt`` package runs over it (set by :mod:`bootstrap` before the emulator is imported).

A user's TensorRT comes from their Torch-TensorRT (``Requires-Dist``): torch 2.11 pairs with
Torch-TensorRT 2.11 over TensorRT 10.15.1; torch 2.13 with Torch-TensorRT 2.13 over TensorRT 11.0.
The emulator's names, enum values and behaviour follow the line of the version it models
(``PROFILE``); a version outside the lines it models is refused at bootstrap.

A name one line has and the other lacks (``ONLY_10_15``, ``ONLY_11``, read from NVIDIA's bindings
sources and checked against each wheel's ``tensorrt.so`` by ``tests/trt/emulator/test_trt_emulator_names.py``)
is refused under the other line as TensorRT refuses it, naming the version: see :func:`missing`."""

import sys
from typing import Optional

#: the bindings version this process emulates, e.g. "10.15.1.29" (bootstrap sets it on the package
#: before importing the emulator; imported on its own, e.g. by a test reading the sources, 11.0)
VERSION: str = getattr(sys.modules.get(__package__ or ""), "_EMULATED_VERSION", None) or "11.0.0.114"
MAJOR_MINOR = tuple(int(p) for p in VERSION.split(".")[:2])
#: "10.15" or "11": the line of TensorRT whose names and enum values the emulator exposes
PROFILE = "10.15" if MAJOR_MINOR == (10, 15) else "11" if MAJOR_MINOR[0] == 11 else ""

#: names of TensorRT 10.15's bindings that TensorRT 11.0 removed (``Class.member`` or a module name);
#: from the pybind11 definitions of NVIDIA's OSS tags v10.15 and v11.1 (python/src/infer/*.cpp)
ONLY_10_15 = frozenset({
    # classes and enums of INT8 calibration and algorithm selection
    "IAlgorithmSelector", "IAlgorithm", "IAlgorithmContext", "IAlgorithmIOInfo", "IAlgorithmVariant",
    "IInt8Calibrator", "IInt8EntropyCalibrator", "IInt8EntropyCalibrator2", "IInt8LegacyCalibrator",
    "IInt8MinMaxCalibrator", "CalibrationAlgoType", "QuantizationFlag", "IStreamReader",
    # members
    "Builder.platform_has_fast_fp16", "Builder.platform_has_fast_int8", "Builder.platform_has_tf32",
    "BuilderFlag.FP16", "BuilderFlag.INT8", "BuilderFlag.BF16", "BuilderFlag.FP8", "BuilderFlag.INT4",
    "BuilderFlag.FP4", "BuilderFlag.OBEY_PRECISION_CONSTRAINTS", "BuilderFlag.PREFER_PRECISION_CONSTRAINTS",
    "BuilderFlag.REJECT_EMPTY_ALGORITHMS", "BuilderFlag.WEIGHTLESS",
    "NetworkDefinitionCreationFlag.EXPLICIT_BATCH",
    "IBuilderConfig.algorithm_selector", "IBuilderConfig.int8_calibrator", "IBuilderConfig.quantization_flags",
    "IBuilderConfig.set_quantization_flag", "IBuilderConfig.get_quantization_flag",
    "IBuilderConfig.clear_quantization_flag", "IBuilderConfig.set_calibration_profile",
    "IBuilderConfig.get_calibration_profile",
    "ICudaEngine.create_execution_context_without_device_memory", "ICudaEngine.device_memory_size",
    "ICudaEngine.get_device_memory_size_for_profile", "ICudaEngine.has_implicit_batch_dimension",
    "ICudaEngine.minimum_weight_streaming_budget", "ICudaEngine.weight_streaming_budget",
    "IExecutionContext.all_shape_inputs_specified",
    "ILayer.precision", "ILayer.precision_is_set", "ILayer.reset_precision", "ILayer.set_output_type",
    "ILayer.output_type_is_set", "ILayer.reset_output_type",
    "IPluginRegistry.get_plugin_creator", "IPluginRegistry.plugin_creator_list",
    "ITensor.dynamic_range", "ITensor.set_dynamic_range", "ITensor.reset_dynamic_range",
})

#: names TensorRT 11.0 added (present in 11.0.0.114's ``tensorrt.so``, absent from 10.15's)
ONLY_11 = frozenset({
    "IDistCollectiveLayer", "IMoELayer", "CollectiveOperation", "MoEActType", "AttentionIOForm", "CausalMaskKind",
    "INetworkDefinition.add_dist_collective", "INetworkDefinition.add_moe", "INetworkDefinition.add_attention_v2",
    "IExecutionContext.set_communicator", "ILayer.num_ranks", "LayerType.DIST_COLLECTIVE", "LayerType.MOE",
})


def lacks(qualified: str) -> Optional[str]:
    """Why the TensorRT being emulated has no ``qualified`` (``"IAlgorithmSelector"``,
    ``"BuilderFlag.FP16"``) though another modeled line has it, or ``None``."""
    if PROFILE == "11" and qualified in ONLY_10_15:
        return "removed in 11.0"
    if PROFILE == "10.15" and qualified in ONLY_11:
        return "added in 11.0"
    return None


def missing(qualified: str, *owners: str) -> str:
    """The message of the ``AttributeError`` for a name the emulated module or one of its classes
    does not have. ``owners`` are further class names to look the member up under (an emulated class's
    bases, so that ``IPluginV3Layer.precision`` is found as ``ILayer.precision``)."""
    head, _, member = qualified.rpartition(".")
    for q in [qualified] + [f"{o}.{member}" for o in owners if head]:
        why = lacks(q)
        if why:
            return f"tensorrt.{qualified} does not exist in TensorRT {VERSION} ({why})"
    return (f"tensorrt.{qualified} is not implemented by the TensorRT emulator (trt_kernels.testing, emulating "
            f"TensorRT {VERSION})")
