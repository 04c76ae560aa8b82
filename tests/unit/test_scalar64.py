"""64-bit integer scalar inputs (``ScalarInput(name, int, ctype="long long")``), on CPU: the declaration's
checks, the kernel parameter list and the ABI check against NVRTC's PTX, the PTX narrowed for TensorRT's AOT
layout, the values TensorRT's 32-bit extra arguments can carry, and the eager launchers (generated Python,
compiled C, native C++) over recording launches, exact for values over 2**31 and negative ones."""

import re

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import unique
from test_fastpath import launcher_for
from trt_kernels import dtypes, recipe, registry
from trt_kernels.sources.abi import ptx_params

ARCH = "sm_90"
BIG = 2**40 + 12345  # over 2**31: what a C int cannot hold
U64_MAX = 2**64 - 1
I64_MIN, I64_MAX = -(2**63), 2**63 - 1


@pytest.fixture(autouse=True)
def _arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", ARCH)


OFFSET = r"""
#include <stdint.h>
extern "C" __global__ void add_offset(const float* x, long long offset, uint64_t seed, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)(offset % 1000) + (float)(seed % 7);
}
"""


def offset_spec(**kw):
    args = dict(kernel_source=OFFSET, kernel_name="add_offset",
                inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int, ctype="long long"),
                        ttk.ScalarInput("seed", int, ctype="uint64_t")],
                outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                geometry=ttk.Elementwise(block=(128,)))
    args.update(kw)
    return ttk.KernelSpec(**args)


def declare(spec, **kw):
    name = unique("ttk_s64")
    ttk.cuda_kernel_op(name, spec, **kw)
    return name, registry.get(name)


# ---------------- declarations ----------------


def test_the_c_type_makes_the_kernel_parameter():
    _, kop = declare(offset_spec())
    params = kop.sig.params(torch.float32)
    assert [(p.label.split(" /*")[0], p.size, p.code) for p in params] == [
        ("const float* x", 8, "Q"), ("long long offset", 8, "q"), ("unsigned long long seed", 8, "Q"),
        ("int n", 4, "i"), ("float* y", 8, "Q")]
    # torch's schema int is int64 already: the schema is as for a C int
    assert kop.schema == "(Tensor x, int offset, int seed) -> Tensor"


@pytest.mark.parametrize("ctype, code", [
    (None, "i"), ("int", "i"), ("int32_t", "i"), ("unsigned", "I"), ("uint32_t", "I"), ("long", "q"),
    ("long long", "q"), ("int64_t", "q"), ("ptrdiff_t", "q"), ("unsigned long long", "Q"), ("uint64_t", "Q"),
    ("size_t", "Q")])
def test_every_c_integer_type_of_a_size_is_a_scalar_type(ctype, code):
    from trt_kernels.signature import scalar_c

    d = ttk.ScalarInput("k", int, ctype=ctype)
    assert scalar_c(d).code == code and scalar_c(d) == dtypes.SCALAR_CTYPES[int][ctype or "int"]


def test_a_tuple_input_takes_its_c_type_per_element():
    src = ('#include <stdint.h>\nextern "C" __global__ void k(const float* x, int64_t lo_0, int64_t lo_1, int n, '
           'float* y) {}')
    _, kop = declare(ttk.KernelSpec(
        kernel_source=src, kernel_name="k",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("lo", (int, 2), ctype="int64_t")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(128,))))
    assert [(p.code, p.element) for p in kop.sig.params(torch.float32) if p.role == "scalar"] == [("q", 0), ("q", 1)]
    assert recipe.tensorrt_narrowed(kop.sig.params(torch.float32)) == {1: True, 2: True}


@pytest.mark.parametrize("scalar, match", [
    (ttk.ScalarInput("offset", int, ctype="ulong"),
     r"inputs\[1\]\.ctype: 'ulong' is not a C type a int scalar input may have\. Fix: use one of 'int', "),
    (ttk.ScalarInput("offset", int, ctype=8), r"inputs\[1\]\.ctype: 8 is not a C type"),
    (ttk.ScalarInput("offset", float, ctype="double"),
     r"inputs\[1\]\.ctype: 'double': a 64-bit float scalar is not supported .*Fix: make the kernel's parameter a "
     r"float"),
    (ttk.ScalarInput("offset", float, ctype="long"),
     r"inputs\[1\]\.ctype: 'long' is a C integer type, but the input is a float\. Fix: declare "
     r"ttk\.ScalarInput\(name, int, ctype='long'\)"),
    (ttk.ScalarInput("offset", bool, ctype="int"), r"inputs\[1\]\.ctype: 'int' is a C integer type, but the input is "
                                                   r"a bool"),
    (ttk.ScalarInput("offset", (float, 2), ctype="double"), r"'double': a 64-bit float scalar is not supported"),
    (ttk.ScalarInput("offset", int, default=BIG),
     r"inputs\[1\]\.default: 1099511640121 does not fit the kernel's 32-bit C int \(int\)\. Fix: give a value in "
     r"\[-2147483648, 2147483647\], or, where the kernel's parameter is 64-bit, say so: ctype='long long'"),
    (ttk.ScalarInput("offset", int, default=-1, ctype="uint64_t"),
     r"inputs\[1\]\.default: -1 does not fit the kernel's 64-bit unsigned C int \(unsigned long long\)\. Fix: give a "
     r"value in \[0, 18446744073709551615\]"),
    (ttk.ScalarInput("offset", int, default=2**63, ctype="uint64_t"),
     r"inputs\[1\]\.default: 9223372036854775808 is over 2\*\*63-1, which a torch schema's int \(int64\) cannot hold"),
    (ttk.ScalarInput("offset", (int, 2), default=(1, 2**63), ctype="int64_t"),
     r"inputs\[1\]\.default\[1\]: 9223372036854775808 does not fit the kernel's 64-bit C int \(long long\)"),
])
def test_bad_c_types_and_defaults_are_refused(scalar, match):
    spec = offset_spec(inputs=[ttk.InputDecl("x"), scalar])
    with pytest.raises(ttk.SpecError, match=match) as info:
        declare(spec)
    assert str(info.value).startswith("ttk_s64::op")  # the op's name first


def test_a_64_bit_default_is_in_the_schema_and_reaches_the_launch():
    name, kop = declare(offset_spec(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int, ctype="long long"),
                                            ttk.ScalarInput("seed", int, default=2**62 + 3, ctype="uint64_t")]))
    assert kop.schema == f"(Tensor x, int offset, int seed={2**62 + 3}) -> Tensor"
    x = torch.randn(5)
    fn, rec = launcher_for(name, [x])
    fn(x, -BIG, *kop.defaults)
    assert rec.calls[-1]["vals"][1:4] == [-BIG, 2**62 + 3, 5]


def test_a_given_schema_may_have_a_64_bit_default():
    _, kop = declare(offset_spec(), schema=f"(Tensor x, int offset, int seed={BIG}) -> Tensor")
    assert kop.defaults == (BIG,)
    with pytest.raises(ttk.SpecError, match=r"default -1 does not fit the kernel's C int"):
        declare(offset_spec(), schema="(Tensor x, int offset, int seed=-1) -> Tensor")


def test_the_fake_impl_is_unaffected():
    name, _ = declare(offset_spec())
    ns, n = name.split("::")
    with FakeTensorMode():
        y = getattr(getattr(torch.ops, ns), n)(torch.empty(7, 3), -BIG, U64_MAX // 2)
    assert y.shape == (7, 3) and y.dtype == torch.float32


C_INT = 'extern "C" __global__ void k(const float* x, int k, int n, float* y) {}'


@pytest.mark.parametrize("spec, scalars, match", [
    (lambda: offset_spec(), (0, -1), r"scalar 'seed' = -1 does not fit a 64-bit unsigned C int \(unsigned long long\)"
                                     r"\. Fix: pass a value in \[0, 18446744073709551615\]"),
    (lambda: ttk.KernelSpec(kernel_source=C_INT, kernel_name="k",
                            inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int)],
                            outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                            geometry=ttk.Elementwise()),
     (2**40,), r"scalar 'k' = 1099511627776 does not fit a 32-bit C int\. Fix: pass a value in \[-2147483648, "),
])
def test_the_fake_impl_and_export_refuse_what_no_launch_can_pass(spec, scalars, match):
    # a traced graph kept a value every eager launch and TensorRT build would then refuse
    name, _ = declare(spec())
    ns, n = name.split("::")
    op = getattr(getattr(torch.ops, ns), n)
    with FakeTensorMode(), pytest.raises(ttk.InputError, match=match):
        op(torch.empty(7, 3), *scalars)

    class M(torch.nn.Module):
        def forward(self, x):
            return op(x, *scalars)

    with pytest.raises(ttk.InputError, match=match):
        torch.export.export(M(), (torch.empty(7, 3, device="meta"),))


# ---------------- the ABI check and parameter names ----------------


def test_a_64_bit_kernel_parameter_declared_int_is_named_with_its_fix():
    spec = offset_spec(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("offset", int),
                               ttk.ScalarInput("seed", int, ctype="uint64_t")])
    with pytest.raises(ttk.KernelABIError) as info:
        declare(spec)
    msg = str(info.value)
    assert "parameter 1: the kernel has u64; the declaration gives int offset (s32)" in msg
    assert "Fix: the kernel's parameter is a 64-bit integer (u64): declare it so, " \
           "ttk.ScalarInput('offset', int, ctype='long long')" in msg
    assert "parameter 2" not in msg  # the other scalar is right


def test_a_32_bit_kernel_parameter_declared_64_bit_is_named_with_its_fix():
    src = 'extern "C" __global__ void k(const float* x, int k, int n, float* y) {}'
    spec = ttk.KernelSpec(kernel_source=src, kernel_name="k",
                          inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int, ctype="int64_t")],
                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                          extras=[ttk.SizeArg("n", ttk.Numel("x"))], geometry=ttk.Elementwise(block=(128,)))
    with pytest.raises(ttk.KernelABIError) as info:
        declare(spec)
    msg = str(info.value)
    assert "parameter 1: the kernel has u32; the declaration gives long long k (s64)" in msg
    assert "Fix: the kernel's parameter is a 32-bit integer (u32): declare it so, " \
           "ttk.ScalarInput('k', int, ctype='int')" in msg


def test_a_double_kernel_parameter_gets_its_fix():
    src = 'extern "C" __global__ void k(const float* x, double a, int n, float* y) {}'
    spec = ttk.KernelSpec(kernel_source=src, kernel_name="k",
                          inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                          extras=[ttk.SizeArg("n", ttk.Numel("x"))], geometry=ttk.Elementwise(block=(128,)))
    with pytest.raises(ttk.KernelABIError, match=r"the kernel's parameter is a double, which scalar inputs do not "
                                                 r"take"):
        declare(spec)


def test_parameters_are_matched_by_name_in_the_kernels_own_order():
    src = r"""
#include <stdint.h>
__global__ void k(float* y, uint64_t seed, const float* x, size_t n, int64_t offset) {
  size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + (float)((offset + (long long)seed) % 1000);
}
"""
    from trt_kernels.sources.cuda_params import kernel_param_names

    assert kernel_param_names(src, "k") == ["y", "seed", "x", "n", "offset"]
    assert kernel_param_names("__global__ void k(const float* x, int64_t, float* y) {}", "k") is None  # unnamed
    _, kop = declare(offset_spec(kernel_source=src, kernel_name="k", extras=[ttk.SizeArg("n", ttk.Numel("x"),
                                                                                         "size_t")]))
    params = kop.sig.params(torch.float32)
    assert [(p.role, p.code) for p in params] == [("output", "Q"), ("scalar", "Q"), ("input", "Q"), ("extra", "Q"),
                                                 ("scalar", "q")]
    # TensorRT's AOT layout: (x, seed, n, offset, y), each 64-bit integer narrowed to 32 bits of its signedness
    assert recipe.tensorrt_order(params) == [2, 1, 3, 4, 0]
    symbol, ptx = kop.aot_kernel(torch.float32, 1, ARCH)
    assert ptx_params(ptx, symbol) == [("u64", 8), ("u32", 4), ("u32", 4), ("s32", 4), ("u64", 8)]


# ---------------- TensorRT's AOT layout ----------------


def test_the_aot_ptx_narrows_the_64_bit_scalars():
    _, kop = declare(offset_spec())
    params = kop.sig.params(torch.float32)
    assert recipe.tensorrt_narrowed(params) == {1: True, 2: False}
    assert kop.aot.aot and "64-bit sizes and scalars taken as 32-bit" in kop.aot.why
    assert "a layer whose 64-bit scalar (offset, seed) is outside the 32 bits" in kop.aot.why
    symbol, ptx = kop.aot_kernel(torch.float32, 1, ARCH)
    assert ptx_params(ptx, symbol) == [("u64", 8), ("s32", 4), ("u32", 4), ("u32", 4), ("u64", 8)]
    text = ptx.decode()
    assert f"ld.param.s32 %ttk_w, [{symbol}_param_1]; cvt.s64.s32" in text
    assert f"ld.param.u32 %ttk_w, [{symbol}_param_2]; cvt.u64.u32" in text
    assert not re.search(rf"ld\.param\.[usb]64\s+%\w+,\s*\[{symbol}_param_[12]\]", text)
    # the eager image keeps the kernel's own 64-bit parameters
    eager = kop.binary(ARCH).kernel(torch.float32).aot_ptx
    assert ptx_params(eager, symbol)[1:3] == [("u64", 8), ("u64", 8)]


@pytest.mark.parametrize("code, value, bits", [
    ("q", 0, 0), ("q", -1, -1), ("q", 2**31 - 1, 2**31 - 1), ("q", -(2**31), -(2**31)), ("q", 2**31, None),
    ("q", -(2**31) - 1, None), ("q", I64_MAX, None), ("Q", 2**31, -(2**31)), ("Q", 2**32 - 1, -1),
    ("Q", 2**32, None), ("Q", -1, None), ("i", -5, -5), ("I", 2**32 - 1, -1), ("I", -1, None)])
def test_what_a_32_bit_extra_argument_carries(code, value, bits):
    assert recipe.aot_int(code, value) == bits
    if bits is not None:  # the kernel reads the 32 bits and widens them with its signedness
        lo = bits & 0xFFFFFFFF
        assert (lo - 2**32 if code in "iq" and lo >= 2**31 else lo) == value


def test_the_converter_is_told_which_values_need_the_jit_impl():
    _, kop = declare(offset_spec())
    assert recipe.aot_scalar_refusal(kop.sig, {"offset": -(2**31), "seed": 2**32 - 1}) is None
    why = recipe.aot_scalar_refusal(kop.sig, {"offset": 5, "seed": 2**32})
    assert why.startswith("scalar 'seed' = 4294967296 is a 64-bit unsigned long long whose value is outside "
                          "[0, 4294967295]: TensorRT's AOT launch passes scalars as 32-bit extra arguments (SymInt32), "
                          "so the JIT impl")
    assert "'offset' = -2147483649" in recipe.aot_scalar_refusal(kop.sig, {"offset": -(2**31) - 1, "seed": 0})


def test_a_64_bit_size_computed_from_scalars_alone_is_checked_too():
    src = ('extern "C" __global__ void k(const float* x, int k, long long offset, int n, long long span, '
           'float* y) {}')
    _, kop = declare(ttk.KernelSpec(
        kernel_source=src, kernel_name="k",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int), ttk.ScalarInput("offset", int, ctype="long long")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.SizeArg("n", ttk.Numel("x")), ttk.SizeArg("span", ttk.Scalar("k") * 2**20, "long long")],
        geometry=ttk.Elementwise(block=(128,))))
    assert recipe.aot_scalar_refusal(kop.sig, {"k": 2**10, "offset": 1}) is None
    why = recipe.aot_scalar_refusal(kop.sig, {"k": 2**20, "offset": 1})
    assert why.startswith("extras[1] ((Scalar('k') * 1048576)) = 1099511627776, a 64-bit long long computed from "
                          "scalars, is outside [-2147483648, 2147483647]")


# ---------------- eager ----------------


@pytest.mark.parametrize("offset, seed", [(BIG, 3), (-BIG, 2**63 - 1), (I64_MAX, 0), (I64_MIN, 2**32),
                                          (2**31, 2**31), (-1, 1)])
def test_the_launcher_passes_64_bit_values_exactly(offset, seed):
    name, _ = declare(offset_spec())
    x = torch.randn(3, 100)
    fn, rec = launcher_for(name, [x])
    y = fn(x, offset, seed)
    assert rec.calls[-1]["vals"] == [x.data_ptr(), offset, seed, 300, y.data_ptr()]


def test_a_uint64_takes_its_whole_range_where_torch_does_not_stand_between():
    """torch's schema int is int64 (torch refuses 2**63 and over at torch.ops); the launcher itself, which
    TensorRT's JIT impl and the replays call, takes the unsigned range."""
    name, _ = declare(offset_spec())
    x = torch.randn(4)
    fn, rec = launcher_for(name, [x])
    fn(x, 0, U64_MAX)
    assert rec.calls[-1]["vals"][2] == U64_MAX


@pytest.mark.parametrize("offset, seed, match", [
    (2**63, 0, r"scalar 'offset' = 9223372036854775808 does not fit a 64-bit C int \(long long\)\. "
               r"Fix: pass a value in \[-9223372036854775808, 9223372036854775807\]"),
    (0, -1, r"scalar 'seed' = -1 does not fit a 64-bit unsigned C int \(unsigned long long\)\. "
            r"Fix: pass a value in \[0, 18446744073709551615\]"),
    (0, 2**64, r"scalar 'seed' = 18446744073709551616 does not fit a 64-bit unsigned C int"),
])
def test_out_of_range_values_name_the_op_and_the_argument(offset, seed, match):
    name, _ = declare(offset_spec())
    x = torch.randn(4)
    fn, rec = launcher_for(name, [x])
    with pytest.raises(ttk.InputError, match=match) as info:
        fn(x, offset, seed)
    assert str(info.value).startswith(f"{name}: ")
    assert rec.calls == []


def test_a_c_int_scalar_over_2_31_names_the_64_bit_fix():
    src = 'extern "C" __global__ void k(const float* x, int k, int n, float* y) {}'
    name, _ = declare(ttk.KernelSpec(kernel_source=src, kernel_name="k", inputs=[ttk.InputDecl("x"),
                                                                                 ttk.ScalarInput("k", int)],
                                     outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                                     geometry=ttk.Elementwise(block=(128,))))
    x = torch.randn(4)
    fn, _ = launcher_for(name, [x])
    with pytest.raises(ttk.InputError, match=r"scalar 'k' = 2147483648 does not fit a 32-bit C int\. Fix: pass a "
                                             r"value in \[-2147483648, 2147483647\], or, where the kernel's parameter "
                                             r"is 64-bit, declare it so: "
                                             r"ttk\.ScalarInput\(name, int, ctype='long long'\)"):
        fn(x, 2**31)


def test_a_size_read_from_a_64_bit_scalar_is_checked_at_its_width():
    """``Scalar("offset")`` in a size expression: the launcher checks the scalar against its own C type (a
    64-bit one takes values over 2**31), then the size against the size's."""
    spec = offset_spec(extras=[ttk.SizeArg("n", ttk.Numel("x")), ttk.SizeArg("blocks", ttk.Scalar("offset") // 4096,
                                                                               "long long")],
                       kernel_source=OFFSET.replace("int n,", "int n, long long blocks,"))
    name, _ = declare(spec)
    x = torch.randn(10)
    fn, rec = launcher_for(name, [x])
    fn(x, BIG, 1)
    assert rec.calls[-1]["vals"][3:5] == [10, BIG // 4096]
    fn(x, -BIG, 1)
    assert rec.calls[-1]["vals"][4] == -BIG // 4096


def test_the_compiled_launcher_packs_the_same_bytes(tmp_path):
    from test_launcher import NO_BUILD, DriverStandIn, _same_call, both_launchers

    from trt_kernels.eager import compiled_launcher

    if NO_BUILD is not None:
        pytest.skip(f"no C build here: {NO_BUILD}")
    built = compiled_launcher.load(tmp_path)
    assert built.kind == "compiled", built.reason
    driver = DriverStandIn()
    prev = built.module.set_entry(driver.address)
    try:
        name, _ = declare(offset_spec())
        x = torch.randn(257)
        fpy, rec, fc = both_launchers(name, [x], built, driver)
        for offset, seed in [(BIG, 2**63 - 1), (I64_MIN, 0), (-1, 2**32 + 1)]:
            ypy, yc = fpy(x, offset, seed), fc(x, offset, seed)
            _same_call(rec.calls[-1], driver.calls[-1], 4, [ypy], [yc])
            assert driver.calls[-1]["vals"][1:4] == [offset, seed, 257]
        assert fc(x, 0, U64_MAX) is not None and driver.calls[-1]["vals"][2] == U64_MAX
        messages = []
        for fn in (fpy, fc):
            for args in ((2**63, 0), (0, -1)):
                with pytest.raises(ttk.InputError) as e:
                    fn(x, *args)
                messages.append(str(e.value))
        assert messages[:2] == messages[2:]
        assert "scalar 'seed' = -1 does not fit a 64-bit unsigned C int" in messages[1]
    finally:
        built.module.set_entry(prev)


def test_the_native_kernel_serves_64_bit_scalars():
    from test_native import NativeOp, compare

    from trt_kernels.eager import native

    nat = native._prepare(need_cuda=False)
    if nat.module is None:
        pytest.skip(f"the native kernel cannot be built here: {nat.reason}")
    nop = NativeOp(nat.module, offset_spec(), (2,))
    try:
        assert native.eligible(nop.kop) is None
        a = torch.randn(3, 100)
        for offset, seed in [(BIG, 7), (-BIG, 2**63 - 1), (I64_MIN, 0), (I64_MAX, 2**32), (0, 0)]:
            assert compare(nop, (a, offset, seed)) == "native"
        assert compare(nop, (a, 0, -1)) == "raised"  # a negative uint64: the Python launcher's InputError
    finally:
        nop.close()


# ---------------- Triton ----------------


def test_a_triton_int64_scalar_is_an_i64_parameter():
    triton = pytest.importorskip("triton")
    tl = pytest.importorskip("triton.language")

    @triton.jit
    def k64(x_ptr, off, n, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        v = tl.load(x_ptr + offs, mask=offs < n) + (off % 1000).to(tl.float32)
        tl.store(y_ptr + offs, v, mask=offs < n)

    name = unique("ttk_s64_tri")
    ttk.triton_kernel_op(name, k64, inputs=[ttk.InputDecl("x"), ttk.ScalarInput("off", int, ctype="int64_t")],
                         outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                         grid=(ttk.cdiv(ttk.Numel("x"), 256),), constexprs={"BLOCK": 256}, arch_override=ARCH)
    kop = registry.get(name)
    assert [p.code for p in kop.sig.params(torch.float32)] == ["Q", "q", "i", "Q"]
    ptx = kop.image(torch.float32, 1, ARCH).aot_ptx
    assert [t for t, _ in ptx_params(ptx, "k64")][:4] == ["u64", "u64", "u32", "u64"]


# ---------------- the ONNX route ----------------


def test_the_onnx_route_takes_int32_values_and_says_why_not_more():
    """TensorRT's ONNX parser reads an int node attribute as an INT32 plugin field: a 64-bit scalar travels
    there within int32, and a value outside is refused with the route that takes it."""
    from trt_kernels import onnx_export
    from trt_kernels.errors import OnnxExportError

    _, kop = declare(offset_spec())
    offset, seed = kop.sig.scalar_decls
    assert onnx_export._attribute(kop, offset, -(2**31)) == -(2**31)
    assert onnx_export._attribute(kop, seed, 2**31 - 1) == 2**31 - 1
    with pytest.raises(OnnxExportError, match=r"int argument 'offset' is 1099511640121, outside int32: the kernel "
                                              r"takes a long long, but TensorRT's ONNX parser reads an int node "
                                              r"attribute as an INT32 plugin field.*Fix: pass a value in int32 range, "
                                              r"or build the engine through Torch-TensorRT"):
        onnx_export._attribute(kop, offset, BIG)
