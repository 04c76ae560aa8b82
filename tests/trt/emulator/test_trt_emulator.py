"""The TensorRT emulator on CPU: building networks of our plugin layers, the engine's serialization
round trip, what a deserialized engine and context report, and strictness. (Running engines needs a
GPU: tests/trt/emulated/test_trt_emulated.py.)"""

import pickle

import numpy as np
import pytest
import torch

import trt_kernels as ttk
from kernels import row_sum_spec, scale_spec, unique
from trt_kernels import registry
from trt_kernels.expr import SizesEvaluator, evaluate
from trt_kernels.plugins.qdp import float_bits, register_plugin
from trt_kernels.testing import _standin as standin


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def declare(env, spec):
    name = unique("ttk_emu")
    ttk.cuda_kernel_op(name, spec)
    kop = registry.get(name)
    register_plugin(kop, env.trt, env.trtp)
    return kop


def plugin_op(env, kop):
    return getattr(getattr(env.trtp.op, kop.namespace), kop.name)


def two_op_network(env, aot=True):
    """x (dynamic batch) -> scale(alpha=0.5) -> row_sum -> output0; and scale's output cast to fp16 -> output1."""
    trt = env.trt
    scale, rsum = declare(env, scale_spec()), declare(env, row_sum_spec())
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
    profile = builder.create_optimization_profile()
    profile.set_shape("x", (1, 300), (8, 300), (32, 300))
    x = net.add_input(name="x", shape=(-1, 300), dtype=trt.float32)
    s = net.add_plugin(plugin_op(env, scale)(x, alpha=np.array([0.5], dtype=np.float32)), aot=aot)
    s.name = "scale"
    r = net.add_plugin(plugin_op(env, rsum)(s.get_output(0)), aot=aot)
    c = net.add_cast(s.get_output(0), trt.float16)
    for i, t in enumerate((r.get_output(0), c.get_output(0))):
        net.mark_output(t)
        t.name = f"output{i}"
    cfg = builder.create_builder_config()
    cfg.add_optimization_profile(profile)
    return builder, net, cfg, (scale, rsum)


def test_engine_round_trip_of_a_plugin_network(env):
    trt = env.trt
    builder, net, cfg, (scale, rsum) = two_op_network(env)
    blob = builder.build_serialized_network(net, cfg)
    assert blob is not None and bytes(blob).startswith(b"TRTKEMU")
    engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(bytes(blob))
    assert engine.num_io_tensors == 3 and engine.num_layers == 3
    names = [engine.get_tensor_name(i) for i in range(3)]
    assert names == ["x", "output0", "output1"]
    assert [engine.get_tensor_mode(n) for n in names] == [trt.TensorIOMode.INPUT, trt.TensorIOMode.OUTPUT,
                                                          trt.TensorIOMode.OUTPUT]
    assert [engine.get_tensor_dtype(n) for n in names] == [trt.float32, trt.float32, trt.float16]
    assert engine.get_tensor_shape("x") == (-1, 300) and engine.get_tensor_shape("output0") == (-1,)
    assert engine.get_tensor_profile_shape("x", 0) == [(1, 300), (8, 300), (32, 300)]
    assert bytes(engine.serialize()) == bytes(blob)  # serialize(deserialize(b)) == b

    ctx = engine.create_execution_context()
    assert ctx.infer_shapes() == ["x"] and ctx.get_tensor_shape("output0") == (-1,)
    assert ctx.set_input_shape("x", (5, 300))
    assert ctx.infer_shapes() == []
    assert ctx.get_tensor_shape("output0") == (5,) and ctx.get_tensor_shape("output1") == (5, 300)
    assert not ctx.set_input_shape("x", (33, 300))  # outside the profile: refused, as TensorRT does
    assert any("outside the optimization profile" in m for _, m in env.log)


@pytest.mark.parametrize("batch", [1, 7, 32])
def test_stored_launches_are_the_eager_plan(env, batch):
    """What the engine keeps for each AOT layer (expressions over the input's dynamic batch) evaluates to
    what the eager launcher computes at the same shapes."""
    builder, net, cfg, (scale, rsum) = two_op_network(env)
    plan = env.native._format.decode(builder.build_serialized_network(net, cfg))
    layers = {layer["name"]: layer for layer in plan["layers"]}
    b = {"x[0]": batch}
    fmt = env.native._dims
    for kop, layer, shape in ((scale, layers["scale"], (batch, 300)), (rsum, plan["layers"][1], (batch, 300))):
        p = kop.plan((2,), layer["tactic"])
        ev = SizesEvaluator([shape])
        assert layer["kind"] == "aot_plugin" and layer["kernel_name"] == kop.image(torch.float32, 1, "sm_90").symbol
        assert layer["ptx"].encode("latin-1") == kop.image(torch.float32, 1, "sm_90").aot_ptx
        got = {k: fmt.evaluate(v, b) for k, v in layer["launch"].items()}
        assert (got["grid_x"], got["grid_y"], got["grid_z"]) == tuple(evaluate(e, ev) for e in p.grid)
        assert (got["block_x"], got["block_y"], got["block_z"]) == tuple(p.block)
        extras = [fmt.evaluate(a["expr"], b) for a in layer["extra_args"]]
        want = [evaluate(e, ev) for e in p.extras]
        if kop is scale:
            want = [float_bits(0.5)] + want  # the scalar, baked in ahead of the extras
        assert extras == want


def test_jit_layers_keep_the_plugin_and_its_fields(env):
    trt = env.trt
    builder, net, cfg, _ = two_op_network(env, aot=False)
    blob = bytes(builder.build_serialized_network(net, cfg))
    plan = env.native._format.decode(blob)
    assert [layer["kind"] for layer in plan["layers"]] == ["jit_plugin", "jit_plugin", "cast"]
    assert [f["name"] for f in plan["layers"][0]["fields"]] == ["alpha"]
    assert "ptx" not in plan["layers"][0]
    assert trt.Runtime(trt.Logger()).deserialize_cuda_engine(blob) is not None  # the plugins are registered here


def test_fresh_emulation_reloads_aot_but_not_jit_engines(monkeypatch):
    """A second, independent emulation (nothing registered, as in a new process) deserializes the AOT
    engine from bytes alone and refuses the JIT one, naming the missing plugin."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    blobs = {}
    for e in standin.standin_fixture():
        for aot in (True, False):
            builder, net, cfg, _ = two_op_network(e, aot=aot)
            blobs[aot] = bytes(builder.build_serialized_network(net, cfg))
    with standin.standin() as fresh:
        rt = fresh.trt.Runtime(fresh.trt.Logger())
        engine = rt.deserialize_cuda_engine(blobs[True])
        assert engine is not None and engine.num_layers == 3
        assert fresh.registry == {}
        assert rt.deserialize_cuda_engine(blobs[False]) is None
        assert any("which is not registered in this process" in m for _, m in fresh.log)


def test_corrupt_engines_are_refused(env):
    trt = env.trt
    builder, net, cfg, _ = two_op_network(env)
    blob = bytearray(builder.build_serialized_network(net, cfg))
    rt = trt.Runtime(trt.Logger())
    blob[-5] ^= 0xFF
    assert rt.deserialize_cuda_engine(bytes(blob)) is None
    assert rt.deserialize_cuda_engine(b"\x00" * 64) is None
    assert rt.deserialize_cuda_engine(bytes(blob[:40])) is None
    msgs = [m for _, m in env.log if "deserializing" in m]
    assert any("checksum" in m for m in msgs) and any("bad magic" in m for m in msgs)


def test_build_failures_are_logged_and_return_none(env):
    trt = env.trt
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (-1, 4))
    net.mark_output(net.add_identity(x).get_output(0))
    cfg = builder.create_builder_config()
    assert builder.build_serialized_network(net, cfg) is None  # dynamic input, no profile
    assert any("no optimization profile" in m for _, m in env.log)
    assert builder.build_engine_with_config(trt.Builder(trt.Logger()).create_network(0), cfg) is None  # no outputs
    assert any("no outputs" in m for _, m in env.log)


def test_strictness(env):
    trt, native = env.trt, env.native
    v = native._version
    with pytest.raises(AttributeError, match="tensorrt.no_such_thing is not implemented by the TensorRT emulator"):
        trt.no_such_thing
    net = trt.Builder(trt.Logger()).create_network(0)
    with pytest.raises(AttributeError, match="INetworkDefinition.add_resize is not implemented"):
        net.add_resize  # a layer kind the emulator does not model
    cfg = trt.Builder(trt.Logger()).create_builder_config()
    with pytest.raises(AttributeError, match="IBuilderConfig.algorithm_selector"):
        cfg.algorithm_selector = None  # removed in TensorRT 11; not emulated under 10.15
    assert hasattr(trt.BuilderFlag, "FP16") == (v.PROFILE == "10.15")  # removed in TensorRT 11
    assert hasattr(trt, "IAlgorithmSelector") == (v.PROFILE == "10.15")  # removed in TensorRT 11
    assert not hasattr(trt, "tensorrt_rtx") and not hasattr(native, "_COMPAT")
    x = net.add_input("x", trt.float32, (2, 3))
    for obj in (x, trt.Dims((1, 2)), net):
        with pytest.raises(TypeError, match="cannot pickle"):
            pickle.dumps(obj)
    assert trt.Dims((1, 2)) == (1, 2) and trt.DataType.FLOAT != 0 and trt.DataType.FLOAT == trt.float32
    strongly_typed = 1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)
    assert strongly_typed == (2 if v.PROFILE == "10.15" else 1)  # NvInfer.h: kSTRONGLY_TYPED = 1 in 10.15, 0 in 11


def _typed_network(trt, strongly_typed: bool):
    builder = trt.Builder(trt.Logger())
    net = builder.create_network((1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED)) if strongly_typed else 0)
    x = net.add_input("x", trt.float32, (2, 3))
    y = net.add_identity(x).get_output(0)
    net.mark_output(y)
    return net, x, y


def test_tensor_dtype_setter_follows_the_version(env):
    """TensorRT 11 made ``ITensor.dtype`` read-only. TensorRT 10.15 has a deprecated setter (Torch-TensorRT 2.11
    assigns every output's dtype): a network input takes the type; on a strongly typed network another tensor
    keeps its inferred type, the same type is tolerated, a different one is reported and not applied."""
    trt = env.trt
    net, x, y = _typed_network(trt, strongly_typed=True)
    if env.native._version.PROFILE == "11":
        for t in (x, y):
            with pytest.raises(AttributeError, match="has no setter"):
                t.dtype = t.dtype
        assert x.dtype == trt.float32
        return
    with pytest.warns(DeprecationWarning, match="10.12"):
        y.dtype = trt.float32  # the inferred type: tolerated (what Torch-TensorRT 2.11 does)
    assert y.dtype == trt.float32 and not any("setType" in m for _, m in env.log)
    with pytest.warns(DeprecationWarning):
        y.dtype = trt.float16
    assert y.dtype == trt.float32  # not applied ...
    assert any("setType" in m and y.name in m and "HALF was not applied" in m
               for sev, m in env.log if sev == trt.Logger.ERROR)  # ... and reported through the builder's logger
    with pytest.warns(DeprecationWarning):
        x.dtype = trt.float16  # a network input takes it
    assert x.dtype == trt.float16
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="DataType"):
        x.dtype = "float16"
    _, _, weak = _typed_network(trt, strongly_typed=False)
    with pytest.warns(DeprecationWarning), pytest.raises(NotImplementedError,
                                                         match="weakly typed network is not emulated"):
        weak.dtype = trt.float16


def test_engine_records_builder_flags_by_name(env):
    """Flag values differ between TensorRT 10.15 and 11 (``VERSION_COMPATIBLE`` is 13 in one, 12 in the other):
    an engine records the flags it was built with by name, so it never reads as other flags."""
    trt = env.trt
    builder, net, cfg, _ = two_op_network(env)
    cfg.set_flag(trt.BuilderFlag.VERSION_COMPATIBLE)
    cfg.set_flag(trt.BuilderFlag.REFIT)
    plan = env.native._format.decode(builder.build_serialized_network(net, cfg))
    assert sorted(plan["config"]["flags"]) == ["REFIT", "VERSION_COMPATIBLE"]


def test_constants_and_weights(env):
    trt = env.trt
    import numpy as np

    w = trt.Weights(np.arange(6, dtype=np.float32))
    assert w.size == 6 and w.dtype == trt.float32 and w.numpy().tolist() == list(range(6))
    src = torch.arange(4, dtype=torch.int32)
    w2 = trt.Weights(trt.int32, src.data_ptr(), 4)  # how Torch-TensorRT builds constants
    assert w2.numpy().tolist() == [0, 1, 2, 3]
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(0)
    c = net.add_constant((2, 3), w)
    net.mark_output(c.get_output(0))
    c.get_output(0).name = "out"
    engine = builder.build_engine_with_config(net, builder.create_builder_config())
    assert engine.get_tensor_shape("out") == (2, 3)
    # TensorRT refuses the call (no layer) and reports why
    assert net.add_constant((4,), w) is None
    assert any("Error Code 3" in m and "holds 4 elements but the weights hold 6" in m for _, m in env.log)
