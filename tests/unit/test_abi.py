"""The PTX entry is read back and compared with the spec's calling convention."""

import pytest

import trt_kernels as ttk
from kernels import MIXED, SCALE, SIGMOID, mixed_spec, sigmoid_spec, unique
from trt_kernels.sources.abi import ptx_params
from trt_kernels.sources.nvrtc import compile_program


def test_ptx_params_kinds_and_sizes():
    prog = compile_program(MIXED, ["mixed"], arch="sm_90")
    assert ptx_params(prog.ptx, "mixed") == [("u64", 8), ("u64", 8), ("f32", 4), ("u32", 4), ("u8", 1), ("u32", 4),
                                             ("u64", 8)]
    assert ptx_params(prog.ptx, "absent") is None


def test_matching_mixed_signature_registers():
    op = ttk.cuda_kernel_op(unique(), mixed_spec(arch_override="sm_90"))
    assert str(op.default._schema).endswith("(Tensor a, float alpha, Tensor b, int k, bool flag) -> Tensor")


def test_swapped_extra_and_scalar_is_caught():
    # kernel wants (x, alpha, n, y); spec with the scalar declared but kernel written (a, n, alpha, b): its names
    # are not the declaration's (alpha is k), so the calling convention applies and the ABI check names the parameter
    src = SCALE.replace("const float* x, float alpha, int n, float* y", "const float* a, int n, float k, float* b")
    src = src.replace("y[i] = alpha * x[i]", "b[i] = k * a[i]")
    spec = sigmoid_spec(kernel_source=src, kernel_name="my_scale", arch_override="sm_90",
                        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)])
    with pytest.raises(ttk.KernelABIError) as info:
        ttk.cuda_kernel_op(unique(), spec)
    msg = str(info.value)
    assert "takes 4 parameters (u64, u32, f32, u64)" in msg
    assert "const float* x,\n    float alpha,\n    int extra0 /* Numel('x') */,\n    float* y)" in msg
    assert "parameter 1: the kernel has u32; the declaration gives float alpha (f32)" in msg
    assert "parameter 2: the kernel has f32; the declaration gives int extra0 /* Numel('x') */ (s32)" in msg
    assert "Fix: declare this ttk.ScalarInput of inputs with type int (the kernel's u32)" in msg


def test_missing_extra_is_named_before_compiling():
    """Every declared name is one of the kernel's: the kernel parameter none matches is named, with its fix."""
    spec = sigmoid_spec(extras=[], arch_override="sm_90")
    with pytest.raises(ttk.SpecError, match=r"extras: kernel 'my_sigmoid' takes 3 parameters and the declaration "
                                            r"gives 2: 'n' \(parameter 1\) matches no declared name") as info:
        ttk.cuda_kernel_op(unique(), spec)
    assert "Fix: declare each as the kernel has it: a size or constant in extras, e.g. ttk.SizeArg('n'" \
        in str(info.value)


def test_missing_extra_is_caught_where_the_names_do_not_tell():
    """The kernel's names are not the declaration's: the ABI check finds the parameter missing, per position."""
    src = SIGMOID.replace("const float* __restrict__ x, int n, float* __restrict__ y",
                          "const float* __restrict__ src, int n, float* __restrict__ dst")
    src = src.replace("y[i]", "dst[i]").replace("-x[i]", "-src[i]")
    spec = sigmoid_spec(kernel_source=src, extras=[], arch_override="sm_90")
    with pytest.raises(ttk.KernelABIError, match=r"takes 3 parameters .* but the declaration gives 2") as info:
        ttk.cuda_kernel_op(unique(), spec)
    assert "parameter 2: the kernel has u64; the declaration gives none" in str(info.value)
    assert "Fix: the kernel takes 1 parameter(s) more than the declaration gives" in str(info.value)


def test_pointer_vs_int_is_caught():
    src = SIGMOID.replace("const float* __restrict__ x, int n, float* __restrict__ y",
                          "const float* __restrict__ a, float* __restrict__ b, int n").replace("y[i]", "b[i]")
    with pytest.raises(ttk.KernelABIError) as info:
        ttk.cuda_kernel_op(unique(), sigmoid_spec(kernel_source=src.replace("-x[i]", "-a[i]"), arch_override="sm_90"))
    assert "parameter 1: the kernel has u64; the declaration gives int extra0" in str(info.value)
    assert "Fix: the order differs" in str(info.value)


def test_ptx_op_checks_its_entry():
    prog = compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    ok = ttk.ptx_op(unique(), prog.ptx, "my_sigmoid", inputs=[ttk.InputDecl("x")],
                    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                    geometry=ttk.Elementwise(block=(256,)))
    assert str(ok.default._schema).endswith("(Tensor x) -> Tensor")
    with pytest.raises(ttk.KernelABIError):
        ttk.ptx_op(unique(), prog.ptx, "my_sigmoid", inputs=[ttk.InputDecl("x")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[],
                   geometry=ttk.Elementwise(block=(256,)))


@pytest.mark.parametrize("change, kernel_name, match", [
    # a name the PTX lacks: the entries it has (the fix said to mark a C++ function __global__)
    (lambda p: p, "my_sigmoidd", r"kernel_name 'my_sigmoidd': the PTX has no .entry of that name \(its entries: "
                                 r"my_sigmoid\)\. Fix: pass the symbol"),
    # what ptxas and the driver refuse was accepted: a non-ASCII comment, a NUL inside (the driver stops there)
    (lambda p: b"// caf\xc3\xa9\n" + p, "my_sigmoid", r"ptx: line 1 has byte 0xc3, not ASCII: PTX is ASCII text"),
    (lambda p: p.replace(b".address_size 64", b".address_size 64\x00junk"), "my_sigmoid",
     r"ptx: line \d+ has a NUL byte, where the driver stops reading"),
    (lambda p: memoryview(p), "my_sigmoid", r"ptx: expected the PTX as str or bytes, got memoryview"),
])
def test_ptx_op_refuses_ptx_it_cannot_launch(change, kernel_name, match):
    prog = compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    with pytest.raises(ttk.SpecError, match=match):
        ttk.ptx_op(unique(), change(prog.ptx), kernel_name, inputs=[ttk.InputDecl("x")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                   geometry=ttk.Elementwise(block=(256,)))


def test_ptx_op_refuses_a_non_ascii_str_too():
    prog = compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    with pytest.raises(ttk.SpecError, match=r"ptx: line 1 has byte 0xc3, not ASCII"):
        ttk.ptx_op(unique(), "// café\n" + prog.ptx.decode(), "my_sigmoid", inputs=[ttk.InputDecl("x")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                   geometry=ttk.Elementwise(block=(256,)))


def _fresh_cache(tmp_path, monkeypatch):
    from trt_kernels.sources import nvrtc as comp

    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    comp.forget()
    return comp


def test_an_entry_records_the_entry_parameters_and_a_cached_declaration_checks_them(tmp_path, monkeypatch):
    """Compiling records each kernel's .entry parameters in the cache entry; a declaration served from
    the cache checks the ABI against them without parsing the PTX, and still refuses a mismatch."""
    from trt_kernels.sources import abi

    comp = _fresh_cache(tmp_path, monkeypatch)
    prog = compile_program(MIXED, ["mixed"], arch="sm_90")
    assert prog.params_of("mixed") == tuple(ptx_params(prog.ptx, "mixed"))
    comp.forget()
    cached = compile_program(MIXED, ["mixed"], arch="sm_90")
    assert cached.from_cache and cached.params_of("mixed") == prog.params_of("mixed")

    def no_parsing(*a, **k):
        raise AssertionError("the PTX was parsed")

    monkeypatch.setattr(abi, "ptx_params", no_parsing)
    comp.forget()
    ttk.cuda_kernel_op(unique(), mixed_spec(arch_override="sm_90"))
    comp.forget()
    wrong = mixed_spec(arch_override="sm_90", inputs=[ttk.InputDecl("a"), ttk.ScalarInput("alpha", int),
                                                      ttk.InputDecl("b"), ttk.ScalarInput("k", int),
                                                      ttk.ScalarInput("flag", bool)])  # alpha is a float
    with pytest.raises(ttk.KernelABIError, match=r"takes 7 parameters \(u64, u64, f32, u32, u8, u32, u64\)"):
        ttk.cuda_kernel_op(unique(), wrong)


def test_an_entry_without_recorded_parameters_is_checked_from_its_ptx(tmp_path, monkeypatch):
    """An entry written before the parameters were recorded (same format, no ``entry_params``) still
    serves: the PTX is parsed, and a mismatch is still refused."""
    from trt_kernels import cache_store

    comp = _fresh_cache(tmp_path, monkeypatch)
    prog = compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    (path,) = tmp_path.glob("*/sm_90.bin")
    payload = cache_store.unframe(path.read_bytes(), comp._MAGIC)
    header, (ptx, cubin) = cache_store.unpack_payload(payload, "ptx", "cubin")
    assert header.pop("entry_params") == {"my_sigmoid": [["u64", 8], ["u32", 4], ["u64", 8]]}
    path.write_bytes(cache_store.frame(comp._MAGIC, cache_store.pack_payload(header, ptx=ptx, cubin=cubin)))
    comp.forget()
    old = compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert old.from_cache and old.params_of("my_sigmoid") is None and old.ptx == prog.ptx
    ttk.cuda_kernel_op(unique(), sigmoid_spec(arch_override="sm_90"))
    comp.forget()
    with pytest.raises(ttk.KernelABIError, match=r"takes 3 parameters .* but the declaration gives others"):
        ttk.cuda_kernel_op(unique(), sigmoid_spec(extras=[ttk.SizeArg("n", ttk.Numel("x"), "long long")],
                                                  arch_override="sm_90"))
