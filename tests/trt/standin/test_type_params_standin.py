"""Several type parameters and size checks on the TensorRT side, on CPU: the QDP plugin driven through
NVIDIA's tensorrt.plugin layer (over the stand-in) offers exactly the declared dtype combinations and
builds each with its own instantiation; the converter refuses sizes that break a check."""

import types

import pytest
import torch

import trt_kernels as ttk
from kernels import MIXED_COMBOS, add_spec, rmsnorm_mixed_spec, unique
from trt_kernels import registry
from trt_kernels.plugins.qdp import attr_field, float_bits, register_plugin
from trt_kernels.testing import _standin as standin

TRT = {torch.float16: "FP16", torch.bfloat16: "BF16", torch.float32: "FP32", torch.float64: None}
NAMES = {torch.float16: "HALF", torch.bfloat16: "BF16", torch.float32: "FLOAT"}


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def declare(spec):
    name = unique("ttk_tpq")
    ttk.cuda_kernel_op(name, spec)
    return registry.get(name)


def build(env, kop, inputs, attrs):
    if not hasattr(getattr(env.trtp.op, kop.namespace, None), kop.name):
        register_plugin(kop, env.trt, env.trtp)
    return env.build(kop.op_name, inputs=inputs, attrs=attrs)


@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS)
def test_autotune_offers_exactly_the_combinations(env, xdt, wdt):
    kop = declare(rmsnorm_mixed_spec())
    res = build(env, kop, [(TRT[xdt], (6, 100)), (TRT[wdt], (100,))], {"eps": 1e-5})
    # (x, w, y) per combination, in declaration order
    assert [[t.name for t, _ in c] for c in res.combinations] == \
        [[NAMES[a], NAMES[b], NAMES[a]] for a, b in MIXED_COMBOS]
    assert res.output_dtypes[0].name == NAMES[xdt] and res.output_shapes == [(6, 100)]
    kn = res.kernel_name.decode() if isinstance(res.kernel_name, bytes) else res.kernel_name
    assert kn == kop.image((xdt, wdt), 1, "sm_90").symbol
    assert res.ptx == kop.binary("sm_90").kernel((xdt, wdt)).aot_ptx
    assert res.grid == (6, 1, 1) and res.block == (128, 1, 1)
    assert res.extra_arg_values == [float_bits(1e-5), 100]


def test_float64_combinations_are_not_offered(env):
    kop = declare(rmsnorm_mixed_spec(dtypes=[(torch.float16, torch.float32), (torch.float64, torch.float64),
                                             (torch.float32, torch.float64)]))
    res = build(env, kop, [("FP16", (2, 8)), ("FP32", (8,))], {"eps": 1e-5})
    assert [[t.name for t, _ in c] for c in res.combinations] == [["HALF", "FLOAT", "HALF"]]


def test_a_combination_tensorrt_was_not_offered_is_refused(env):
    """Should TensorRT pass a combination autotune did not offer, the plugin says which ones it declares."""
    from trt_kernels.plugins.qdp import PluginBuilder

    kop = declare(rmsnorm_mixed_spec())
    b = PluginBuilder(kop, env.trt, env.trtp)
    descs = [types.SimpleNamespace(dtype=env.trt.DataType.HALF), types.SimpleNamespace(dtype=env.trt.DataType.HALF)]
    with pytest.raises(ttk.InputError, match=r"TensorRT chose input dtypes \(x: float16, w: float16\), "
                                             r"which are not a combination the kernel declares"):
        b._kernel_dtype(descs)
    descs[1].dtype = env.trt.DataType.FLOAT
    assert b._kernel_dtype(descs) == (torch.float16, torch.float32)


def test_converter_checks_sizes_on_the_standin_network(env):
    """The converter refuses static sizes that break a check before it adds the plugin layer."""
    from trt_kernels.converters import convert

    kop = declare(add_spec())
    register_plugin(kop, env.trt, env.trtp)
    net = env.network()
    a = net.add_input("a", env.trt.float32, [-1, 5])
    b = net.add_input("b", env.trt.float32, [-1, 4])
    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    ctx = types.SimpleNamespace(net=net)
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(\?, 5\) and 'b' \(\?, 4\) must have equal shapes"):
        convert(kop, ctx, (a, b), {}, "n", get_trt_tensor=lambda c, v, n: v, plugin_op=plugin_op, aot=True,
                attr_field=attr_field)
    assert net.num_layers == 0
    b2 = net.add_input("b2", env.trt.float32, [-1, 5])
    convert(kop, ctx, (a, b2), {}, "n", get_trt_tensor=lambda c, v, n: v, plugin_op=plugin_op, aot=True,
            attr_field=attr_field)
    assert net.num_layers == 1
