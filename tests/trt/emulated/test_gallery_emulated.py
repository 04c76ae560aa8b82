"""The kernel gallery (examples/gallery) in real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer
(marker ``trt_emulated``): each gallery op, alone in a small nn.Module, compiles with min_block_size=1 into one
engine holding one plugin layer of that op (no fallback to PyTorch), runs, and matches the eager op bit for bit
and the torch reference within tolerance, on the build's inputs and on fresh ones; a handful of them also with a
dynamic leading size (min/opt/max profile) at several sizes. The layer is an AOT plugin, except for the ops whose
calls compute their launch config (the fused softmax's BLOCK_SIZE from the row width, an @triton.heuristics
value): a JIT plugin, which launches the variant each run's sizes select. The @triton.autotune matmul is an AOT
plugin whose tactics are its configs within 48 KB of shared memory: the engine's tactic is compared with the
eager launch of the same config, and each of them is forced in turn. Emulated is not TensorRT: see
tests/trt/emulated/test_trt_emulated.py."""


import pytest
import torch

import emulated as emu
from kernels import unique
from support import ROOT, load_example
from trt_kernels import registry

GALLERY_DIR = ROOT / "examples" / "gallery"


gallery = load_example("gallery/declare")
TRITON_MISSING = gallery.triton_missing()
NAMESPACE = "ttk_gallery_emu"


def _marks(kernel):
    return [pytest.mark.skipif(TRITON_MISSING is not None, reason=f"Triton kernel: {TRITON_MISSING}")] \
        if kernel.triton else []


WITH_DTYPES = [pytest.param(k, d, id=f"{k.name}-{str(d).replace('torch.', '')}", marks=_marks(k))
               for k in gallery.GALLERY.values() for d in k.dtypes]

# one tensor with a dynamic leading size (the others static); ops whose size checks would tie two dynamic sizes
# (vector_add, haxpy_half2: SameShape) need one torch.export.Dim shared between inputs and are left out
DYNAMIC = ["layernorm_forward", "matmul_tiled", "softmax_warp", "transpose_strided", "block_sum", "row_l2norm",
           "fused_bias_gelu", "softmax_rows", "softmax_fused"]


@pytest.fixture(scope="module")
def ops(tt):
    """Gallery ops declared after the emulator is installed, lazily: name -> (op name, op)."""
    return {}


def op_of(ops, kernel):
    if kernel.name not in ops:
        name = unique(NAMESPACE)
        ops[kernel.name] = (name, kernel.declare(name=name))
    return ops[kernel.name]


def make_inputs(kernel, dtype, size):
    kw = {"dtype": dtype} if len(kernel.dtypes) > 1 else {}
    return kernel.inputs("cuda", size, **kw)


def _tensors(args):
    return tuple(a for a in args if isinstance(a, torch.Tensor))


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def _targets(gm):
    """call_function targets of the graph and of every nested graph module (PyTorch-run blocks)."""
    return [str(n.target) for _, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)
            for n in m.graph.nodes if n.op == "call_function"]


def launch_at(kop, args, like, tactic):
    """The op's eager launch of ``tactic`` (for an autotuned op: that config) into fresh outputs like ``like``."""
    from trt_kernels.eager.cuda_kernel import launch_into

    outs = [torch.empty_like(o) for o in like]
    launch_into(kop, [a.contiguous() if isinstance(a, torch.Tensor) else a for a in args], outs,
                torch.cuda.current_stream().cuda_stream, tactic=tactic)
    torch.cuda.synchronize()
    return outs


def _autotuned(kop) -> bool:
    """Whether eager picks among the op's configs by timing them (@triton.autotune)."""
    return kop.varies and kop.source.rule.tune_key is not None


def _check(kernel, trt_model, model, tensors, at=None):
    """The engine against the eager op (``at=(kop, tactic)``: against the eager launch of that config, for an
    autotuned op whose eager choice need not be the engine's) and the torch reference."""
    with torch.no_grad():
        got = _tuple(trt_model(*tensors))
        eager = _tuple(model(*tensors)) if at is None else launch_at(at[0], model.arguments(tensors), got, at[1])
    want = _tuple(kernel.reference(*model.arguments(tensors)))
    assert len(got) == len(eager) == len(want)
    for g, e, w in zip(got, eager, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        torch.testing.assert_close(g, e, atol=0, rtol=0)  # the same kernel: the same bits
        if w.dtype.is_floating_point:
            atol, rtol = kernel.tol[w.dtype]
            torch.testing.assert_close(g, w, atol=atol, rtol=rtol)
        else:
            assert torch.equal(g, w)


def _one_layer(trt_model, name):
    """The engine's one plugin layer of op ``name``: AOT, or JIT where the op's calls compute their config."""
    ns = name.split("::")[0]
    assert [t for t in _targets(trt_model) if f"{ns}." in t] == [], "the op fell back to PyTorch"
    kind = "aot_plugin" if registry.get(name).aot.aot else "jit_plugin"
    layers = emu.layers(trt_model)
    # one plugin layer (an int64 output adds TensorRT's own cast layers around it)
    assert [(layer["plugin"], layer["kind"]) for layer in layers if "plugin" in layer] == [(name, kind)], layers
    return layers[0]


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_gallery_op_runs_inside_the_engine(tt, ops, kernel, dtype):
    name, op = op_of(ops, kernel)
    args = make_inputs(kernel, dtype, 37)
    model, tensors = gallery.one_op_module(op, args), _tensors(args)
    trt_model = emu.compile_trt(tt, model, tensors)
    layer = _one_layer(trt_model, name)
    kop = registry.get(name)
    if layer["kind"] == "jit_plugin":  # only where a call computes its config: the variant each run selects
        assert kop.varies and kop.source.rule.per_call, kop.aot.why
    at = None
    if _autotuned(kop):  # the engine's tactic (its own timing) against eager's launch of the same config
        at = (kop, layer["tactic"])
        offered = list(kop.aot.tactics or range(1, kop.tactics + 1))
        assert layer["tactic"] in offered and layer["tactics"] == offered
    for _ in range(2):
        _check(kernel, trt_model, model, tensors, at)
    # fresh inputs of the same shapes through the same engine
    fresh = _tensors(make_inputs(kernel, dtype, 37))
    _check(kernel, trt_model, model, fresh, at)


@pytest.mark.parametrize("which", DYNAMIC)
def test_gallery_op_with_a_dynamic_leading_size(tt, ops, which):
    kernel = gallery.GALLERY[which]
    if kernel.triton and TRITON_MISSING:
        pytest.skip(f"Triton kernel: {TRITON_MISSING}")
    name, op = op_of(ops, kernel)
    args = make_inputs(kernel, torch.float32, 8)
    model, tensors = gallery.one_op_module(op, args), _tensors(args)
    first, rest = tensors[0], tensors[1:]
    specs = [tt[1].Input(min_shape=(1, *first.shape[1:]), opt_shape=tuple(first.shape),
                         max_shape=(64, *first.shape[1:]), dtype=first.dtype)]
    specs += [tt[1].Input(shape=tuple(t.shape), dtype=t.dtype) for t in rest]
    trt_model = emu.compile_trt(tt, model, specs)
    _one_layer(trt_model, name)
    for size in (1, 7, 8, 64):
        fresh = _tensors(make_inputs(kernel, torch.float32, size))
        _check(kernel, trt_model, model, (fresh[0], *rest))


@pytest.mark.parametrize("dtype", gallery.MATMUL_BIAS_TYPES, ids=lambda d: str(d).replace("torch.", ""))
def test_autotuned_matmul_each_tactic_in_the_engine_with_a_dynamic_m(tt, ops, dtype):
    from trt_kernels.testing import force_tactic

    kernel = gallery.GALLERY["matmul_bias"]
    if TRITON_MISSING:
        pytest.skip(f"Triton kernel: {TRITON_MISSING}")
    name, op = op_of(ops, kernel)
    kop = registry.get(name)
    # the config over 48 KB of shared memory (tactic 4) is not offered to TensorRT; the others are, each runs
    assert kop.aot.aot and kop.aot.tactics == (1, 2, 3, 5), kop.aot.why
    a, b, bias = make_inputs(kernel, dtype, 37)
    model = gallery.one_op_module(op, (a, b, bias))
    specs = [tt[1].Input(min_shape=(1, a.shape[1]), opt_shape=tuple(a.shape), max_shape=(300, a.shape[1]),
                         dtype=dtype),
             tt[1].Input(shape=tuple(b.shape), dtype=dtype), tt[1].Input(shape=tuple(bias.shape), dtype=dtype)]
    for tactic in kop.aot.tactics:
        with force_tactic(name, tactic):
            trt_model = emu.compile_trt(tt, model, specs)
        layer = _one_layer(trt_model, name)
        assert layer["tactic"] == tactic and layer["tactics"] == list(kop.aot.tactics)
        for m in (1, 37, 129, 300):
            fresh = _tensors(make_inputs(kernel, dtype, m))
            _check(kernel, trt_model, model, (fresh[0], b, bias), (kop, tactic))
