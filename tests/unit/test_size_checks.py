"""Size checks between inputs (``checks=[ttk.SameShape(...), ttk.SameDim(...)]``): declaration errors,
the eager launcher refusing before it allocates or launches, the fake impl at static and symbolic sizes
(``torch.export`` with a dynamic batch), the override paths, and the Torch-TensorRT converter."""

import types

import pytest
import torch

import trt_kernels as ttk
from kernels import add_spec, rmsnorm_mixed_spec, unique
from test_fastpath import Recorder, StubKernel
from test_spec_validation import expect
from trt_kernels import recipe, registry
from trt_kernels.eager.fastpath import build_launcher

F16, F32 = torch.float16, torch.float32


@pytest.fixture(autouse=True)
def arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


def declare(spec, **kw):
    name = unique("ttk_chk")
    ttk.cuda_kernel_op(name, spec, **kw)
    return name, registry.get(name)


def meta(*shape, dtype=F32):
    return torch.empty(shape, device="meta", dtype=dtype)


# ---------- declarations ----------

def test_check_declaration_errors():
    expect(r"checks\[0\]: 'q' names no tensor input \(tensor inputs: \['a', 'b'\]\)",
           add_spec(checks=[ttk.SameShape("a", "q")]))
    expect(r"checks\[0\]: SameShape\('a'\) names 1 input\(s\); a check relates two or more",
           add_spec(checks=[ttk.SameShape("a")]))
    expect(r"checks\[0\]: SameShape\('a', 'a'\) names an input twice", add_spec(checks=[ttk.SameShape("a", "a")]))
    expect(r"checks\[0\]: .* declared with different ndim \[1, 2\]",
           add_spec(inputs=[ttk.InputDecl("a", ndim=1), ttk.InputDecl("b", ndim=2)]))
    expect(r"checks\[0\]: SameDim\(\('a', 0\)\) has 1 operand", add_spec(checks=[ttk.SameDim(("a", 0))]))
    expect(r"checks\[0\].operands\[1\]: axis 3 is out of range for input 'b' of ndim 2",
           add_spec(inputs=[ttk.InputDecl("a"), ttk.InputDecl("b", ndim=2)], checks=[ttk.SameDim(("a", 0), ("b", 3))]))
    expect(r"checks\[0\].operands\[1\]: \('b',\) is not an \(input, axis\) pair",
           add_spec(checks=[ttk.SameDim(("a", 0), ("b",))]))
    expect(r"checks\[0\].operands\[1\]: axis 'x' is not an int", add_spec(checks=[ttk.SameDim(("a", 0), ("b", "x"))]))
    expect(r"checks\[0\].operands\[1\]: 'b' is neither an \(input, axis\) pair nor a size expression",
           add_spec(checks=[ttk.SameDim(("a", 0), "b")]))
    expect(r"checks\[0\].operands\[1\]: 'z' names no tensor input",
           add_spec(checks=[ttk.SameDim(("a", 0), ttk.Numel("z"))]))
    # a scalar operand: said as such (it said "names no scalar input (scalar inputs: [])" of a declared one)
    expect(r"checks\[0\].operands\[0\]: Scalar\('k'\) reads a scalar input; a check relates the tensor inputs' "
           r"sizes .* Fix: compare sizes only",
           add_spec(inputs=[ttk.InputDecl("a"), ttk.InputDecl("b"), ttk.ScalarInput("k", int)],
                    checks=[ttk.SameDim(ttk.Scalar("k"), ("b", 0))]))
    expect(r"checks\[1\]: 'a' is not a check", add_spec(checks=[ttk.SameShape("a", "b"), "a"]))
    expect(r"checks: expected a list or tuple", add_spec(checks=ttk.SameShape("a", "b")))


def test_checks_are_values():
    assert ttk.SameShape("a", "b") == ttk.SameShape("a", "b") and repr(ttk.SameShape("a", 1)) == "SameShape('a', 1)"
    assert repr(ttk.SameDim(("x", -1), ttk.Numel("w"))) == "SameDim(('x', -1), Numel('w'))"
    assert hash(ttk.SameDim(("x", -1), ("w", 0))) == hash(ttk.SameDim(("x", -1), ("w", 0)))


# ---------- the fake impl ----------

def test_fake_impl_refuses_mismatched_shapes():
    name, kop = declare(add_spec())
    assert kop.overload(meta(3, 5), meta(3, 5)).shape == (3, 5)
    with pytest.raises(ttk.InputError) as info:
        kop.overload(meta(3, 5), meta(3, 4))
    assert str(info.value) == (f"{name}: checks[0] SameShape('a', 'b'): inputs 'a' (3, 5) and 'b' (3, 4) must have "
                               "equal shapes; the kernel would read or write past the end of the smaller one. "
                               "Fix: pass tensors of equal shapes")
    with pytest.raises(ttk.InputError, match=r"checks\[0\] SameShape\('a', 'b'\): inputs 'a' \(3, 5\) and 'b' "
                                             r"\(15,\) must have equal shapes"):  # ranks differ: the shapes shown
        kop.overload(meta(3, 5), meta(15))
    # empty tensors are checked too
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        kop.overload(meta(0, 5), meta(0, 4))
    assert kop.overload(meta(0, 5), meta(0, 5)).shape == (0, 5)


def test_fake_impl_same_dim_message():
    name, kop = declare(rmsnorm_mixed_spec())
    with pytest.raises(ttk.InputError) as info:
        kop.overload(meta(4, 128, dtype=F16), meta(64), 1e-6)
    assert str(info.value) == (f"{name}: checks[0] SameDim(('x', -1), ('w', 0)): x.shape[-1] = 128 and w.shape[0] = 64 "
                               "must be equal (input sizes x=(4, 128), w=(64,)); the kernel would read or write out of "
                               "bounds. Fix: pass inputs whose sizes agree")
    # an axis past the input's rank: the plan's InputError
    with pytest.raises(ttk.InputError, match=r"axis 0 is out of range for input 'w' of rank 0"):
        kop.overload(meta(4, 128, dtype=F16), meta(), 1e-6)


def test_same_dim_with_size_expressions():
    spec = add_spec(extras=[ttk.Numel("b")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("b"))],
                    checks=[ttk.SameDim(ttk.Numel("a"), ttk.DimSize("b", 0) * 2, ttk.Numel("b"))])
    name, kop = declare(spec)
    assert kop.overload(meta(3, 4), meta(6, 2)).shape == (6, 2)  # 12 == 6 * 2 == 12
    with pytest.raises(ttk.InputError, match=r"Numel\('a'\) = 12 and \(DimSize\('b', 0\) \* 2\) = 8 and "
                                             r"Numel\('b'\) = 12 must be equal"):
        kop.overload(meta(3, 4), meta(4, 3))


class _Model(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x, w):
        return self.op(x, w, 1e-6)


def test_export_with_dynamic_batch_keeps_the_check():
    """A dynamic batch on x: the checked sizes (x's last axis, w) are static and agree; the export holds."""
    name, kop = declare(rmsnorm_mixed_spec())
    batch = torch.export.Dim("batch", min=1, max=4096)
    ep = torch.export.export(_Model(kop.overload), (meta(8, 64, dtype=F16), meta(64)),
                             dynamic_shapes=({0: batch}, None))
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    assert isinstance(out.meta["val"].shape[0], torch.SymInt) and out.meta["val"].dtype == F16
    # the example inputs disagree: refused while tracing, with our message
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 64 and w.shape\[0\] = 32 must be equal"):
        torch.export.export(_Model(kop.overload), (meta(8, 64, dtype=F16), meta(32)), dynamic_shapes=({0: batch}, None))


def test_export_with_dynamic_checked_dims():
    """The checked sizes dynamic: one Dim shared by both traces; two independent Dims are refused by
    torch.export, which names the relation the check needs (the trace recorded it as a guard)."""
    name, kop = declare(rmsnorm_mixed_spec())
    batch, hidden = torch.export.Dim("batch"), torch.export.Dim("hidden", min=2, max=8192)
    ep = torch.export.export(_Model(kop.overload), (meta(8, 64, dtype=F16), meta(64)),
                             dynamic_shapes=({0: batch, 1: hidden}, {0: hidden}))
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    assert all(isinstance(d, torch.SymInt) for d in out.meta["val"].shape)
    other = torch.export.Dim("other", min=2, max=8192)
    with pytest.raises(Exception, match=r"(?s)other.*hidden|hidden.*other") as info:
        torch.export.export(_Model(kop.overload), (meta(8, 64, dtype=F16), meta(64)),
                            dynamic_shapes=({0: batch, 1: hidden}, {0: other}))
    assert "equal" in str(info.value)


def test_same_shape_with_a_shared_dynamic_batch():
    name, kop = declare(add_spec())
    batch = torch.export.Dim("batch")

    class M(torch.nn.Module):
        def forward(self, a, b):
            return kop.overload(a, b)

    ep = torch.export.export(M(), (meta(8, 3), meta(8, 3)), dynamic_shapes=({0: batch}, {0: batch}))
    assert isinstance([n for n in ep.graph.nodes if n.op == "output"][0].args[0][0].meta["val"].shape[0], torch.SymInt)


# ---------- eager: the generated launcher checks before allocating or launching ----------

def _launcher(kop, tensors, kdt=F32):
    plan = kop.plan(tuple(t.dim() for t in tensors))
    holder = {}
    fn = build_launcher(kop, recipe.make(kop.sig, kdt, plan, None), StubKernel(),
                        launch=lambda *a: holder["rec"](*a), stream=lambda dev: 7)
    holder["rec"] = Recorder(fn.pack)
    return fn, holder["rec"]


def test_eager_launcher_refuses_before_launching(monkeypatch):
    name, kop = declare(add_spec())
    a, b = torch.randn(3, 100), torch.randn(3, 100)
    fn, rec = _launcher(kop, [a, b])
    y = fn(a, b)
    assert y.shape == (3, 100) and len(rec.calls) == 1
    allocated = []
    monkeypatch.setitem(fn.__globals__, "_empty_like", lambda *x, **k: allocated.append(x))
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(3, 100\) and 'b' \(3, 99\) must have equal shapes"):
        fn(a, torch.randn(3, 99))
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(3, 100\) and 'b' \(100, 3\) must have equal shapes"):
        fn(a, torch.randn(100, 3))
    assert len(rec.calls) == 1 and allocated == []  # nothing allocated, nothing launched


def test_eager_launcher_same_dim():
    name, kop = declare(rmsnorm_mixed_spec())
    x, w = torch.randn(4, 33).half(), torch.rand(33)
    fn, rec = _launcher(kop, [x, w], (F16, F32))
    fn(x, w, 1e-6)
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 33 and w.shape\[0\] = 32 must be equal"):
        fn(x, torch.rand(32), 1e-6)
    assert len(rec.calls) == 1
    assert "s0[1] != s1[0]" in fn.source  # one comparison of hoisted sizes


def test_launch_into_checks(monkeypatch):
    """TensorRT's JIT impl and the replays launch through launch_into: the check holds there too."""
    from trt_kernels.eager.cuda_kernel import launch_into

    name, kop = declare(add_spec())
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        launch_into(kop, [torch.randn(4), torch.randn(5)], [torch.empty(4)], 0)


# ---------- override paths: meta_fn / eager_fn ----------

def test_checks_apply_to_meta_fn_and_eager_fn():
    def meta_fn(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(a)

    calls = []

    def eager_fn(a, b):
        calls.append(1)
        return a + b

    name, kop = declare(ttk.KernelSpec(kernel_source="extern \"C\" __global__ void k(const float* a, const float* b, "
                                       "float* y) {}", kernel_name="k", inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
                                       checks=[ttk.SameShape("a", "b")]), meta_fn=meta_fn, eager_fn=eager_fn)
    assert kop.overload(meta(2, 3), meta(2, 3)).shape == (2, 3)
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        kop.overload(meta(2, 3), meta(3, 2))
    # the CUDA kernel torch calls (here without a GPU: called directly) checks before eager_fn runs
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        kop.cuda_impl(torch.randn(2, 3), torch.randn(2, 2))
    assert calls == []
    assert torch.equal(kop.cuda_impl(torch.ones(2), torch.ones(2)), torch.full((2,), 2.0)) and calls == [1]


def test_ptx_op_takes_checks():
    from trt_kernels.sources.nvrtc import compile_program

    src = 'extern "C" __global__ void my_add(const float* a, const float* b, int n, float* y) {}'
    prog = compile_program(src, ["my_add"], arch="sm_90")
    name = unique("ttk_chk")
    op = ttk.ptx_op(name, prog.ptx, "my_add", inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
                    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("a"))], extras=[ttk.Numel("a")],
                    geometry=ttk.Elementwise(), checks=[ttk.SameShape("a", "b")])
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        op(meta(4), meta(5))


# ---------- Torch-TensorRT's converter ----------

class _ITensor:
    def __init__(self, shape):
        self.shape = tuple(shape)


def test_converter_checks_static_sizes():
    from trt_kernels.converters import check_sizes

    name, kop = declare(rmsnorm_mixed_spec())
    check_sizes(kop, [_ITensor((4, 128)), _ITensor((128,))])
    check_sizes(kop, [_ITensor((-1, -1)), _ITensor((64,))])  # x's last axis dynamic: the traced graph checked it
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 128 and w.shape\[0\] = 64 must be equal .*"
                                             r"\(found when adding the TensorRT layer\)"):
        check_sizes(kop, [_ITensor((-1, 128)), _ITensor((64,))])
    name, kop = declare(add_spec())
    with pytest.raises(ttk.InputError, match=r"inputs 'a' \(\?, 5\) and 'b' \(\?, 4\) must have equal shapes"):
        check_sizes(kop, [_ITensor((-1, 5)), _ITensor((-1, 4))])
    check_sizes(kop, [_ITensor((-1, 5)), _ITensor((3, 5))])


def test_converter_refuses_before_adding_the_layer():
    from trt_kernels.converters import convert
    from trt_kernels.plugins.qdp import attr_field

    name, kop = declare(add_spec())
    added = []
    net = types.SimpleNamespace(add_plugin=lambda *a, **k: added.append(a))
    with pytest.raises(ttk.InputError, match="must have equal shapes"):
        convert(kop, types.SimpleNamespace(net=net), (_ITensor((2, 3)), _ITensor((3, 2))), {}, "n",
                get_trt_tensor=lambda ctx, v, n: v, plugin_op=lambda *a, **k: None, aot=True, attr_field=attr_field)
    assert added == []
