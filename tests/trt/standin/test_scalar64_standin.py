"""64-bit integer scalars through NVIDIA's own tensorrt.plugin layer (over the CPU stand-in): the plugin
attribute carries the full value (an int64 array), the AOT impl bakes a value that fits TensorRT's 32-bit
extra arguments into the PTX narrowed for it, refuses one that does not (never a truncated value), and the
converter gives such a layer to the JIT impl."""

import logging
import struct
import sys
import types
import typing

import numpy as np
import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from trt_kernels import registry
from trt_kernels.converters import convert
from trt_kernels.plugins.qdp import attr_annotation, attr_field, attr_value, register_plugin
from trt_kernels.sources.abi import ptx_params
from trt_kernels.testing import _standin as standin

BIG = 2**40 + 12345
OFFSET = r"""
#include <stdint.h>
extern "C" __global__ void add_offset(const float* x, long long offset, uint64_t seed, int k, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)(offset % 1000) + (float)(seed % 7) + k;
}
"""


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def declare(**kw):
    args = dict(kernel_source=OFFSET, kernel_name="add_offset",
                inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int, ctype="long long"),
                        ttk.ScalarInput("seed", int, ctype="uint64_t"), ttk.ScalarInput("k", int, default=0)],
                outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                geometry=ttk.Elementwise(block=(128,)))
    args.update(kw)
    name = unique("ttk_s64")
    ttk.cuda_kernel_op(name, ttk.KernelSpec(**args))
    return registry.get(name)


def build(env, kop, shape, attrs, **kw):
    if not hasattr(getattr(env.trtp.op, kop.namespace, None), kop.name):
        register_plugin(kop, env.trt, env.trtp)
    return env.build(kop.op_name, inputs=[("FP32", shape)], attrs=attrs, **kw)


def test_the_attributes_are_int64_arrays_where_the_c_type_is_wider_than_int(env):
    kop = declare()
    register_plugin(kop, env.trt, env.trtp)
    attrs = sys.modules["tensorrt.plugin._lib"].QDP_REGISTRY[kop.op_name].input_attrs
    assert {n: str(np.dtype(typing.get_args(attrs[n].__args__[1])[0])) for n in ("offset", "seed", "k")} == {
        "offset": "int64", "seed": "int64", "k": "int32"}
    decls = {d.name: d for d in kop.sig.scalar_decls}
    assert attr_annotation(decls["offset"]) is attrs["offset"] and attr_annotation(int) is attrs["k"]


def test_attribute_values_round_trip_exactly():
    d64 = ttk.ScalarInput("offset", int, ctype="long long")
    du64 = ttk.ScalarInput("seed", int, ctype="uint64_t")
    du32 = ttk.ScalarInput("u", int, ctype="unsigned")
    for d, v in [(d64, -BIG), (d64, 2**63 - 1), (d64, -(2**63)), (du64, 2**64 - 1), (du64, 2**63), (du64, 0),
                 (du32, 2**32 - 1)]:
        field = attr_field(d, v)
        assert field.dtype == np.int64 and field.shape == (1,)
        assert attr_value(d, field) == v  # a uint64 over 2**63-1 travels as its bits
        assert attr_value(d, field.astype(np.int64)) == v  # as NVIDIA's layer reads a field back (astype)
    tup = ttk.ScalarInput("lo", (int, 2), ctype="uint64_t")
    assert attr_value(tup, attr_field(tup, (2**64 - 1, 5))) == (2**64 - 1, 5)
    with pytest.raises(ttk.InputError, match=r"scalar 'seed' = -1 does not fit a 64-bit unsigned C int "
                                             r"\(unsigned long long\)"):
        attr_field(du64, -1)
    with pytest.raises(ttk.InputError, match=r"scalar 'offset' = 9223372036854775808 does not fit a 64-bit C int"):
        attr_field(d64, 2**63)


@pytest.mark.parametrize("offset, seed", [(5, 7), (-(2**31), 2**32 - 1), (2**31 - 1, 2**31), (-1, 0)])
def test_a_fitting_value_is_baked_into_the_narrowed_aot_launch(env, offset, seed):
    kop = declare()
    res = build(env, kop, (33, 47), {"offset": offset, "seed": seed, "k": -3})
    assert res.is_aot
    # the PTX takes (x, offset, seed, k, n, y): the 64-bit scalars narrowed to 32 bits of their signedness
    name = res.kernel_name.decode() if isinstance(res.kernel_name, bytes) else res.kernel_name
    assert ptx_params(res.ptx, name) == [("u64", 8), ("s32", 4), ("u32", 4), ("u32", 4), ("u32", 4), ("u64", 8)]
    # each extra argument is a SymInt32 holding the value's 32 bits, which the kernel widens with its signedness
    assert res.extra_args[0][0] is env.trt.PluginArgDataType.INT32
    bits = res.extra_arg_values
    assert bits[2:] == [-3, 33 * 47]
    assert bits[0] == offset
    assert bits[1] & 0xFFFFFFFF == seed and -(2**31) <= bits[1] < 2**31
    assert res.problems() == []


@pytest.mark.parametrize("attrs, match", [
    ({"offset": 2**31, "seed": 0}, r"scalar 'offset' = 2147483648 \(a 64-bit C int \(long long\)\) does not fit the 32 "
                                   r"bits of TensorRT's AOT extra arguments \(SymInt32\), and a truncated value would "
                                   r"be wrong\. Fix: add the layer with aot=False"),
    ({"offset": -BIG, "seed": 0}, r"scalar 'offset' = -1099511640121"),
    ({"offset": 0, "seed": 2**32}, r"scalar 'seed' = 4294967296 \(a 64-bit unsigned C int \(unsigned long long\)\)"),
])
def test_the_aot_impl_refuses_a_value_it_would_truncate(env, attrs, match):
    kop = declare()
    with pytest.raises(ttk.InputError, match=match) as info:
        build(env, kop, (10,), dict(attrs, k=0), aot=True)
    assert str(info.value).startswith(kop.op_name)


def test_a_jit_layer_keeps_the_full_value_in_its_fields(env):
    kop = declare()
    seed_decl = kop.sig.scalar_decls[1]  # over 2**63-1: given as the converter makes it (its bits in an int64)
    res = build(env, kop, (10,), {"offset": -BIG, "seed": attr_field(seed_decl, 2**63 + 5), "k": 1}, aot=False)
    assert not res.is_aot
    fields = {f.name: f for f in res.serialized_fields}
    assert fields["offset"].type == env.trt.PluginFieldType.INT64 and fields["k"].type == env.trt.PluginFieldType.INT32
    assert np.asarray(fields["offset"].data).tobytes() == struct.pack("<q", -BIG)
    seed = np.asarray(fields["seed"].data)
    assert seed.tobytes() == struct.pack("<Q", 2**63 + 5)
    assert attr_value(seed_decl, seed.astype(np.int64)) == 2**63 + 5  # what the JIT impl launches with

def _convert(env, kop, args, name):
    net = env.network()
    x = net.add_input("x", env.trt.float32, [-1])
    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    convert(kop, types.SimpleNamespace(net=net), (x, *args), {}, name, get_trt_tensor=lambda ctx, v, n: v,
            plugin_op=plugin_op, aot=True, attr_field=attr_field)
    return net.get_layer(net.num_layers - 1)


def test_the_converter_gives_a_value_over_32_bits_to_the_jit_impl(env, caplog):
    kop = declare()
    register_plugin(kop, env.trt, env.trtp)
    with caplog.at_level(logging.WARNING, logger="trt_kernels"):
        small = _convert(env, kop, (-5, 2**32 - 1, 0), "fits")
    assert hasattr(small.plugin, "get_launch_params")  # an AOT plugin layer
    assert not [r for r in caplog.records if "JIT impl" in r.getMessage()]
    with caplog.at_level(logging.WARNING, logger="trt_kernels"):
        big = _convert(env, kop, (BIG, 3, 0), "wide")
    assert not hasattr(big.plugin, "get_launch_params")  # a JIT plugin layer
    (msg,) = [r.getMessage() for r in caplog.records if "JIT impl" in r.getMessage()]
    assert msg.startswith(f"{kop.op_name}: layer wide is added with the JIT impl (aot=False): scalar 'offset' = "
                          f"{BIG} is a 64-bit long long whose value is outside [-2147483648, 2147483647]")
    # the default torch left out of the traced call is filled in (k), and checked like any other value
    with pytest.raises(ttk.InputError, match=r"scalar 'seed' = -1 does not fit a 64-bit unsigned C int"):
        _convert(env, kop, (0, -1), "neg")


def test_the_jit_impl_takes_the_exact_value(env, monkeypatch):
    """The JIT impl (``trtp.impl``) hands the attribute's full value to the launch (no GPU here: the launch
    is recorded)."""
    kop = declare()
    register_plugin(kop, env.trt, env.trtp)
    from trt_kernels.eager import cuda_kernel
    from trt_kernels.plugins import qdp

    seen = []
    monkeypatch.setattr(cuda_kernel, "launch_into", lambda kop_, args, outs, stream, tactic=1: seen.append(args))
    monkeypatch.setattr(qdp, "device_tensor", lambda t, trt, shape=None: t)
    impl = qdp.PluginBuilder(kop, env.trt, env.trtp).impl()
    fields = {d.name: attr_field(d, v) for d, v in zip(kop.sig.scalar_decls, (-BIG, 2**64 - 2, 4))}
    impl(torch.zeros(3), **fields, outputs=(torch.zeros(3),), stream=0, tactic=1)
    assert seen[0][1:] == [-BIG, 2**64 - 2, 4]
