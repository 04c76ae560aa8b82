"""The PTX entry is read back and compared with the spec's calling convention."""

import pytest

import trt_kernels as ttk
from trt_kernels.abi import ptx_params
from trt_kernels.compile import compile_program
from kernels import MIXED, mixed_spec, SCALE, SIGMOID, sigmoid_spec, unique


def test_ptx_params_kinds_and_sizes():
    prog = compile_program(MIXED, ["mixed"], arch="sm_90")
    assert ptx_params(prog.ptx, "mixed") == [("u64", 8), ("u64", 8), ("f32", 4), ("u32", 4), ("u8", 1), ("u32", 4), ("u64", 8)]
    assert ptx_params(prog.ptx, "absent") is None


def test_matching_mixed_signature_registers():
    op = ttk.cuda_kernel_op(unique(), mixed_spec(arch_override="sm_90"))
    assert str(op.default._schema).endswith("(Tensor a, float alpha, Tensor b, int k, bool flag) -> Tensor")


def test_swapped_extra_and_scalar_is_caught():
    # kernel wants (x, alpha, n, y); spec with the scalar declared but kernel written (x, n, alpha, y)
    src = SCALE.replace("const float* x, float alpha, int n, float* y", "const float* x, int n, float alpha, float* y")
    spec = sigmoid_spec(kernel_source=src, kernel_name="my_scale", arch_override="sm_90",
                        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)])
    with pytest.raises(ttk.KernelABIError) as info:
        ttk.cuda_kernel_op(unique(), spec)
    msg = str(info.value)
    assert "takes 4 parameters (u64, u32, f32, u64)" in msg
    assert "const float* x,\n    float alpha,\n    int extra0 /* Numel('x') */,\n    float* y)" in msg
    assert "Fix:" in msg


def test_missing_extra_is_caught():
    spec = sigmoid_spec(extras=[], arch_override="sm_90")
    with pytest.raises(ttk.KernelABIError, match=r"takes 3 parameters .* but the spec implies 2"):
        ttk.cuda_kernel_op(unique(), spec)


def test_pointer_vs_int_is_caught():
    src = SIGMOID.replace("int n, float* __restrict__ y", "float* __restrict__ y, int n")
    with pytest.raises(ttk.KernelABIError):
        ttk.cuda_kernel_op(unique(), sigmoid_spec(kernel_source=src, arch_override="sm_90"))


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
