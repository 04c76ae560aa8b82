"""The TensorRT side's registration flow, on CPU: NVIDIA's tensorrt.plugin over the emulated native module, and a
minimal torch_tensorrt stand-in that records converters. Ops declared before the TensorRT side
is initialised are registered when it is; later ones as they are declared."""

import sys
import types

import pytest
import torch

import trt_kernels as ttk
from kernels import scale_spec, sigmoid_spec, unique
from trt_kernels import plugins, registry
from trt_kernels.plugins import qdp_usable
from trt_kernels.status import status


def test_ops_before_and_after_init_get_plugin_and_converter(trt_side):
    env, converters = trt_side
    before = unique("ttk_reg")
    ttk.cuda_kernel_op(before, sigmoid_spec())  # declared first: init runs here, once
    st = plugins.tensorrt_status()
    assert st["available"] == "yes" and st["reason"] == "" and "emulated" in st["backend"]
    after = unique("ttk_reg")
    ttk.cuda_kernel_op(after, scale_spec())
    for name in (before, after):
        kop = registry.get(name)
        assert kop.tensorrt.aot is True and kop.tensorrt.converter.startswith("registered")
        fn, kw = converters[kop.overload]
        assert kw["supports_dynamic_shapes"] is True
        assert hasattr(getattr(env.trtp.op, kop.namespace), kop.name)  # the QDP plugin exists
    rows = {r["op"]: r for r in status()}
    assert rows[after]["plugin"].startswith("AOT")

    # the registered converter adds the plugin layer to a network
    kop = registry.get(after)
    fn, _ = converters[kop.overload]
    net = env.network()
    ctx = types.SimpleNamespace(net=net)
    x = net.add_input("x", env.trt.float32, [-1, 8])
    out = fn(ctx, kop.overload, (x, 0.5), {}, "scale_node")
    assert net.num_layers == 1
    layer = net.get_layer(0)
    assert hasattr(layer.plugin, "get_launch_params") and out is layer.get_output(0)


def test_init_after_the_fact_registers_earlier_ops(trt_side):
    env, converters = trt_side
    real_probe = plugins._probe
    plugins._probe = lambda: (None, "tensorrt is not installed (test)")
    try:
        early = unique("ttk_reg")
        ttk.cuda_kernel_op(early, sigmoid_spec())
        assert plugins.tensorrt_status()["available"] == "no"
        assert not registry.get(early).tensorrt.converter
    finally:
        plugins._probe = real_probe  # TensorRT becomes importable later in the process ...
    assert plugins.init(force=True)  # ... and the TensorRT side is initialised
    assert registry.get(early).overload in converters


@pytest.mark.parametrize("version,ok", [("10.13.3", False), ("10.14.1.48", False), ("10.15.0", True),
                                        ("11.4.0.106", True), ("10.16.2", True)])
def test_qdp_version_gate(version, ok):
    assert (qdp_usable(version) is None) == ok


def test_torch_tensorrt_qdp_flag_off_is_a_note_not_a_refusal(trt_side, monkeypatch):
    """Torch-TensorRT 2.11 turns ENABLED_FEATURES.qdp_plugin off on TensorRT 10.14/10.15; that gates only its
    own plugin generators. Our converters add plugin layers themselves: ops still get plugin and converter."""
    env, converters = trt_side
    monkeypatch.setattr(sys.modules["torch_tensorrt"], "ENABLED_FEATURES", types.SimpleNamespace(qdp_plugin=False))
    name = unique("ttk_reg")
    ttk.cuda_kernel_op(name, scale_spec())
    st = plugins.tensorrt_status()
    assert st["available"] == "yes" and "qdp_plugin = False" in st["notes"] and "not affected" in st["notes"]
    kop = registry.get(name)
    assert kop.tensorrt.aot is True and kop.overload in converters


@pytest.mark.parametrize("trt,ttrt,ok", [
    ("10.15.1.29", "2.11.0", True), ("11.4.0.106", "2.11.0", False), ("10.14.1.48", "2.11.0", False),
    ("11.0.0.114", "2.13.0", True), ("10.15.1.29", "2.13.0", False), ("11.1.0.106", "2.14.0", True),
    ("10.16.1.11", "2.12.1", True), ("11.4.0.106", "2.99.0", True),  # a release the table does not know: no claim
])
def test_pairing_follows_torch_tensorrt_requirements(trt, ttrt, ok):
    problem = plugins.pairing_problem(trt, ttrt)
    assert (problem is None) == ok
    if problem:
        assert f"torch_tensorrt {ttrt} requires TensorRT" in problem and "pip install" in problem


def test_bool_or_uint8_outputs_get_no_plugin(trt_side):
    """TensorRT plugins cannot produce bool/uint8 outputs (getOutputDataTypes): such an op is left to
    PyTorch (no plugin, no converter) and status says why, instead of a build TensorRT refuses."""
    env, converters = trt_side
    src = 'extern "C" __global__ void m(const float* x, int n, bool* y) {}'
    name = unique("ttk_reg")
    ttk.cuda_kernel_op(name, sigmoid_spec(kernel_source=src, kernel_name="m",
                                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"), dtype=torch.bool)]))
    kop = registry.get(name)
    assert kop.tensorrt.plugin.startswith("not registered: output 'y' is bool") and kop.overload not in converters
    assert not hasattr(getattr(env.trtp.op, kop.namespace, None), kop.name)


def test_constant_shared_memory_over_48k_is_jit_only(trt_side):
    env, converters = trt_side
    src = 'extern "C" __global__ void k(const float* x, int n, float* y) {}'
    name = unique("ttk_reg")
    ttk.cuda_kernel_op(name, sigmoid_spec(kernel_source=src, kernel_name="k",
                                          geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 256),), block=(256,),
                                                              shared_mem=65536)))
    kop = registry.get(name)
    assert kop.tensorrt.aot is False and "65536 bytes, over the 49152" in kop.tensorrt.plugin
    assert kop.overload in converters  # the JIT plugin still puts the op in the engine
