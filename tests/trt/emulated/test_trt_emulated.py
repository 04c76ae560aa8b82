"""Real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer (marker ``trt_emulated``).

What runs for real here: Torch-TensorRT's own Python (lowering, partitioning, converter
registry, ``TRTInterpreter``, its Python runtime, pickling), NVIDIA's ``tensorrt`` package
and ``tensorrt.plugin`` layer, our plugins and converters, and the kernels on the GPU.
What is emulated: libnvinfer (builder, engine format, runtime), for plugin-only networks.
Nothing here is a TensorRT result; ``tests/trt/real/test_tensorrt.py`` is the real-TensorRT tier.

Needs a CUDA GPU, torch-tensorrt (``--no-deps``, the version paired with torch) and the
tensorrt-cu13-bindings wheel; otherwise every test skips with the reason. The session
switches to the emulator once, so conftest runs these tests after all others.
"""

import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import emulated as emu
import trt_kernels as ttk
from kernels import ROW_SUM, SIGMOID, TEMPLATE_SIGMOID, unique
from support import load_example
from trt_kernels import registry

ATOL = RTOL = 1e-4


@pytest.fixture(scope="module")
def ex(tt):
    return load_example("cuda_kernel_op")


def _targets(gm):
    """call_function targets of the graph and of every nested graph module (PyTorch-run blocks)."""
    return [str(n.target) for _, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)
            for n in m.graph.nodes if n.op == "call_function"]


def _fallback_targets(gm, ns):
    return [t for t in _targets(gm) if f"{ns}." in t]


def _check(out, ref, atol=ATOL, rtol=RTOL):
    outs = out if isinstance(out, (tuple, list)) else (out,)
    refs = ref if isinstance(ref, (tuple, list)) else (ref,)
    assert len(outs) == len(refs)
    for o, r in zip(outs, refs):
        assert o.dtype == r.dtype and o.shape == r.shape
        torch.testing.assert_close(o, r, atol=atol, rtol=rtol)


def _seed_cases(ex):
    r = lambda *s: torch.randn(*s, device="cuda")  # noqa: E731
    x, a, b, x2, xr, xrep, xsc = r(4, 128), r(257), r(257), r(33, 47), r(8, 300), r(1000), r(7, 31)
    return [
        ("sigmoid", ex.SigmoidModel(), (x,), torch.sigmoid(x)),
        ("add", ex.AddModel(), (a, b), a + b),
        ("scale", ex.ScaleModel(2.5), (x,), 2.5 * x),
        ("relu_2d", ex.Relu2DModel(), (x2,), torch.relu(x2)),
        ("row_sum", ex.RowSumModel(), (xr,), xr.sum(-1)),
        ("repeat2", ex.Repeat2Model(), (xrep,), torch.repeat_interleave(xrep, 2)),
        ("sin_cos", ex.SinCosModel(), (xsc,), (torch.sin(xsc), torch.cos(xsc))),
    ]


@pytest.mark.parametrize("case", range(7), ids=["sigmoid", "add", "scale", "relu_2d", "row_sum", "repeat2", "sin_cos"])
def test_seed_case_runs_inside_the_engine(tt, ex, case):
    name, model, inputs, ref = _seed_cases(ex)[case]
    trt_model = emu.compile_trt(tt, model, inputs)
    assert _fallback_targets(trt_model, "kern_ex") == [], "the op fell back to PyTorch"
    layers = emu.layers(trt_model)
    kop = registry.get(f"kern_ex::{name}")
    want = "aot_plugin" if kop.tensorrt.aot else "jit_plugin"
    assert [layer["kind"] for layer in layers] == [want], layers
    assert layers[0]["plugin"] == f"kern_ex::{name}"
    for _ in range(5):
        with torch.no_grad():
            _check(trt_model(*inputs), ref)
    # fresh inputs of the same shape through the same engine
    fresh = tuple(torch.randn_like(t) for t in inputs)
    _check(trt_model(*fresh), model(*fresh))


def test_engine_records_the_tensorrt_version_and_the_gpu(tt, ex):
    """What deserialize_cuda_engine checks, as TensorRT does: the library version and the compute capability."""
    x = torch.randn(4, 128, device="cuda")
    (engine,) = emu.engines(emu.compile_trt(tt, ex.SigmoidModel(), [x]))
    major, minor = torch.cuda.get_device_capability()
    assert engine._plan["tensorrt_version"] == tt[0].__version__
    assert engine._plan["compute_capability"] == f"{major}.{minor}"


def test_dynamic_batch_min_opt_max(tt, ex):
    spec = tt[1].Input(min_shape=(1, 300), opt_shape=(8, 300), max_shape=(32, 300), dtype=torch.float32)
    trt_model = emu.compile_trt(tt, ex.RowSumModel(), [spec])
    assert _fallback_targets(trt_model, "kern_ex") == []
    for batch in (1, 5, 8, 17, 32):
        x = torch.randn(batch, 300, device="cuda")
        _check(trt_model(x), x.sum(-1))


def test_dynamic_batch_out_of_profile_is_refused(tt, ex):
    spec = tt[1].Input(min_shape=(1, 64), opt_shape=(4, 64), max_shape=(8, 64), dtype=torch.float32)
    trt_model = emu.compile_trt(tt, ex.SigmoidModel(), [spec])
    # as with real TensorRT: set_input_shape fails (logged, naming the profile), output shapes stay
    # unknown (-1) and Torch-TensorRT's Python runtime cannot allocate the output
    with pytest.raises(Exception, match="profile|negative dimension"):
        trt_model(torch.randn(9, 64, device="cuda"))


class _Chain(torch.nn.Module):
    def forward(self, x):
        s, c = torch.ops.kern_ex.sin_cos(torch.ops.kern_ex.scale(x, 0.75))
        return torch.ops.kern_ex.add(s, c)


def test_scalar_and_multi_output_ops_chained_in_one_engine(tt, ex):
    x = torch.randn(16, 257, device="cuda")
    trt_model = emu.compile_trt(tt, _Chain(), [x])
    assert _fallback_targets(trt_model, "kern_ex") == []
    engines = emu.engines(trt_model)
    assert len(engines) == 1, "three of our ops in a row must become one engine"
    assert [layer["plugin"] for layer in emu.layers(trt_model)] == [
        "kern_ex::scale", "kern_ex::sin_cos", "kern_ex::add"]
    _check(trt_model(x), torch.sin(0.75 * x) + torch.cos(0.75 * x))


class _WithNative(torch.nn.Module):
    def forward(self, x):
        return torch.sin(torch.ops.kern_ex.sigmoid(x)) + 1.0


def test_native_op_kept_in_pytorch_with_torch_executed_ops(tt, ex):
    x = torch.randn(3, 1000, device="cuda")
    trt_model = emu.compile_trt(tt, _WithNative(), [x],
                         torch_executed_ops={"torch.ops.aten.sin.default", "torch.ops.aten.add.Tensor"})
    assert "aten.sin.default" in _targets(trt_model) and _fallback_targets(trt_model, "kern_ex") == []
    assert [layer["plugin"] for layer in emu.layers(trt_model)] == ["kern_ex::sigmoid"]
    _check(trt_model(x), torch.sin(torch.sigmoid(x)) + 1.0, atol=1e-5, rtol=1e-4)


class _WithResize(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.interpolate(torch.ops.kern_ex.sigmoid(x), scale_factor=2.0, mode="nearest")


def test_a_native_layer_the_emulator_lacks_fails_the_build_by_name(tt, ex):
    """Strictness: a layer kind the emulator does not model (here TensorRT's resize, for interpolate) is
    refused by name, never passed through."""
    x = torch.randn(1, 2, 8, 8, device="cuda")
    with pytest.raises(Exception, match="add_resize|RESIZE|Resize"):
        emu.compile_trt(tt, _WithResize(), [x], pass_through_build_failures=True)


def _declare(name, spec):
    ttk.cuda_kernel_op(name, spec)
    return name


@pytest.fixture(scope="module")
def tactic_ops(tt):
    sig = _declare(unique("ttk_emu"), ttk.KernelSpec(
        kernel_source=SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,), tactics=((128,), (1024,)))))
    rs = _declare(unique("ttk_emu"), ttk.KernelSpec(
        kernel_source=ROW_SUM, kernel_name="my_row_sum", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("x", -1)],
        geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256, tactics=(64, 128))))
    return sig, rs


class _OpModel(torch.nn.Module):
    def __init__(self, name):
        super().__init__()
        ns, op = name.split("::")
        self.fn = getattr(getattr(torch.ops, ns), op)

    def forward(self, x):
        return self.fn(x)


@pytest.mark.parametrize("which, tactic", [(0, 1), (0, 2), (0, 3), (1, 1), (1, 2), (1, 3)])
def test_every_tactic_builds_and_matches(tt, tactic_ops, which, tactic):
    from trt_kernels.testing import force_tactic

    name = tactic_ops[which]
    x = torch.randn(7, 333, device="cuda")
    ref = torch.sigmoid(x) if which == 0 else x.sum(-1)
    with force_tactic(name, tactic):
        trt_model = emu.compile_trt(tt, _OpModel(name), [x])
    (layer,) = emu.layers(trt_model)
    assert layer["tactic"] == tactic and layer["tactics"] == [1, 2, 3]
    _check(trt_model(x), ref, atol=1e-4 if which == 0 else 1e-3, rtol=1e-4)


def test_timed_build_picks_one_of_the_tactics(tt, tactic_ops):
    x = torch.randn(64, 4096, device="cuda")
    trt_model = emu.compile_trt(tt, _OpModel(tactic_ops[0]), [x])
    (layer,) = emu.layers(trt_model)
    assert layer["tactic"] in (1, 2, 3)
    _check(trt_model(x), torch.sigmoid(x))


@pytest.fixture(scope="module")
def template_op(tt):
    return _declare(unique("ttk_emu"), ttk.KernelSpec(
        kernel_source=TEMPLATE_SIGMOID, kernel_name="tsig<T>", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,)), dtypes=[torch.float32, torch.float16, torch.bfloat16]))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("n", [1, 255, 4097])
def test_half_precision_template_kernels(tt, template_op, dtype, n):
    x = torch.randn(n, device="cuda", dtype=dtype)
    trt_model = emu.compile_trt(tt, _OpModel(template_op), [x])
    (layer,) = emu.layers(trt_model)
    assert layer["kind"] == "aot_plugin"
    out = trt_model(x)
    assert out.dtype == dtype
    # the kernel computes in float and rounds once: it matches torch's float result rounded to dtype
    torch.testing.assert_close(out, torch.sigmoid(x.float()).to(dtype), atol=1e-2, rtol=1e-2)
    torch.testing.assert_close(out, _OpModel(template_op)(x), atol=0, rtol=0)  # same kernel, same bits


@pytest.mark.xfail(strict=True, reason="Torch-TensorRT 2.11 cannot torch_tensorrt.save a module whose engines run on "
                   "its Python runtime (needs its C++ execute_engine op, absent without libtorchtrt); over real "
                   "TensorRT with the C++ runtime this is tests/trt/real/test_tensorrt.py's job")
def test_torch_tensorrt_save_exported_program(tt, ex, tmp_path):
    x = torch.randn(4, 128, device="cuda")
    trt_model = emu.compile_trt(tt, ex.SigmoidModel(), [x])
    tt[1].save(trt_model, str(tmp_path / "m.ep"), inputs=[x])
    loaded = tt[1].load(str(tmp_path / "m.ep")).module()
    _check(loaded(x), torch.sigmoid(x))


RELOAD = textwrap.dedent("""
    import sys, torch
    path, xpath = sys.argv[1], sys.argv[2]
    m = torch.load(path, weights_only=False)
    x = torch.load(xpath).cuda()
    import tensorrt
    ref = torch.sin(0.75 * x) + torch.cos(0.75 * x)
    for _ in range(3):
        out = m(x)
        torch.testing.assert_close(out, ref, atol=1e-4, rtol=1e-4)
    assert "trt_kernels" not in sys.modules, sorted(k for k in sys.modules if k.startswith("trt_kernels"))
    print("fresh process:", tensorrt.__emulated__, "- ran", type(m).__name__, "without trt_kernels: OK")
""")


def test_save_load_in_process_and_in_a_fresh_process_without_trt_kernels(tt, ex, tmp_path):
    from trt_kernels.testing import fresh_process_env, load_compiled, save_compiled

    x = torch.randn(16, 257, device="cuda")
    trt_model = emu.compile_trt(tt, _Chain(), [x])
    assert {layer["kind"] for layer in emu.layers(trt_model)} == {"aot_plugin"}
    path, xpath = tmp_path / "chain.pt", tmp_path / "x.pt"
    save_compiled(trt_model, path)
    torch.save(x.cpu(), xpath)
    again = load_compiled(path)
    _check(again(x), trt_model(x), atol=0, rtol=0)

    r = subprocess.run([sys.executable, "-c", RELOAD, str(path), str(xpath)], env=fresh_process_env(),
                       capture_output=True, text=True, timeout=600, cwd=pathlib.Path(path).parent)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "without trt_kernels: OK" in r.stdout


RUN_ENGINE = textwrap.dedent("""
    import sys, torch
    import tensorrt as trt
    blob, x = open(sys.argv[1], "rb").read(), torch.load(sys.argv[2]).cuda()
    engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(blob)
    assert engine is not None
    ctx = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    (inp,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    (out,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
    stream = torch.cuda.Stream()
    for rows in (x.shape[0], 1, 7):  # the engine's dynamic batch
        xi = x[:rows].contiguous()
        assert ctx.set_input_shape(inp, tuple(xi.shape))
        y = torch.empty(tuple(ctx.get_tensor_shape(out)), device="cuda")
        assert ctx.set_tensor_address(inp, xi.data_ptr()) and ctx.set_tensor_address(out, y.data_ptr())
        assert ctx.execute_async_v3(stream.cuda_stream)
        stream.synchronize()
        ref = torch.sin(0.75 * xi) + torch.cos(0.75 * xi)
        torch.testing.assert_close(y, ref, atol=1e-4, rtol=1e-4)
    loaded = sorted(k for k in sys.modules if k.split(".")[0] in ("trt_kernels", "torch_tensorrt"))
    assert not loaded, loaded
    print("plain tensorrt Runtime:", trt.__emulated__, "- ran the engine without trt_kernels or torch_tensorrt: OK")
""")


def test_serialized_engine_runs_on_plain_tensorrt_runtime_in_a_fresh_process(tt, ex, tmp_path):
    """convert_exported_program_to_serialized_trt_engine gives raw engine bytes; a process that imports
    neither trt_kernels nor torch_tensorrt runs them with tensorrt's Runtime, an execution context and
    execute_async_v3 on torch tensors (the AOT plugin layers carry their PTX)."""
    from trt_kernels.testing import fresh_process_env

    x = torch.randn(16, 257, device="cuda")
    batch = torch.export.Dim("batch", min=1, max=32)
    ep = torch.export.export(_Chain(), (x,), dynamic_shapes={"x": {0: batch}})
    dyn = tt[1].Input(min_shape=(1, 257), opt_shape=(16, 257), max_shape=(32, 257), dtype=torch.float32)
    blob = tt[1].dynamo.convert_exported_program_to_serialized_trt_engine(
        ep, inputs=[dyn], enabled_precisions={torch.float32}, min_block_size=1)
    assert isinstance(blob, (bytes, bytearray)) and len(blob) > 0
    (tmp_path / "chain.plan").write_bytes(bytes(blob))
    torch.save(x.cpu(), tmp_path / "x.pt")
    r = subprocess.run([sys.executable, "-c", RUN_ENGINE, str(tmp_path / "chain.plan"), str(tmp_path / "x.pt")],
                       env=fresh_process_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "without trt_kernels or torch_tensorrt: OK" in r.stdout


def test_jit_layer_needs_its_plugin_in_the_reloading_process(tt, tmp_path):
    """A JIT-only op's engine holds the plugin id, not the kernel: a process without trt_kernels
    cannot run it, and says which plugin it needs (as real TensorRT does)."""
    name = unique("ttk_emu")

    def sigmoid_like(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    def eager(x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x)

    ttk.cuda_kernel_op(name, ttk.KernelSpec(kernel_source=SIGMOID, kernel_name="my_sigmoid",
                                            inputs=[ttk.InputDecl("x")]), meta_fn=sigmoid_like, eager_fn=eager)
    x = torch.randn(1000, device="cuda")
    trt_model = emu.compile_trt(tt, _OpModel(name), [x])
    assert [layer["kind"] for layer in emu.layers(trt_model)] == ["jit_plugin"]
    _check(trt_model(x), torch.sigmoid(x))
    eng = emu.engines(trt_model)[0]
    blob = bytes(eng.serialize())
    (tmp_path / "e.plan").write_bytes(blob)
    from trt_kernels.testing import fresh_process_env

    code = ("import sys, tensorrt as trt; r = trt.Runtime(trt.Logger()); "
            "print('engine:', r.deserialize_cuda_engine(open(sys.argv[1], 'rb').read()))")
    res = subprocess.run([sys.executable, "-c", code, str(tmp_path / "e.plan")], env=fresh_process_env(),
                         capture_output=True, text=True, timeout=300)
    # as real TensorRT: deserialization returns None and the logger says what is missing
    assert res.returncode == 0 and "engine: None" in res.stdout, res.stdout + res.stderr
    assert name in res.stderr and "not registered" in res.stderr, res.stderr


@pytest.mark.parametrize("example", ["cuda_kernel_op", "serialize_reload"])
def test_examples_run_their_tensorrt_half_over_the_emulator(tt, example):
    root = pathlib.Path(__file__).resolve().parents[3]
    r = subprocess.run([sys.executable, str(root / "examples" / f"{example}.py")], capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "\x00" not in r.stdout
    if example == "cuda_kernel_op":
        lines = [ln for ln in r.stdout.splitlines() if "TRT compile + run successful" in ln]
        assert len(lines) == 7 and all("libnvinfer emulated)" in ln for ln in lines), r.stdout
    else:
        assert "reload with trt_kernels: OK (libnvinfer emulated)" in r.stdout, r.stdout
        assert "reload without trt_kernels: OK (libnvinfer emulated)" in r.stdout, r.stdout


class _PadNorm(torch.nn.Module):
    """examples/circular_pad.py's ops side by side (plugin layers only): a tuple attribute sizing the
    output, and a default torch leaves out of the traced call."""

    def __init__(self, pads, eps=None):
        super().__init__()
        self.pads, self.eps = pads, eps

    def forward(self, x, r, w):
        y = torch.ops.kern_pad.circular_pad2d(x, self.pads)
        if self.eps is None:
            return y, torch.ops.kern_pad.rms_norm(r, w)
        return y, torch.ops.kern_pad.rms_norm(r, w, eps=self.eps)


@pytest.mark.parametrize("pads,eps", [((1, 2, 3, 0), None), ((0, 0, 0, 0), 0.5), ((5, 1, 0, 2), 1e-6)])
def test_tuple_attribute_and_default_inside_the_engine(tt, pads, eps):
    pad_ex = load_example("circular_pad")
    x, r, w = torch.randn(2, 5, 7, device="cuda"), torch.randn(33, 257, device="cuda"), torch.randn(257, device="cuda")
    model = _PadNorm(pads, eps)
    trt_model = emu.compile_trt(tt, model, [x, r, w])
    assert _fallback_targets(trt_model, "kern_pad") == [], "an op fell back to PyTorch"
    layers = emu.layers(trt_model)
    assert [layer["plugin"] for layer in layers] == ["kern_pad::circular_pad2d", "kern_pad::rms_norm"], layers
    assert [layer["kind"] for layer in layers] == ["aot_plugin", "aot_plugin"], layers
    want = (pad_ex.circular_pad_reference(x, pads), pad_ex.rms_norm_reference(r, w, 1e-6 if eps is None else eps))
    with torch.no_grad():
        _check(trt_model(x, r, w), want)
        fresh = tuple(torch.randn_like(t) for t in (x, r, w))
        _check(trt_model(*fresh), model(*fresh))
