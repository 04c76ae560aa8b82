"""The TensorRT side of ops that write inputs in place, through NVIDIA's own tensorrt.plugin layer over the CPU
stand-in: the plugin outputs the op's fresh outputs, then each written input's new value in a buffer of its own
(no aliased I/O: TensorRT fails such a build unless the builder config enables
PreviewFeature.ALIASED_PLUGIN_IO_10_03, which Torch-TensorRT does not); it is a JIT plugin, whose impl copies
the input into that buffer and runs the kernel there (tests/trt/emulated/test_in_place_emulated.py runs it);
and the converter takes torch.export's ``auto_functionalized_v2`` nodes of the op, results in the order that
higher-order op gives them."""

import pytest

import trt_kernels as ttk
from kernels import adamw_spec, unique
from trt_kernels import registry
from trt_kernels.converters import convert_in_place, in_place_call
from trt_kernels.plugins.qdp import attr_field, register_plugin
from trt_kernels.testing import _standin as standin

ADAMW = dict(learning_rate=1e-3, beta1=0.9, beta2=0.999, beta1_correction=0.1, beta2_correction=0.001, eps=1e-8,
             weight_decay=0.01)

# clamps x in place and marks where it changed something: one written input and one fresh output, the fresh
# output's pointer last (the calling convention: inputs, scalars, extras, outputs)
CLAMP_MARK = r"""
extern "C" __global__ void clamp_and_mark(float* x, float lo, float hi, int n, float* changed) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    float v = x[i];
    float c = fminf(fmaxf(v, lo), hi);
    x[i] = c;
    changed[i] = (c != v) ? 1.0f : 0.0f;
}
"""


def clamp_spec():
    n = ttk.Numel("x")
    return ttk.KernelSpec(kernel_source=CLAMP_MARK, kernel_name="clamp_and_mark",
                          inputs=[ttk.InputDecl("x", mutated=True), ttk.ScalarInput("lo", float),
                                  ttk.ScalarInput("hi", float)],
                          outputs=[ttk.OutputDecl("changed", ttk.SameAs("x"))], extras=[n],
                          geometry=ttk.Custom(grid=(ttk.cdiv(n, 128),), block=(128,)))


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def declare(spec):
    name = unique("ttk_inplace_trt")
    ttk.cuda_kernel_op(name, spec)
    return registry.get(name)


def build(env, kop, shapes, attrs):
    register_plugin(kop, env.trt, env.trtp)
    return env.build(kop.op_name, inputs=[("FP32", s) for s in shapes], attrs=attrs, aot=False)


def test_the_plugin_outputs_each_written_input_in_a_buffer_of_its_own(env):
    kop = declare(adamw_spec())
    assert not kop.aot.aot and "writes 'params_memory', 'm_memory', 'v_memory' in place" in kop.aot.why
    assert "PreviewFeature.ALIASED_PLUGIN_IO_10_03" in kop.aot.why
    res = build(env, kop, [(300,)] * 4, ADAMW)
    assert not res.is_aot
    assert res.output_shapes == [(300,)] * 3 and [str(d) for d in res.output_dtypes] == ["DataType.FLOAT"] * 3
    layer = env.native._format.decode(res.engine)["layers"][0]
    assert layer["kind"] == "jit_plugin" and layer["aliased"] == {}  # builds without the preview feature


def test_fresh_outputs_come_first_then_the_written_inputs(env):
    kop = declare(clamp_spec())
    assert str(kop.overload._schema).endswith("(Tensor(a!) x, float lo, float hi) -> Tensor")
    res = build(env, kop, [(5, 7)], dict(lo=-0.5, hi=0.5))
    assert res.output_shapes == [(5, 7), (5, 7)]


class _Ctx:
    def __init__(self, net):
        self.net = net


def _convert(env, kop, make_kwargs):
    """``kop``'s in-place converter on a fresh network; ``make_kwargs(net)``: the node's kwargs, its tensors
    inputs of ``net``. Returns (the network's one layer, the converter's results)."""
    register_plugin(kop, env.trt, env.trtp)
    ctx = _Ctx(env.network())
    plugin_op = getattr(getattr(env.trtp.op, kop.namespace), kop.name)
    res = convert_in_place(kop, ctx, make_kwargs(ctx.net), "node7", get_trt_tensor=lambda c, v, n: v,
                           plugin_op=plugin_op, aot=False, attr_field=attr_field)
    assert ctx.net.num_layers == 1
    return ctx.net.get_layer(0), res


def test_the_converter_returns_what_auto_functionalized_v2_returns(env):
    def kwargs(net):
        t = {n: net.add_input(n, env.trt.float32, [300]) for n in ("p", "g", "m", "v")}
        # the bases in another order than the arguments: params is base 2, m base 0, v base 1
        return dict(grads_memory=t["g"], **ADAMW, _params_memory_base_index=2, _m_memory_base_index=0,
                    _v_memory_base_index=1, _all_bases=[t["m"], t["v"], t["p"]])

    layer, res = _convert(env, declare(adamw_spec()), kwargs)
    assert layer.name == "node7" and layer.num_outputs == 3
    # the plugin's inputs in the op's order; its outputs: params', m', v'
    assert [layer.get_input(i).name for i in range(4)] == ["p", "g", "m", "v"]
    new_p, new_m, new_v = (layer.get_output(i) for i in range(3))
    # auto_functionalized_v2: (the op's result: None), then the new value of each base in _all_bases order
    assert res == (None, new_m, new_v, new_p)


def test_the_converter_puts_a_fresh_output_before_the_bases(env):
    def kwargs(net):
        return dict(lo=-1, hi=1, _x_base_index=0, _all_bases=[net.add_input("x", env.trt.float32, [5, 7])])

    layer, res = _convert(env, declare(clamp_spec()), kwargs)
    assert res == (layer.get_output(0), layer.get_output(1))  # (changed, x')


def test_a_write_into_a_view_is_left_to_pytorch():
    kop = declare(clamp_spec())
    base = object()
    assert in_place_call(kop, dict(lo=0.0, hi=1.0, _x_base_index=0, _all_bases=[base])) == (
        dict(lo=0.0, hi=1.0, x=base), [0])
    # a slice of its base, a view with sizes and strides, a base index out of range, two bases for one input, an
    # argument the op does not have: not this converter's
    for extra in (dict(_x_slice_dim=0, _x_slice_start=1, _x_slice_end=4), dict(_x_size=(3,), _x_stride=(1,)),
                  dict(_x_base_index=1), dict(_all_bases=[base, base]), dict(other=1)):
        assert in_place_call(kop, {**dict(lo=0.0, hi=1.0, _x_base_index=0, _all_bases=[base]), **extra}) is None
    adamw = declare(adamw_spec())
    shared = dict(grads_memory=base, **ADAMW, _params_memory_base_index=0, _m_memory_base_index=0,
                  _v_memory_base_index=1, _all_bases=[base, base])
    assert in_place_call(adamw, shared) is None  # two written inputs sharing one base (aliasing arguments)
    with pytest.raises(ttk.InputError, match="writes into a view"):
        convert_in_place(kop, None, dict(lo=0.0, hi=1.0, _x_base_index=0, _x_slice_dim=0, _all_bases=[base]), "n",
                         get_trt_tensor=None, plugin_op=None, aot=False, attr_field=attr_field)
