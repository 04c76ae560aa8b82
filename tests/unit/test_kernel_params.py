"""Kernels declared as their authors wrote them: their own parameter order (matched by name, or listed in
``params``), sizes as named parameters (``SizeArg``) of any C integer type, and the PTX rewritten to
TensorRT's AOT layout. CPU tier: NVRTC compiles, nothing launches (the GPU tier launches them)."""

import re

import pytest
import torch

import trt_kernels as ttk
from kernels import LAYERNORM, SAXPY, layernorm_spec, saxpy_spec, unique
from trt_kernels import recipe, registry
from trt_kernels.plan import build_plan, concrete
from trt_kernels.sources.abi import ptx_params
from trt_kernels.sources.cuda_params import kernel_param_names, kernel_params, pointee
from trt_kernels.sources.ptx_entry import rearranged


def _declare(spec):
    name = unique("ttk_kparams")
    ttk.cuda_kernel_op(name, spec)
    return registry.lookup(name)


def test_the_kernel_parameter_names_are_read_from_its_declaration():
    assert kernel_param_names(LAYERNORM, "layernorm_forward_kernel") == [
        "out", "mean", "rstd", "inp", "weight", "bias", "N", "C"]
    assert kernel_param_names(SAXPY, "saxpy") == ["n", "a", "x", "y_out"]
    tpl = ("template <typename T, int B> __global__ void __launch_bounds__(256) "
           "k(T* o /* out */, const T* i, int n = 4) {}")
    assert kernel_param_names(tpl, "k<T, 4>") == ["o", "i", "n"]
    assert kernel_param_names("__global__ void k(float*, int n) {}", "k") is None  # unnamed: unknown
    assert kernel_param_names("__device__ void k(float* a) {}", "k") is None  # not a __global__


def test_a_parameters_pointee_is_read_where_its_spelling_names_a_dtype():
    assert kernel_params("__global__ void k(const __half* __restrict__ x, int n, float *y) {}", "k") == [
        ("const __half* __restrict__", "x"), ("int", "n"), ("float *", "y")]
    named = {"const float*": "float32", "float * __restrict__": "float32", "const __nv_bfloat16*": "bfloat16",
             "long long*": "int64", "const int64_t*": "int64", "int*": "int32", "volatile bool*": "bool",
             "const double*": "float64", "int8_t*": "int8"}
    for text, dtype in named.items():
        assert pointee(text) == dtype, text
    for text in ("float", "float**", "const T*", "const float4*", "const unsigned char*", "char*", "void*",
                 "unsigned int*", "const float&", "Params*"):
        assert pointee(text) is None, text


def _unary(source, **kw):
    args = dict(kernel_source=source, kernel_name="k", inputs=[ttk.InputDecl("x")],
                outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                geometry=ttk.Elementwise())
    args.update(kw)
    return ttk.KernelSpec(**args)


@pytest.mark.parametrize("source, kw, match", [
    # a float kernel declared for half: it would read two halves as one float
    ('extern "C" __global__ void k(const float* x, int n, float* y) {}', dict(dtypes=[torch.float16]),
     r"inputs\[0\] 'x': kernel 'k' parameter 0 \(const float\* x\) points to float \(float32\), but the declaration "
     r"gives 'x' the dtype float16: the kernel would read its bytes as another type. Fix: declare 'x' with the "
     r"dtype the kernel reads \(dtypes= / InputDecl\(dtype=\)\), or write the parameter for float16"),
    # the output's dtype follows the first input, an int32 index, where the kernel writes floats
    ('extern "C" __global__ void k(const int* idx, const float* data, int n, float* y) {}',
     dict(inputs=[ttk.InputDecl("idx", dtype=torch.int32), ttk.InputDecl("data")],
          outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("data"),))], extras=[ttk.SizeArg("n", ttk.Numel("data"))]),
     r"outputs 'y': kernel 'k' parameter 3 \(float\* y\) points to float \(float32\), but the declaration gives "
     r"'y' the dtype int32 "
     r"\(an output's dtype follows input 'idx' unless declared\): the kernel would write .* Fix: give the output "
     r"its dtype \(OutputDecl\('y', ..., dtype=torch.float32\)"),
    # an output declared int64 that the kernel writes as int
    ('extern "C" __global__ void k(const float* x, int n, int* y) {}',
     dict(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"), dtype=torch.int64)]),
     r"outputs 'y': kernel 'k' parameter 2 \(int\* y\) points to int \(int32\), but the declaration gives 'y' "
     r"the dtype int64: .* "
     r"Fix: give 'y' the dtype the kernel writes \(dtype=torch.int32 on its OutputDecl, or on its ttk.Written"),
])
def test_a_pointer_to_another_dtype_than_declared_is_refused(source, kw, match):
    with pytest.raises(ttk.SpecError, match=match):
        _declare(_unary(source, **kw))


@pytest.mark.parametrize("source, kw", [
    ('template <typename T> __global__ void k(const T* x, int n, T* y) {}',
     dict(kernel_name="k<T>", dtypes=[torch.float32, torch.float16])),
    ('extern "C" __global__ void k(const float4* x, int n, float* y) {}', {}),  # vectorized reads: not a dtype
    ('extern "C" __global__ void k(const unsigned char* x, int n, float* y) {}', {}),  # the bytes of any dtype
    ('extern "C" __global__ void k(const float* __restrict__ x, int n, float* __restrict__ y) {}', {}),
    ('template <typename T> __global__ void k(const T* x, const float* w, int n, T* y) {}',
     dict(kernel_name="k<T>", dtypes=[torch.float16, torch.bfloat16],
          inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype=torch.float32)])),
])
def test_pointers_that_agree_or_name_no_dtype_are_accepted(source, kw):
    assert _declare(_unary(source, **kw)) is not None


def test_an_outputs_first_kernel_is_declared_as_written():
    kop = _declare(layernorm_spec())
    params = kop.sig.params(torch.float32)
    assert [p.label.split(" /*")[0] for p in params] == [
        "float* out", "float* mean", "float* rstd", "const float* inp", "const float* weight", "const float* bias",
        "int N", "int C"]
    r = kop.recipe(torch.float32, (2, 1, 1))
    inp, w, b = torch.randn(6, 5), torch.randn(5), torch.randn(5)
    outs = [torch.empty(6, 5), torch.empty(6), torch.empty(6)]
    sizes = concrete(r.plan, [inp.shape, w.shape, b.shape], ["inp", "weight", "bias"])
    assert sizes.extras == (6, 5)
    assert r.values([inp, w, b], [], list(sizes.extras), outs) == [
        outs[0].data_ptr(), outs[1].data_ptr(), outs[2].data_ptr(), inp.data_ptr(), w.data_ptr(), b.data_ptr(), 6, 5]
    # TensorRT's AOT launch passes (inputs, args, outputs): the order it needs, and its extra args
    assert recipe.tensorrt_order(r.params) == [3, 4, 5, 6, 7, 0, 1, 2]
    assert r.aot_extras(lambda s, k: ("scalar", s), lambda j: ("extra", j)) == [("extra", 0), ("extra", 1)]


def test_params_lists_the_order_where_names_differ():
    src = re.sub(r"\bC\b", "cols", re.sub(r"\bN\b", "rows", LAYERNORM.replace("layernorm_forward_kernel", "ln")))
    spec = layernorm_spec(kernel_source=src, kernel_name="ln",
                           params=["out", "mean", "rstd", "inp", "weight", "bias", "N", "C"])
    kop = _declare(spec)
    assert [p.role for p in kop.sig.params(torch.float32)] == ["output"] * 3 + ["input"] * 3 + ["extra"] * 2


@pytest.mark.parametrize("params, match", [
    (["out", "mean", "rstd", "inp", "weight", "bias", "N", "nope"], r"params\[7\]: 'nope' is not a declared"),
    (["out", "mean", "rstd", "inp", "weight", "bias", "N", "N"], r"params\[7\]: 'N' is listed twice"),
    (["out", "mean", "rstd", "inp", "weight", "bias", "N"], r"params: leaves out C"),
    ("out", r"params: expected"),
])
def test_params_errors_name_the_entry_and_the_fix(params, match):
    with pytest.raises(ttk.SpecError, match=match):
        _declare(layernorm_spec(params=params))


def test_an_unnamed_extra_cannot_be_listed_in_params():
    spec = layernorm_spec(extras=[ttk.SizeArg("N", ttk.Numel("inp") // ttk.DimSize("inp", -1)),
                                   ttk.DimSize("inp", -1)],
                           params=["out", "mean", "rstd", "inp", "weight", "bias", "N"])
    with pytest.raises(ttk.SpecError, match=r"leaves out extras\[1\]\. Fix: name every extra with ttk.SizeArg"):
        _declare(spec)


def test_an_unnamed_extra_fills_the_kernels_unmatched_parameter():
    spec = layernorm_spec(extras=[ttk.Numel("inp") // ttk.DimSize("inp", -1), ttk.DimSize("inp", -1)])
    kop = _declare(spec)
    assert [(p.role, p.index) for p in kop.sig.params(torch.float32)][-2:] == [("extra", 0), ("extra", 1)]


def test_a_partial_name_match_that_would_swap_pointers_is_refused():
    # the kernel names 'out' first; the declaration's 'inp' is called 'x' in the kernel: no full match, and the
    # convention would put the input where the kernel has its output
    src = "extern \"C\" __global__ void k(float* out, const float* x, int n) {}"
    spec = ttk.KernelSpec(kernel_source=src, kernel_name="k", arch_override="sm_90", inputs=[ttk.InputDecl("inp")],
                          outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("inp"))], extras=[ttk.Numel("inp")],
                          geometry=ttk.Elementwise(block=(128,)))
    with pytest.raises(ttk.SpecError, match=r"kernel 'k' has 'out' as parameter 0, where the calling convention .* "
                                            r"puts tensor input 'inp'.*Fix: pass params=\[\.\.\.\]"):
        _declare(spec)


def test_a_size_t_parameter_takes_values_over_2_31():
    kop = _declare(saxpy_spec())
    params = kop.sig.params(torch.float32)
    assert [p.code for p in params] == ["Q", "f", "Q", "Q"] and params[0].label.startswith("unsigned long long n")
    plan = build_plan(kop.sig, (1,))
    assert concrete(plan, [(2**31 + 5,)], ["x"], [1.0], ["a"]).extras == (2**31 + 5,)
    # the same size through a C int extra is refused, naming the type
    small = _declare(saxpy_spec(kernel_source=SAXPY.replace("size_t n", "int n").replace("size_t i", "int i"),
                                 extras=[ttk.SizeArg("n", ttk.Numel("x"))]))
    with pytest.raises(ttk.InputError, match=r"out of range for the kernel's C int"):
        concrete(build_plan(small.sig, (1,)), [(2**31 + 5,)], ["x"], [1.0], ["a"])


def test_a_size_arg_of_the_wrong_width_gets_the_fix_for_it():
    with pytest.raises(ttk.KernelABIError) as info:
        _declare(saxpy_spec(extras=[ttk.SizeArg("n", ttk.Numel("x"))]))
    msg = str(info.value)
    assert "parameter 0: the kernel has u64; the declaration gives int n" in msg
    assert ("Fix: give this entry of extras the kernel's C type: ttk.SizeArg(name, value, ctype='long long' or "
            "'size_t')") in msg


@pytest.mark.parametrize("arg, match", [
    (ttk.SizeArg("n", ttk.Numel("x"), "ulong"), r"extras\[0\]\.ctype: 'ulong' is not a C integer type"),
    (ttk.SizeArg("2n", ttk.Numel("x")), r"extras\[0\]\.name: '2n'"),
    (ttk.SizeArg("n", -1, "size_t"), r"extras\[0\]\.value"),
])
def test_size_arg_errors(arg, match):
    with pytest.raises(ttk.SpecError, match=match):
        _declare(saxpy_spec(extras=[arg]))


def _entry(ptx: bytes, symbol: str) -> str:
    return re.search(r"\.entry\s+" + symbol + r"\s*\(([^)]*)\)", ptx.decode()).group(1)


def test_the_aot_ptx_takes_tensorrts_layout():
    kop = _declare(saxpy_spec())
    assert kop.aot.aot and "rewritten to TensorRT's argument layout" in kop.aot.why
    symbol, ptx = kop.aot_kernel(torch.float32, 1, "sm_90")
    # (n, a, x, y_out) -> (x, n, a, y_out), n taken as a 32-bit value and widened where it is loaded
    assert ptx_params(ptx, symbol) == [("u64", 8), ("u32", 4), ("f32", 4), ("u64", 8)]
    names = re.findall(r"([\w$]+)\s*(?:,|$)", _entry(ptx, symbol).strip())
    assert names == ["saxpy_param_2", "saxpy_param_0", "saxpy_param_1", "saxpy_param_3"]
    assert "ld.param.u32 %ttk_w, [saxpy_param_0]; cvt.u64.u32" in ptx.decode()
    assert "ld.param.u64" not in re.sub(r"ld\.param\.u64\s+%rd\d+,\s*\[saxpy_param_[23]\]", "", ptx.decode())


def test_a_64_bit_parameter_used_other_than_by_a_load_stays_jit():
    ptx = b""".visible .entry k(
	.param .u64 k_param_0,
	.param .u64 k_param_1
)
{
	mov.u64 %rd1, k_param_0;
	ld.param.u64 %rd2, [k_param_1];
	ret;
}
"""
    out, why = rearranged(ptx, "k", [1, 0], {0: False})
    assert out is None and "uses its 64-bit parameter 'k_param_0' other than by loading it" in why
    out, why = rearranged(ptx, "k", [1, 0], {1: True})
    assert why == "" and "ld.param.s32 %ttk_w, [k_param_1]; cvt.s64.s32 %rd2, %ttk_w;" in out.decode()
    assert ptx_params(out, "k") == [("s32", 4), ("u64", 8)]
