"""Size tensors (data-dependent output shapes) in the TensorRT emulator, driven through NVIDIA's own
``tensorrt.plugin`` with NVIDIA's non-zero sample as the model plugin: ``(x: [M, N]) -> (idx: [K, 2] int32,
count: 0-D int64)``, ``K = trtp.size_tensor(M*N // 2, M*N)`` (``samples/python/quickly_deployable_plugins``).

Each test names the TensorRT rule it models (NvInferRuntime.h, the bindings' docstrings, NVIDIA's samples; see
notes/data_dependent_shapes.md, sections A to C, and G: TensorRT-RTX 1.7.1's builder, TensorRT's front end);
where TensorRT's behaviour is not documented the emulator's own rule is said to be one.

CPU tests: the build (what it records, what it refuses), the engine's plan and its round trip, what the engine
and a context report. The ``gpu``-marked tests run engines: output allocators, preallocated outputs, the count
read back and checked, what a JIT impl sees."""

import uuid
from typing import List, Tuple, Union

import pytest

from trt_kernels.testing import _standin as trt_standin

_REASON = trt_standin.unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"NVIDIA tensorrt.plugin sources unavailable: {_REASON}")

M_MIN, M_OPT, M_MAX, N = 1, 4, 16, 8  # x is [M, 8], M dynamic


@pytest.fixture
def qdp():
    yield from trt_standin.standin_fixture()


def _ns() -> str:
    return "ttk_dds_" + uuid.uuid4().hex[:8]


def ptx(name: str) -> str:
    """Valid PTX (ISA 9.0, sm_90) with one kernel ``name`` taking no parameters."""
    return f".version 9.0\n.target sm_90\n.address_size 64\n\n.visible .entry {name}()\n{{\n  ret;\n}}\n"


def messages(qdp, since=0) -> List[str]:
    return [m for _, m in qdp.log[since:]]


def nonzero_impl(count=None, write_count=True, seen=None):
    """NVIDIA's sample impl (``qdp_defs.py``): ``torch.nonzero`` into ``outputs[0].aliased(actual shape)``, the row
    count into ``outputs[1]``; ``count`` overrides the count written, ``write_count=False`` writes none;
    ``seen`` collects what the impl was given."""

    def impl(x, outputs, stream):
        import torch

        if seen is not None:
            seen.append({"shape": tuple(outputs[0].shape), "data_dependent": outputs[0].is_data_dependent,
                         "size_shape": tuple(outputs[1].shape), "strides": tuple(outputs[0].strides)})
        with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
            nz = torch.nonzero(torch.as_tensor(x, device="cuda")).to(torch.int32)
            if nz.shape[0]:
                torch.as_tensor(outputs[0].aliased(tuple(nz.shape)), device="cuda").copy_(nz)
            if write_count:
                torch.as_tensor(outputs[1], device="cuda").fill_(nz.shape[0] if count is None else count)

    return impl


def register_nonzero(qdp, *, size_dtype="int64", bounds=None, impl=None, aot=None):
    """NVIDIA's non-zero QDP: ``bounds(upper) -> (opt, upper bound)`` (default ``(upper // 2, upper)``);
    ``impl`` a JIT impl (default :func:`nonzero_impl`); ``aot(x, outputs)`` makes it an AOT plugin whose
    aot_impl gives that launch instead."""
    import tensorrt as trt  # the emulated one, inside the fixture

    trtp = qdp.trtp
    pid = f"{_ns()}::nonzero"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> Tuple[trtp.TensorDesc, trtp.TensorDesc]:
        upper = x.shape_expr[0] * x.shape_expr[1]
        opt, bound = bounds(upper) if bounds is not None else (upper // 2, upper)
        st = trtp.size_tensor(opt, bound)
        st.dtype = getattr(trt, size_dtype)
        return trtp.from_shape_expr((st.expr(), 2), dtype=trt.int32), st

    if aot is None:
        trtp.impl(pid)(_typed_impl(trtp, impl or nonzero_impl()))
    else:
        @trtp.aot_impl(pid)
        def _aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
                 ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
            launch, extras = aot(x, outputs)
            return "k", ptx("k"), launch, extras

    assert trt.__emulated__
    return pid


def _typed_impl(trtp, fn):
    def _impl(x: trtp.Tensor, outputs: Tuple[trtp.Tensor], stream: int) -> None:
        fn(x, outputs, stream)
    return _impl


def register_doubler(qdp, seen=None):
    """A JIT plugin ``y = 2 * x`` (INT32) whose output has its input's dimensions: after the non-zero plugin, a
    plugin reading a data-dependent tensor (``seen`` collects the shapes its impl is given)."""
    trtp = qdp.trtp
    pid = f"{_ns()}::double"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        # not x.like(): it clones each dimension by arithmetic (+ 0), which TensorRT refuses on a size tensor
        return trtp.from_shape_expr((x.shape_expr[0], x.shape_expr[1]), dtype=x.dtype)

    def impl(x, outputs, stream):
        import torch

        if seen is not None:
            seen.append((tuple(x.shape), tuple(outputs[0].shape)))
        with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
            torch.as_tensor(outputs[0], device="cuda").copy_(torch.as_tensor(x, device="cuda") * 2)

    trtp.impl(pid)(_typed_impl(trtp, impl))
    return pid


def network(qdp, pid, *, aot=False, mark_count=False, consumer=False, plugin_consumer=None):
    """x [-1, 8] (profile M in 1..16, opt 4) -> the plugin -> ``idx`` (marked), ``count`` (marked if
    ``mark_count``); ``consumer``: ``idx`` also cast to INT64 as output ``idx64`` (a standard layer after the size
    tensor); ``plugin_consumer``: the plugin id of a one-input plugin reading ``idx``, its output ``after``.
    Returns (builder, network, config, layer)."""
    trt = qdp.trt
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(1 << int(trt.NetworkDefinitionCreationFlag.STRONGLY_TYPED))
    x = net.add_input("x", trt.float32, (-1, N))
    ns, name = pid.split("::")
    layer = net.add_plugin(getattr(getattr(qdp.trtp.op, ns), name)(x), aot=aot)
    layer.get_output(0).name, layer.get_output(1).name = "idx", "count"
    net.mark_output(layer.get_output(0))
    if mark_count:
        net.mark_output(layer.get_output(1))
    if consumer:
        cast = net.add_cast(layer.get_output(0), trt.int64)
        cast.get_output(0).name = "idx64"
        net.mark_output(cast.get_output(0))
    if plugin_consumer is not None:
        ns, name = plugin_consumer.split("::")
        after = net.add_plugin(getattr(getattr(qdp.trtp.op, ns), name)(layer.get_output(0)), aot=False)
        after.get_output(0).name = "after"
        net.mark_output(after.get_output(0))
    cfg = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    profile.set_shape("x", (M_MIN, N), (M_OPT, N), (M_MAX, N))
    cfg.add_optimization_profile(profile)
    return builder, net, cfg, layer


def build(qdp, pid, **kw):
    builder, net, cfg, _ = network(qdp, pid, **kw)
    before = len(qdp.log)
    blob = builder.build_serialized_network(net, cfg)
    assert blob is not None, messages(qdp, before)
    return blob


def refused(qdp, builder, net, cfg) -> str:
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None
    return " ".join(messages(qdp, before))


# ------------------------------------------------------------------------------------------------
# CPU: what the engine records and reports


def test_data_dependent_extent_is_minus_one_in_engine_and_context(qdp):
    """IExecutionContext::setTensorAddress / getTensorShape: an output whose shape still has -1 once every input
    shape is set is data-dependent (TensorRT tells its shape through IOutputAllocator::notifyShape);
    getMaxOutputSize: its size in bytes at the upper bound for the current input shapes, -1 while they are
    not known (and for a name that is not an output)."""
    trt = qdp.trt
    builder, net, cfg, layer = network(qdp, register_nonzero(qdp))
    assert tuple(layer.get_output(0).shape) == (-1, 2) and tuple(layer.get_output(1).shape) == ()
    assert layer.get_output(1).dtype == trt.int64
    engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(builder.build_serialized_network(net, cfg))
    assert engine.get_tensor_shape("idx") == (-1, 2)
    ctx = engine.create_execution_context()
    assert ctx.get_tensor_shape("idx") == (-1, 2) and ctx.get_max_output_size("idx") == -1
    assert ctx.set_input_shape("x", (5, N))
    assert ctx.get_tensor_shape("idx") == (-1, 2)  # still: data-dependent, not merely unset
    assert ctx.get_max_output_size("idx") == 5 * N * 2 * 4  # K <= M*N rows of two int32
    assert ctx.get_max_output_size("x") == -1 and ctx.get_max_output_size("nope") == -1


def test_plan_stores_the_size_tensor_and_round_trips(qdp):
    """IExprBuilder::declareSizeTensor(outputIndex, opt, upper): TensorRT keeps the autotune value and the upper
    bound ("so that it can allocate memory for the output tensor") with the extent; the emulator's plan stores
    the dimension as ["size_tensor", <size tensor's name>, <upper>, <opt>], and serialize(deserialize(plan)) is
    the plan."""
    trt, native = qdp.trt, qdp.native
    blob = build(qdp, register_nonzero(qdp))
    plan = native._format.decode(blob)
    upper = ["PROD", "x[0]", N]
    opt = ["FLOOR_DIV", upper, 2]
    dim = ["size_tensor", "count", upper, opt]
    assert plan["tensors"]["idx"] == {"dtype": "INT32", "dims": [dim, 2]}
    assert plan["tensors"]["count"] == {"dtype": "INT64", "dims": []}
    assert plan["layers"][0]["size_tensors"] == {"count": {"index": 1, "dtype": "INT64", "upper": upper, "opt": opt}}
    engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(bytes(blob))
    assert engine is not None and bytes(engine.serialize()) == bytes(blob)
    assert engine.get_tensor_shape("idx") == (-1, 2)

    dims = native._dims
    e = dims.expr_from_json(dim)
    assert e.is_size_tensor() and not e.is_constant() and e._to_json() == dim
    assert dims.symbols_of(dim) == {"x[0]", dims.size_key("count")} and dims.size_tensors_of(dim) == {"count"}
    b = {"x[0]": 5}
    assert dims.evaluate(dim, b, "upper") == e._evaluate(b, "upper") == 40
    assert dims.evaluate(dim, b, "opt") == 20 and dims.evaluate(dim, b, "lower") == 0
    assert dims.evaluate(dim, {**b, dims.size_key("count"): 7}) == 7
    with pytest.raises(KeyError, match="'count' has no value yet"):
        dims.evaluate(dim, b)


def test_declare_size_tensor_keeps_opt_and_upper(qdp):
    """IExprBuilder::declareSizeTensor returns an expression for which isSizeTensor() is true, and TensorRT keeps
    its opt and upper bound. A size tensor is no operand of IExprBuilder::operation, nor an opt or upper bound
    (TensorRT-RTX 1.7.1, TensorRT's front end: "Error Code 3: API Usage Error (Parameter check failed, condition:
    !x.isSizeTensor().)" at the call); the emulator's own shape inference still computes with it."""
    native = qdp.native
    D = qdp.trt.DimensionOperation
    b = native.IExprBuilder()
    n = b._symbol("n")
    upper = b.operation(D.PROD, n, b.constant(3))
    st = b.declare_size_tensor(1, b.operation(D.FLOOR_DIV, upper, b.constant(2)), upper)
    assert st.is_size_tensor() and not st.is_constant()
    assert st._value == 1 and st._opt._evaluate({"n": 4}) == 6 and st._upper._evaluate({"n": 4}) == 12
    before = len(qdp.log)
    for call in (lambda: b.operation(D.SUM, st, b.constant(1)), lambda: b.operation(D.PROD, b.constant(1), st)):
        with pytest.raises(ValueError, match=r"IExprBuilder::operation: Error Code 3: API Usage Error \(Parameter "
                                             r"check failed, condition: !x.isSizeTensor\(\)\.\)"):
            call()
    with pytest.raises(ValueError, match=r"IExprBuilder::declareSizeTensor: Error Code 3: .*!x.isSizeTensor"):
        b.declare_size_tensor(0, st, upper)
    assert len(messages(qdp, before)) == 3  # each refusal is also logged, as TensorRT logs it
    plus = b._operation(D.SUM, st, b.constant(1))  # the emulator's own inference (a reshape, a broadcast)
    assert not plus.is_size_tensor() and plus._size_tensors() == [st]
    assert plus._evaluate({"n": 4}, "upper") == 13 and plus._evaluate({"n": 4}, "opt") == 7
    with pytest.raises(TypeError, match=r"declare_size_tensor\(opt, upper\) needs IDimensionExpr operands, got int"):
        b.declare_size_tensor(1, 6, upper)
    with pytest.raises(ValueError, match="another IExprBuilder"):
        b.declare_size_tensor(1, native.IExprBuilder().constant(2), upper)


def test_arithmetic_on_a_size_tensor_is_refused(qdp):
    """TensorRT-RTX 1.7.1 (TensorRT's front end) refuses a size tensor as an operand of IExprBuilder::operation.
    ``tensorrt.plugin`` refuses a SizeTensorShapeExpr on the left itself (and cannot build one on the right inside
    the descriptor: its output index is set after the descriptor returns); a later plugin's input dimension
    (``x.shape_expr[0] * 2`` on the non-zero plugin's output) reaches the builder, which refuses it: the network
    cannot be defined."""
    trtp = qdp.trtp
    pid, consumer = register_nonzero(qdp), f"{_ns()}::flatten"

    @trtp.register(consumer)
    def _flat(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return trtp.from_shape_expr((x.shape_expr[0] * 2,), dtype=x.dtype)

    trtp.impl(consumer)(_typed_impl(trtp, nonzero_impl()))
    before = len(qdp.log)
    with pytest.raises(ValueError, match=r"IExprBuilder::operation: Error Code 3: .*!x.isSizeTensor"):
        network(qdp, pid, plugin_consumer=consumer)
    assert any("!x.isSizeTensor()" in m for m in messages(qdp, before))


def test_a_later_layer_sees_the_extent_in_its_shape(qdp):
    """A standard layer and a plugin after the non-zero plugin inherit the data-dependent extent (-1 in the
    network and the engine); their plan dimensions name the same size tensor, and the later plugin, which writes
    no size tensor of its own, is no size tensor's writer."""
    builder, net, cfg, _ = network(qdp, register_nonzero(qdp), consumer=True, plugin_consumer=register_doubler(qdp))
    assert tuple(net.get_output(1).shape) == (-1, 2) and tuple(net.get_output(2).shape) == (-1, 2)
    plan = qdp.native._format.decode(builder.build_serialized_network(net, cfg))
    assert plan["tensors"]["idx64"]["dims"] == plan["tensors"]["idx"]["dims"] == plan["tensors"]["after"]["dims"]
    assert [("size_tensors" in layer) for layer in plan["layers"]] == [True, False, False]
    ctx = qdp.trt.Runtime(qdp.trt.Logger()).deserialize_cuda_engine(qdp.native._format.encode(plan)) \
        .create_execution_context()
    assert ctx.set_input_shape("x", (3, N)) and ctx.get_tensor_shape("idx64") == (-1, 2)
    assert ctx.get_max_output_size("idx64") == 3 * N * 2 * 8


# ------------------------------------------------------------------------------------------------
# CPU: what the build refuses


@pytest.mark.parametrize("dtype", ["float32", "float16", "int8"])
def test_a_size_tensor_must_be_int32_or_int64(qdp, dtype):
    """A size tensor is a scalar of INT32 or INT64 (NVIDIA's non-zero samples' READMEs; the samples use INT64
    since 10.15); TensorRT-RTX 1.7.1's builder fails a FLOAT or INT8 one ("Assertion canBeSizeTensor(*t)
    failed"). ``tensorrt.plugin`` lets ``SizeTensorDesc.dtype`` be set to anything: the build refuses it."""
    builder, net, cfg, _ = network(qdp, register_nonzero(qdp, size_dtype=dtype))
    log = refused(qdp, builder, net, cfg)
    assert "Error Code 4: API Usage Error" in log and "Assertion canBeSizeTensor(*t) failed" in log
    assert "output 1 is a size tensor of type DataType." in log and "INT32 or DataType.INT64" in log


def test_int32_size_tensors_build(qdp):
    """INT32 is the other accepted size-tensor type (NVIDIA's samples before 10.15)."""
    plan = qdp.native._format.decode(build(qdp, register_nonzero(qdp, size_dtype="int32")))
    assert plan["layers"][0]["size_tensors"]["count"]["dtype"] == "INT32"


def test_size_tensor_outputs_must_be_0d(qdp):
    """IPluginV3OneBuild::getOutputShapes: "size tensor outputs must be declared 0-D" (TensorRT-RTX 1.7.1: "Assertion
    t->extent.nbDims == 0 failed"). tensorrt.plugin always declares them 0-D, so the plugin's shapes are replaced
    through the raw IExprBuilder the build passes."""
    builder, net, cfg, layer = network(qdp, register_nonzero(qdp))
    real = layer.plugin.get_output_shapes

    def shapes(inputs, shape_inputs, expr_builder):
        out = real(inputs, shape_inputs, expr_builder)
        out[1] = qdp.trt.DimsExprs([expr_builder.constant(1)])  # the size tensor as a [1] tensor
        return out

    layer.plugin.get_output_shapes = shapes
    log = refused(qdp, builder, net, cfg)
    assert "Assertion t->extent.nbDims == 0 failed" in log
    assert "output 1 is a size tensor but is declared with shape (1): size tensor outputs must be declared 0-D" in log


def test_a_size_tensor_must_be_an_output_of_its_plugin(qdp):
    """IExprBuilder::declareSizeTensor: ``outputIndex`` is the index of an output of the plugin."""
    builder, net, cfg, layer = network(qdp, register_nonzero(qdp))
    real = layer.plugin.get_output_shapes

    def shapes(inputs, shape_inputs, expr_builder):
        out = real(inputs, shape_inputs, expr_builder)
        c = expr_builder.constant(4)
        out[0] = qdp.trt.DimsExprs([expr_builder.declare_size_tensor(2, c, c), expr_builder.constant(2)])
        return out

    layer.plugin.get_output_shapes = shapes
    log = refused(qdp, builder, net, cfg)
    assert "declareSizeTensor names output 2, but the plugin has 2 outputs" in log


@pytest.mark.parametrize("which", ["opt", "upper"])
def test_opt_and_upper_must_not_be_a_size_tensor(qdp, which):
    """IExprBuilder::declareSizeTensor: ``opt`` "must not depend on a size tensor" (TensorRT-RTX 1.7.1 refuses it at
    the call: "condition: !x.isSizeTensor()"); nor may the upper bound (the emulator's rule), which TensorRT needs
    "so that it can allocate memory for the output tensor" before any count exists."""
    import tensorrt as trt

    trtp = qdp.trtp
    pid = f"{_ns()}::nested"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> Tuple[trtp.TensorDesc, trtp.TensorDesc, trtp.TensorDesc]:
        upper = x.shape_expr[0] * x.shape_expr[1]
        first = trtp.size_tensor(upper // 2, upper)
        second = trtp.size_tensor(first.expr(), upper) if which == "opt" else trtp.size_tensor(upper // 2, first.expr())
        first.dtype = second.dtype = trt.int64
        return trtp.from_shape_expr((second.expr(), 2), dtype=trt.int32), first, second

    trtp.impl(pid)(_typed_impl(trtp, nonzero_impl()))
    before = len(qdp.log)
    with pytest.raises(ValueError, match=r"IExprBuilder::declareSizeTensor: Error Code 3: API Usage Error \(Parameter "
                                         r"check failed, condition: !x.isSizeTensor\(\)\.\)"):
        network(qdp, pid)
    assert any("IExprBuilder::declareSizeTensor" in m for m in messages(qdp, before))


def test_opt_above_the_upper_bound_builds(qdp):
    """TensorRT-RTX 1.7.1's builder builds an ``opt`` above the upper bound (no check; notes/data_dependent_shapes.md,
    section G): so does the emulator, tuning for it (the plugin's ``opt`` shape holds it)."""
    plan = qdp.native._format.decode(build(qdp, register_nonzero(qdp, bounds=lambda upper: (upper + 5, upper))))
    assert plan["layers"][0]["size_tensors"]["count"]["opt"] == ["SUM", ["PROD", "x[0]", N], 5]


@pytest.mark.parametrize("bounds", [
    lambda upper: (upper // 2 - 20, upper),  # M*N < 40 at the profile's min and opt
    lambda upper: (upper // 2, upper - 100),
], ids=["negative-opt", "negative-upper"])
def test_opt_and_upper_must_not_be_negative(qdp, bounds):
    """The emulator's rule (what TensorRT does with a negative bound is not documented): opt and upper must not be
    negative at the profile's min, opt and max shapes, TensorRT sizing buffers from the upper bound."""
    builder, net, cfg, _ = network(qdp, register_nonzero(qdp, bounds=bounds))
    log = refused(qdp, builder, net, cfg)
    assert "at the profile's min shapes: the TensorRT emulator needs both >= 0" in log


@pytest.mark.parametrize("where", ["grid", "extra"])
def test_an_aot_launch_cannot_depend_on_a_size_tensor(qdp, where):
    """An AOT plugin's launch (grid, block, shared memory, extra arguments) is evaluated before its kernel runs;
    the count exists only once the kernel has written it, so a launch from it fails the build (the emulator's
    reading of tensorrt.plugin's aot_impl; NVIDIA documents no such launch)."""
    trtp = qdp.trtp

    def aot(x, outputs):
        launch = trtp.KernelLaunchParams()
        launch.grid_x = outputs[0].shape_expr[0] if where == "grid" else x.shape_expr[0]
        launch.block_x = 32
        extras = trtp.SymIntExprs(1)
        extras[0] = trtp.SymInt32(outputs[0].shape_expr[0] if where == "extra" else x.shape_expr[1])
        return launch, extras

    builder, net, cfg, _ = network(qdp, register_nonzero(qdp, aot=aot), aot=True)
    log = refused(qdp, builder, net, cfg)
    what = "launch parameter grid_x" if where == "grid" else "extra argument 0"
    assert f"{what} is size_tensor[1], which depends on the size tensor 'count'" in log
    assert "is evaluated before its kernel runs" in log


def test_an_aot_launch_from_input_dimensions_builds(qdp):
    """The AOT non-zero plugin sized from its input (the upper bound) builds; the plan records its size tensor."""
    trtp = qdp.trtp

    def aot(x, outputs):
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), 32)
        launch.block_x = 32
        return launch, trtp.SymIntExprs(0)

    plan = qdp.native._format.decode(build(qdp, register_nonzero(qdp, aot=aot), aot=True))
    assert plan["layers"][0]["kind"] == "aot_plugin" and "count" in plan["layers"][0]["size_tensors"]


def test_output_allocators_are_set_on_outputs_only(qdp):
    """IExecutionContext::setOutputAllocator: only for an output (False otherwise, and logged); ``None`` unsets;
    the bindings' IOutputAllocator must have its base ``__init__`` called (pybind11)."""
    trt = qdp.trt
    engine = trt.Runtime(trt.Logger()).deserialize_cuda_engine(build(qdp, register_nonzero(qdp)))
    ctx = engine.create_execution_context()

    class Alloc(trt.IOutputAllocator):
        def __init__(self):
            trt.IOutputAllocator.__init__(self)

    class Forgot(trt.IOutputAllocator):
        def __init__(self):
            pass

    alloc = Alloc()
    assert ctx.get_output_allocator("idx") is None
    assert ctx.set_output_allocator("idx", alloc) and ctx.get_output_allocator("idx") is alloc
    before = len(qdp.log)
    assert ctx.set_output_allocator("x", alloc) is False and ctx.get_output_allocator("x") is None
    assert any("IExecutionContext::setOutputAllocator" in m and "'x'" in m for m in messages(qdp, before))
    assert ctx.set_output_allocator("idx", None) and ctx.get_output_allocator("idx") is None
    with pytest.raises(TypeError, match="IOutputAllocator.__init__.. must be called when overriding __init__"):
        Forgot()
    with pytest.raises(TypeError, match="incompatible function arguments"):
        ctx.set_output_allocator("idx", object())


def test_a_data_dependent_output_needs_an_address_or_an_allocator(qdp):
    """IExecutionContext::setTensorAddress: before enqueueV3 an output needs an address or an IOutputAllocator;
    a data-dependent one without either fails the enqueue (checked before anything is enqueued: no GPU)."""
    trt = qdp.trt
    ctx = trt.Runtime(trt.Logger()).deserialize_cuda_engine(build(qdp, register_nonzero(qdp))) \
        .create_execution_context()
    assert ctx.set_input_shape("x", (4, N)) and ctx.set_tensor_address("x", 0x10000)
    before = len(qdp.log)
    assert ctx.execute_async_v3(0) is False
    log = " ".join(messages(qdp, before))
    assert "IExecutionContext::enqueueV3: no address set for 'idx' and no output allocator" in log
    assert f"upper bound ({4 * N * 2 * 4} bytes" in log


# ------------------------------------------------------------------------------------------------
# GPU: running engines


def _engine(qdp, pid, **kw):
    trt = qdp.trt
    return trt.Runtime(trt.Logger()).deserialize_cuda_engine(build(qdp, pid, **kw))


def _input(m=6):
    import torch

    x = torch.randn(m, N, device="cuda")
    x[x.abs() < 0.7] = 0  # about half zeros
    x[0, 0] = 1.0  # at least one non-zero
    return x


def _run(qdp, ctx, x, addresses=None):
    import torch

    assert ctx.set_input_shape("x", tuple(x.shape)) and ctx.set_tensor_address("x", x.data_ptr())
    for name, t in (addresses or {}).items():
        assert ctx.set_tensor_address(name, t.data_ptr())
    before = len(qdp.log)
    ok = ctx.execute_async_v3(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return ok, " ".join(messages(qdp, before))


def _allocator(trt):
    import torch

    class Allocator(trt.IOutputAllocator):
        """Torch-TensorRT's DynamicOutputAllocator, recording its calls."""

        def __init__(self):
            trt.IOutputAllocator.__init__(self)
            self.buffers, self.calls, self.shapes = {}, [], {}

        def reallocate_output_async(self, tensor_name, memory, size, alignment, stream):
            self.calls.append((tensor_name, memory, size, alignment, stream))
            buf = self.buffers.get(tensor_name)
            if buf is None or buf.numel() < size:
                buf = self.buffers[tensor_name] = torch.empty(size, dtype=torch.uint8, device="cuda")
            return buf.data_ptr()

        def notify_shape(self, tensor_name, shape):
            self.shapes[tensor_name] = tuple(shape)

    return Allocator()


@pytest.mark.gpu
def test_output_allocator_gets_the_bound_and_the_actual_shape(qdp):
    """IOutputAllocator: reallocateOutputAsync(name, currentMemory, size, alignment, stream) is asked for the
    output's memory (the emulator asks for the upper bound's bytes: getMaxOutputSize), notifyShape gets the
    actual shape once known; the result is torch.nonzero's. Torch-TensorRT sets an allocator on every output."""
    import torch

    trt = qdp.trt
    ctx = _engine(qdp, register_nonzero(qdp), mark_count=True).create_execution_context()
    alloc = _allocator(trt)
    for name in ("idx", "count"):
        assert ctx.set_output_allocator(name, alloc)
    stream = torch.cuda.current_stream().cuda_stream
    for m in (6, 3):
        x = _input(m)
        want = torch.nonzero(x).to(torch.int32)
        alloc.calls.clear()
        ok, log = _run(qdp, ctx, x)
        assert ok, log
        assert ctx.get_max_output_size("idx") == m * N * 2 * 4
        calls = {c[0]: c for c in alloc.calls}
        assert calls["idx"][2:] == (m * N * 2 * 4, 256, stream) and calls["count"][2:] == (8, 256, stream)
        assert alloc.shapes == {"idx": (want.shape[0], 2), "count": ()}
        got = alloc.buffers["idx"][:want.numel() * 4].view(torch.int32).view(want.shape)
        assert torch.equal(got, want)
        assert alloc.buffers["count"][:8].view(torch.int64).item() == want.shape[0]
    # the second run passes the memory the allocator gave the first as the current memory
    assert calls["idx"][1] == alloc.buffers["idx"].data_ptr()


@pytest.mark.gpu
def test_preallocated_outputs_run_without_an_allocator(qdp):
    """TensorRT's "preallocate" use (IOutputAllocator docs; NVIDIA's C++ non-zero sample): an address set for a
    buffer sized for the upper bound (getMaxOutputSize) is written; the count, a network output, too."""
    import torch

    ctx = _engine(qdp, register_nonzero(qdp), mark_count=True).create_execution_context()
    x = _input(7)
    want = torch.nonzero(x).to(torch.int32)
    assert ctx.set_input_shape("x", tuple(x.shape))
    idx = torch.full((ctx.get_max_output_size("idx") // 4,), -7, dtype=torch.int32, device="cuda")
    count = torch.zeros((), dtype=torch.int64, device="cuda")
    ok, log = _run(qdp, ctx, x, {"idx": idx, "count": count})
    assert ok, log
    assert count.item() == want.shape[0]
    assert torch.equal(idx[:want.numel()].view(want.shape), want)
    assert ctx.get_tensor_shape("idx") == (-1, 2)  # still -1 after the run: only notify_shape tells it


@pytest.mark.gpu
def test_an_output_without_address_or_allocator_fails_the_enqueue(qdp):
    """IExecutionContext::setTensorAddress: every output needs an address or an IOutputAllocator."""
    ctx = _engine(qdp, register_nonzero(qdp)).create_execution_context()
    ok, log = _run(qdp, ctx, _input())
    assert not ok and "no address set for 'idx' and no output allocator" in log


@pytest.mark.gpu
def test_allocator_returning_none_fails_the_enqueue(qdp):
    """IOutputAllocator::reallocateOutputAsync: nullptr (None in Python) when the memory cannot be given; then
    the enqueue fails."""
    trt = qdp.trt
    ctx = _engine(qdp, register_nonzero(qdp)).create_execution_context()

    class Refuses(trt.IOutputAllocator):
        def __init__(self):
            trt.IOutputAllocator.__init__(self)

        def reallocate_output_async(self, tensor_name, memory, size, alignment, stream):
            return None

        def notify_shape(self, tensor_name, shape):
            raise AssertionError("not called when the enqueue fails")

    assert ctx.set_output_allocator("idx", Refuses())
    ok, log = _run(qdp, ctx, _input())
    assert not ok and "reallocate_output_async('idx'" in log and "returned None" in log


@pytest.mark.gpu
def test_deprecated_reallocate_output_is_the_fallback(qdp):
    """TensorRT's bindings call ``reallocate_output`` (deprecated since 10.0, no stream) where an allocator has no
    ``reallocate_output_async``."""
    import torch

    trt = qdp.trt
    ctx = _engine(qdp, register_nonzero(qdp)).create_execution_context()

    class Old(trt.IOutputAllocator):
        def __init__(self):
            trt.IOutputAllocator.__init__(self)
            self.buf, self.sizes, self.shape = None, [], None

        def reallocate_output(self, tensor_name, memory, size, alignment):
            self.sizes.append(size)
            self.buf = torch.empty(size, dtype=torch.uint8, device="cuda")
            return self.buf.data_ptr()

        def notify_shape(self, tensor_name, shape):
            self.shape = tuple(shape)

    old = Old()
    assert ctx.set_output_allocator("idx", old)
    x = _input(5)
    ok, log = _run(qdp, ctx, x)
    assert ok, log
    assert old.sizes == [5 * N * 2 * 4] and old.shape == (torch.count_nonzero(x).item(), 2)


@pytest.mark.gpu
def test_a_count_above_the_upper_bound_fails_the_enqueue(qdp):
    """The emulator's rule (what TensorRT does is not documented): TensorRT sized the data-dependent buffers from
    the upper bound, so a count above it (or below 0) fails the enqueue, naming the layer and the output."""
    trt = qdp.trt
    ctx = _engine(qdp, register_nonzero(qdp, impl=nonzero_impl(count=6 * N + 1))).create_execution_context()
    assert ctx.set_output_allocator("idx", _allocator(trt))
    ok, log = _run(qdp, ctx, _input(6))
    assert not ok
    assert f"wrote {6 * N + 1} to its size tensor output 'count' (INT64)" in log and f"[0, {6 * N}]" in log


@pytest.mark.gpu
def test_a_count_never_written_fails_the_enqueue(qdp):
    """TensorRT does not clear a size tensor before its plugin runs (NVIDIA's C++ non-zero sample clears its
    counter itself); the emulator fills it with 0xFF bytes (-1), so a kernel that never writes its count fails the
    enqueue instead of reading a stale value."""
    trt = qdp.trt
    ctx = _engine(qdp, register_nonzero(qdp, impl=nonzero_impl(write_count=False))).create_execution_context()
    assert ctx.set_output_allocator("idx", _allocator(trt))
    ok, log = _run(qdp, ctx, _input())
    assert not ok and "wrote -1 to its size tensor output 'count'" in log and "never wrote its size tensor" in log


@pytest.mark.gpu
def test_a_jit_impl_sees_minus_one_in_the_data_dependent_axis(qdp):
    """tensorrt.plugin's Tensor: a JIT impl's data-dependent output has -1 in that axis (``is_data_dependent``;
    the sample re-views it with ``aliased(actual shape)``), its size tensor is 0-D."""
    trt = qdp.trt
    seen = []
    ctx = _engine(qdp, register_nonzero(qdp, impl=nonzero_impl(seen=seen))).create_execution_context()
    assert ctx.set_output_allocator("idx", _allocator(trt))
    ok, log = _run(qdp, ctx, _input())
    assert ok, log
    assert seen == [{"shape": (-1, 2), "data_dependent": True, "size_shape": (), "strides": (2, 1)}]


@pytest.mark.gpu
def test_a_later_layer_runs_at_the_actual_extent(qdp):
    """Layers after the size tensor's plugin see the count: a cast of ``idx`` runs on [K, 2], a JIT plugin reading
    ``idx`` is given [K, 2] (the extent is known once the size tensor's plugin has run), and each allocator is
    asked for the bound and told [K, 2]."""
    import torch

    trt = qdp.trt
    seen = []
    ctx = _engine(qdp, register_nonzero(qdp), consumer=True,
                  plugin_consumer=register_doubler(qdp, seen)).create_execution_context()
    alloc = _allocator(trt)
    for name in ("idx", "idx64", "after"):
        assert ctx.set_output_allocator(name, alloc)
    x = _input(9)
    want = torch.nonzero(x)
    k = want.shape[0]
    ok, log = _run(qdp, ctx, x)
    assert ok, log
    assert {c[0]: c[2] for c in alloc.calls} == {"idx": 9 * N * 2 * 4, "idx64": 9 * N * 2 * 8, "after": 9 * N * 2 * 4}
    assert alloc.shapes == {"idx": (k, 2), "idx64": (k, 2), "after": (k, 2)}
    assert seen == [((k, 2), (k, 2))]
    assert torch.equal(alloc.buffers["idx64"][:want.numel() * 8].view(torch.int64).view(want.shape), want)
    after = alloc.buffers["after"][:want.numel() * 4].view(torch.int32).view(want.shape)
    assert torch.equal(after, 2 * want.to(torch.int32))
