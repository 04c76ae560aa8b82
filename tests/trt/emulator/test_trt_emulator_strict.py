"""The TensorRT emulator is strict where TensorRT is (issue 16, part 3), driven through NVIDIA's own
``tensorrt.plugin`` with plugins written here (independent of trt_kernels' plugin code):

a. runtime dimensions reach autotune / configure_plugin / aot_impl as -1 (the profile in min/opt/max);
b. every advertised tactic's aot_impl runs at build, the chosen one is what the engine keeps;
c. each tactic's PTX is loaded at build (the driver on a GPU, its structure on the CPU);
d. a zero grid or block dimension fails the enqueue (execute_async_v3 returns False and logs);
e. launch limits are checked at build against the build device at the profile's min/opt/max;
f. set_tensor_address refuses an address that is not 256-byte aligned;
g. an engine records TensorRT's version and the build device's compute capability, and another
   version or device is refused when deserializing, in TensorRT's words;
h. custom tactics must be unique and positive, plugin outputs cannot be BOOL/UINT8, and dimension
   expressions from another build are refused;
i. a plugin that aliases an output to an input fails the build unless the config enables
   PreviewFeature.ALIASED_PLUGIN_IO_10_03 (then the pair shares one buffer), and a plugin that writes an
   input it does not alias fails the enqueue.

CPU tests; they also run on a GPU machine, where the build loads PTX through the driver. The
``gpu``-marked tests run engines."""

import uuid
from typing import List, Tuple, Union

import pytest

from trt_kernels.testing import _standin as trt_standin

_REASON = trt_standin.unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"NVIDIA tensorrt.plugin sources unavailable: {_REASON}")


@pytest.fixture
def qdp():
    yield from trt_standin.standin_fixture()


def _ns() -> str:
    return "ttk_strict_" + uuid.uuid4().hex[:8]


def ptx(name: str, body: str = "") -> str:
    """Valid PTX (ISA 9.0, sm_90) with one kernel ``name`` taking no parameters."""
    return f".version 9.0\n.target sm_90\n.address_size 64\n\n.visible .entry {name}()\n{{\n{body}  ret;\n}}\n"


def register(trtp, ns, *, tactics=None, aot=None, out_dtype=None, desc=None, name="p"):
    """A one-input, one-output plugin ``{ns}::{name}``: ``aot(x, outputs, tactic)`` gives the aot_impl's
    result (default: kernel ``k`` over ``x.numel()`` threads, block 32); ``tactics`` the autotune's."""
    import tensorrt as trt  # the emulated one, inside the fixture

    pid = f"{ns}::{name}"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        if desc is not None:
            return desc(x)
        out = x.like()
        if out_dtype is not None:
            out.dtype = out_dtype
        return out

    if tactics is not None:
        @trtp.autotune(pid)
        def _autotune(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]) -> List[trtp.AutoTuneCombination]:
            return [trtp.AutoTuneCombination("FP32, FP32", "LINEAR", list(tactics))]

    @trtp.aot_impl(pid)
    def _aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
        if aot is not None:
            return aot(x, outputs, tactic)
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), 32)
        launch.block_x = 32
        return "k", ptx("k"), launch, trtp.SymIntExprs(0)

    assert trt.__emulated__
    return pid


def network(qdp, pid, shape, profile=None, aot=True):
    """A network of one plugin layer on input ``x`` of ``shape`` (-1 for dynamic dims, with ``profile``
    = (min, opt, max)); returns (builder, network, config, layer)."""
    trt = qdp.trt
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, shape)
    ns, name = pid.split("::")
    layer = net.add_plugin(getattr(getattr(qdp.trtp.op, ns), name)(x), aot=aot)
    layer.get_output(0).name = "y"
    net.mark_output(layer.get_output(0))
    cfg = builder.create_builder_config()
    if profile is not None:
        p = builder.create_optimization_profile()
        p.set_shape("x", *profile)
        cfg.add_optimization_profile(p)
    return builder, net, cfg, layer


def messages(qdp, since=0):
    return [m for _, m in qdp.log[since:]]


# ------------------------------------------------------------------------------------------------
# a. runtime dimensions are -1 at autotune, configure_plugin and aot_impl


def test_runtime_dimensions_reach_the_plugin_as_minus_one(qdp):
    trtp, ns = qdp.trtp, _ns()
    seen = {}

    def record(where, d):
        try:
            d.shape.numel()
            numel = "ok"
        except ValueError as e:
            numel = str(e)
        seen[where] = dict(shape=tuple(d.shape), dynamic=d.shape.is_dynamic, numel=numel, rank=len(d.shape_expr),
                           opt=tuple(d.shape.opt) if d.shape.is_dynamic else None,
                           lo_hi=(tuple(d.shape.min), tuple(d.shape.max)) if d.shape.is_dynamic else None)

    pid = f"{ns}::p"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    @trtp.autotune(pid)
    def _autotune(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]) -> List[trtp.AutoTuneCombination]:
        record("autotune x", x)
        record("autotune y", outputs[0])
        return [trtp.AutoTuneCombination("FP32, FP32", "LINEAR", [1])]

    @trtp.aot_impl(pid)
    def _aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
        record("aot_impl x", x)
        launch = trtp.KernelLaunchParams()
        launch.grid_x = x.shape_expr[0]  # shape_expr keeps the expressions
        return "k", ptx("k"), launch, trtp.SymIntExprs(0)

    builder, net, cfg, layer = network(qdp, pid, (-1, 300), ((1, 300), (8, 300), (32, 300)))
    configured = []
    real_configure = layer.plugin.configure_plugin

    def configure(ins, outs):
        configured.append([(tuple(d.desc.dims), tuple(d.min), tuple(d.opt), tuple(d.max))
                           for d in list(ins) + list(outs)])
        return real_configure(ins, outs)

    layer.plugin.configure_plugin = configure
    assert builder.build_serialized_network(net, cfg) is not None
    for where in ("autotune x", "autotune y", "aot_impl x"):
        assert seen[where] == dict(shape=(-1, 300), dynamic=True, numel="Shape has at least one dynamic dimension.",
                                   rank=2, opt=(8, 300), lo_hi=((1, 300), (32, 300))), where
    assert configured == [[((-1, 300), (1, 300), (8, 300), (32, 300))] * 2]

    # a static network: concrete shapes
    seen.clear()
    builder, net, cfg, _ = network(qdp, pid, (4, 300))
    assert builder.build_serialized_network(net, cfg) is not None
    assert seen["aot_impl x"]["shape"] == (4, 300) and seen["aot_impl x"]["numel"] == "ok"


# ------------------------------------------------------------------------------------------------
# b. every advertised tactic's aot_impl runs at build


def _tactic_aot(trtp, calls, broken=()):
    def aot(x, outputs, tactic):
        calls.append(tactic)
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), 32)
        launch.block_x = 32
        name = f"k_t{tactic}"
        code = f"this is not PTX, though it says .entry {name}(" if tactic in broken else ptx(name)
        return name, code, launch, trtp.SymIntExprs(0)

    return aot


def test_every_advertised_tactic_is_built(qdp):
    trtp, ns = qdp.trtp, _ns()
    calls = []
    pid = register(trtp, ns, tactics=[1, 2, 3], aot=_tactic_aot(trtp, calls))
    res = qdp.build(pid, [("FP32", (4, 100))])
    assert sorted(calls) == [1, 2, 3]  # each tactic's aot_impl, without a GPU and without timing
    assert res.tactic == 1 and res.kernel_name == "k_t1"  # no timing: the first runnable tactic
    layer = qdp.native._format.decode(res.engine)["layers"][0]
    assert layer["tactic"] == 1 and layer["kernel_name"] == "k_t1" and ".entry k_t1(" in layer["ptx"]
    calls.clear()
    res = qdp.build(pid, [("FP32", (4, 100))], tactic=3)
    assert sorted(calls) == [1, 2, 3] and res.tactic == 3 and res.kernel_name == "k_t3"
    layer = qdp.native._format.decode(res.engine)["layers"][0]
    assert layer["kernel_name"] == "k_t3" and ".entry k_t3(" in layer["ptx"]


def test_a_tactic_whose_ptx_does_not_load_is_skipped(qdp):
    trtp, ns = qdp.trtp, _ns()
    calls = []
    pid = register(trtp, ns, tactics=[1, 2], aot=_tactic_aot(trtp, calls, broken=(1,)))
    before = len(qdp.log)
    res = qdp.build(pid, [("FP32", (4, 100))])
    assert sorted(calls) == [1, 2] and res.tactic == 2 and res.kernel_name == "k_t2"
    assert list(res.skipped_tactics) == [1] and "CUDA_ERROR_INVALID_" in res.skipped_tactics[1]
    assert any("skipping tactic 1" in m for m in messages(qdp, before))
    with pytest.raises(ValueError, match=r"tactic 1 \(forced\) cannot run: .*CUDA_ERROR_INVALID_"):
        qdp.build(pid, [("FP32", (4, 100))], tactic=1)


# ------------------------------------------------------------------------------------------------
# c. the PTX is loaded at build


@pytest.mark.parametrize("code, name, error", [
    ("this is not PTX, though it says .entry k(", "k", r"CUDA_ERROR_INVALID_(PTX|IMAGE)"),
    (ptx("other"), "k", r"CUDA_ERROR_NOT_FOUND"),
    (ptx("k").replace(".visible .entry k()", "// .visible .entry k()\n.visible .entry k2()"), "k",
     "CUDA_ERROR_NOT_FOUND"),
], ids=["not-ptx", "no-such-entry", "entry-in-a-comment"])
def test_ptx_that_does_not_load_fails_the_build(qdp, code, name, error):
    trtp, ns = qdp.trtp, _ns()

    def aot(x, outputs, tactic):
        launch = trtp.KernelLaunchParams()
        return name, code, launch, trtp.SymIntExprs(0)

    pid = register(trtp, ns, aot=aot)
    builder, net, cfg, _ = network(qdp, pid, (4, 8))
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None
    log = " ".join(messages(qdp, before))
    assert "Could not find any implementation for node" in log and "does not load" in log
    assert __import__("re").search(error, log), log


def test_ptx_structure_check_without_a_gpu(qdp):
    """The CPU-side check itself (what a process without a GPU uses)."""
    check, PtxError = qdp.native._ptx.check, qdp.native._ptx.PtxError
    assert check(ptx("k").encode(), "k", (9, 0)) == 0
    weak = ptx("_Z4tsigIfEvPKT_iPS0_").replace(".visible .entry", ".weak .entry")  # template instantiations
    assert check(weak.encode(), "_Z4tsigIfEvPKT_iPS0_", (9, 0)) == 0
    assert check(ptx("k").replace("sm_90", "sm_90a").encode(), "k", (9, 0)) == 0
    smem = ptx("k", "  .shared .align 4 .b8 s[1024];\n  .shared .v4 .f32 t[2][3];\n")
    smem = "// a comment\n" + smem.replace(".address_size 64\n", ".address_size 64\n.shared .align 16 .b8 g[100];\n")
    assert check(smem.encode(), "k", (9, 0)) == 1024 + 96 + 100
    for code, match in [
        (b"\x7fELF\x02\x01\x01\x00\x00\x00\x02\x00\xbe", "not PTX text"),
        (ptx("k").replace(".version 9.0\n", "").encode(), "first statement must be a .version"),
        (ptx("k").replace("sm_90", "sm_100").encode(), r"\.target sm_100 cannot run on a compute 9\.0 device"),
        (ptx("k").replace(".address_size 64\n", "").encode(), "no .address_size"),
        (ptx("k").replace(".visible .entry k()", ".extern .entry k()").encode(), "CUDA_ERROR_NOT_FOUND"),
    ]:
        with pytest.raises(PtxError, match=match):
            check(code, "k", (9, 0))
    with pytest.raises(PtxError, match=r"\.target sm_90a cannot run on a compute 8\.9"):
        check(ptx("k").replace("sm_90", "sm_90a").encode(), "k", (8, 9))


# ------------------------------------------------------------------------------------------------
# d. a zero grid or block dimension fails the enqueue


def _shrinking_grid(trtp):
    """grid_x = batch - 1: zero at batch 1, while the tensors are not empty."""
    def aot(x, outputs, tactic):
        launch = trtp.KernelLaunchParams()
        launch.grid_x = x.shape_expr[0] - 1
        launch.block_x = 32
        return "k", ptx("k"), launch, trtp.SymIntExprs(0)

    return aot


def test_zero_grid_fails_the_enqueue(qdp):
    trtp, ns = qdp.trtp, _ns()
    pid = register(trtp, ns, aot=_shrinking_grid(trtp))
    builder, net, cfg, _ = network(qdp, pid, (-1, 4), ((1, 4), (2, 4), (8, 4)))
    blob = builder.build_serialized_network(net, cfg)  # zero only at run time: the build cannot know
    assert blob is not None
    engine = qdp.trt.Runtime(qdp.trt.Logger()).deserialize_cuda_engine(blob)
    ctx = engine.create_execution_context()
    assert ctx.set_input_shape("x", (1, 4))
    assert ctx.set_tensor_address("x", 0x10000) and ctx.set_tensor_address("y", 0x20000)
    before = len(qdp.log)
    assert ctx.execute_async_v3(0) is False  # checked before anything is enqueued: no GPU needed
    log = " ".join(messages(qdp, before))
    assert ("IExecutionContext::enqueueV3" in log
            and "grid (0, 1, 1) has a zero dimension (CUDA_ERROR_INVALID_VALUE)" in log)


@pytest.mark.gpu
def test_zero_grid_fails_the_enqueue_on_the_gpu(qdp):
    import torch

    trtp, ns = qdp.trtp, _ns()
    pid = register(trtp, ns, aot=_shrinking_grid(trtp))
    builder, net, cfg, _ = network(qdp, pid, (-1, 4), ((1, 4), (2, 4), (8, 4)))
    engine = qdp.trt.Runtime(qdp.trt.Logger()).deserialize_cuda_engine(builder.build_serialized_network(net, cfg))
    ctx = engine.create_execution_context()
    stream = torch.cuda.current_stream().cuda_stream
    for batch, ok in ((2, True), (1, False)):
        x = torch.zeros(batch, 4, device="cuda")
        y = torch.full((batch, 4), float("nan"), device="cuda")
        assert ctx.set_input_shape("x", (batch, 4))
        assert ctx.set_tensor_address("x", x.data_ptr()) and ctx.set_tensor_address("y", y.data_ptr())
        before = len(qdp.log)
        assert ctx.execute_async_v3(stream) is ok
        torch.cuda.synchronize()
        assert torch.isnan(y).all()  # the empty kernel writes nothing; a refused launch neither
        if not ok:
            assert any("has a zero dimension" in m for m in messages(qdp, before))


# ------------------------------------------------------------------------------------------------
# e. launch limits are checked at build, at the profile's min/opt/max


def _launch_aot(trtp, **fields):
    """aot_impl whose launch sets ``fields`` (callables of x, or ints) on KernelLaunchParams."""
    static = fields.pop("_static", False)  # the kernel declares (and uses) 40000 bytes of static shared memory

    def aot(x, outputs, tactic):
        launch = trtp.KernelLaunchParams()
        for k, v in fields.items():
            setattr(launch, k, v(x) if callable(v) else v)
        body = "  .reg .b32 %r<2>;\n  .shared .align 4 .b8 s[40000];\n  mov.u32 %r1, s;\n  st.shared.u32 [%r1], %r1;\n"
        return "k", ptx("k", body if static else ""), launch, trtp.SymIntExprs(0)

    return aot


@pytest.mark.parametrize("fields, profile, error", [
    (dict(grid_y=lambda x: x.shape_expr[0]), ((1, 8), (4, 8), (70000, 8)),
     r"grid_y = 70000 exceeds the device's maximum 65535 \(CUDA_ERROR_INVALID_VALUE\) at the profile's max shapes"),
    (dict(grid_z=lambda x: x.shape_expr[0] * 1000), ((1, 8), (70, 8), (80, 8)),
     r"grid_z = 70000 exceeds the device's maximum 65535 \(CUDA_ERROR_INVALID_VALUE\) at the profile's opt shapes"),
    (dict(block_x=8, block_z=128), None, r"block_z = 128 exceeds the device's maximum 64"),
    (dict(block_x=64, block_y=32), None, r"block \(64, 32, 1\) has 2048 threads, more than the device's 1024"),
    (dict(shared_mem=lambda x: x.shape_expr[1] * 4), ((1, 8), (1, 1024), (1, 20000)),
     r"dynamic shared memory 80000 bytes exceeds the 49152 bytes a launch may use without "
     r"cuFuncSetAttribute\(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES\)"),
    (dict(shared_mem=lambda x: x.shape_expr[1] * 4), ((1, 8), (1, 1024), (1, 60000)),
     r"also exceeds the device's opt-in maximum"),
    (dict(shared_mem=10000, _static=True), None, r"dynamic shared memory 10000 bytes exceeds the 9152 bytes"),
    (dict(grid_x=lambda x: x.shape_expr[0] - 5), ((1, 8), (6, 8), (8, 8)),
     r"grid_x = -4 is negative .* at the profile's min"),
], ids=["grid-y-at-max", "grid-z-at-opt", "block-z", "threads", "smem-no-opt-in", "smem-opt-in-max", "static-smem",
        "negative"])
def test_launch_limits_are_checked_at_build(qdp, fields, profile, error):
    trtp, ns = qdp.trtp, _ns()
    pid = register(trtp, ns, aot=_launch_aot(trtp, **fields))
    shape = (4, 8) if profile is None else (-1, -1)
    builder, net, cfg, _ = network(qdp, pid, shape, profile)
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None
    log = " ".join(messages(qdp, before))
    assert "Could not find any implementation for node" in log
    assert __import__("re").search(error, log), log


def test_launches_within_the_limits_build(qdp):
    trtp, ns = qdp.trtp, _ns()
    pid = register(trtp, ns, aot=_launch_aot(trtp, grid_y=lambda x: x.shape_expr[0], block_x=32, block_z=32,
                                             shared_mem=lambda x: x.shape_expr[1] * 4))
    builder, net, cfg, _ = network(qdp, pid, (-1, -1), ((1, 1), (100, 1000), (65535, 12288)))
    assert builder.build_serialized_network(net, cfg) is not None


# ------------------------------------------------------------------------------------------------
# f. set_tensor_address checks alignment


def test_set_tensor_address_needs_256_byte_alignment(qdp):
    trtp, ns = qdp.trtp, _ns()
    pid = register(trtp, ns)
    builder, net, cfg, _ = network(qdp, pid, (4, 8))
    ctx = qdp.trt.Runtime(qdp.trt.Logger()).deserialize_cuda_engine(
        builder.build_serialized_network(net, cfg)).create_execution_context()
    before = len(qdp.log)
    assert ctx.set_tensor_address("x", 0x10000 + 16) is False
    assert ctx.get_tensor_address("x") == 0
    assert ctx.set_tensor_address("nope", 0x10000) is False
    log = messages(qdp, before)
    assert len(log) == 2 and all(m.startswith("IExecutionContext::setTensorAddress: Error Code 3: API Usage Error "
                                              "(Parameter check failed, condition: ") for m in log)
    assert "256-byte aligned" in log[0] and "'nope'" in log[1]
    assert ctx.set_tensor_address("x", 0x10000 + 256) and ctx.get_tensor_address("x") == 0x10100
    assert ctx.set_tensor_address("y", 0)  # a null address (an empty tensor's) is aligned


# ------------------------------------------------------------------------------------------------
# g. the engine records TensorRT's version and the build device; deserializing checks both


def test_engines_record_version_and_device_and_refuse_others(qdp):
    trt, native = qdp.trt, qdp.native
    pid = register(qdp.trtp, _ns())
    builder, net, cfg, _ = network(qdp, pid, (4, 8))
    blob = bytes(builder.build_serialized_network(net, cfg))
    plan = native._format.decode(blob)
    version, compute = native._version.VERSION, native._device.current().compute
    assert plan["tensorrt_version"] == version == trt.__version__
    assert plan["compute_capability"] == compute
    if not native._device.current().gpu:
        assert compute == "9.0"  # a build without a GPU targets sm_90
    rt = trt.Runtime(trt.Logger())
    assert rt.deserialize_cuda_engine(blob) is not None

    other = "11.0.0.114" if version != "11.0.0.114" else "10.15.1.29"
    before = len(qdp.log)
    assert rt.deserialize_cuda_engine(native._format.encode(dict(plan, tensorrt_version=other))) is None
    assert messages(qdp, before) == [
        "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is not compatible with "
        f"this version of TensorRT, expecting library version {version} got {other}, please rebuild.)"]
    before = len(qdp.log)
    assert rt.deserialize_cuda_engine(native._format.encode(dict(plan, compute_capability="8.6"))) is None
    assert messages(qdp, before) == [
        "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is generated on an "
        f"incompatible device, expecting compute {compute} got compute 8.6, please rebuild.)"]


# ------------------------------------------------------------------------------------------------
# h. tactics, output types and expressions TensorRT refuses


@pytest.mark.parametrize("tactics", [[0, 1], [-1, 2]], ids=["zero", "negative"])
def test_custom_tactics_must_be_positive(qdp, tactics):
    pid = register(qdp.trtp, _ns(), tactics=tactics)
    with pytest.raises(ValueError, match=r"custom tactics must be unique positive integers \(the tactic value 0 is "
                                         r"reserved for the default tactic\)"):
        qdp.build(pid, [("FP32", (4, 8))])


def test_custom_tactics_must_be_unique(qdp):
    pid = register(qdp.trtp, _ns(), tactics=[1, 2])
    builder, net, cfg, layer = network(qdp, pid, (4, 8))
    layer.plugin.get_valid_tactics = lambda: [1, 2, 1]  # NVIDIA's class makes a set: only a hand-made plugin can
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None
    assert any("getValidTactics returned [1, 2, 1]" in m for m in messages(qdp, before))


def test_no_custom_tactic_is_the_default_tactic_zero(qdp):
    calls = []
    pid = register(qdp.trtp, _ns(), aot=_tactic_aot(qdp.trtp, calls))
    res = qdp.build(pid, [("FP32", (4, 8))])
    assert res.tactics == [] and res.tactic == 0 and calls == [0]


@pytest.mark.parametrize("dtype", ["BOOL", "UINT8"])
def test_plugin_outputs_cannot_be_bool_or_uint8(qdp, dtype):
    pid = register(qdp.trtp, _ns(), out_dtype=getattr(qdp.trt.DataType, dtype))
    with pytest.raises(ValueError, match=rf"output 0 is DataType.{dtype}: plugin outputs cannot be DataType.BOOL or "
                                         r"DataType.UINT8"):
        qdp.build(pid, [("FP32", (4, 8))])


def test_expressions_from_another_build_are_refused(qdp):
    trtp, ns = qdp.trtp, _ns()
    kept = {}

    def aot(x, outputs, tactic):  # keeps its first launch: its expressions belong to that build
        if "launch" not in kept:
            kept["launch"] = trtp.KernelLaunchParams()
            kept["launch"].grid_x = x.shape_expr[0]
        return "k", ptx("k"), kept["launch"], trtp.SymIntExprs(0)

    pid = register(trtp, ns, aot=aot)
    qdp.build(pid, [("FP32", (4, 8))])
    with pytest.raises(ValueError, match=r"launch parameter grid_x: the dimension expression in0\[0\] was made by "
                                         r"another IExprBuilder"):
        qdp.build(pid, [("FP32", (4, 8))])

    calls = []

    def desc(x):  # keeps the output shape of its first symbolic call (add_plugin's, with the network's builder)
        calls.append(1)
        out = x.like()
        if len(calls) == 2:  # call 1 is get_output_data_types (dtypes only)
            calls.append(out.shape_expr)
        elif len(calls) > 3:
            out.shape_expr = calls[2]
        return out

    pid2 = register(trtp, ns, desc=desc, name="q")
    builder, net, cfg, _ = network(qdp, pid2, (-1, 8), ((1, 8), (2, 8), (4, 8)))
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None  # the build's own builder refuses it
    assert any("output shape: the dimension expression" in m and "another IExprBuilder" in m
               for m in messages(qdp, before))
    # within one shape context, combining an expression of another builder is refused at once
    with qdp.symbolic() as b:
        with pytest.raises(ValueError, match="another IExprBuilder"):
            b.operation(qdp.trt.DimensionOperation.SUM, b.constant(1), qdp.native.IExprBuilder().constant(2))


# ------------------------------------------------------------------------------------------------
# i. aliased plugin I/O needs the preview feature; a plugin's other inputs are read-only


@pytest.mark.parametrize("aot", [True, False], ids=["aot", "jit"])
def test_aliased_io_without_the_preview_feature_fails_the_build(qdp, aot):
    if aot:
        pid = register(qdp.trtp, _ns(), desc=lambda x: x.aliased())
        builder, net, cfg, layer = network(qdp, pid, (4, 8))
    else:
        builder, net, cfg, layer = _jit_network(qdp, _jit_writer(qdp, into="output"), aliased=True)
    assert not cfg.get_preview_feature(qdp.trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03)  # off by default
    before = len(qdp.log)
    assert builder.build_serialized_network(net, cfg) is None
    assert any(f"Aliased I/O used by plugin {layer.name} but PreviewFeature::kALIASED_PLUGIN_IO_10_03 not enabled"
               in m for m in messages(qdp, before))
    cfg.set_preview_feature(qdp.trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03, True)
    plan = qdp.native._format.decode(builder.build_serialized_network(net, cfg))
    assert plan["layers"][0]["aliased"] == {"0": 0}
    assert plan["config"]["preview_features"] == ["ALIASED_PLUGIN_IO_10_03"]
    with pytest.raises(TypeError, match="needs a tensorrt.PreviewFeature"):
        cfg.set_preview_feature(1, True)


def test_an_unaliased_plugin_builds_without_the_preview_feature(qdp):
    pid = register(qdp.trtp, _ns())
    builder, net, cfg, _ = network(qdp, pid, (4, 8))
    plan = qdp.native._format.decode(builder.build_serialized_network(net, cfg))
    assert plan["layers"][0]["aliased"] == {} and plan["config"]["preview_features"] == []


def _jit_writer(qdp, into: str):
    """A JIT impl that adds 1 to ``x`` into its output (``into="output"``) or, wrongly, into ``x`` itself."""
    trtp = qdp.trtp

    def register_impl(pid):
        @trtp.impl(pid)
        def _impl(x: trtp.Tensor, outputs: Tuple[trtp.Tensor], stream: int) -> None:
            import torch

            src = torch.as_tensor(x, device="cuda")
            dst = torch.as_tensor(outputs[0], device="cuda")
            with torch.cuda.stream(torch.cuda.ExternalStream(stream)):
                if into == "output":
                    dst.copy_(src + 1)
                else:
                    src.add_(1)
                    dst.copy_(src)
    return register_impl


def _jit_network(qdp, register_impl, aliased: bool):
    trtp, ns = qdp.trtp, _ns()
    pid = f"{ns}::j"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.aliased() if aliased else x.like()

    register_impl(pid)
    return network(qdp, pid, (4, 8), aot=False)


def _run(qdp, builder, net, cfg, x):
    import torch

    engine = qdp.trt.Runtime(qdp.trt.Logger()).deserialize_cuda_engine(builder.build_serialized_network(net, cfg))
    ctx = engine.create_execution_context()
    y = torch.full_like(x, float("nan"))
    assert ctx.set_tensor_address("x", x.data_ptr()) and ctx.set_tensor_address("y", y.data_ptr())
    before = len(qdp.log)
    ok = ctx.execute_async_v3(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    return ok, y, " ".join(messages(qdp, before))


@pytest.mark.gpu
def test_a_plugin_that_writes_its_input_fails_the_enqueue(qdp):
    import torch

    x = torch.randn(4, 8, device="cuda")
    keep = x.clone()
    ok, y, _ = _run(qdp, *_jit_network(qdp, _jit_writer(qdp, "output"), False)[:3], x)
    assert ok and torch.equal(y, keep + 1) and torch.equal(x, keep)
    ok, _, log = _run(qdp, *_jit_network(qdp, _jit_writer(qdp, "input"), False)[:3], x)
    assert not ok and "wrote its input 0 ('x'), which is read-only" in log


@pytest.mark.gpu
def test_an_aliased_pair_shares_one_buffer(qdp):
    import torch

    x = torch.randn(4, 8, device="cuda")
    keep = x.clone()
    builder, net, cfg, _ = _jit_network(qdp, _jit_writer(qdp, "input"), True)
    cfg.set_preview_feature(qdp.trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03, True)
    ok, y, log = _run(qdp, builder, net, cfg, x)
    # the plugin wrote "its input", which is the output's buffer holding a copy of x: x itself is unchanged
    assert ok, log
    assert torch.equal(y, keep + 1) and torch.equal(x, keep)
