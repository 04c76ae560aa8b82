"""Our plugin functions driven through NVIDIA's own tensorrt.plugin layer (over the CPU stand-in):
NVIDIA's validators accept our descriptor / aot_impl / impl / autotune, and what TensorRT would
build (output shapes, grid, block, extra args, kernel name, PTX) equals the plan's eager values."""

import inspect
import sys
import types
import typing

import pytest
import torch

import trt_kernels as ttk
from kernels import ROW_SUM, SIN_COS, TEMPLATE_SIGMOID, mixed_spec, row_sum_spec, scale_spec, sigmoid_spec, unique
from trt_kernels import registry
from trt_kernels.converters import convert, split_arguments
from trt_kernels.expr import SizesEvaluator, evaluate
from trt_kernels.plugins.qdp import attr_field, float_bits, register_plugin
from trt_kernels.testing import _standin as standin


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def declare(spec, **kw):
    name = unique("ttk_qdp")
    ttk.cuda_kernel_op(name, spec, **kw)
    return registry.get(name)


def eager_plan(kop, shapes, tactic=1):
    p = kop.plan(tuple(len(s) for s in shapes), tactic)
    ev = SizesEvaluator(shapes)
    return dict(outs=[tuple(evaluate(e, ev) for e in o.shape) for o in p.outputs],
                grid=tuple(evaluate(e, ev) for e in p.grid), block=p.block,
                smem=evaluate(p.shared_mem, ev), extras=[evaluate(e, ev) for e in p.extras])


def build(env, kop, shapes, dtype="FP32", attrs=None, **kw):
    if not hasattr(getattr(env.trtp.op, kop.namespace, None), kop.name):
        register_plugin(kop, env.trt, env.trtp)
    return env.build(kop.op_name, inputs=[(dtype, s) for s in shapes], attrs=attrs or {}, **kw)


@pytest.mark.parametrize("shape", [(1,), (257,), (33, 47), (4, 0, 3)])
def test_flat_sigmoid_matches_eager_plan(env, shape):
    kop = declare(sigmoid_spec())
    res = build(env, kop, [shape])
    want = eager_plan(kop, [shape])
    assert res.is_aot
    assert res.output_shapes == want["outs"] and [d.name for d in res.output_dtypes] == ["FLOAT"]
    assert res.grid == want["grid"] and res.block == want["block"]
    assert res.extra_arg_values == want["extras"]
    assert res.kernel_name in ("my_sigmoid", b"my_sigmoid")
    assert res.ptx == kop.binary("sm_90").kernel(torch.float32).aot_ptx
    assert res.problems() == [] or shape == (4, 0, 3)
    # the same build evaluated at other sizes (dynamic shapes): still the eager formula
    for other in [(5,), (1000,), (65537,)] if len(shape) == 1 else []:
        lv = res.launch_at([other])
        assert (lv["grid_x"], lv["grid_y"], lv["grid_z"]) == eager_plan(kop, [other])["grid"]
        assert res.extra_args_at([other]) == eager_plan(kop, [other])["extras"]


def test_scalar_is_baked_into_extra_args(env):
    kop = declare(scale_spec())
    res = build(env, kop, [(3, 5)], attrs={"alpha": 2.5})
    assert res.extra_arg_values == [float_bits(2.5), 15]
    assert res.is_aot  # the anchor falls back to JIT here; we do not


def test_interleaved_scalars_bool_and_int(env):
    kop = declare(mixed_spec())
    res = build(env, kop, [(10,), (10,)], attrs={"alpha": -0.75, "k": -3, "flag": True})
    assert res.extra_arg_values == [float_bits(-0.75), -3, 1, 10]
    assert res.grid == (1, 1, 1) and res.block == (128, 1, 1)


def test_int_scalar_out_of_range_is_refused(env):
    """An int scalar travels as a one-element int32 array: the converter refuses what does not fit."""
    kop = declare(mixed_spec())
    register_plugin(kop, env.trt, env.trtp)
    net = env.network()
    a = net.add_input("a", env.trt.float32, [10])
    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    with pytest.raises(ttk.InputError, match=r"scalar 'k' = 4294967296 does not fit a 32-bit C int"):
        convert(kop, types.SimpleNamespace(net=net), (a, 1.0, a, 2**32, False), {}, "n",
                get_trt_tensor=lambda ctx, v, name: v, plugin_op=plugin_op, aot=True, attr_field=attr_field)
    assert net.num_layers == 0


def test_scalar_attributes_are_one_element_arrays(env):
    """float/int scalars are numpy-array attributes (TensorRT's plugin layer before 11.2 cannot turn a
    float or int field back into an attribute with numpy >= 2.4); bool stays bool."""
    import numpy as np

    kop = declare(mixed_spec())
    register_plugin(kop, env.trt, env.trtp)
    attrs = sys.modules["tensorrt.plugin._lib"].QDP_REGISTRY[kop.op_name].input_attrs
    assert [str(np.dtype(typing.get_args(attrs[n].__args__[1])[0])) for n in ("alpha", "k")] == ["float32", "int32"]
    assert attrs["flag"] is bool
    # classes, not generic aliases: TensorRT's validator before 11.2 calls issubclass() on every annotation,
    # which a generic alias (numpy.typing.NDArray[...]) fails on Python 3.12
    assert all(inspect.isclass(attrs[n]) and not issubclass(attrs[n], env.trtp.TensorDesc) for n in ("alpha", "k"))
    res = env.build(kop.op_name, inputs=[("FP32", (10,)), ("FP32", (10,))], attrs={"alpha": 1.5, "k": -7, "flag": True})
    assert res.extra_arg_values[:3] == [float_bits(1.5), -7, 1]


@pytest.mark.parametrize("shape", [(1, 1), (33, 47), (2, 3, 40, 50)])
def test_nd_relu_grid(env, shape):
    src = 'extern "C" __global__ void r2(const float* x, int H, int W, float* y) {}'
    kop = declare(sigmoid_spec(kernel_source=src, kernel_name="r2", extras=[ttk.DimSize("x", -2), ttk.DimSize("x", -1)],
                               geometry=ttk.Elementwise(block=(16, 16), layout="nd")))
    res = build(env, kop, [shape])
    want = eager_plan(kop, [shape])
    assert res.grid == want["grid"] and res.block == (16, 16, 1) and res.extra_arg_values == want["extras"]


def test_reduction_and_tactics(env):
    kop = declare(row_sum_spec(kernel_source=ROW_SUM, geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256,
                                                                             tactics=(128, 512))))
    res = build(env, kop, [(8, 300)])
    assert res.tactics == [1, 2, 3]
    for t, bs in [(1, 256), (2, 128), (3, 512)]:
        r = build(env, kop, [(8, 300)], tactic=t)
        assert r.output_shapes == [(8,)] and r.grid == (8, 1, 1) and r.block == (bs, 1, 1)
        assert r.extra_arg_values == [300]


def test_multi_output(env):
    kop = declare(sigmoid_spec(kernel_source=SIN_COS, kernel_name="my_sin_cos",
                               outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("x")),
                                        ttk.OutputDecl("c", shape=ttk.SameAs("x"))]))
    res = build(env, kop, [(7, 31)])
    assert res.output_shapes == [(7, 31), (7, 31)] and res.extra_arg_values == [217]


def test_template_dtypes_autotune_and_kernel_names(env):
    kop = declare(sigmoid_spec(kernel_source=TEMPLATE_SIGMOID, kernel_name="tsig<T>",
                               dtypes=[torch.float32, torch.float16, torch.bfloat16]))
    names = {dt: kop.image(tdt, 1, "sm_90").symbol for dt, tdt in
             [("FP32", torch.float32), ("FP16", torch.float16), ("BF16", torch.bfloat16)]}
    seen = set()
    for dt in ("FP32", "FP16", "BF16"):
        res = build(env, kop, [(5, 9)], dtype=dt)
        combos = [[t.name for t, _ in c] for c in res.combinations]
        assert combos == [["FLOAT", "FLOAT"], ["HALF", "HALF"], ["BF16", "BF16"]]
        assert res.output_dtypes[0].name == {"FP32": "FLOAT", "FP16": "HALF", "BF16": "BF16"}[dt]
        kn = res.kernel_name.decode() if isinstance(res.kernel_name, bytes) else res.kernel_name
        assert kn == names[dt]
        seen.add(kn)
    assert len(seen) == 3


def test_declarative_shape_expression(env):
    src = 'extern "C" __global__ void rep(const float* x, int n, float* y) {}'
    kop = declare(sigmoid_spec(kernel_source=src, kernel_name="rep",
                               outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") * 2,))]))
    res = build(env, kop, [(3, 7)])
    assert res.output_shapes == [(42,)] and res.grid == (1, 1, 1) and res.extra_arg_values == [21]


def test_override_path_meta_fn_and_aot_fn(env):
    trtp = env.trtp
    src = 'extern "C" __global__ void repeat2_kernel(const float* x, const int n, float* y) {}'

    def meta(x: torch.Tensor) -> torch.Tensor:
        return torch.empty((x.numel() * 2,), device=x.device, dtype=x.dtype)

    def aot(inputs, outputs, tactic):
        n = inputs[0].shape_expr.numel()
        params = trtp.KernelLaunchParams()
        params.grid_x = trtp.cdiv(n, 256)
        params.block_x = 256
        params.shared_mem = 0
        extra = trtp.SymIntExprs(1)
        extra[0] = trtp.SymInt32(n)
        return params, extra

    kop = declare(ttk.KernelSpec(kernel_source=src, kernel_name="repeat2_kernel", inputs=[ttk.InputDecl("x")]),
                  meta_fn=meta, eager_fn=meta, aot_fn=aot)
    res = build(env, kop, [(1000,)])
    assert res.is_aot and res.output_shapes == [(2000,)]
    assert res.grid == (4, 1, 1) and res.block == (256, 1, 1) and res.extra_arg_values == [1000]
    assert res.kernel_name in ("repeat2_kernel", b"repeat2_kernel")


def test_override_without_aot_fn_is_jit(env):
    def meta(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    kop = declare(ttk.KernelSpec(kernel_source=TEMPLATE_SIGMOID.replace("template <typename T>", "")
                                 .replace("T", "float").replace("tsig", "plain"),
                                 kernel_name="plain", inputs=[ttk.InputDecl("x")]),
                  meta_fn=meta, eager_fn=meta)
    res = build(env, kop, [(6,)], aot=False)
    assert not res.is_aot and res.output_shapes == [(6,)]


def test_converter_reorders_tensors_and_attributes(env):
    kop = declare(mixed_spec())
    register_plugin(kop, env.trt, env.trtp)
    net = env.network()

    class Ctx:
        pass

    ctx = Ctx()
    ctx.net = net
    a = net.add_input("a", env.trt.float32, [-1])
    made = []

    def get_trt_tensor(ctx_, value, name):
        if isinstance(value, torch.Tensor):  # a constant from the graph
            made.append(name)
            return net.add_input(name, env.trt.float32, list(value.shape))
        return value

    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    # FX passes ints for a float attribute at times: split_arguments converts to the declared type
    out = convert(kop, ctx, (a, 2, torch.ones(4)), {"k": 3, "flag": 1}, "node1",
                  get_trt_tensor=get_trt_tensor, plugin_op=plugin_op, aot=True, attr_field=attr_field)
    assert made == ["node1_b"]
    assert net.num_layers == 1
    layer = net.get_layer(0)
    assert hasattr(layer.plugin, "get_launch_params") and layer.name == "node1"  # an AOT plugin layer
    assert out is layer.get_output(0) and layer.num_outputs == 1
    # tensors first, in declaration order
    assert [layer.get_input(i).name for i in range(layer.num_inputs)] == ["a", "node1_b"]
    tensors, attrs = split_arguments(kop, (a, 2, None), {"k": 3, "flag": 1})
    assert [n for n, _ in tensors] == ["a", "b"] and attrs == {"alpha": 2.0, "k": 3, "flag": True}
    assert type(attrs["alpha"]) is float and type(attrs["flag"]) is bool


def test_nvidia_validator_rejects_a_wrong_aot_signature(env):
    """Sanity: the layer we run our functions through is strict (NVIDIA's validators)."""
    trtp = env.trtp
    kop = declare(sigmoid_spec())
    register_plugin(kop, env.trt, env.trtp)
    other = unique("ttk_qdp")

    @trtp.register(other)
    def desc(x: trtp.TensorDesc, alpha: float) -> trtp.TensorDesc:
        return x.like()

    with pytest.raises(Exception, match="beta"):
        @trtp.aot_impl(other)
        def aot(x: trtp.TensorDesc, beta: float, outputs, tactic: int):
            return None


def test_float64_is_not_advertised_to_tensorrt(env):
    kop = declare(sigmoid_spec(kernel_source=TEMPLATE_SIGMOID, kernel_name="tsig<T>",
                               dtypes=[torch.float32, torch.float64]))
    res = build(env, kop, [(5,)])
    assert [[t.name for t, _ in c] for c in res.combinations] == [["FLOAT", "FLOAT"]]


# ---------------- tuple attributes, defaults, output shapes from attributes ----------------

def _circular_pad(env, default=None):
    from support import load_example

    spec = load_example("circular_pad").circular_pad_spec()
    if default is not None:
        spec.inputs = [spec.inputs[0], ttk.ScalarInput("pads", (int, 4), default=default)]
    return declare(spec)


@pytest.mark.parametrize("shape,pads", [((2, 5, 7), (1, 2, 3, 4)), ((1, 1, 1), (0, 0, 0, 0)), ((3, 4, 9), (7, 0, 0, 2)),
                                        ((0, 3, 3), (1, 1, 1, 1))])
def test_tuple_attribute_sizes_the_output_and_is_baked(env, shape, pads):
    """``pads`` is one int32 array attribute; the descriptor reads its values (TensorRT gives them when it
    builds) as constants in the output shape, and the AOT launch passes them as four ints."""
    import numpy as np

    kop = _circular_pad(env)
    register_plugin(kop, env.trt, env.trtp)
    attrs = sys.modules["tensorrt.plugin._lib"].QDP_REGISTRY[kop.op_name].input_attrs
    assert str(np.dtype(typing.get_args(attrs["pads"].__args__[1])[0])) == "int32"
    res = env.build(kop.op_name, inputs=[("FP32", shape)], attrs={"pads": np.array(pads, dtype=np.int32)})
    b, h, w = shape
    ho, wo = h + pads[2] + pads[3], w + pads[0] + pads[1]
    assert res.is_aot and res.output_shapes == [(b, ho, wo)]
    assert res.extra_arg_values == [*pads, h, w, ho, wo, b * ho * wo]
    assert res.grid == (-(-(b * ho * wo) // 256), 1, 1)
    # dynamic sizes: the attribute stays a constant, the dims follow the inputs
    assert res.extra_args_at([(4, 6, 8)]) == [*pads, 6, 8, 6 + pads[2] + pads[3], 8 + pads[0] + pads[1],
                                              4 * (6 + pads[2] + pads[3]) * (8 + pads[0] + pads[1])]
    assert [str(e) for e in res.output_shape_exprs[0]] != [] and res.output_shapes == [(b, ho, wo)]


def test_tuple_attribute_from_a_python_tuple_and_the_converter(env):
    kop = _circular_pad(env)
    register_plugin(kop, env.trt, env.trtp)
    res = env.build(kop.op_name, inputs=[("FP32", (2, 3, 4))], attrs={"pads": (1, 0, 0, 1)})
    assert res.output_shapes == [(2, 4, 5)] and res.extra_arg_values[:4] == [1, 0, 0, 1]
    net = env.network()
    x = net.add_input("x", env.trt.float32, [2, 3, 4])
    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    with pytest.raises(ttk.InputError, match=r"scalar 'pads'\[2\] = 4294967296 does not fit a 32-bit C int"):
        convert(kop, types.SimpleNamespace(net=net), (x, (0, 0, 2**32, 0)), {}, "n",
                get_trt_tensor=lambda ctx, v, name: v, plugin_op=plugin_op, aot=True, attr_field=attr_field)
    with pytest.raises(ttk.InputError, match=r"scalar 'pads' takes 4 ints, got 3 values"):
        convert(kop, types.SimpleNamespace(net=net), (x, (0, 0, 1)), {}, "n",
                get_trt_tensor=lambda ctx, v, name: v, plugin_op=plugin_op, aot=True, attr_field=attr_field)
    assert net.num_layers == 0
    out = convert(kop, types.SimpleNamespace(net=net), (x, [2, 2, 0, 1]), {}, "n",
                  get_trt_tensor=lambda ctx, v, name: v, plugin_op=plugin_op, aot=True, attr_field=attr_field)
    assert net.num_layers == 1 and out is net.get_layer(0).get_output(0)


def test_converter_bakes_the_defaults_torch_left_out(env):
    """A traced call that left ``pads`` / ``eps`` out (equal to their defaults): the converter passes the
    defaults as attributes, and the AOT launch bakes them in."""
    from support import load_example

    pad = _circular_pad(env, default=(1, 1, 2, 2))
    rms = declare(load_example("circular_pad").rms_norm_spec())
    for kop, args, want in [(pad, ("x",), {"pads": (1, 1, 2, 2)}), (rms, ("x", "w"), {"eps": 1e-6}),
                            (rms, ("x", "w"), {"eps": 0.25})]:
        call = args if kop is pad or want["eps"] == 1e-6 else args + (0.25,)
        assert split_arguments(kop, call, {})[1] == want
    register_plugin(pad, env.trt, env.trtp)
    res = env.build(pad.op_name, inputs=[("FP32", (1, 3, 3))], attrs=split_arguments(pad, ("x",), {})[1])
    assert res.output_shapes == [(1, 7, 5)] and res.extra_arg_values[:4] == [1, 1, 2, 2]
    register_plugin(rms, env.trt, env.trtp)
    res = env.build(rms.op_name, inputs=[("FP32", (5, 16)), ("FP32", (16,))],
                    attrs=split_arguments(rms, ("x", "w"), {})[1])
    assert res.extra_arg_values == [float_bits(1e-6), 16] and res.grid == (5, 1, 1) and res.output_shapes == [(5, 16)]


def test_int_scalar_as_a_repeat_count(env):
    """``Scalar("k")``: a plain int attribute read by the output shape and the grid."""
    src = 'extern "C" __global__ void rep(const float* x, int k, int n, float* y) {}'
    kop = declare(sigmoid_spec(kernel_source=src, kernel_name="rep",
                               inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int, default=2)],
                               outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") * ttk.Scalar("k"),))]))
    res = build(env, kop, [(3, 100)], attrs={"k": 4})
    assert res.output_shapes == [(1200,)] and res.extra_arg_values == [4, 300] and res.grid == (5, 1, 1)
