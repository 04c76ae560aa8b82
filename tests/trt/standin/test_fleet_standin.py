"""Engines for a fleet (issue 35), on the CPU: the converter reads Torch-TensorRT's ``hardware_compatible``
setting, the AOT impl then embeds PTX for sm_80, and the emulator (strict about engine compatibility) builds the
engine and deserializes it under stood-in older GPUs; a plain engine is refused there as TensorRT refuses it.
NVIDIA's tensorrt.plugin runs over the emulated native module; Torch-TensorRT is a stand-in that records the
converters (``trt_side``), called here as ``TRTInterpreter`` calls them."""

import types

import pytest

import trt_kernels as ttk
from kernels import sigmoid_spec, tma_spec, unique
from trt_kernels import registry
from trt_kernels.sources import archs


def _settings(hardware_compatible: bool):
    """The part of Torch-TensorRT's CompilationSettings the converter reads."""
    return types.SimpleNamespace(hardware_compatible=hardware_compatible)


def engine_of(env, converters, op_name, hardware_compatible, level=None):
    """A serialized engine of ``x -> op`` converted as Torch-TensorRT converts it, built with the emulator under
    ``level`` (default: what Torch-TensorRT sets for ``hardware_compatible``); None where the build fails."""
    trt = env.trt
    kop = registry.get(op_name)
    fn, _ = converters[kop.overload]
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (4, 300))
    ctx = types.SimpleNamespace(net=net, compilation_settings=_settings(hardware_compatible))
    out = fn(ctx, kop.overload, (x,), {}, "fleet_node")
    out.name = "y"
    net.mark_output(out)
    cfg = builder.create_builder_config()
    level = level or ("AMPERE_PLUS" if hardware_compatible else None)
    if level:
        cfg.hardware_compatibility_level = getattr(trt.HardwareCompatibilityLevel, level)
    blob = builder.build_serialized_network(net, cfg)
    return None if blob is None else bytes(blob)


def plan_of(env, blob):
    return env.native._format.decode(blob)


def load_as(env, blob, cc):
    """The engine deserialized on a stood-in GPU of compute capability ``cc``, or None (the log says why)."""
    with env.native._device.stand_in_device(cc):
        return env.trt.Runtime(env.trt.Logger()).deserialize_cuda_engine(blob)


@pytest.fixture
def fleet(trt_side, monkeypatch):
    monkeypatch.delenv(archs.MIN_ARCH_ENV, raising=False)
    monkeypatch.delenv("TRT_EMULATOR_STAND_IN_CC", raising=False)
    return trt_side


def test_a_hardware_compatible_engine_holds_sm80_ptx_and_loads_on_every_ampere_or_newer_gpu(fleet):
    env, converters = fleet
    name = unique("ttk_fleet")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    blob = engine_of(env, converters, name, hardware_compatible=True)
    assert blob is not None, [m for _, m in env.log]
    plan = plan_of(env, blob)
    assert plan["hardware_compatibility_level"] == "AMPERE_PLUS"
    (layer,) = [la for la in plan["layers"] if la["kind"] == "aot_plugin"]
    assert archs.ptx_target(layer["ptx"]) == "sm_80"
    for cc in ("8.0", "8.6", "8.9", "9.0", "12.0"):
        assert load_as(env, blob, cc) is not None, (cc, [m for _, m in env.log][-3:])
    seen = len(env.log)
    assert load_as(env, blob, "7.5") is None
    assert any("Expected compute capability >= 8.0" in m for _, m in env.log[seen:])


def test_a_plain_engine_holds_the_build_gpus_ptx_and_is_refused_on_another_gpu(fleet):
    env, converters = fleet
    name = unique("ttk_fleet")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    engine_of(env, converters, name, hardware_compatible=True)  # an earlier compile of the op: its level is not kept
    blob = engine_of(env, converters, name, hardware_compatible=False)
    plan = plan_of(env, blob)
    assert plan["hardware_compatibility_level"] == "NONE" and plan["compute_capability"] == "9.0"
    (layer,) = [la for la in plan["layers"] if la["kind"] == "aot_plugin"]
    assert archs.ptx_target(layer["ptx"]) == "sm_90"
    assert load_as(env, blob, "9.0") is not None
    for cc in ("8.0", "8.6", "8.9"):
        seen = len(env.log)
        assert load_as(env, blob, cc) is None
        assert any(f"incompatible device, expecting compute {cc} got compute 9.0" in m for _, m in env.log[seen:])


def test_a_hand_built_ampere_plus_engine_needs_the_floor_and_the_environment_gives_it(fleet, monkeypatch):
    """A network built without Torch-TensorRT's setting (a user's own builder config): the PTX targets the
    build GPU, which the emulator refuses under AMPERE_PLUS, naming the fix; TRT_KERNELS_MIN_ARCH gives it."""
    env, converters = fleet
    name = unique("ttk_fleet")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    seen = len(env.log)
    assert engine_of(env, converters, name, hardware_compatible=False, level="AMPERE_PLUS") is None
    said = " ".join(m for _, m in env.log[seen:])
    assert "sm_90" in said and "sm_80" in said
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_80")
    blob = engine_of(env, converters, name, hardware_compatible=False, level="AMPERE_PLUS")
    assert blob is not None and load_as(env, blob, "8.6") is not None


def test_an_op_that_needs_a_newer_gpu_is_refused_by_the_converter(fleet):
    env, converters = fleet
    name = unique("ttk_fleet")
    ttk.cuda_kernel_op(name, tma_spec(min_arch="sm_90"))
    with pytest.raises(ttk.ArchError, match=f"{name}: the engine's hardware compatibility level AMPERE_PLUS .*"
                                            "min_arch='sm_90'.*Fix: build this engine without that setting"):
        engine_of(env, converters, name, hardware_compatible=True)
    blob = engine_of(env, converters, name, hardware_compatible=False)  # a plain engine takes it
    assert blob is not None and load_as(env, blob, "9.0") is not None
