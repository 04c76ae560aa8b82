"""The launch plan evaluated with ints, checked against the geometry formulae; hypothesis for
random shapes."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import trt_kernels as ttk
from kernels import ROW_SUM, SIN_COS, row_sum_spec, sigmoid_spec, unique
from trt_kernels import registry
from trt_kernels.expr import SizesEvaluator, evaluate


def plan_ints(op_name, shapes, tactic=1):
    kop = registry.get(op_name)
    p = kop.plan(tuple(len(s) for s in shapes), tactic)
    ev = SizesEvaluator(shapes)
    f = lambda e: evaluate(e, ev)  # noqa: E731
    return dict(
        outs=[tuple(f(e) for e in o.shape) for o in p.outputs],
        grid=tuple(f(e) for e in p.grid), block=p.block, smem=f(p.shared_mem),
        extras=[f(e) for e in p.extras], plan=p,
    )


def declare(spec):
    name = unique()
    ttk.cuda_kernel_op(name, spec)
    return name


shape_st = st.lists(st.integers(0, 70), min_size=1, max_size=5).map(tuple)


@settings(max_examples=60, deadline=None)
@given(shape=shape_st, bx=st.sampled_from([32, 100, 256, 1024]))
def test_flat_elementwise(shape, bx):
    name = declare(sigmoid_spec(geometry=ttk.Elementwise(block=(bx,))))
    r = plan_ints(name, [shape])
    n = math.prod(shape)
    assert r["outs"] == [shape]
    assert r["grid"] == (-(-n // bx), 1, 1) and r["block"] == (bx, 1, 1)
    assert r["extras"] == [n]


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 40), min_size=1, max_size=5).map(tuple),
       block=st.sampled_from([(32,), (16, 16), (8, 4, 2)]))
def test_nd_elementwise(shape, block):
    name = declare(sigmoid_spec(geometry=ttk.Elementwise(block=block, layout="nd")))
    r = plan_ints(name, [shape])
    rev = list(reversed(shape)) + [1, 1, 1]
    k = len(block)
    lead = math.prod(shape[: max(len(shape) - k, 0)])
    gx = -(-rev[0] // block[0])
    if k == 1:
        want = (gx, 1, math.prod(shape[:-1]))
    elif k == 2:
        want = (gx, -(-rev[1] // block[1]), lead)
    else:
        want = (gx, -(-rev[1] // block[1]), -(-rev[2] // block[2]) * lead)
    assert r["grid"] == want
    assert r["block"] == tuple(block) + (1,) * (3 - k)


@settings(max_examples=60, deadline=None)
@given(shape=st.lists(st.integers(0, 30), min_size=1, max_size=4).map(tuple), keepdim=st.booleans(),
       data=st.data())
def test_reduce_dims(shape, keepdim, data):
    r_ = len(shape)
    axes = data.draw(st.lists(st.integers(-r_, r_ - 1), min_size=1, max_size=r_, unique_by=lambda a: a % r_))
    spec = row_sum_spec(outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", tuple(axes), keepdim=keepdim))],
                        geometry=ttk.Reduction(reduce_dims=tuple(axes), block_size=128))
    r = plan_ints(declare(spec), [shape])
    norm = {a % r_ for a in axes}
    want = tuple((1 if keepdim else None) if i in norm else s for i, s in enumerate(shape))
    want = tuple(w for w in want if w is not None)
    assert r["outs"] == [want]
    assert r["grid"] == (math.prod(want), 1, 1) and r["block"] == (128, 1, 1)


def test_reduction_tactics():
    name = declare(row_sum_spec(geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256, tactics=(128, 512))))
    assert registry.get(name).tactics == 3
    assert [plan_ints(name, [(4, 9)], t)["block"][0] for t in (1, 2, 3)] == [256, 128, 512]


def test_elementwise_tactics():
    name = declare(sigmoid_spec(geometry=ttk.Elementwise(block=(256,), tactics=((128,), (1024,)))))
    r = [plan_ints(name, [(1000,)], t) for t in (1, 2, 3)]
    assert [x["grid"][0] for x in r] == [4, 8, 1]


def test_custom_geometry_and_tuple_shape():
    src = 'extern "C" __global__ void k2(const float* x, int n, int w, float* y) {}'
    spec = sigmoid_spec(
        kernel_source=src, kernel_name="k2",
        outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") * 2,))],
        extras=[ttk.Numel("x"), ttk.DimSize("x", -1) + 1],
        geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 128), ttk.DimSize("x", 0)), block=(128,),
                            shared_mem=ttk.DimSize("x", -1) * 4),
    )
    r = plan_ints(declare(spec), [(3, 50)])
    assert r["outs"] == [(300,)]
    assert r["grid"] == (2, 3, 1) and r["block"] == (128, 1, 1) and r["smem"] == 200
    assert r["extras"] == [150, 51]


def test_multi_output_and_dtype_rules():
    import torch

    spec = sigmoid_spec(
        kernel_source=SIN_COS, kernel_name="my_sin_cos",
        outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("x")),
                 ttk.OutputDecl("c", shape=ttk.SameAs("x"), dtype=torch.float32)],
    )
    r = plan_ints(declare(spec), [(7, 31)])
    assert r["outs"] == [(7, 31), (7, 31)]
    p = r["plan"]
    assert p.outputs[0].like == 0 and p.outputs[0].dtype_src == 0 and p.outputs[1].dtype is torch.float32


def test_rank_errors_name_the_op_and_axis():
    spec = sigmoid_spec(extras=[ttk.DimSize("x", 1)])
    name = declare(spec)
    with pytest.raises(ttk.InputError, match=r"extras\[0\]: axis 1 is out of range for input 'x' of rank 1"):
        registry.get(name).plan((1,))


def test_plan_describe_mentions_everything():
    name = declare(row_sum_spec(kernel_source=ROW_SUM))
    text = registry.get(name).plan((2,)).describe()
    assert "in0.shape[0]" in text and "block (256, 1, 1)" in text
