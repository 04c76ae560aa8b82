"""Scalar inputs with defaults, tuple inputs (``ScalarInput("pads", (int, 4))``) and output shapes read
from scalar values (``Scalar("pads")[0]``), on CPU: the declaration's checks, the schema text, the fake
impl and ``torch.export`` with meta tensors (torch leaves defaults out of traced calls), the kernel
parameter check of a tuple, and the generated eager launcher over a recording launch."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import SCALE, scale_spec, sigmoid_spec, unique
from support import load_example
from test_fastpath import dispatcher_for, launcher_for
from trt_kernels import registry
from trt_kernels.converters import split_arguments


@pytest.fixture(autouse=True)
def _arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


@pytest.fixture(scope="module")
def ex():
    return load_example("circular_pad")


def op_of(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def declare(spec, **kw):
    name = unique("ttk_scal")
    op = ttk.cuda_kernel_op(name, spec, **kw)
    return op, registry.get(name)


def pad_ref_shape(shape, pads):
    b, h, w = shape
    return (b, h + pads[2] + pads[3], w + pads[0] + pads[1])


# ---------------- declarations ----------------

PAD1 = 'extern "C" __global__ void pad1(const float* x, int l, int r, int n, float* y) {}'


def pad1_spec(**kw):
    args = dict(kernel_source=PAD1, kernel_name="pad1",
                inputs=[ttk.InputDecl("x"), ttk.ScalarInput("pads", (int, 2))],
                outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", -1) + ttk.Scalar("pads")[0]
                                                    + ttk.Scalar("pads")[1],))],
                extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(128,)))
    args.update(kw)
    return ttk.KernelSpec(**args)


@pytest.mark.parametrize("inputs,match", [
    ([ttk.InputDecl("x"), ttk.ScalarInput("alpha", float, default=1.0), ttk.InputDecl("w")],
     r"inputs\[2\] \('w'\): has no default but comes after inputs\[1\] \('alpha'\).*move the inputs with defaults"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("alpha", float, default=1.0), ttk.ScalarInput("k", int)],
     r"inputs\[2\] \('k'\): has no default"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("k", int, default=1.5)], r"inputs\[1\]\.default: 1\.5 is not an int"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("k", int, default=True)], r"inputs\[1\]\.default: True is not an int"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("k", int, default=2**31)], r"does not fit the kernel's 32-bit C int"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("a", float, default=float("inf"))], r"not a finite 32-bit C float"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("a", float, default=1e39)], r"not a finite 32-bit C float"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("a", float, default="1.0")], r"'1\.0' is not a float"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("f", bool, default=1)], r"1 is not a bool"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 2), default=(1, 2, 3))],
     r"inputs\[1\]\.default: \(1, 2, 3\) is not 2 values"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 2), default=(1, 2.5))],
     r"inputs\[1\]\.default\[1\]: 2\.5 is not an int"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 2), default=3)], r"3 is not 2 values"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (bool, 2))], r"tuples of bools are not supported"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 0))], r"takes 1 to 64 values"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 65))], r"takes 1 to 64 values"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", [int, 4])], r"is not a scalar type"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (str, 4))], r"is not a scalar type"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, True))], r"is not a scalar type"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", (int, 2, 3))], r"is not a scalar type"),
    ([ttk.InputDecl("x"), ttk.ScalarInput("p", tuple)], r"is not supported"),
])
def test_bad_scalar_declarations_are_refused(inputs, match):
    name = unique("ttk_scal")
    with pytest.raises(ttk.SpecError, match=match) as info:
        ttk.cuda_kernel_op(name, sigmoid_spec(inputs=inputs))
    assert str(info.value).startswith(name) and "Fix:" in str(info.value)
    assert registry.lookup(name) is None


S = ttk.Scalar


@pytest.mark.parametrize("leaf,match", [
    (S("nope"), r"Scalar\('nope'\) names no scalar input \(scalar inputs: \['alpha', 'k', 'pads', 'scales'\]\)"),
    (S("alpha"), r"reads 'alpha', a float input; sizes are ints"),
    (S("scales")[0], r"reads 'scales', a float\[2\] input; sizes are ints"),
    (S("pads"), r"'pads' is a tuple of 3 ints.*Scalar\('pads'\)\[0\]"),
    (S("k")[0], r"'k' is a single int, not a tuple"),
    (S("pads")[3], r"index 3 is out of range for 'pads' \(3 values\)"),
    (S("pads")[-4], r"index -4 is out of range"),
    (S("pads", "a"), r"the index 'a' is not an int"),
])
@pytest.mark.parametrize("where", ["outputs[0].shape[0]", "extras[0]", "geometry.grid[0]"])
def test_scalar_leaves_are_checked(leaf, match, where):
    inputs = [ttk.InputDecl("x"), ttk.ScalarInput("alpha", float), ttk.ScalarInput("k", int),
              ttk.ScalarInput("pads", (int, 3)), ttk.ScalarInput("scales", (float, 2))]
    kw = {"outputs[0].shape[0]": dict(outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") + leaf,))]),
          "extras[0]": dict(extras=[leaf]),
          "geometry.grid[0]": dict(geometry=ttk.Custom(grid=(leaf,), block=(32,)))}[where]
    with pytest.raises(ttk.SpecError, match=match) as info:
        ttk.cuda_kernel_op(unique("ttk_scal"), sigmoid_spec(inputs=inputs, **kw))
    assert where in str(info.value) and "Fix:" in str(info.value)


def test_scalar_leaf_refuses_bad_indexing_and_iteration():
    with pytest.raises(TypeError, match="index the tuple input once"):
        ttk.Scalar("pads")[0][1]
    with pytest.raises(TypeError, match="the index must be an int"):
        ttk.Scalar("pads")["a"]
    with pytest.raises(TypeError, match="not iterable"):
        list(ttk.Scalar("pads"))
    assert str(ttk.Scalar("pads")[1] + 2) == "(Scalar('pads')[1] + 2)"


# ---------------- the schema ----------------

def test_schema_text_has_tuple_types_and_defaults():
    src = ('extern "C" __global__ void k(const float* x, float a, int p0, int p1, int p2, int p3, float s0, '
           'float s1, bool f, int n, float* y) {}')
    _, kop = declare(sigmoid_spec(kernel_source=src, kernel_name="k", inputs=[
        ttk.InputDecl("x"), ttk.ScalarInput("a", float), ttk.ScalarInput("pads", (int, 4), default=(1, 1, 2, 2)),
        ttk.ScalarInput("s", (float, 2), default=[0.5, 2]), ttk.ScalarInput("f", bool, default=True)]))
    assert kop.schema == ("(Tensor x, float a, int[4] pads=[1, 1, 2, 2], float[2] s=[0.5, 2.0], bool f=True) "
                          "-> Tensor")
    assert kop.defaults == ((1, 1, 2, 2), (0.5, 2.0), True)
    assert kop.sig.scalar_decls[2].default == (0.5, 2.0)  # normalized: a tuple of floats


@pytest.mark.parametrize("inputs", [
    [ttk.InputDecl("x")],
    [ttk.InputDecl("x"), ttk.ScalarInput("a", float, default=1)],
    [ttk.InputDecl("x"), ttk.ScalarInput("a", float), ttk.ScalarInput("b", int, default=-3),
     ttk.ScalarInput("c", bool, default=False)],
    [ttk.InputDecl("x"), ttk.ScalarInput("s", (float, 2), default=[0.1, 3]),
     ttk.ScalarInput("n", int, default=2**62 + 1, ctype="uint64_t"), ttk.ScalarInput("e", float, default=1e-300)],
])
def test_a_derived_schema_s_defaults_are_what_torch_parses_back(inputs):
    """A schema derived from the spec is not parsed at declaration: its defaults come from the spec
    (``schema.spec_defaults``). They are what ``check_schema`` reads back from torch's parse, and the text
    is one torch accepts."""
    from trt_kernels.library import schema as torch_schema

    params = ", ".join(["const float* x"] + [
        {"a": "float a", "b": "int b", "c": "bool c", "s": "float s0, float s1", "n": "unsigned long long n",
         "e": "float e"}[d.name] for d in inputs[1:]])
    src = f'extern "C" __global__ void k({params}, int numel, float* y) {{}}'
    _, kop = declare(sigmoid_spec(kernel_source=src, kernel_name="k", inputs=inputs))
    derived = kop.defaults
    assert derived == torch_schema.spec_defaults(kop)
    torch_schema.check_schema(kop)  # parses kop.schema and sets kop.defaults from torch's reading of it
    assert kop.defaults == derived and [type(v) for v in kop.defaults] == [type(v) for v in derived]


def test_eps_default_in_the_schema(ex):
    _, kop = declare(ex.rms_norm_spec())
    assert kop.schema == "(Tensor x, Tensor w, float eps=1e-06) -> Tensor"
    assert kop.defaults == (1e-6,)


@pytest.mark.parametrize("schema,ok", [
    ("(Tensor x, int[2] pads) -> Tensor", True),
    ("(Tensor x, int[] pads) -> Tensor", True),
    ("(Tensor x, int[2] pads=[3, 4]) -> Tensor", True),
    ("(Tensor x, int[3] pads) -> Tensor", "has type int\\[3\\] but the spec declares int\\[2\\]"),
    ("(Tensor x, float[2] pads) -> Tensor", "has type float\\[2\\] but the spec declares int\\[2\\]"),
    ("(Tensor x, int pads) -> Tensor", "has type int but the spec declares int\\[2\\]"),
    ("(Tensor x, int[] pads=[1, 2, 3]) -> Tensor", "default \\[1, 2, 3\\] does not fit"),
])
def test_given_schema_for_a_tuple_input(schema, ok):
    name = unique("ttk_scal")
    if ok is True:
        ttk.cuda_kernel_op(name, pad1_spec(), schema=schema)
        assert registry.get(name).schema == schema
    else:
        with pytest.raises(ttk.SpecError, match=ok):
            ttk.cuda_kernel_op(name, pad1_spec(), schema=schema)


def test_given_schema_must_agree_with_the_spec_default():
    spec = sigmoid_spec(kernel_source=SCALE, kernel_name="my_scale",
                        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float, default=2.5)])
    ttk.cuda_kernel_op(unique("ttk_scal"), spec, schema="(Tensor x, float alpha=2.5) -> Tensor")
    with pytest.raises(ttk.SpecError, match=r"default 1\.0 differs from the spec's ScalarInput default 2\.5"):
        ttk.cuda_kernel_op(unique("ttk_scal"), spec, schema="(Tensor x, float alpha=1.0) -> Tensor")
    with pytest.raises(ttk.SpecError, match=r"has no default but the spec's ScalarInput gives 2\.5.*float alpha=2\.5"):
        ttk.cuda_kernel_op(unique("ttk_scal"), spec, schema="(Tensor x, float alpha) -> Tensor")


def test_ptx_op_takes_defaults_from_meta_fn():
    ptx = registry.get(declare(scale_spec())[1].op_name).binary("sm_90").kernel(torch.float32).aot_ptx

    def meta(x: torch.Tensor, alpha: float = 0.25) -> torch.Tensor:
        return torch.empty_like(x)

    name = unique("ttk_scal")
    ttk.ptx_op(name, ptx, "my_scale", meta, eager_fn=lambda x, alpha=0.25: x * alpha)
    kop = registry.get(name)
    assert kop.sig.scalar_decls[0].default == 0.25 and kop.defaults == (0.25,)


# ---------------- fake impl and torch.export (meta tensors) ----------------

def test_fake_impl_reads_the_scalars_and_fills_the_default(ex):
    op, _ = declare(ex.circular_pad_spec())
    x = torch.empty(2, 5, 7, device="meta")
    for pads in [(1, 1, 1, 1), (0, 3, 2, 0), [4, 0, 0, 9], (0, 0, 0, 0), (-1, -2, 0, -3)]:
        assert tuple(op(x, pads).shape) == pad_ref_shape(x.shape, pads)
        assert tuple(op(x, pads=pads).shape) == pad_ref_shape(x.shape, pads)
    assert tuple(op(torch.empty(0, 1, 1, device="meta"), (2, 2, 2, 2)).shape) == (0, 5, 5)
    rms, _ = declare(ex.rms_norm_spec())
    x, w = torch.empty(3, 8, device="meta"), torch.empty(8, device="meta")
    assert rms(x, w).shape == rms(x, w, 0.5).shape == rms(x, w, eps=0.5).shape == (3, 8)


@pytest.mark.parametrize("pads,match", [
    ((1, 2, 3), r"scalar 'pads' takes 4 ints, got 3 values \(\[1, 2, 3\]\)\. Fix: pass a tuple or list of 4 ints"),
    ((1, 2, 3, 4, 5), r"takes 4 ints, got 5 values"),
    ((-9, 0, 0, 0), r"outputs\[0\]\.shape\[2\]: \(\(x\.shape\[2\] \+ pads\[0\]\) \+ pads\[1\]\) = -2 is out of range "
                    r"for an output dimension.*pads=\(-9, 0, 0, 0\)"),
])
def test_fake_impl_refuses_bad_tuples(ex, pads, match):
    op, kop = declare(ex.circular_pad_spec())
    with pytest.raises(ttk.InputError, match=match) as info:
        op(torch.empty(2, 5, 7, device="meta"), pads)
    assert str(info.value).startswith(kop.op_name)


def test_torch_refuses_floats_in_an_int_tuple(ex):
    op, _ = declare(ex.circular_pad_spec())
    with pytest.raises(RuntimeError, match="Expected a value of type 'List\\[int\\]' for argument 'pads'"):
        op(torch.empty(2, 5, 7, device="meta"), (1.5, 0, 0, 0))


def test_export_drops_defaults_and_the_converter_fills_them_in(ex):
    spec = ex.circular_pad_spec()
    spec.inputs = [spec.inputs[0], ttk.ScalarInput("pads", (int, 4), default=(1, 1, 1, 1))]
    pad, kop = declare(spec)
    rms, rkop = declare(ex.rms_norm_spec())
    assert kop.schema.endswith("int[4] pads=[1, 1, 1, 1]) -> Tensor")

    class M(torch.nn.Module):
        def forward(self, x, w):
            a = pad(x)                       # the default
            b = pad(x, (1, 1, 1, 1))          # equal to it: torch leaves it out too
            c = pad(x, pads=(0, 2, 0, 0))     # by keyword
            return rms(a[0], w), rms(b[0], w, 1e-6), rms(c[0], w, eps=0.5)

    batch = torch.export.Dim("batch")
    ep = torch.export.export(M(), (torch.empty(2, 4, 6, device="meta"), torch.empty(8, device="meta")),
                             dynamic_shapes=({0: batch}, None))
    pads_nodes = [n for n in ep.graph.nodes if n.target is pad.default]
    rms_nodes = [n for n in ep.graph.nodes if n.target is rms.default]
    assert [len(n.args) + len(n.kwargs) for n in pads_nodes] == [1, 1, 2]  # defaults left out of the graph
    assert [len(n.args) + len(n.kwargs) for n in rms_nodes] == [2, 2, 3]
    assert [tuple(n.meta["val"].shape)[1:] for n in pads_nodes] == [(6, 8), (6, 8), (4, 8)]
    got = [split_arguments(kop, n.args, n.kwargs)[1]["pads"] for n in pads_nodes]
    assert got == [(1, 1, 1, 1), (1, 1, 1, 1), (0, 2, 0, 0)]
    assert [split_arguments(rkop, n.args, n.kwargs)[1]["eps"] for n in rms_nodes] == [1e-6, 1e-6, 0.5]
    outs = ep.module()(torch.empty(3, 4, 6, device="meta"), torch.empty(8, device="meta"))
    assert [tuple(o.shape) for o in outs] == [(6, 8), (6, 8), (4, 8)]


def test_symbolic_scalar_in_the_fake_impl(ex):
    """Under FakeTensorMode with symbolic sizes the fake impl evaluates the shape with SymInts."""
    op, _ = declare(ex.circular_pad_spec())

    class M(torch.nn.Module):
        def forward(self, x):
            return op(x, (1, 2, 3, 4))

    ep = torch.export.export(M(), (torch.empty(2, 5, 7, device="meta"),),
                             dynamic_shapes=({0: torch.export.Dim("b"), 1: torch.export.Dim("h"),
                                              2: torch.export.Dim("w")},))
    (node,) = [n for n in ep.graph.nodes if n.target is op.default]
    assert all(isinstance(d, torch.SymInt) for d in node.meta["val"].shape)  # stays symbolic
    assert tuple(ep.module()(torch.empty(3, 2, 9, device="meta")).shape) == (3, 9, 12)
    with FakeTensorMode():
        assert tuple(op(torch.empty(4, 1, 1), [0, 0, 5, 5]).shape) == (4, 11, 1)


def test_converter_checks_tuple_attributes(ex):
    _, kop = declare(ex.circular_pad_spec())
    with pytest.raises(ttk.InputError, match=r"scalar 'pads' takes 4 ints, got 2 values"):
        split_arguments(kop, ("x", (1, 2)), {})
    with pytest.raises(ttk.InputError, match=r"scalar 'pads'\[1\] = 2\.5 is not an int"):
        split_arguments(kop, ("x", (1, 2.5, 0, 0)), {})
    assert split_arguments(kop, ("x", [1, 2, 3, 4]), {})[1] == {"pads": (1, 2, 3, 4)}


# ---------------- the kernel's parameters ----------------

def test_tuple_is_that_many_kernel_parameters(ex):
    _, kop = declare(ex.circular_pad_spec())
    labels = [p.label for p in kop.sig.params(torch.float32)]
    assert labels[:5] == ["const float* x", "int pads_0 /* pads[0] */", "int pads_1 /* pads[1] */",
                          "int pads_2 /* pads[2] */", "int pads_3 /* pads[3] */"]
    assert kop.sig.param_codes(torch.float32) == ["Q", "i", "i", "i", "i", "i", "i", "i", "i", "i", "Q"]


def test_kernel_that_takes_too_few_tuple_values_is_refused():
    src = 'extern "C" __global__ void pad1(const float* x, int l, int n, float* y) {}'
    with pytest.raises(ttk.KernelABIError, match=r"int pads_1 /\* pads\[1\] \*/") as info:
        ttk.cuda_kernel_op(unique("ttk_scal"), pad1_spec(kernel_source=src))
    assert "takes 4 parameters" in str(info.value) and "declaration gives 5" in str(info.value)


def test_float_tuple_parameters_are_floats():
    src = 'extern "C" __global__ void k(const float* x, int s0, int s1, int n, float* y) {}'
    with pytest.raises(ttk.KernelABIError, match=r"float s_0 /\* s\[0\] \*/"):
        ttk.cuda_kernel_op(unique("ttk_scal"), sigmoid_spec(
            kernel_source=src, kernel_name="k", inputs=[ttk.InputDecl("x"), ttk.ScalarInput("s", (float, 2))]))


# ---------------- the eager launcher (recording launch, CPU tensors) ----------------

def test_launcher_packs_the_tuple_and_sizes_the_output(ex):
    _, kop = declare(ex.circular_pad_spec())
    x = torch.randn(2, 5, 7)
    fn, rec = launcher_for(kop.op_name, [x])
    y = fn(x, [1, 2, 3, 4])
    assert y.shape == (2, 12, 10)
    (call,) = rec.calls
    # (x, left, right, top, bottom, H, W, Ho, Wo, total, y)
    assert call["vals"] == [x.data_ptr(), 1, 2, 3, 4, 5, 7, 12, 10, 2 * 12 * 10, y.data_ptr()]
    assert call["grid"] == (-(-240 // 256), 1, 1)
    for bad, match in [([1, 2, 3], r"scalar 'pads' takes 4 ints, got 3 values"),
                       ([1, 2, 3, 4, 5], r"takes 4 ints, got 5 values"),
                       ([0, 2**31, 0, 0], r"scalar 'pads'\[1\] = 2147483648 does not fit a 32-bit C int"),
                       ([-10, 0, 0, 0], r"= -3 is out of range for an output dimension.*pads=\(-10, 0, 0, 0\)")]:
        with pytest.raises(ttk.InputError, match=match):
            fn(x, bad)
    assert len(rec.calls) == 1  # nothing launched for a refused call
    e = torch.randn(0, 5, 7)
    assert fn(e, [1, 1, 1, 1]).shape == (0, 7, 9) and len(rec.calls) == 1  # empty: no launch


def test_dispatcher_fills_the_tuple_default_in(ex):
    spec = ex.circular_pad_spec()
    spec.inputs = [spec.inputs[0], ttk.ScalarInput("pads", (int, 4), default=(0, 1, 2, 3))]
    _, kop = declare(spec)
    dispatch, holder, _ = dispatcher_for(kop.op_name)
    x = torch.randn(1, 2, 3)
    assert dispatch(x).shape == (1, 7, 4)  # as torch calls the kernel when pads equals its default
    assert dispatch(x, [1, 1, 1, 1]).shape == (1, 4, 5)
    assert [c["vals"][1:5] for c in holder["rec"].calls] == [[0, 1, 2, 3], [1, 1, 1, 1]]


def test_float_scalar_default_reaches_the_launch(ex):
    _, kop = declare(ex.rms_norm_spec())
    dispatch, holder, _ = dispatcher_for(kop.op_name)
    x, w = torch.randn(3, 8), torch.randn(8)
    dispatch(x, w)
    dispatch(x, w, 0.5)
    import struct
    f32 = lambda v: struct.unpack("f", struct.pack("f", v))[0]  # noqa: E731
    assert [c["vals"][2] for c in holder["rec"].calls] == [f32(1e-6), 0.5]
    assert [c["grid"] for c in holder["rec"].calls] == [(3, 1, 1)] * 2


def test_int_scalar_sizes_an_output():
    """``Scalar("k")`` (a plain int) as a repeat count: the output's length is k * numel."""
    src = 'extern "C" __global__ void rep(const float* x, int k, int n, float* y) {}'
    _, kop = declare(sigmoid_spec(kernel_source=src, kernel_name="rep",
                                  inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int, default=2)],
                                  outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") * ttk.Scalar("k"),))]))
    op = op_of(kop.op_name)
    x = torch.empty(3, 4, device="meta")
    assert op(x).shape == (24,) and op(x, 5).shape == (60,) and op(x, k=0).shape == (0,)
    with pytest.raises(ttk.InputError, match=r"\(x\.numel\(\) \* k\) = -12 is out of range.*k=-1"):
        op(x, -1)
    fn, rec = launcher_for(kop.op_name, [torch.randn(3, 4)])
    with pytest.raises(ttk.InputError, match=r"scalar 'k' = 4294967296 does not fit a 32-bit C int"):
        fn(torch.randn(3, 4), 2**32)
    assert fn(torch.randn(3, 4), 3).shape == (36,) and rec.calls[0]["grid"] == (1, 1, 1)
