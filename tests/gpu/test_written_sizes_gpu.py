"""Outputs whose size the kernel decides (``ttk.Written``) on the GPU: the gallery's two kernels (``nonzero_scan``
against ``torch.nonzero``, ``score_filter`` against boolean masking) on fresh random inputs at edge sizes (one
element, a tile's width and one past it, all or nothing kept, empty), eager, under
``torch.compile(fullgraph=True)`` (static and dynamic shapes) and through ``torch.export``; the count read back
and checked (a kernel that writes a count above its bound is refused, not returned); and the AOT and JIT plugins
replayed as TensorRT launches them (the size tensor is the plugin's last output, the data outputs' buffers hold the
bound). The engines themselves: tests/trt/emulated/test_written_sizes_emulated.py."""

import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from support import load_example
from trt_kernels.testing import _standin as standin

# the replays run the plugins through NVIDIA's tensorrt.plugin layer, whose sources come with the bindings wheel
no_standin = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")

gallery = load_example("gallery/declare")

CASES = [pytest.param(k, size, edge, id=f"{k.name}-{size}" + "".join(f"-{a}{v}" for a, v in edge.items()))
         for k in gallery.DATA_DEPENDENT.values() for size, edge in [(300, {}), *k.edges]]
KERNELS = [pytest.param(k, id=k.name) for k in gallery.DATA_DEPENDENT.values()]
_OPS = {}


def op_of(kernel):
    if kernel.name not in _OPS:
        _OPS[kernel.name] = kernel.declare(name=unique("ttk_written_gpu"))
    return _OPS[kernel.name]


def _same(got, want):
    got, want = gallery._first(got), gallery._first(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype and g.is_contiguous()
        assert torch.equal(g, w)


@pytest.mark.parametrize("kernel, size, edge", CASES)
def test_eager_equals_the_torch_reference(kernel, size, edge):
    args = kernel.inputs("cuda", size, **edge)
    _same(op_of(kernel)(*args), kernel.reference(*args))


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("dynamic", [False, True])
def test_compile_with_fullgraph_runs_the_op_in_one_graph(kernel, dynamic):
    torch._dynamo.reset()
    op = op_of(kernel)
    f = torch.compile(lambda *a: op(*a), fullgraph=True, dynamic=dynamic)
    for size in (300, 37, 1):
        args = kernel.inputs("cuda", size)
        _same(f(*args), kernel.reference(*args))


@pytest.mark.parametrize("kernel", KERNELS)
def test_an_exported_program_runs_at_other_sizes(kernel):
    args = kernel.inputs("cuda", 300)
    mod = gallery.one_op_module(op_of(kernel), args)
    tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
    ep = torch.export.export(mod, tensors, dynamic_shapes=tuple({0: torch.export.Dim("n")} for _ in tensors))
    for size in (300, 1000, 2):
        args = kernel.inputs("cuda", size)
        _same(ep.module()(*[a for a in args if isinstance(a, torch.Tensor)]), kernel.reference(*args))


LIAR = r"""
extern "C" __global__ void say_count(const float* x, float* out, int* count, int n, int claim) {
    if (threadIdx.x == 0) *count = claim;
    for (int i = threadIdx.x; i < n; i += blockDim.x) out[i] = x[i];
}
"""


def test_a_count_above_the_bound_is_refused_not_returned():
    op = ttk.cuda_kernel_op(unique("ttk_written_gpu"), ttk.KernelSpec(
        LIAR, "say_count", inputs=[ttk.InputDecl("x", ndim=1), ttk.ScalarInput("claim", int)],
        outputs=[ttk.OutputDecl("out", shape=(ttk.Written("count", max=ttk.Numel("x")),))],
        extras=[ttk.SizeArg("n", ttk.Numel("x"))], geometry=ttk.Custom(grid=(1,), block=(128,))))
    x = torch.randn(100, device="cuda")
    assert torch.equal(op(x, 40), x[:40]) and op(x, 0).shape == (0,) and torch.equal(op(x, 100), x)
    for claim in (101, -3):
        with pytest.raises(ttk.LaunchError, match=rf"wrote count = {claim}, outside \[0, 100\]"):
            op(x, claim)


@no_standin
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("replay", ["aot_replay", "jit_replay"])
def test_the_plugins_replayed_as_tensorrt_launches_them_equal_eager(kernel, replay):
    from trt_kernels import testing

    for size in (300, 1):
        args = kernel.inputs("cuda", size)
        r = getattr(testing, replay)(op_of(kernel), *args)
        assert r.bitwise_equal, r
        _same(r.eager, kernel.reference(*args))


def test_a_cuda_graph_capture_is_refused_naming_the_op():
    op = op_of(gallery.DATA_DEPENDENT["nonzero_scan"])
    (x,) = gallery.nonzero_inputs("cuda", 16)
    op(x)  # (loaded before the capture)
    g = torch.cuda.CUDAGraph()
    with pytest.raises(ttk.LaunchError, match=r"decides output sizes \(ttk.Written\), which eager reads back"):
        with torch.cuda.graph(g):
            op(x)



@no_standin
def test_a_triton_kernel_writes_its_count_too():
    """A Triton kernel as published (one program, ``tl.cumsum`` for each kept element's slot, the count stored
    last), its count parameter matched by name (``count_ptr``): eager and the AOT plugin's replay."""
    pytest.importorskip("triton")
    import triton_kernels as tk
    from trt_kernels.testing import aot_replay, jit_replay

    op = tk.declare_keep_positive(unique("ttk_written_gpu"))
    for n in (1, 100, 1000, 1024):
        x = torch.randn(n, device="cuda")
        assert torch.equal(op(x), x[x > 0])
    r = aot_replay(op, torch.randn(1000, device="cuda"))
    assert r.bitwise_equal, r
    per_call = tk.declare_keep_positive(unique("ttk_written_gpu"), per_call=True)  # a variant per BLOCK value
    for n in (1, 100, 1000, 5000):
        x = torch.randn(n, device="cuda")
        assert torch.equal(per_call(x), x[x > 0])
    r = jit_replay(per_call, torch.randn(1000, device="cuda"))
    assert r.bitwise_equal, r
