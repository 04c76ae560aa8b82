"""TensorRT's standard layers in the emulator (issue 32), on the CPU: each layer's shape and type inference,
the checks where TensorRT refuses a layer, and its computation against torch's own operators.

A network is built with the emulated builder as Torch-TensorRT builds one, and the plan is run here layer
by layer on CPU tensors through the emulator's own reference implementations (``_compute``): the same
records and the same code the emulated engine runs on the GPU (``tests/trt/emulated`` runs real models
there), so what is compared here is what an engine computes. Inputs are random, never zeros."""

import importlib

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from trt_kernels.testing import _standin as standin


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    yield from standin.standin_fixture()


def _emulator(env, name):
    return importlib.import_module(f"{env.native.__name__}.{name}")


class Net:
    """A strongly typed network under construction, its optimization profile, and a CPU run of its plan."""

    def __init__(self, env):
        self.env, self.trt = env, env.trt
        self.builder = self.trt.Builder(self.trt.Logger())
        self.net = self.builder.create_network(1 << int(self.trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
        self.profile = self.builder.create_optimization_profile()
        self.dynamic = False

    def input(self, name, x: torch.Tensor, dynamic=(), lo=1, hi=64):
        shape = [-1 if j in dynamic else s for j, s in enumerate(x.shape)]
        t = self.net.add_input(name, _trt_dtype(self.trt, x.dtype), shape)
        if dynamic:
            self.dynamic = True
            mn = [lo if j in dynamic else s for j, s in enumerate(x.shape)]
            mx = [hi if j in dynamic else s for j, s in enumerate(x.shape)]
            self.profile.set_shape(name, mn, list(x.shape), mx)
        return t

    def const(self, a: np.ndarray):
        return self.net.add_constant(a.shape, self.trt.Weights(np.ascontiguousarray(a))).get_output(0)

    def try_build(self, *outputs):
        """The serialized engine, or None where the build fails (the log says why)."""
        for k, t in enumerate(outputs):
            t.name = f"out{k}"
            self.net.mark_output(t)
        cfg = self.builder.create_builder_config()
        if self.dynamic:
            cfg.add_optimization_profile(self.profile)
        return self.builder.build_serialized_network(self.net, cfg)

    def build(self, *outputs):
        blob = self.try_build(*outputs)
        assert blob is not None, [m for _, m in self.env.log][-3:]
        return _emulator(self.env, "_format").decode(blob)

    def run(self, feeds, *outputs):
        """Build, then run the plan on CPU tensors ``feeds`` (by input name): the outputs."""
        return execute(self.env, self.build(*outputs), feeds)


def _trt_dtype(trt, dt):
    return {torch.float32: trt.float32, torch.float16: trt.float16, torch.bfloat16: trt.bfloat16,
            torch.int32: trt.int32, torch.int64: trt.int64, torch.bool: trt.bool}[dt]


def execute(env, plan, feeds):
    """The plan's layers in order on CPU tensors, as the emulated engine runs them on the GPU."""
    compute, dims = _emulator(env, "_compute"), _emulator(env, "_dims")
    bindings = {}
    for rec in plan["inputs"]:
        for d, s in zip(rec["dims"], feeds[rec["name"]].shape):
            if isinstance(d, str):
                bindings[d] = s
    shapes = {n: [dims.evaluate(d, bindings) for d in t["dims"]] for n, t in plan["tensors"].items()}
    vals = dict(feeds)
    for layer in plan["layers"]:
        kind = layer["kind"]
        if kind == "constant":
            w = compute.weights({"dtype": layer["dtype"], "data": layer["data"]}, "cpu")
            vals[layer["outputs"][0]] = w.reshape(shapes[layer["outputs"][0]])
        elif kind in ("cast", "identity"):
            vals[layer["outputs"][0]] = vals[layer["inputs"][0]].to(compute.DTYPES[layer["to"]])
        else:
            assert kind == "layer", kind
            xs = [vals[n] if n is not None else None for n in layer["inputs"]]
            ys = compute.run(layer["type"], layer["params"], xs, [shapes[n] for n in layer["outputs"]],
                             lambda j: dims.evaluate(j, bindings))
            vals.update(zip(layer["outputs"], ys))
    return [vals[o["name"]] for o in plan["outputs"]]


def _close(a, b, **kw):
    assert a.dtype == b.dtype and a.shape == b.shape, (a.dtype, a.shape, b.dtype, b.shape)
    torch.testing.assert_close(a, b, **kw)


def _refused(env, build_or_query, *words):
    """The layer is refused: a build returns None, or a shape question raises; the log names why."""
    n = len(env.log)
    try:
        result = build_or_query()
    except ValueError:
        result = None
    assert result is None
    text = " ".join(m for _, m in env.log[n:])
    for w in words:
        assert w in text, text


# ----- elementwise, unary, activation, select -----

def test_elementwise_broadcasts_as_tensorrt_and_computes_as_torch(env):
    trt = env.trt
    a, b = torch.randn(3, 1, 5), torch.randn(1, 4, 5)
    for op, ref in ((trt.ElementWiseOperation.SUM, a + b), (trt.ElementWiseOperation.PROD, a * b),
                    (trt.ElementWiseOperation.SUB, a - b), (trt.ElementWiseOperation.DIV, a / b),
                    (trt.ElementWiseOperation.MAX, torch.maximum(a, b)),
                    (trt.ElementWiseOperation.LESS, a < b)):
        n = Net(env)
        layer = n.net.add_elementwise(n.input("a", a), n.input("b", b), op)
        assert layer.get_output(0).shape == (3, 4, 5)
        (out,) = n.run({"a": a, "b": b}, layer.get_output(0))
        _close(out, ref)
    i, j = torch.randint(-9, 9, (6,), dtype=torch.int32), torch.randint(1, 5, (6,), dtype=torch.int32)
    for op, ref in ((trt.ElementWiseOperation.FLOOR_DIV, torch.div(i, j, rounding_mode="floor")),
                    (trt.ElementWiseOperation.DIV, torch.div(i, j, rounding_mode="trunc"))):
        n = Net(env)
        (out,) = n.run({"i": i, "j": j}, n.net.add_elementwise(n.input("i", i), n.input("j", j), op).get_output(0))
        _close(out, ref)


def test_elementwise_refuses_what_tensorrt_refuses(env):
    trt = env.trt
    n = Net(env)
    x = n.input("x", torch.randn(2, 3))
    h = n.input("h", torch.randn(2, 3).half())
    y = n.net.add_elementwise(x, h, trt.ElementWiseOperation.SUM).get_output(0)
    _refused(env, lambda: y.shape, "inputs have types FLOAT and HALF", "same type")
    n = Net(env)
    y = n.net.add_elementwise(n.input("x", torch.randn(2, 3)), n.input("z", torch.randn(2, 4)),
                              trt.ElementWiseOperation.SUM).get_output(0)
    _refused(env, lambda: y.shape, "broadcast dimensions must be conformable")
    n = Net(env)
    y = n.net.add_elementwise(n.input("x", torch.randn(2, 3)), n.input("v", torch.randn(3)),
                              trt.ElementWiseOperation.SUM).get_output(0)
    _refused(env, lambda: n.try_build(y), "must have the same rank")
    n = Net(env)
    y = n.net.add_elementwise(n.input("x", torch.randn(3)), n.input("v", torch.randn(3)),
                              trt.ElementWiseOperation.AND).get_output(0)
    _refused(env, lambda: y.dtype, "AND needs BOOL inputs")


def test_unary_activation_and_select(env):
    trt = env.trt
    x = torch.randn(4, 7)
    cases = [(lambda n, t: n.net.add_unary(t, trt.UnaryOperation.EXP), torch.exp(x)),
             (lambda n, t: n.net.add_unary(t, trt.UnaryOperation.ABS), x.abs()),
             (lambda n, t: n.net.add_activation(t, trt.ActivationType.RELU), torch.relu(x)),
             (lambda n, t: n.net.add_activation(t, trt.ActivationType.SIGMOID), torch.sigmoid(x)),
             (lambda n, t: n.net.add_activation(t, trt.ActivationType.GELU_ERF), F.gelu(x))]
    for make, ref in cases:
        n = Net(env)
        (out,) = n.run({"x": x}, make(n, n.input("x", x)).get_output(0))
        _close(out, ref)
    n = Net(env)
    leaky = n.net.add_activation(n.input("x", x), trt.ActivationType.LEAKY_RELU)
    leaky.alpha = 0.1
    assert leaky.type == trt.ActivationType.LEAKY_RELU  # the binding's name: the activation, not the LayerType
    (out,) = n.run({"x": x}, leaky.get_output(0))
    _close(out, F.leaky_relu(x, 0.1))
    n = Net(env)
    c, a = torch.rand(4, 7) > 0.5, torch.randn(4, 7)
    sel = n.net.add_select(n.input("c", c), n.input("a", a), n.input("x", x))
    (out,) = n.run({"c": c, "a": a, "x": x}, sel.get_output(0))
    _close(out, torch.where(c, a, x))
    n = Net(env)
    y = n.net.add_unary(n.input("i", torch.ones(3, dtype=torch.int32)), trt.UnaryOperation.EXP).get_output(0)
    _refused(env, lambda: y.shape, "Unary EXP takes")


# ----- shuffle, shape tensors, gather, concatenation, slice -----

def test_shuffle_transposes_reshapes_transposes(env):
    x = torch.randn(2, 3, 4, 5)
    n = Net(env)
    s = n.net.add_shuffle(n.input("x", x))
    s.first_transpose = (0, 2, 1, 3)
    s.reshape_dims = (0, 4, -1)  # 0 copies (placeholder), -1 is inferred
    s.second_transpose = (2, 0, 1)
    assert s.get_output(0).shape == (15, 2, 4)
    (out,) = n.run({"x": x}, s.get_output(0))
    _close(out, x.permute(0, 2, 1, 3).reshape(2, 4, 15).permute(2, 0, 1))


def test_shuffle_refuses_a_volume_change_and_two_inferred_dimensions(env):
    n = Net(env)
    s = n.net.add_shuffle(n.input("x", torch.randn(2, 6)))
    s.reshape_dims = (5, 3)
    _refused(env, lambda: s.get_output(0).shape, "reshape changes volume")
    s.reshape_dims = (-1, -1)
    _refused(env, lambda: n.try_build(s.get_output(0)), "more than one -1")
    s.reshape_dims = (3, -1)  # a later change is inferred again
    assert s.get_output(0).shape == (3, 4)


def test_a_reshape_driven_by_shape_tensors_follows_the_dynamic_batch(env):
    """What Torch-TensorRT emits for ``x.view(x.shape[0], -1)`` on a dynamic batch: shape, gather, concatenate
    with a constant, reshape through ``set_input(1, ...)``; the plan's dimensions are expressions of the batch.
    As Torch-TensorRT does, the shuffle is added before the layers making its shape tensor (a network is a
    graph, not a sequence)."""
    trt = env.trt
    n = Net(env)
    x = n.input("x", torch.randn(3, 4, 5), dynamic=(0,))
    s = n.net.add_shuffle(x)
    assert s.get_output(0).shape == (-1, 4, 5)  # no reshape yet; asked again after set_input below
    shape = n.net.add_shape(x).get_output(0)
    assert shape.dtype == trt.int64 and shape.shape == (3,) and shape.is_shape_tensor
    batch = n.net.add_gather(shape, n.const(np.array([0], dtype=np.int64)), 0).get_output(0)
    dims = n.net.add_concatenation([batch, n.const(np.array([-1], dtype=np.int64))]).get_output(0)
    s.set_input(1, dims)
    assert s.get_output(0).shape == (-1, 20)
    plan = n.build(s.get_output(0))
    assert plan["tensors"]["out0"]["dims"][1] == 20
    for b in (1, 3, 7):
        v = torch.randn(b, 4, 5)
        (out,) = execute(env, plan, {"x": v})
        _close(out, v.reshape(b, 20))


def test_gather_concatenation_and_slice(env):
    x = torch.randn(4, 6, 5)
    n = Net(env)
    idx = torch.tensor([[2, 0], [5, -1]], dtype=torch.int32)
    g = n.net.add_gather(n.input("x", x), n.input("idx", idx), 1)
    assert g.get_output(0).shape == (4, 2, 2, 5)
    (out,) = n.run({"x": x, "idx": idx}, g.get_output(0))
    _close(out, x[:, idx.remainder(6).long()])
    n = Net(env)
    y = torch.randn(4, 2, 5)
    c = n.net.add_concatenation([n.input("x", x), n.input("y", y)])
    c.axis = 1
    (out,) = n.run({"x": x, "y": y}, c.get_output(0))
    _close(out, torch.cat([x, y], 1))
    n = Net(env)
    sl = n.net.add_slice(n.input("x", x), (1, 5, 0), (2, 3, 5), (2, -2, 1))
    (out,) = n.run({"x": x}, sl.get_output(0))
    _close(out, x[1::2][:, [5, 3, 1]])
    n = Net(env)
    sl = n.net.add_slice(n.input("x", x), (0, 4, 0), (4, 4, 5), (1, 1, 1))
    sl.mode = env.trt.SampleMode.WRAP
    (out,) = n.run({"x": x}, sl.get_output(0))
    _close(out, x[:, [4, 5, 0, 1]])


def test_slice_and_concatenation_refusals(env):
    n = Net(env)
    sl = n.net.add_slice(n.input("x", torch.randn(4, 6)), (0, 3), (4, 4), (1, 1))
    _refused(env, lambda: n.try_build(sl.get_output(0)), "ISliceLayer has out of bounds access on axis 1")
    n = Net(env)
    c = n.net.add_concatenation([n.input("x", torch.randn(4, 6)), n.input("y", torch.randn(3, 5))])
    c.axis = 1
    _refused(env, lambda: c.get_output(0).shape, "except on the concatenation axis (1)", "at input 1 at index 0")


# ----- matrix multiply, softmax, reduce -----

def test_matrix_multiply_with_transposes_vectors_and_batch_broadcast(env):
    trt = env.trt
    M = trt.MatrixOperation
    a, b = torch.randn(2, 1, 3, 4), torch.randn(1, 5, 6, 4)
    n = Net(env)
    mm = n.net.add_matrix_multiply(n.input("a", a), M.NONE, n.input("b", b), M.TRANSPOSE)
    assert mm.get_output(0).shape == (2, 5, 3, 6)
    (out,) = n.run({"a": a, "b": b}, mm.get_output(0))
    _close(out, a @ b.transpose(-1, -2), rtol=1e-5, atol=1e-5)
    v = torch.randn(2, 1, 4)
    n = Net(env)
    mv = n.net.add_matrix_multiply(n.input("a", a), M.NONE, n.input("v", v), M.VECTOR)
    (out,) = n.run({"a": a, "v": v}, mv.get_output(0))
    _close(out, (a @ v.unsqueeze(-1)).squeeze(-1), rtol=1e-5, atol=1e-5)
    n = Net(env)
    bad = n.net.add_matrix_multiply(n.input("a", a), M.NONE, n.input("b", b), M.NONE)
    _refused(env, lambda: bad.get_output(0).shape, "inner dimension of input0 = 4 and of input1 = 6")


def test_softmax_and_reduce(env):
    trt = env.trt
    x = torch.randn(2, 3, 5, 7)
    n = Net(env)
    sm = n.net.add_softmax(n.input("x", x))
    assert sm.axes == 1 << 1  # TensorRT's default: the number of axes minus three
    sm.axes = 1 << 3
    (out,) = n.run({"x": x}, sm.get_output(0))
    _close(out, torch.softmax(x, -1))
    for op, ref in ((trt.ReduceOperation.SUM, x.sum((1, 3), keepdim=True)),
                    (trt.ReduceOperation.AVG, x.mean((1, 3), keepdim=True)),
                    (trt.ReduceOperation.MAX, x.amax((1, 3), keepdim=True))):
        n = Net(env)
        r = n.net.add_reduce(n.input("x", x), op, 0b1010, True)
        (out,) = n.run({"x": x}, r.get_output(0))
        _close(out, ref)
    n = Net(env)
    r = n.net.add_reduce(n.input("x", x), trt.ReduceOperation.SUM, 0b0110, False)
    assert r.get_output(0).shape == (2, 7)
    n = Net(env)
    bad = n.net.add_softmax(n.input("x", x))
    bad.axes = 0b0011
    _refused(env, lambda: bad.get_output(0).shape, "exactly one axis")


# ----- convolution, pooling, scale -----

def _weights(trt, t: torch.Tensor):
    return trt.Weights(t.contiguous().numpy())


def test_convolution_as_torch_conv2d(env):
    trt = env.trt
    x = torch.randn(2, 4, 9, 11)
    for stride, pad, dil, groups, bias in (((1, 1), (1, 1), (1, 1), 1, True), ((2, 3), (0, 2), (2, 1), 2, False)):
        w, b = torch.randn(6, 4 // groups, 3, 3), torch.randn(6)
        n = Net(env)
        conv = n.net.add_convolution_nd(n.input("x", x), 6, (3, 3), _weights(trt, w),
                                        _weights(trt, b) if bias else None)
        conv.stride_nd, conv.padding_nd, conv.dilation_nd, conv.num_groups = stride, pad, dil, groups
        ref = F.conv2d(x, w, b if bias else None, stride=stride, padding=pad, dilation=dil, groups=groups)
        assert conv.get_output(0).shape == tuple(ref.shape)
        (out,) = n.run({"x": x}, conv.get_output(0))
        _close(out, ref, rtol=1e-4, atol=1e-4)


def test_convolution_refuses_wrong_weights(env):
    trt = env.trt
    n = Net(env)
    conv = n.net.add_convolution_nd(n.input("x", torch.randn(1, 4, 8, 8)), 6, (3, 3),
                                    _weights(trt, torch.randn(6 * 4 * 3 * 2)), None)
    _refused(env, lambda: conv.get_output(0).shape, "count of 144 weights in kernel",
             "Expected Weights count is 4 * 3*3 * 6 / 1 = 216")
    n = Net(env)
    conv = n.net.add_convolution_nd(n.input("x", torch.randn(1, 4, 8, 8)), 6, (3, 3),
                                    _weights(trt, torch.randn(6, 4, 3, 3).half()), None)
    _refused(env, lambda: n.try_build(conv.get_output(0)), "kernel weights are HALF but the input is FLOAT")
    n = Net(env)
    assert n.net.add_convolution_nd(n.input("x", torch.randn(1, 4, 8, 8)), 0, (3, 3),
                                    _weights(trt, torch.randn(1)), None) is None
    assert any("Error Code 3" in m and "nbOutputMaps > 0" in m for _, m in env.log)


def test_pooling_as_torch(env):
    trt = env.trt
    x = torch.randn(2, 3, 9, 10)
    n = Net(env)
    mp = n.net.add_pooling_nd(n.input("x", x), trt.PoolingType.MAX, (3, 3))
    mp.stride_nd, mp.padding_nd = (2, 2), (1, 1)
    (out,) = n.run({"x": x}, mp.get_output(0))
    _close(out, F.max_pool2d(x, 3, 2, 1))
    for exclude in (True, False):
        n = Net(env)
        ap = n.net.add_pooling_nd(n.input("x", x), trt.PoolingType.AVERAGE, (3, 2))
        ap.stride_nd, ap.padding_nd, ap.average_count_excludes_padding = (2, 2), (1, 1), exclude
        (out,) = n.run({"x": x}, ap.get_output(0))
        _close(out, F.avg_pool2d(x, (3, 2), 2, 1, count_include_pad=not exclude), rtol=1e-5, atol=1e-6)


def test_scale_is_batch_norm_in_eval(env):
    trt = env.trt
    x = torch.randn(2, 5, 4, 3)
    mean, var, gamma, beta = torch.randn(5), torch.rand(5) + 0.5, torch.randn(5), torch.randn(5)
    scale = gamma / torch.sqrt(var + 1e-5)
    shift = beta - mean * scale
    n = Net(env)
    s = n.net.add_scale_nd(n.input("x", x), trt.ScaleMode.CHANNEL, _weights(trt, shift), _weights(trt, scale),
                           None, 1)
    (out,) = n.run({"x": x}, s.get_output(0))
    _close(out, F.batch_norm(x, mean, var, gamma, beta, False, 0.0, 1e-5), rtol=1e-5, atol=1e-5)
    n = Net(env)
    s = n.net.add_scale_nd(n.input("x", x), trt.ScaleMode.CHANNEL, _weights(trt, torch.randn(4)), None, None, 1)
    _refused(env, lambda: s.get_output(0).shape, "shift weights hold 4 values; 5 needed")


def test_layer_attributes_not_modeled_fail_by_name(env):
    """Strictness: an attribute of a layer the emulator does not model is an AttributeError naming it."""
    n = Net(env)
    s = n.net.add_shuffle(n.input("x", torch.randn(2, 3)))
    with pytest.raises(AttributeError, match="IShuffleLayer.no_such_knob is not implemented by the TensorRT emulator"):
        s.no_such_knob


def test_the_shape_tensor_patterns_torch_tensorrt_emits(env):
    """Torch-TensorRT 2.11's dynamic-shape helpers, as its converters call them: ``get_shape_with_dynamic_shape``
    (shape, cast to INT32, numpy constants, LESS, select: the -1 entries replaced by the run-time dims), a
    dynamic slice through ``set_input(1/2/3)`` with empty ``Dims``, an expand as a stride-0 slice, unsqueeze."""
    trt = env.trt
    n = Net(env)
    x = n.input("x", torch.randn(3, 4, 6), dynamic=(0,))
    shape = n.net.add_cast(n.net.add_shape(x).get_output(0), trt.int32).get_output(0)
    wanted = n.net.add_constant((3,), np.array([-1, 4, 3], np.int32)).get_output(0)  # numpy, as the helper passes
    zeros = n.net.add_constant((3,), np.zeros(3, np.int32)).get_output(0)
    cond = n.net.add_elementwise(wanted, zeros, trt.ElementWiseOperation.LESS).get_output(0)
    size = n.net.add_select(cond, shape, wanted).get_output(0)
    assert size.is_shape_tensor and cond.dtype == trt.bool
    start = n.net.add_constant((3,), np.array([0, 0, 2], np.int32)).get_output(0)
    stride = n.net.add_constant((3,), np.array([1, 1, 1], np.int32)).get_output(0)
    sl = n.net.add_slice(x, trt.Dims(), trt.Dims(), trt.Dims())
    for i, t in ((1, start), (2, size), (3, stride)):
        sl.set_input(i, t)
    assert sl.get_output(0).shape == (-1, 4, 3)
    axes = n.net.add_constant((1,), np.array([-1], np.int32)).get_output(0)
    un = n.net.add_unsqueeze(sl.get_output(0), axes)
    assert un.get_output(0).shape == (-1, 4, 3, 1)
    expand = n.net.add_slice(un.get_output(0), (0, 0, 0, 0), (1, 1, 1, 5), (1, 1, 1, 0))  # the batch kept at 1
    assert expand.get_output(0).shape == (1, 1, 1, 5)
    plan = n.build(un.get_output(0), expand.get_output(0))
    for b in (1, 5):
        v = torch.randn(b, 4, 6)
        out, exp = execute(env, plan, {"x": v})
        _close(out, v[:, :, 2:5].unsqueeze(-1))
        _close(exp, v[:1, :1, 2:3].unsqueeze(-1).expand(1, 1, 1, 5))


@st.composite
def _shuffles(draw):
    """A tensor shape, a first transpose, reshape dimensions (with 0s and a -1 where they are valid or not) and
    a second transpose."""
    shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    first = draw(st.permutations(range(len(shape))))
    moved = [shape[p] for p in first]
    total = int(np.prod(moved))
    target = draw(st.lists(st.integers(1, 6), min_size=1, max_size=4))
    k = draw(st.integers(0, len(target) - 1))
    kind = draw(st.sampled_from(["exact", "infer", "copy", "random"]))
    if kind in ("exact", "infer"):
        rest = int(np.prod(target[:k] + target[k + 1:]))
        if total % rest == 0:
            target[k] = total // rest if kind == "exact" else -1
    elif kind == "copy" and k < len(moved):
        target[:k + 1] = [0] * (k + 1)
    second = draw(st.permutations(range(len(target))))
    return shape, list(first), target, list(second)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=_shuffles())
def test_shuffles_match_torch_or_are_refused_with_tensorrt_s_reason(env, case):
    """Property: a shuffle either infers the shape torch's permute/reshape/permute gives and computes the same
    values, or (where torch's reshape fails too) is refused naming why; never a foreign error."""
    shape, first, target, second = case
    x = torch.randn(*shape)
    moved = x.permute(*first)
    want = [moved.shape[j] if v == 0 else v for j, v in enumerate(target)]
    try:
        ref = moved.reshape(want).permute(*second)
    except RuntimeError:
        ref = None
    n = Net(env)
    s = n.net.add_shuffle(n.input("x", x))
    s.first_transpose, s.reshape_dims, s.second_transpose = first, target, second
    if ref is None:
        _refused(env, lambda: s.get_output(0).shape, "reshape")
        return
    assert s.get_output(0).shape == tuple(ref.shape)
    (out,) = n.run({"x": x}, s.get_output(0))
    _close(out, ref)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=st.lists(st.integers(1, 3), min_size=1, max_size=4), data=st.data())
def test_elementwise_broadcast_matches_torch_or_is_refused(env, a, data):
    """Property: equal ranks broadcast where torch broadcasts (each axis equal or 1) and give torch's values;
    other shapes are refused with TensorRT's reason."""
    b = [data.draw(st.sampled_from([d, 1, d + 1])) for d in a]
    x, y = torch.randn(*a), torch.randn(*b)
    try:
        ref = x * y
    except RuntimeError:
        ref = None
    n = Net(env)
    t = n.net.add_elementwise(n.input("x", x), n.input("y", y), env.trt.ElementWiseOperation.PROD).get_output(0)
    if ref is None:
        _refused(env, lambda: t.shape, "broadcast dimensions must be conformable")
        return
    (out,) = n.run({"x": x, "y": y}, t)
    _close(out, ref)


def test_padding_modes_scale_modes_and_what_is_not_modeled(env):
    trt = env.trt
    x = torch.randn(2, 3, 9, 11)
    n = Net(env)  # rounding the output size up: torch's ceil_mode
    mp = n.net.add_pooling_nd(n.input("x", x), trt.PoolingType.MAX, (2, 3))
    mp.stride_nd, mp.padding_mode = (2, 2), trt.PaddingMode.EXPLICIT_ROUND_UP
    (out,) = n.run({"x": x}, mp.get_output(0))
    _close(out, F.max_pool2d(x, (2, 3), 2, ceil_mode=True))
    n = Net(env)  # SAME padding at stride 1: torch's padding="same"
    w = torch.randn(4, 3, 3, 5)
    conv = n.net.add_convolution_nd(n.input("x", x), 4, (3, 5), _weights(trt, w), None)
    conv.padding_mode = trt.PaddingMode.SAME_UPPER
    (out,) = n.run({"x": x}, conv.get_output(0))
    _close(out, F.conv2d(x, w, padding="same"), rtol=1e-4, atol=1e-4)
    x4 = torch.rand(2, 3, 4, 5) + 0.5
    for mode, shape in ((trt.ScaleMode.UNIFORM, ()), (trt.ScaleMode.ELEMENTWISE, (3, 4, 5))):
        sc, sh, pw = torch.rand(shape) + 0.5, torch.rand(shape), torch.full(shape, 2.0)
        n = Net(env)
        s = n.net.add_scale_nd(n.input("x", x4), mode, _weights(trt, sh.reshape(-1)), _weights(trt, sc.reshape(-1)),
                               _weights(trt, pw.reshape(-1)), 1)
        (out,) = n.run({"x": x4}, s.get_output(0))
        _close(out, (x4 * sc + sh) ** pw, rtol=1e-5, atol=1e-5)
    n = Net(env)
    blend = n.net.add_pooling_nd(n.input("x", x), trt.PoolingType.MAX_AVERAGE_BLEND, (2, 2))
    _refused(env, lambda: blend.get_output(0).shape, "MAX_AVERAGE_BLEND is not emulated")
    n = Net(env)
    sl = n.net.add_slice(n.input("x", x), (0, 0, 0, 0), (1, 1, 1, 1), (1, 1, 1, 1))
    sl.set_input(5, n.const(np.array([0], np.int32)))
    _refused(env, lambda: sl.get_output(0).shape, "axes input (5) is not emulated")


def test_setting_an_attribute_not_modeled_fails_by_name(env):
    """Strictness: a binding attribute the emulator does not model cannot be set silently (a Python attribute
    would make ``layer.precision = ...`` look applied)."""
    trt = env.trt
    n = Net(env)
    x = n.input("x", torch.randn(2, 3))
    layer = n.net.add_activation(x, trt.ActivationType.RELU)
    # (TensorRT 11 removed ILayer.precision: under 11.x the message says so instead)
    with pytest.raises(AttributeError, match="IActivationLayer.precision (is not implemented by the TensorRT emulator|"
                                             "does not exist in TensorRT 11)"):
        layer.precision = trt.float16
    with pytest.raises(AttributeError, match="ITensor.allowed_formats is not implemented by the TensorRT emulator"):
        x.allowed_formats = 1
    layer.name, layer.metadata, layer.alpha = "act", "from a test", 0.5  # modeled: taken
    assert (layer.name, layer.metadata, layer.alpha) == ("act", "from a test", 0.5)


def test_normalization_is_layer_norm(env):
    """What Torch-TensorRT emits for ``layer_norm``: the weight and bias expanded to the input's shape, then
    ``add_normalization`` over the last axes with ``epsilon``."""
    x = torch.randn(3, 5, 8)
    w, b = torch.rand(8) + 0.5, torch.randn(8)
    n = Net(env)
    xi = n.input("x", x)
    scale = n.const(w.expand(3, 5, 8).contiguous().numpy())
    bias = n.const(b.expand(3, 5, 8).contiguous().numpy())
    norm = n.net.add_normalization(xi, scale, bias, 1 << 2)
    norm.epsilon = 1e-6
    (out,) = n.run({"x": x}, norm.get_output(0))
    _close(out, F.layer_norm(x, (8,), w, b, 1e-6), rtol=1e-5, atol=1e-5)
    n = Net(env)
    bad = n.net.add_normalization(n.input("x", x), n.const(np.ones((8,), np.float32)),
                                  n.const(np.zeros((8,), np.float32)), 1 << 2)
    _refused(env, lambda: bad.get_output(0).shape, "must be the same, and have the rank of the input")


def test_empty_tensors_and_wrong_arguments(env):
    """Empty tensors flow through the layers as torch computes them; arguments of the wrong kind are the
    bindings' TypeError (naming the method), never a foreign error later."""
    trt = env.trt
    x, w = torch.randn(0, 4), torch.randn(4, 3)
    n = Net(env)
    xi = n.input("x", x)
    mm = n.net.add_matrix_multiply(xi, trt.MatrixOperation.NONE, n.const(w.numpy()), trt.MatrixOperation.NONE)
    sm = n.net.add_softmax(mm.get_output(0))
    sm.axes = 1 << 1
    red = n.net.add_reduce(sm.get_output(0), trt.ReduceOperation.SUM, 1 << 1, False)
    cat = n.net.add_concatenation([xi, xi])
    cat.axis = 0
    assert red.get_output(0).shape == (0,) and cat.get_output(0).shape == (0, 4)
    outs = n.run({"x": x}, sm.get_output(0), red.get_output(0), cat.get_output(0))
    for out, ref in zip(outs, (torch.softmax(x @ w, 1), torch.softmax(x @ w, 1).sum(1), torch.cat([x, x]))):
        _close(out, ref)
    n = Net(env)
    xi = n.input("x", torch.randn(2, 3))
    for call, name in ((lambda: n.net.add_elementwise(xi, None, trt.ElementWiseOperation.SUM), "add_elementwise"),
                       (lambda: n.net.add_reduce(xi, 0, 1, True), "add_reduce"),
                       (lambda: n.net.add_activation(xi, "relu"), "add_activation"),
                       (lambda: n.net.add_scale_nd(xi, trt.ScaleMode.UNIFORM, [1.0]), "add_scale_nd"),
                       (lambda: n.net.add_shuffle(torch.randn(2)), "add_shuffle")):
        with pytest.raises(TypeError, match=name):
            call()
