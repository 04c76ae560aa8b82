"""Bad declarations and bad calls are this package's errors, naming the op, the field or expression and
the fix, raised before anything launches (issue 15, items 4, 7, 11, 12, 13, 14). CPU: calls go through
the generated launcher with a recording stand-in for cuLaunchKernel, and through the fake impl."""


import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import SIGMOID, TEMPLATE_SIGMOID, row_sum_spec, sigmoid_spec, unique
from test_fastpath import dispatcher_for
from trt_kernels import registry


@pytest.fixture(autouse=True)
def arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


def refused(spec, match, field, **kw):
    name = kw.pop("op_name", None) or unique("ttk_bad")
    with pytest.raises(ttk.SpecError, match=match) as info:
        ttk.cuda_kernel_op(name, spec, **kw)
    msg = str(info.value)
    assert msg.startswith(name) or msg.startswith("op_name"), msg
    assert field in msg and "Fix:" in msg, msg
    assert registry.lookup(name) is None
    return msg


# ---------------- item 4: NVRTC options the package controls ----------------

@pytest.mark.parametrize("option,field", [
    ("--gpu-architecture=sm_80", "arch_override"), ("-arch=sm_80", "arch_override"), ("-arch", "arch_override"),
    ("--std=c++14", "compile_std"), ("-std=c++20", "compile_std"), ("-I/opt/include", "include_paths"),
    ("--include-path=/opt", "include_paths"), ("-rdc=true", "relocatable"), ("-dlto", "link-time"),
    ("--fdevice-syntax-only", "no PTX"), ("-fdevice-syntax-only", "no PTX"), ("--device-c", "relocatable"),
    ("-dc", "relocatable"),
])
def test_controlled_compile_options_are_refused(option, field):
    msg = refused(sigmoid_spec(compile_options=[option]), "compile_options", field)
    assert repr(option) in msg


# ---------------- item 11: bad fields are SpecErrors at declaration ----------------

class Not:
    pass


BAD_SPECS = [
    (dict(extras=None), "extras"), (dict(compile_options=None), "compile_options"),
    (dict(compile_options=[1]), r"compile_options\[0\]"), (dict(compile_options="-O3"), "compile_options"),
    (dict(arch_override=(9,)), "arch_override"), (dict(arch_override="sm-90"), "arch_override"),
    (dict(arch_override=Not()), "arch_override"), (dict(include_paths="abc"), "include_paths"),
    (dict(include_paths=[None]), r"include_paths\[0\]"), (dict(compile_std="c++99"), "compile_std"),
    (dict(kernel_source=SIGMOID + "// \ud800"), "kernel_source"), (dict(inputs=ttk.InputDecl("x")), "inputs"),
    (dict(outputs=ttk.OutputDecl("y", shape=ttk.SameAs("x"))), "outputs"), (dict(dtypes=torch.float32), "dtypes"),
    (dict(geometry=ttk.Elementwise(tactics=None)), "geometry.tactics"),
    (dict(geometry=ttk.Custom(grid=(ttk.Numel("x"),), block=(256,), shared_mem=-1)), "geometry.shared_mem"),
    (dict(geometry=ttk.Custom(grid=(ttk.Numel("x"),), block=(256,), shared_mem=2**40)), "geometry.shared_mem"),
    (dict(geometry=ttk.Custom(grid=(-5,), block=(256,))), r"geometry.grid\[0\]"),
    (dict(geometry=ttk.Custom(grid=(2**40,), block=(256,))), r"geometry.grid\[0\]"),
    (dict(geometry=ttk.Custom(grid=(1, 70000), block=(256,))), r"geometry.grid\[1\]"),
    (dict(geometry=ttk.Custom(grid=(ttk.cdiv(8, 0),), block=(256,))), "divides by zero"),
    (dict(geometry=ttk.Custom(grid=(ttk.Numel("x") // 0,), block=(256,))), "divides by zero"),
    (dict(geometry=ttk.Custom(grid=(1,), block=(1, 1, 65))), "geometry.block"),
    (dict(extras=[2**40]), r"extras\[0\]"),
    (dict(outputs=[ttk.OutputDecl("y", shape=(-3,))]), r"outputs\[0\].shape\[0\]"),
    (dict(outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (0,), keepdim="yes"))],
          geometry=ttk.Reduction(reduce_dims=(0,))), "keepdim"),
]


@pytest.mark.parametrize("kw,field", BAD_SPECS, ids=[f[1] for f in BAD_SPECS])
def test_bad_spec_fields(kw, field):
    refused(sigmoid_spec(**kw), field, field.replace("\\", ""))


def test_bad_reduction_axes_and_same_as_output():
    refused(row_sum_spec(geometry=ttk.Reduction(reduce_dims=(1.5,))), "reduce_dims", "geometry.reduce_dims")
    refused(row_sum_spec(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))]), "one block per element",
            "geometry")


@pytest.mark.parametrize("op_name,match", [
    ("r::class", "Python keyword"), ("def::x", "Python keyword"), ("prim::thing", "reserved by torch"),
    ("_::thing", "reserved by torch"), ("trt::thing", "reserved by TensorRT"),
])
def test_bad_op_names(op_name, match):
    refused(sigmoid_spec(), match, "op_name", op_name=op_name)


@pytest.mark.parametrize("kw,field", [
    (dict(meta_fn=123), "meta_fn"), (dict(eager_fn="f"), "eager_fn"), (dict(aot_fn=1.0), "aot_fn"),
    (dict(backward=3), "backward"), (dict(schema=5), "schema"),
])
def test_bad_callables_and_schema_types(kw, field):
    refused(sigmoid_spec(), field, field, **kw)


# ---------------- item 7: declared ndim at call time ----------------

def test_declared_ndim_is_enforced_in_fake_and_eager():
    name = unique("ttk_bad")
    spec = sigmoid_spec(inputs=[ttk.InputDecl("x", ndim=2)],
                        outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0), ttk.DimSize("x", 1)))],
                        extras=[ttk.DimSize("x", 0), ttk.DimSize("x", 1)],
                        geometry=ttk.Custom(grid=(ttk.DimSize("x", 0),), block=(32,)))
    spec.kernel_source = 'extern "C" __global__ void my_sigmoid(const float* x, int r, int c, float* y) {}'
    op = ttk.cuda_kernel_op(name, spec)
    with FakeTensorMode():
        assert op(torch.empty(2, 3)).shape == (2, 3)
        with pytest.raises(ttk.InputError, match=r"input 'x': has 3 dims but is declared with ndim=2"):
            op(torch.empty(2, 3, 4))
    dispatch, holder, _ = dispatcher_for(name)
    with pytest.raises(ttk.InputError, match="declared with ndim=2"):
        dispatch(torch.randn(2, 3, 4))
    assert "rec" not in holder or holder["rec"].calls == []


# ---------------- item 12: sizes out of range at call time ----------------

CUSTOM_SRC = 'extern "C" __global__ void k(const float* x, int n, float* y) {}'


def custom(**geometry_and_outputs):
    outputs = geometry_and_outputs.pop("outputs", [ttk.OutputDecl("y", shape=ttk.SameAs("x"))])
    if geometry_and_outputs.pop("no_extras", False):
        return sigmoid_spec(kernel_source='extern "C" __global__ void k(const float* x, float* y) {}', kernel_name="k",
                            outputs=outputs, extras=[], geometry=ttk.Custom(block=(32,), **geometry_and_outputs))
    return sigmoid_spec(kernel_source=CUSTOM_SRC, kernel_name="k", outputs=outputs,
                        geometry=ttk.Custom(block=(32,), **geometry_and_outputs))


@pytest.mark.parametrize("spec,x,match", [
    (custom(grid=(ttk.cdiv(ttk.Numel("x"), ttk.DimSize("x", 0)),)), torch.empty(0, 5), r"divides by zero"),
    (custom(grid=(ttk.DimSize("x", 0) - 10,)), torch.empty(3, 2), r"grid\[x\]: \(x.shape\[0\] - 10\) = -7"),
    (custom(grid=(1,), shared_mem=ttk.DimSize("x", 0) - 10), torch.empty(3, 2), r"shared_mem: .* = -7"),
    (custom(grid=(1,), outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0) - 5,))]), torch.empty(3, 2),
     r"outputs\[0\].shape\[0\]: \(x.shape\[0\] - 5\) = -2 is out of range"),
    (custom(grid=(1,), no_extras=True, outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0), ttk.DimSize("x", 0)))]),
     torch.zeros(1).expand(2**40), r"outputs\[0\]: shape \(1099511627776, 1099511627776\) has .* over int64"),
])
def test_bad_sizes_are_refused_before_launching(spec, x, match):
    name = unique("ttk_bad")
    ttk.cuda_kernel_op(name, spec)
    dispatch, holder, _ = dispatcher_for(name)
    with pytest.raises(ttk.InputError, match=match) as info:
        dispatch(x)
    assert str(info.value).startswith(name) and "Fix:" in str(info.value)
    assert "rec" not in holder or holder["rec"].calls == []
    with FakeTensorMode(), pytest.raises(ttk.InputError):  # static shapes: the fake impl agrees
        op = getattr(getattr(torch.ops, name.split("::")[0]), name.split("::")[1])
        op(torch.empty(tuple(x.shape)))


# ---------------- item 13: NVRTC line numbers ----------------

def test_compile_errors_point_at_the_users_line_in_template_kernels():
    src = TEMPLATE_SIGMOID.replace("int i = blockIdx.x", "int i = undefined_name + blockIdx.x")
    line = src.splitlines().index(next(ln for ln in src.splitlines() if "undefined_name" in ln)) + 1
    spec = sigmoid_spec(kernel_source=src, kernel_name="tsig<T>", dtypes=[torch.float32, torch.float16])
    with pytest.raises(ttk.CompileError) as info:
        ttk.cuda_kernel_op(unique("ttk_bad"), spec)
    assert f"({line}): error" in str(info.value), str(info.value)[:500]


# ---------------- item 14: mistakes surface at declaration without a GPU or an arch ----------------

@pytest.mark.skipif(torch.cuda.is_available(), reason="checks declaring on a machine without a GPU")
@pytest.mark.parametrize("kw,error", [
    (dict(kernel_source=SIGMOID.replace("int i", "int i = ;")), ttk.CompileError),
    (dict(kernel_name="no_such_kernel"), ttk.CompileError),
    (dict(kernel_source=SIGMOID.replace("int n,", "float n,")), ttk.KernelABIError),
])
def test_mistakes_surface_at_declaration_without_gpu_or_arch(kw, error, monkeypatch):
    monkeypatch.delenv("TRT_KERNELS_ARCH")
    with pytest.raises(error):
        ttk.cuda_kernel_op(unique("ttk_bad"), sigmoid_spec(**kw))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks declaring on a machine without a GPU")
def test_good_declaration_without_gpu_or_arch_is_compiled_for_the_check_arch(monkeypatch):
    monkeypatch.delenv("TRT_KERNELS_ARCH")
    name = unique("ttk_bad")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    assert list(registry.get(name).builds()) == [registry.CHECK_ARCH]


def test_a_bad_trt_kernels_arch_is_named_with_its_fix(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_9x")
    name = unique("ttk_bad_env_arch")
    with pytest.raises(ValueError, match=r"TRT_KERNELS_ARCH=sm_9x: .*Fix: .*TRT_KERNELS_ARCH=sm_90, or unset it"):
        ttk.cuda_kernel_op(name, sigmoid_spec())
    assert registry.lookup(name) is None
