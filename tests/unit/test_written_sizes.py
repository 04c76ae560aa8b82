"""Outputs whose size the kernel decides (``ttk.Written``), CPU tier: the declaration and its refusals, the kernel
parameter the count is written to (matched by name, in the kernel's order), the schema (the sizes are not
returned), the fake impl's unbacked sizes under ``torch.export`` and ``torch.compile(fullgraph=True)``, and the
eager launch's read-back and narrowing with the kernel simulated on CPU memory. The GPU tier runs the gallery's
two kernels (tests/gpu/test_written_sizes_gpu.py); TensorRT: tests/trt/."""

import ctypes
import struct

import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from test_fastpath import StubKernel
from trt_kernels import recipe, registry
from trt_kernels.eager.cuda_kernel import written_sizes
from trt_kernels.eager.fastpath import build_launcher

# a kernel as published: keep the positive values of x, in order; the count written last
KEEP = r"""
extern "C" __global__ void keep_positive(const float* x, int n, float* kept, float* where, int* num_kept) {
    if (threadIdx.x == 0 && blockIdx.x == 0) {
        int k = 0;
        for (int i = 0; i < n; ++i) if (x[i] > 0.0f) { kept[k] = x[i]; where[k] = (float)i; ++k; }
        *num_kept = k;
    }
}
"""


def keep_spec(**kw):
    count = kw.pop("count", ttk.Written("num_kept", max=ttk.Numel("x")))
    args = dict(kernel_source=KEEP, kernel_name="keep_positive", inputs=[ttk.InputDecl("x", ndim=1)],
                outputs=[ttk.OutputDecl("kept", shape=(count,)), ttk.OutputDecl("where", shape=(count,))],
                extras=[ttk.SizeArg("n", ttk.Numel("x"))], geometry=ttk.Custom(grid=(1,), block=(32,)))
    args.update(kw)
    return ttk.KernelSpec(**args)


def _declare(spec):
    name = unique("ttk_written")
    return ttk.cuda_kernel_op(name, spec), registry.lookup(name)


def test_the_count_is_a_kernel_parameter_matched_by_name_and_not_returned():
    op, kop = _declare(keep_spec())
    sig = kop.sig
    assert str(op.default._schema).endswith("(Tensor x) -> (Tensor, Tensor)")
    assert sig.returned == (0, 1) and sig.counts == (2,)
    assert [(o.name, o.kind, o.written, o.count) for o in sig.outputs] == [
        ("kept", "exprs", 0, 2), ("where", "exprs", 0, 2), ("num_kept", "count", -1, -1)]
    params = sig.params(torch.float32)
    assert [(p.role, p.index) for p in params] == [("input", 0), ("extra", 0), ("output", 0), ("output", 1),
                                                   ("output", 2)]
    assert params[-1].label == "int* num_kept" and sig.outputs[2].dtype == torch.int32
    plan = kop.plan((1,))
    assert plan.outputs[2].shape == () and len(plan.outputs[2].bounds) == 2  # (max, opt)


def test_the_default_opt_is_half_the_bound_and_an_int64_count_is_a_long_long():
    _, kop = _declare(keep_spec(count=ttk.Written("num_kept", max=ttk.Numel("x") * 2, dtype=torch.int64),
                                kernel_source=KEEP.replace("int* num_kept", "long long* num_kept")))
    from trt_kernels.expr import SizesEvaluator, evaluate

    mx, opt = kop.plan((1,)).outputs[2].bounds
    ev = SizesEvaluator([(21,)])
    assert (evaluate(mx, ev), evaluate(opt, ev)) == (42, 21)
    assert kop.sig.params(torch.float32)[-1].label == "long long* num_kept"


@pytest.mark.parametrize("bad, match", [
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max=4), ttk.Written("d", max=4)))]),
     r"outputs\[0\].shape: axes \[0, 1\] are each a ttk.Written size; an output has at most one"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max=4, dtype=torch.float32),))]),
     r"outputs\[0\].shape\[0\].dtype: torch.float32 is not a count dtype \(TensorRT's size tensors are INT32 or "
     r"INT64\)"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("x", max=4),))]),
     r"outputs\[0\].shape\[0\].count: 'x' is also the name of an input, output or extra"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max=ttk.Numel("y")),))]),
     r"outputs\[0\].shape\[0\].max: .*'y'"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max="n"),))]),
     r"outputs\[0\].shape\[0\].max: 'n' is not a size expression"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max=-1),))]),
     r"outputs\[0\].shape\[0\].max: -1 = -1 is out of range for a size bound"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("2c", max=4),))]),
     r"outputs\[0\].shape\[0\].count: '2c'"),
    (dict(outputs=[ttk.OutputDecl("kept", shape=(ttk.Written("c", max=4),)),
                   ttk.OutputDecl("where", shape=(ttk.Written("c", max=8),))]),
     r"outputs\[1\].shape\[0\]: .* names the count 'c' of outputs\[0\].shape\[0\] with other bounds or dtype"),
    (dict(inputs=[ttk.InputDecl("x", ndim=1, mutated=True)]),
     r"a ttk.Written size in an op that also writes an input in place"),
])
def test_a_written_size_is_checked_when_declared(bad, match):
    with pytest.raises(ttk.SpecError, match=match):
        ttk.cuda_kernel_op(unique("ttk_written"), keep_spec(**bad))


def test_meta_fn_and_eager_fn_cannot_say_the_outputs_of_a_written_size():
    with pytest.raises(ttk.SpecError, match=r"a ttk.Written size with meta_fn/eager_fn"):
        ttk.cuda_kernel_op(unique("ttk_written"), keep_spec(), eager_fn=lambda x: (x, x))


def test_export_traces_an_unbacked_size_bounded_by_the_declaration():
    op, _ = _declare(keep_spec())

    class M(torch.nn.Module):
        def forward(self, x):
            kept, where = op(x)
            return kept * where  # both sized by the one count: same symbol

    ep = torch.export.export(M(), (torch.randn(40),))
    (u,) = [s for s in ep.range_constraints if str(s).startswith("u")]
    assert (ep.range_constraints[u].lower, ep.range_constraints[u].upper) == (0, 40)
    ep = torch.export.export(M(), (torch.randn(40),), dynamic_shapes=({0: torch.export.Dim("n")},))
    text = ep.graph_module.code
    assert "keep_positive" not in text and op.default._schema.name.split("::")[1] in text
    assert "_assert_scalar" in text and "<=" in text  # u <= the input's size, checked at run time


def test_compile_with_fullgraph_captures_the_op_in_one_graph():
    op, _ = _declare(keep_spec())
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return lambda *a: (torch.zeros(0), )  # traced only: nothing runs on the CPU

    @torch.compile(backend=backend, fullgraph=True, dynamic=False)
    def f(x):
        kept, where = op(x)
        return kept + where

    f(torch.randn(33))
    (gm,) = graphs
    assert sum(op.default._schema.name.split("::")[1] in str(n.target) for n in gm.graph.nodes) == 1


# ---------------- the eager launch, the kernel simulated on CPU memory ----------------


class Kernel:
    """Stands in for the launch: writes what the CUDA kernel would (the positive values, in order, and the count)
    into the buffers the launcher passes, read through the parameter array as the driver reads it."""

    def __init__(self, pack, count=None):
        self.pack, self.count, self.calls = pack, count, 0

    def __call__(self, f, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        self.calls += 1
        codes = self.pack.codes
        ptrs = (ctypes.c_void_p * len(codes)).from_address(addr)
        x, n, kept, where, count = (struct.unpack("=" + c, ctypes.string_at(p, struct.calcsize("=" + c)))[0]
                                    for c, p in zip(codes, ptrs))
        xs = (ctypes.c_float * n).from_address(x) if n else []
        k = 0
        for i, v in enumerate(xs):
            if v > 0:
                ctypes.c_float.from_address(kept + 4 * k).value = v
                ctypes.c_float.from_address(where + 4 * k).value = float(i)
                k += 1
        ctypes.c_int32.from_address(count).value = k if self.count is None else self.count
        return (0,)


def _eager(kop, count=None, n=1):
    plan = kop.plan((1,))
    holder = {}
    inner = build_launcher(kop, recipe.make(kop.sig, torch.float32, plan, None), StubKernel(),
                           launch=lambda *a: holder["k"](*a), stream=lambda dev: 5)
    holder["k"] = k = Kernel(inner.pack, count)
    return written_sizes(kop, inner), k


@pytest.mark.parametrize("n", [1, 7, 256, 1000])
def test_eager_returns_the_outputs_at_the_size_the_kernel_wrote(n):
    _, kop = _declare(keep_spec())
    fn, k = _eager(kop)
    x = torch.randn(n)
    x[0] = abs(x[0]) + 0.1  # at least one kept
    kept, where = fn(x)
    assert torch.equal(kept, x[x > 0]) and torch.equal(where, torch.nonzero(x > 0).flatten().float())
    assert kept.is_contiguous() and where.is_contiguous() and k.calls == 1


def test_eager_with_nothing_kept_returns_empty_outputs():
    _, kop = _declare(keep_spec())
    fn, _ = _eager(kop)
    kept, where = fn(-torch.rand(50) - 0.1)
    assert kept.shape == (0,) and where.shape == (0,)


def test_an_empty_input_needs_no_read_back():
    _, kop = _declare(keep_spec())
    fn, k = _eager(kop, count=12345)  # a count the bound 0 would refuse: never read
    kept, where = fn(torch.randn(0))
    assert kept.shape == (0,) and where.shape == (0,)


@pytest.mark.parametrize("count", [51, -1, 2**31 - 1])
def test_a_count_outside_the_bound_is_refused_naming_it(count):
    _, kop = _declare(keep_spec())
    fn, _ = _eager(kop, count=count)
    with pytest.raises(ttk.LaunchError, match=rf"the kernel wrote num_kept = {count}, outside \[0, 50\] \(the declared "
                                              r"ttk.Written max at these input sizes\)"):
        fn(torch.randn(50))


def test_a_written_axis_after_the_first_keeps_the_kernel_s_dense_layout():
    spec = keep_spec(outputs=[ttk.OutputDecl("kept", shape=(2, ttk.Written("num_kept", max=ttk.Numel("x")))),
                              ttk.OutputDecl("where", shape=(ttk.Written("num_kept", max=ttk.Numel("x")),))])
    _, kop = _declare(spec)
    fn, _ = _eager(kop)
    x = torch.tensor([1.0, -1.0, 2.0, 3.0, -5.0, 4.0])
    kept, where = fn(x)
    # the output is the buffer's first 2 * 4 floats, row-major (as TensorRT reads a data-dependent output), not
    # columns of the (2, 6) bound: the simulated kernel wrote the 4 kept values first, so they are row 0
    assert kept.shape == (2, 4) and kept.is_contiguous()
    assert torch.equal(kept[0], torch.tensor([1.0, 2.0, 3.0, 4.0]))


def test_the_plugins_view_a_written_output_at_its_bound():
    """What both TensorRT plugins (QDP JIT impl, ONNX route enqueue) view a written output's buffer as: the
    output's shape at the bound, the count itself left out (TensorRT shows -1 in that axis)."""
    from trt_kernels.plugins.shapes import bound_shapes

    _, kop = _declare(keep_spec(outputs=[
        ttk.OutputDecl("kept", shape=(2, ttk.Written("num_kept", max=ttk.Numel("x") * 3))),
        ttk.OutputDecl("where", shape=(ttk.Written("num_kept", max=ttk.Numel("x") * 3),))]))
    assert bound_shapes(kop, [(7,)], []) == {0: (2, 21), 1: (21,)}
    assert bound_shapes(kop, [(0,)], []) == {0: (2, 0), 1: (0,)}
