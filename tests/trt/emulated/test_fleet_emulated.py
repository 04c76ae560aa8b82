"""Engines for a fleet (issue 35) through real Torch-TensorRT over the emulated libnvinfer (marker
``trt_emulated``; nothing here is a TensorRT result). ``hardware_compatible=True`` builds an AMPERE_PLUS engine
whose plugins embed PTX for sm_80: it deserializes, and runs on this GPU, under stood-in sm_80 / sm_86 / sm_89
devices (the emulator checks the PTX against the stood-in compute capability; the kernels run on the real card);
the same model built without it is refused there as TensorRT refuses a plan built for another GPU."""

import pytest
import torch

import emulated as emu
from kernels import sigmoid_spec, tma_spec, unique
from support import load_example
from trt_kernels import registry
from trt_kernels.sources import archs


@pytest.fixture(scope="module")
def ex(tt):
    return load_example("cuda_kernel_op")


@pytest.fixture(autouse=True)
def _no_floor(monkeypatch):
    monkeypatch.delenv(archs.MIN_ARCH_ENV, raising=False)
    monkeypatch.delenv("TRT_EMULATOR_STAND_IN_CC", raising=False)


class _Chain(torch.nn.Module):
    """Three of the seed's ops, with a TensorRT layer of its own between them."""

    def forward(self, x):
        s, c = torch.ops.kern_ex.sin_cos(torch.ops.kern_ex.scale(x, 0.75))
        return torch.ops.kern_ex.add(torch.relu(s), c)


def _ref(x):
    x = 0.75 * x
    return torch.relu(torch.sin(x)) + torch.cos(x)


def _blob(gm) -> bytes:
    (engine,) = emu.engines(gm)
    return bytes(engine.serialize())


def _run(trt, blob, x, cc):
    """Deserialize ``blob`` on a stood-in GPU of compute capability ``cc`` and run it on ``x``; (output, log)."""
    from trt_kernels.testing import trt_emulator

    lines = []

    class Log(trt.ILogger):
        def __init__(self):
            trt.ILogger.__init__(self)

        def log(self, severity, msg):
            lines.append(str(msg))

    with trt_emulator.stand_in_device(cc):
        engine = trt.Runtime(Log()).deserialize_cuda_engine(blob)
        if engine is None:
            return None, lines
        ctx = engine.create_execution_context()
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        (inp,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        (out,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        assert ctx.set_input_shape(inp, tuple(x.shape))
        y = torch.full(tuple(ctx.get_tensor_shape(out)), float("nan"), device="cuda")
        assert ctx.set_tensor_address(inp, x.data_ptr()) and ctx.set_tensor_address(out, y.data_ptr())
        stream = torch.cuda.Stream()
        assert ctx.execute_async_v3(stream.cuda_stream), lines
        stream.synchronize()
    return y, lines


def test_hardware_compatible_engine_runs_on_every_ampere_or_newer_gpu(tt, ex):
    x = torch.randn(33, 257, device="cuda")
    gm = emu.compile_trt(tt, _Chain(), [x], hardware_compatible=True)
    torch.testing.assert_close(gm(x), _ref(x), atol=1e-4, rtol=1e-4)
    layers = emu.layers(gm)
    plugin_layers = [la for la in layers if la["kind"] == "aot_plugin"]
    assert len(plugin_layers) == 3 and len(layers) > 3  # scale, sin_cos, add; between them TensorRT's own relu
    assert {archs.ptx_target(la["ptx"]) for la in plugin_layers} == {"sm_80"}
    (engine,) = emu.engines(gm)
    assert engine._plan["hardware_compatibility_level"] == "AMPERE_PLUS"
    assert str(engine.hardware_compatibility_level).endswith("AMPERE_PLUS")
    blob = _blob(gm)
    for cc in ("8.0", "8.6", "8.9", "9.0"):
        y, log = _run(tt[0], blob, x, cc)
        assert y is not None, (cc, log)
        torch.testing.assert_close(y, _ref(x), atol=1e-4, rtol=1e-4)


def test_the_same_model_built_plainly_is_refused_on_another_gpu(tt, ex):
    x = torch.randn(33, 257, device="cuda")
    gm = emu.compile_trt(tt, _Chain(), [x])
    plugin_layers = [la for la in emu.layers(gm) if la["kind"] == "aot_plugin"]
    major, minor = torch.cuda.get_device_capability()
    assert {archs.ptx_target(la["ptx"]) for la in plugin_layers} <= {f"sm_{major}{minor}"}
    blob = _blob(gm)
    y, _ = _run(tt[0], blob, x, f"{major}.{minor}")
    torch.testing.assert_close(y, _ref(x), atol=1e-4, rtol=1e-4)
    for cc in ("8.0", "8.6", "8.9"):
        y, log = _run(tt[0], blob, x, cc)
        assert y is None
        assert any(f"The engine plan file is generated on an incompatible device, expecting compute {cc} got "
                   f"compute {major}.{minor}, please rebuild." in m for m in log), log


def test_a_triton_op_in_a_hardware_compatible_engine(tt):
    pytest.importorskip("triton")
    from triton_kernels import declare_scale

    name = unique("ttk_fleet_tri")
    declare_scale(name, tactics=False)
    ns, op = name.split("::")

    class M(torch.nn.Module):
        def forward(self, x):
            return getattr(getattr(torch.ops, ns), op)(x, 0.5)

    x = torch.randn(3, 1000, device="cuda")
    gm = emu.compile_trt(tt, M(), [x], hardware_compatible=True)
    (layer,) = [la for la in emu.layers(gm) if la["kind"] == "aot_plugin"]
    assert archs.ptx_target(layer["ptx"]) == "sm_80"
    y, log = _run(tt[0], _blob(gm), x, "8.6")
    assert y is not None, log
    torch.testing.assert_close(y, getattr(getattr(torch.ops, ns), op)(x, 0.5))


def test_an_op_that_needs_hopper_is_refused_by_the_converter(tt):
    name = unique("ttk_fleet")
    import trt_kernels as ttk

    ttk.cuda_kernel_op(name, tma_spec(min_arch="sm_90"))
    ns, op = name.split("::")

    class M(torch.nn.Module):
        def forward(self, x):
            return getattr(getattr(torch.ops, ns), op)(x)

    x = torch.randn(1024, device="cuda")
    with pytest.raises(Exception) as info:
        emu.compile_trt(tt, M(), [x], hardware_compatible=True, pass_through_build_failures=True)
    chain, e = [], info.value
    while e is not None and len(chain) < 10:  # Torch-TensorRT may wrap the converter's error
        chain.append(e)
        e = e.__cause__ or e.__context__
    arch_errors = [e for e in chain if isinstance(e, ttk.ArchError)]
    assert arch_errors, [repr(e) for e in chain]
    assert "min_arch='sm_90'" in str(arch_errors[0]) and "Fix: build this engine without that setting" in str(
        arch_errors[0])
    assert registry.get(name).tensorrt.level == "AMPERE_PLUS"


def test_version_compatible_engine_records_its_flags_and_loads_on_its_own_version(tt, ex):
    x = torch.randn(4, 128, device="cuda")
    name = unique("ttk_fleet")
    import trt_kernels as ttk

    ttk.cuda_kernel_op(name, sigmoid_spec())
    ns, op = name.split("::")

    class M(torch.nn.Module):
        def forward(self, x):
            return getattr(getattr(torch.ops, ns), op)(x)

    gm = emu.compile_trt(tt, M(), [x], version_compatible=True)
    torch.testing.assert_close(gm(x), torch.sigmoid(x), atol=1e-5, rtol=1e-5)
    (engine,) = emu.engines(gm)
    assert {"VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME"} <= set(engine._plan["config"]["flags"])
    major, minor = torch.cuda.get_device_capability()
    y, log = _run(tt[0], _blob(gm), x, f"{major}.{minor}")
    assert y is not None, log
    torch.testing.assert_close(y, torch.sigmoid(x), atol=1e-5, rtol=1e-5)
