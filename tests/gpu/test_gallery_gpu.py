"""The kernel gallery (examples/gallery) on the GPU: every kernel, declared from its file without edits, against
its torch reference on fresh random inputs at edge sizes (1, a non-multiple of the block or tile, empty where
the op allows it) and every declared dtype; then the same op under torch.compile(fullgraph=True), through
torch.export, captured in a CUDA graph and replayed, and replayed as TensorRT launches its AOT plugin
(aot_replay, where the op has one) and its JIT plugin (jit_replay): each of those bit for bit equal to the eager
op. Ops whose calls compute their launch config (BLOCK_SIZE and num_warps from the row width, an
@triton.heuristics value) launch the variant each call selects, so several of them, at several widths, are
captured in one CUDA graph; the @triton.autotune matmul is checked config by config (eager picks one by timing,
TensorRT another: each replay is compared with the eager launch of its own tactic), the config over 48 KB of
shared memory included, which eager launches and TensorRT's AOT plugin leaves out. The script itself
(python examples/gallery/declare.py) runs and reports every kernel within tolerance."""

import re
import subprocess
import sys

import pytest
import torch

from kernels import unique
from support import ROOT, load_example
from trt_kernels import registry
from trt_kernels.testing import _standin as standin

GALLERY_DIR = ROOT / "examples" / "gallery"


gallery = load_example("gallery/declare")
TRITON_MISSING = gallery.triton_missing()
no_standin = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")


def _marks(kernel):
    return [pytest.mark.skipif(TRITON_MISSING is not None, reason=f"Triton kernel: {TRITON_MISSING}")] \
        if kernel.triton else []


def _dt(dtype) -> str:
    return str(dtype).replace("torch.", "")


WITH_DTYPES = [pytest.param(k, d, id=f"{k.name}-{_dt(d)}", marks=_marks(k))
               for k in gallery.GALLERY.values() for d in k.dtypes]
EDGES = [pytest.param(k, d, size, edge, id=f"{k.name}-{_dt(d)}-{size}" + "".join(f"-{a}{v}" for a, v in edge.items()),
                      marks=_marks(k))
         for k in gallery.GALLERY.values() for d in k.dtypes for size, edge in k.edges]

_OPS = {}


def op_of(kernel):
    """(op name, op) of ``kernel`` declared once for this GPU under a fresh name."""
    if kernel.name not in _OPS:
        name = unique("ttk_gallery_gpu")
        _OPS[kernel.name] = (name, kernel.declare(name=name))
    return _OPS[kernel.name]


def make_inputs(kernel, dtype, size, **edge):
    kw = {"dtype": dtype} if len(kernel.dtypes) > 1 else {}
    return kernel.inputs("cuda", size, **edge, **kw)


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def assert_matches_reference(kernel, got, want):
    got, want = _tuple(got), _tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.device == w.device
        if not w.dtype.is_floating_point:
            assert torch.equal(g, w)
            continue
        atol, rtol = kernel.tol[w.dtype]
        torch.testing.assert_close(g, w, atol=atol, rtol=rtol)


def _bits(t):
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(view)


def assert_bitwise(got, want):
    got, want = _tuple(got), _tuple(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        assert torch.equal(_bits(g), _bits(w)), (g - w).abs().max()


def _tensors(args):
    return tuple(a for a in args if isinstance(a, torch.Tensor))


@pytest.mark.parametrize("kernel, dtype, size, edge", EDGES)
def test_eager_matches_the_reference_at_edge_sizes(kernel, dtype, size, edge):
    _, op = op_of(kernel)
    args = make_inputs(kernel, dtype, size, **edge)
    assert_matches_reference(kernel, op(*args), kernel.reference(*args))
    # fresh inputs of the same shape: their own results (nothing kept from the last call)
    args = make_inputs(kernel, dtype, size, **edge)
    assert_matches_reference(kernel, op(*args), kernel.reference(*args))


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_eager_matches_the_reference_at_a_large_size(kernel, dtype):
    _, op = op_of(kernel)
    args = make_inputs(kernel, dtype, 1000)
    assert_matches_reference(kernel, op(*args), kernel.reference(*args))


def _with_module_scalars(model, args):
    """``args`` with the module's fixed scalar arguments in place of their own."""
    return [a if t is None else t for a, t in zip(args, model.template)]


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_torch_compile_fullgraph_is_bitwise_eager(kernel, dtype):
    _, op = op_of(kernel)
    torch._dynamo.reset()
    model = gallery.one_op_module(op, make_inputs(kernel, dtype, 1))
    compiled = torch.compile(model, fullgraph=True)
    for size in (37, 300, 5):  # a second size recompiles with a dynamic leading size (the fake impl on SymInts)
        args = _with_module_scalars(model, make_inputs(kernel, dtype, size))
        got = compiled(*_tensors(args))
        assert_bitwise(got, op(*args))
        assert_matches_reference(kernel, got, kernel.reference(*args))


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_torch_export_runs_the_op_bitwise_eager(kernel, dtype):
    name, op = op_of(kernel)
    args = make_inputs(kernel, dtype, 37)
    model, tensors = gallery.one_op_module(op, args), _tensors(args)
    ep = torch.export.export(model, tensors)
    assert any(name.replace("::", ".") in str(n.target) for n in ep.graph.nodes), ep.graph
    assert_bitwise(ep.module()(*tensors), op(*args))


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_cuda_graph_capture_and_replay_is_bitwise_eager(kernel, dtype):
    _, op = op_of(kernel)
    static = make_inputs(kernel, dtype, 300)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up outside the capture: compile and load the kernel
        op(*static)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = op(*static)
    for _ in range(3):
        fresh = make_inputs(kernel, dtype, 300)
        for s, f in zip(static, fresh):
            if isinstance(s, torch.Tensor):
                s.copy_(f)
        graph.replay()
        torch.cuda.synchronize()
        assert_bitwise(captured, op(*static))
        assert_matches_reference(kernel, captured, kernel.reference(*static))


def _autotuned(kop) -> bool:
    """Whether eager picks among the op's configs by timing them (@triton.autotune)."""
    return kop.varies and kop.source.rule.tune_key is not None


def launch_at(kop, args, like, tactic):
    """The op's eager launch of ``tactic`` (for an autotuned op: that config) into fresh outputs like ``like``."""
    from trt_kernels.eager.cuda_kernel import launch_into

    outs = [torch.empty_like(o) for o in _tuple(like)]
    launch_into(kop, [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args], outs,
                torch.cuda.current_stream().cuda_stream, tactic=tactic)
    torch.cuda.synchronize()
    return outs


@no_standin
@pytest.mark.parametrize("size", [1, 37])
@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_aot_and_jit_plugins_replay_bitwise_eager(kernel, dtype, size):
    from trt_kernels.testing import aot_replay, jit_replay

    name, op = op_of(kernel)
    kop = registry.get(name)
    args = make_inputs(kernel, dtype, size)
    if _autotuned(kop):  # each tactic TensorRT may pick, against the eager launch of the same config
        assert kop.aot.aot
        for tactic in kop.aot.tactics or range(1, kop.tactics + 1):
            res = aot_replay(op, *args, tactic=tactic)
            assert res.launched and res.tactic == tactic
            assert_bitwise(res.outputs, launch_at(kop, args, res.outputs, tactic))
            assert_matches_reference(kernel, res.outputs, kernel.reference(*args))
        res = jit_replay(op, *args)
        assert_bitwise(res.outputs, launch_at(kop, args, res.outputs, res.tactic or 1))
        assert_matches_reference(kernel, res.outputs, kernel.reference(*args))
        return
    if kop.aot.aot:
        res = aot_replay(op, *args)
        assert res.launched and res.bitwise_equal, res.max_abs_diff()
        assert_matches_reference(kernel, res.outputs, kernel.reference(*args))
    else:  # a call computes its config: TensorRT gets the JIT plugin only, which launches the call's variant
        assert kop.varies and kop.source.rule.per_call, kop.aot.why
    res = jit_replay(op, *args)
    assert res.bitwise_equal, res.max_abs_diff()
    assert_matches_reference(kernel, res.outputs, kernel.reference(*args))


# ----- launch configs computed per call; the autotuner's configs -----

def test_fused_softmax_rows_wider_than_any_fixed_block():
    kernel = gallery.GALLERY["softmax_fused"]
    if TRITON_MISSING:
        pytest.skip(f"Triton kernel: {TRITON_MISSING}")
    name, op = op_of(kernel)
    kop = registry.get(name)
    for cols, block, warps in [(1500, 2048, 8), (5000, 8192, 16), (8193, 16384, 16)]:
        (x,) = make_inputs(kernel, torch.float32, 6, cols=cols)
        x[:, -1] = 30.0  # the last column holds nearly all the mass: a block that stops short of it is far off
        got = op(x)
        assert_matches_reference(kernel, got, kernel.reference(x))
        assert got[:, -1].min() > 0.99
        (v,) = kop.call_variants((x,))
        assert v.source.configs[0].constexprs == {"BLOCK_SIZE": block} and v.source.configs[0].num_warps == warps


@pytest.mark.parametrize("dtype", gallery.MATMUL_BIAS_TYPES, ids=_dt)
def test_autotuned_matmul_every_config_and_the_one_eager_picks(dtype):
    kernel = gallery.GALLERY["matmul_bias"]
    if TRITON_MISSING:
        pytest.skip(f"Triton kernel: {TRITON_MISSING}")
    name, op = op_of(kernel)
    kop = registry.get(name)
    big = [t for t in range(1, kop.tactics + 1) if t not in kop.aot.tactics]
    assert big == [4] and kop.image(dtype, 4, kop.device_arch(0)).shared_mem > 48 * 1024
    for size, edge in [(300, {})] + list(kernel.edges):
        args = make_inputs(kernel, dtype, size, **edge)
        want = kernel.reference(*args)
        per_tactic = []
        for tactic in range(1, kop.tactics + 1):  # the config over 48 KB too: eager raises the kernel's limit
            (got,) = launch_at(kop, args, want, tactic)
            assert_matches_reference(kernel, got, want)
            per_tactic.append(got)
        chosen = op(*args)  # the first call for these sizes times the configs and keeps the fastest
        assert any(torch.equal(_bits(chosen), _bits(t)) for t in per_tactic), (size, edge)
        fresh = make_inputs(kernel, dtype, size, **edge)  # the same sizes: the choice from memory
        assert_matches_reference(kernel, op(*fresh), kernel.reference(*fresh))


def test_per_call_config_ops_capture_in_one_cuda_graph():
    if TRITON_MISSING:
        pytest.skip(f"Triton kernel: {TRITON_MISSING}")
    # several variants of each op in one graph: each call computes its config in Python at capture time and
    # launches that variant on the capturing stream; the autotuner's choice is made outside the capture
    calls = [("softmax_fused", torch.float16, 4, {"cols": 1000}), ("softmax_fused", torch.float32, 9, {"cols": 1500}),
             ("softmax_fused", torch.bfloat16, 3, {"cols": 5000}), ("swiglu", torch.float32, 7, {"cols": 1024}),
             ("swiglu", torch.float16, 5, {"cols": 1023}), ("matmul_bias", torch.float16, 37, {}),
             ("matmul_bias", torch.bfloat16, 130, {"n": 200, "k": 64})]
    static = [(gallery.GALLERY[k], op_of(gallery.GALLERY[k])[1], make_inputs(gallery.GALLERY[k], d, size, **edge))
              for k, d, size, edge in calls]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up: compile each variant, time the autotuner's configs
        for _, op, args in static:
            op(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = [op(*args) for _, op, args in static]
    for _ in range(2):
        for (kernel, _, args), (_, d, size, edge) in zip(static, calls):
            for s, f in zip(args, make_inputs(kernel, d, size, **edge)):
                s.copy_(f)
        graph.replay()
        torch.cuda.synchronize()
        for (kernel, op, args), got in zip(static, captured):
            assert_bitwise(got, op(*args))
            assert_matches_reference(kernel, got, kernel.reference(*args))


def test_the_gallery_script_runs_every_kernel_within_tolerance():
    r = subprocess.run([sys.executable, str(GALLERY_DIR / "declare.py")], capture_output=True, text=True,
                       timeout=900, cwd=ROOT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    rows = [ln for ln in r.stdout.splitlines() if ln.startswith(gallery.NAMESPACE + "::")]
    want = sum(len(k.dtypes) for k in gallery.GALLERY.values() if not (k.triton and TRITON_MISSING))
    want += len(gallery.IN_PLACE) + len(gallery.DATA_DEPENDENT)
    assert len(rows) == want and all(ln.rstrip().endswith(("yes", "yes (in place)")) or
                                     re.search(r"yes \(size \d+ written by the kernel\)$", ln) for ln in rows), r.stdout


# ---------------- kernels that write their inputs in place ----------------

IN_PLACE = [pytest.param(k, id=k.name) for k in gallery.IN_PLACE.values()]


@pytest.fixture(scope="module")
def in_place_ops():
    return {k.name: k.declare(name=unique("gallery_inplace_gpu")) for k in gallery.IN_PLACE.values()}


def _clones(args):
    return [a.clone() if isinstance(a, torch.Tensor) else a for a in args]


@pytest.mark.parametrize("kernel", IN_PLACE)
def test_in_place_eager_writes_what_the_reference_computes(in_place_ops, kernel):
    for size in kernel.edges:
        args = kernel.inputs("cuda", size)
        ok, err = gallery.check_in_place(kernel, in_place_ops[kernel.name], args)
        assert ok, (size, err)


@no_standin
@pytest.mark.parametrize("kernel", IN_PLACE)
def test_in_place_jit_plugin_replays_the_write_into_its_outputs(in_place_ops, kernel):
    """The TensorRT plugin of an in-place op (JIT: no aliased I/O without the builder's preview feature) outputs
    each written input's new value, leaving its inputs as they were; bit for bit the eager op's writes."""
    from trt_kernels.testing import aot_replay, jit_replay

    op = in_place_ops[kernel.name]
    for size in kernel.edges:
        args = kernel.inputs("cuda", size)
        keep = _clones(args)
        res = jit_replay(op, *args)  # raises if the plugin wrote an input
        assert len(res.outputs) == len(kernel.written) and res.bitwise_equal, (size, res.max_abs_diff())
        for got, want in zip(res.outputs, kernel.reference(*keep)):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="has no AOT plugin .*in place"):
        aot_replay(op, *args)


@pytest.mark.parametrize("kernel", IN_PLACE)
def test_in_place_under_torch_compile_writes_the_callers_tensors(in_place_ops, kernel):
    op = in_place_ops[kernel.name]
    args = kernel.inputs("cuda", 301)
    want = kernel.reference(*_clones(args))
    tensors = [a for a in args if isinstance(a, torch.Tensor)]

    def step(*ts):
        it = iter(ts)
        op(*[next(it) if isinstance(a, torch.Tensor) else a for a in args])
        return ts[0].sum()

    torch.compile(step, fullgraph=True)(*tensors)
    for w, i in zip(want, kernel.written):
        torch.testing.assert_close(args[i], w, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("kernel", IN_PLACE)
def test_in_place_cuda_graph_replays_the_write(in_place_ops, kernel):
    op = in_place_ops[kernel.name]
    args = kernel.inputs("cuda", 513)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        op(*_clones(args))  # builds the launcher outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    want = kernel.reference(*_clones(args))
    with torch.cuda.graph(graph):
        op(*args)
    graph.replay()
    torch.cuda.synchronize()
    for w, i in zip(want, kernel.written):
        torch.testing.assert_close(args[i], w, atol=1e-5, rtol=1e-5)
