"""Outputs whose size the kernel decides (``ttk.Written``: the gallery's ``nonzero_scan`` and ``score_filter``) in
real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer (marker ``trt_emulated``).

The op's plugin sits between TensorRT's own layers, an AOT plugin whose size tensor is its last output; the
converter asks for Torch-TensorRT's output allocator, which the engine then runs with (TensorRT learns each output's
shape after the kernel wrote the count: ``IOutputAllocator.reallocate_output_async`` with the bound's bytes,
``notify_shape`` with the real shape). Checked against the torch reference on fresh inputs at static and dynamic
profiles, after a reload in this process and in a fresh one without trt_kernels, and as raw engine bytes run on a
plain ``tensorrt`` Runtime with an output allocator of its own. Emulated is not TensorRT (see
tests/trt/emulated/test_trt_emulated.py); TensorRT-RTX's real builder builds the same plugins on the CPU
(tests/trt/rtx/test_rtx_written_sizes.py)."""

import subprocess
import sys
import textwrap

import pytest
import torch

import emulated as emu
from kernels import unique
from support import load_example
from trt_kernels import registry

gallery = load_example("gallery/declare")
KERNELS = [pytest.param(k, id=k.name) for k in gallery.DATA_DEPENDENT.values()]


class Around(torch.nn.Module):
    """TensorRT layers before and after the op: the inputs scaled by 1 (a TensorRT elementwise layer that keeps
    their values), the op's outputs through an elementwise layer each."""

    def __init__(self, op, args):
        super().__init__()
        self.op = op
        self.scalars = [a for a in args if not isinstance(a, torch.Tensor)]

    def call(self, *tensors):
        outs = self.op(*[t * 1 for t in tensors], *self.scalars)
        outs = outs if isinstance(outs, tuple) else (outs,)
        return tuple(o + 1 for o in outs)


class _Around1(Around):  # (a named parameter per input: Torch-TensorRT maps inputs and their shapes by name)
    def forward(self, t0):
        return self.call(t0)


class _Around2(Around):
    def forward(self, t0, t1):
        return self.call(t0, t1)


def around(op, args):
    return (_Around1, _Around2)[sum(isinstance(a, torch.Tensor) for a in args) - 1](op, args)


# inputs of the engine's shapes (and its baked-in threshold) of which nothing, or everything, is kept
EXTREMES = {
    "nonzero_scan": lambda args: [(torch.zeros_like(args[0]),), (args[0].abs() + 0.5,)],
    "score_filter": lambda args: [(args[0], args[1] * 0.4, args[2]), (args[0], args[1] * 0.4 + 0.55, args[2])],
}


def reference(kernel, args):
    return tuple(w + 1 for w in gallery._first(kernel.reference(*args)))


def _tensors(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


def _same(got, want):
    got = got if isinstance(got, (tuple, list)) else (got,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        assert torch.equal(g, w)


@pytest.fixture(scope="module")
def ops(tt):
    return {k.name: k.declare(name=unique("ttk_written_emu")) for k in gallery.DATA_DEPENDENT.values()}


@pytest.mark.parametrize("kernel", KERNELS)
def test_the_op_runs_between_tensorrt_layers_with_the_output_allocator(tt, ops, kernel):
    op = ops[kernel.name]
    args = kernel.inputs("cuda", 300)
    trt_model = emu.compile_trt(tt, around(op, args), _tensors(args))
    targets = [str(n.target) for _, m in trt_model.named_modules() if isinstance(m, torch.fx.GraphModule)
               for n in m.graph.nodes if n.op == "call_function"]
    assert not [t for t in targets if op.default._schema.name.split("::")[0] in t], targets  # not left in PyTorch
    kinds = [layer["kind"] for layer in emu.layers(trt_model)]
    assert kinds.count("aot_plugin") == 1 and len(kinds) > 1, kinds  # our plugin among TensorRT's layers
    (mod,) = [m for _, m in trt_model.named_modules() if type(m).__name__ == "PythonTorchTensorRTModule"]
    assert mod.requires_output_allocator
    for fresh in [kernel.inputs("cuda", 300), kernel.inputs("cuda", 300), *EXTREMES[kernel.name](args)]:
        with torch.no_grad():
            _same(trt_model(*_tensors(fresh)), reference(kernel, fresh))


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_dynamic_profile_runs_at_every_size_in_it(tt, ops, kernel):
    op = ops[kernel.name]
    args = kernel.inputs("cuda", 64)
    inputs = [tt[1].Input(min_shape=(1, *t.shape[1:]), opt_shape=tuple(t.shape), max_shape=(512, *t.shape[1:]),
                          dtype=t.dtype) for t in _tensors(args)]
    trt_model = emu.compile_trt(tt, around(op, args), inputs)
    for size in (64, 1, 511, 37, 512):
        fresh = kernel.inputs("cuda", size)
        with torch.no_grad():
            _same(trt_model(*_tensors(fresh)), reference(kernel, fresh))


RELOAD = textwrap.dedent("""
    import sys, torch
    m = torch.load(sys.argv[1], weights_only=False)
    args = torch.load(sys.argv[2])
    want = torch.load(sys.argv[3])
    got = m(*[a.cuda() for a in args])
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(want) and all(torch.equal(g.cpu(), w) for g, w in zip(got, want))
    assert "trt_kernels" not in sys.modules, sorted(k for k in sys.modules if k.startswith("trt_kernels"))
    print("fresh process: ran the engine without trt_kernels: OK", [tuple(g.shape) for g in got])
""")


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_reloaded_engine_runs_here_and_in_a_fresh_process_without_trt_kernels(tt, ops, kernel, tmp_path):
    from trt_kernels.testing import fresh_process_env, load_compiled, save_compiled

    op = ops[kernel.name]
    args = kernel.inputs("cuda", 300)
    trt_model = emu.compile_trt(tt, around(op, args), _tensors(args))
    save_compiled(trt_model, tmp_path / "m.pt")
    fresh = kernel.inputs("cuda", 300)
    want = reference(kernel, fresh)
    _same(load_compiled(tmp_path / "m.pt")(*_tensors(fresh)), want)
    torch.save([t.cpu() for t in _tensors(fresh)], tmp_path / "args.pt")
    torch.save([w.cpu() for w in want], tmp_path / "want.pt")
    r = subprocess.run([sys.executable, "-c", RELOAD, *(str(tmp_path / f) for f in ("m.pt", "args.pt", "want.pt"))],
                       env=fresh_process_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "without trt_kernels: OK" in r.stdout


RUN_ENGINE = textwrap.dedent("""
    import sys, torch
    import tensorrt as trt

    class Allocator(trt.IOutputAllocator):
        def __init__(self):
            trt.IOutputAllocator.__init__(self)
            self.buffers, self.shapes, self.asked = {}, {}, {}

        def reallocate_output_async(self, name, memory, size, alignment, stream):
            self.asked[name] = size
            self.buffers[name] = torch.empty(size, dtype=torch.uint8, device="cuda")
            return self.buffers[name].data_ptr()

        def notify_shape(self, name, shape):
            self.shapes[name] = tuple(shape)

    blob = open(sys.argv[1], "rb").read()
    cases = torch.load(sys.argv[2])
    engine = trt.Runtime(trt.Logger(trt.Logger.WARNING)).deserialize_cuda_engine(blob)
    ctx = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    ins = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
    torch_type = {trt.DataType.FLOAT: torch.float32, trt.DataType.INT64: torch.int64, trt.DataType.INT32: torch.int32}
    stream = torch.cuda.Stream()
    for args, want in cases:
        args = [a.cuda() for a in args]
        for n, a in zip(ins, args):
            assert ctx.set_input_shape(n, tuple(a.shape)) and ctx.set_tensor_address(n, a.data_ptr())
        assert all(-1 in tuple(ctx.get_tensor_shape(n)) for n in outs)  # data-dependent until the kernel ran
        alloc = Allocator()
        for n in outs:
            assert ctx.set_output_allocator(n, alloc)
        assert ctx.execute_async_v3(stream.cuda_stream)
        stream.synchronize()
        for n, w in zip(outs, want):
            assert alloc.asked[n] == ctx.get_max_output_size(n), (alloc.asked[n], ctx.get_max_output_size(n))
            shape = alloc.shapes[n]
            dt = torch_type[engine.get_tensor_dtype(n)]
            numel = 1
            for d in shape:
                numel *= d
            got = alloc.buffers[n].view(dt)[:numel].view(shape)
            assert torch.equal(got.cpu(), w), (n, shape, tuple(w.shape))
        print("case", [tuple(a.shape) for a in args], "->", [alloc.shapes[n] for n in outs])
    loaded = sorted(k for k in sys.modules if k.split(".")[0] in ("trt_kernels", "torch_tensorrt"))
    assert not loaded, loaded
    print("plain tensorrt Runtime with an output allocator, without trt_kernels or torch_tensorrt: OK")
""")


@pytest.mark.parametrize("kernel", KERNELS)
def test_engine_bytes_run_on_a_plain_tensorrt_runtime_with_an_output_allocator(tt, ops, kernel, tmp_path):
    from trt_kernels.testing import fresh_process_env

    op = ops[kernel.name]
    args = kernel.inputs("cuda", 64)
    tensors = _tensors(args)
    n = torch.export.Dim("n", min=1, max=512)
    ep = torch.export.export(around(op, args), tuple(tensors), dynamic_shapes=tuple({0: n} for _ in tensors))
    inputs = [tt[1].Input(min_shape=(1, *t.shape[1:]), opt_shape=tuple(t.shape), max_shape=(512, *t.shape[1:]),
                          dtype=t.dtype) for t in tensors]
    blob = tt[1].dynamo.convert_exported_program_to_serialized_trt_engine(
        ep, inputs=inputs, enabled_precisions={torch.float32}, min_block_size=1)
    (tmp_path / "m.plan").write_bytes(bytes(blob))
    cases = []
    for size in (64, 1, 300):
        fresh = kernel.inputs("cuda", size)
        cases.append(([t.cpu() for t in _tensors(fresh)], [w.cpu() for w in reference(kernel, fresh)]))
    torch.save(cases, tmp_path / "cases.pt")
    r = subprocess.run([sys.executable, "-c", RUN_ENGINE, str(tmp_path / "m.plan"), str(tmp_path / "cases.pt")],
                       env=fresh_process_env(), capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "without trt_kernels or torch_tensorrt: OK" in r.stdout


def test_the_kernel_s_registry_entry_says_aot_and_output_allocator(tt, ops):
    for k in gallery.DATA_DEPENDENT.values():
        kop = registry.get(ops[k.name].default._schema.name)
        assert kop.aot.aot and "AOT" in kop.tensorrt.plugin


def test_a_jit_plugin_writes_its_size_inside_the_engine(tt):
    """A Triton kernel whose BLOCK is computed per call (a variant per value, so TensorRT runs its JIT plugin):
    TensorRT's enqueue gives the data output with -1 in the written axis and a buffer at the bound; the impl
    launches the variant the sizes select, which writes the count; static and dynamic profiles."""
    pytest.importorskip("triton")
    import triton_kernels as tk

    op = tk.declare_keep_positive(unique("ttk_written_emu"), per_call=True)
    assert not registry.get(op.default._schema.name).aot.aot
    x = torch.randn(300, device="cuda")
    trt_model = emu.compile_trt(tt, around(op, (x,)), [x])
    assert [layer["kind"] for layer in emu.layers(trt_model) if "plugin" in layer] == ["jit_plugin"]
    for fresh in (torch.randn(300, device="cuda"), -torch.rand(300, device="cuda")):
        with torch.no_grad():
            _same(trt_model(fresh), (fresh[fresh > 0] + 1,))
    dyn = emu.compile_trt(tt, around(op, (x,)), [tt[1].Input(min_shape=(1,), opt_shape=(300,), max_shape=(4096,),
                                                             dtype=torch.float32)])
    for n in (1, 17, 300, 4096):
        fresh = torch.randn(n, device="cuda")
        with torch.no_grad():
            _same(dyn(fresh), (fresh[fresh > 0] + 1,))
