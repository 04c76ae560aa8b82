"""Every authoring mistake raises SpecError naming the op, the field and the fix, before compiling."""

import pytest
import torch

import trt_kernels as ttk
from kernels import SIGMOID, sigmoid_spec, unique


def expect(match, spec=None, **kw):
    name = kw.pop("op_name", None) or unique()
    with pytest.raises(ttk.SpecError, match=match) as info:
        ttk.cuda_kernel_op(name, spec, **kw)
    msg = str(info.value)
    assert msg.startswith(name.split("::")[0]) or msg.startswith("op_name"), msg
    assert "Fix:" in msg, msg
    return msg


def test_bad_op_name():
    expect(r"op_name 'nonamespace'", sigmoid_spec(), op_name="nonamespace")
    expect(r"op_name 'a::b::c'", sigmoid_spec(), op_name="a::b::c")


def test_unknown_input_name_in_extras():
    msg = expect(r"extras\[0\]: 'z' names no tensor input", sigmoid_spec(extras=[ttk.Numel("z")]))
    assert "tensor inputs: ['x']" in msg


def test_unknown_name_in_same_as():
    expect(r"outputs\[0\].shape: 'q' names no tensor input",
           sigmoid_spec(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("q"))]))


def test_same_as_index_out_of_range():
    expect(r"tensor input index 3 is out of range", sigmoid_spec(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs(3))]))


def test_scalar_has_no_shape():
    spec = sigmoid_spec(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)], extras=[ttk.Numel("alpha")])
    expect(r"'alpha' names no tensor input", spec)


def test_duplicate_names():
    expect(r"duplicate name 'x'", sigmoid_spec(inputs=[ttk.InputDecl("x"), ttk.InputDecl("x")]))
    expect(r"duplicate name 'x'", sigmoid_spec(outputs=[ttk.OutputDecl("x", shape=ttk.SameAs(0))]))


def test_axis_out_of_range_with_declared_ndim():
    spec = sigmoid_spec(inputs=[ttk.InputDecl("x", ndim=2)], extras=[ttk.DimSize("x", 2)])
    expect(r"axis 2 is out of range for input 'x' of ndim 2", spec)
    spec = sigmoid_spec(inputs=[ttk.InputDecl("x", ndim=2)],
                        outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-3,)))])
    expect(r"axis -3 is out of range", spec)


def test_flat_layout_with_2d_block():
    expect(r"layout='flat' takes a 1-D block, got \(16, 16\)", sigmoid_spec(geometry=ttk.Elementwise(block=(16, 16))))


def test_too_many_block_dims():
    expect(r"4 block dims given", sigmoid_spec(geometry=ttk.Elementwise(block=(2, 2, 2, 2), layout="nd")))


def test_too_many_threads():
    expect(r"has 2048 threads", sigmoid_spec(geometry=ttk.Elementwise(block=(64, 32), layout="nd")))
    expect(r"axis x is 2048; CUDA allows at most 1024", sigmoid_spec(geometry=ttk.Elementwise(block=(2048,))))


def test_bad_layout():
    expect(r"'diagonal' is not a layout", sigmoid_spec(geometry=ttk.Elementwise(block=(256,), layout="diagonal")))


def test_scalar_only_inputs():
    expect(r"no tensor input", sigmoid_spec(inputs=[ttk.ScalarInput("a", float)], extras=[],
                                            outputs=[ttk.OutputDecl("y", shape=(4,))]))


def test_dtype_from_names_no_tensor():
    expect(r"outputs\[0\].dtype_from: 'w' names no tensor input",
           sigmoid_spec(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"), dtype_from="w")]))


def test_missing_outputs_without_meta_fn():
    expect(r"outputs: missing", sigmoid_spec(outputs=None))


def test_missing_geometry_without_eager_fn():
    expect(r"geometry: missing", sigmoid_spec(geometry=None))


def test_missing_inputs():
    expect(r"inputs: missing", sigmoid_spec(inputs=None))


def test_outputs_missing_with_meta_but_no_eager():
    spec = sigmoid_spec(outputs=None, geometry=None)
    expect(r"eager_fn: missing", spec, meta_fn=lambda x: x)


def test_override_path_accepts_missing_outputs_and_geometry():
    spec = ttk.KernelSpec(kernel_source=SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")])

    def meta(x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)

    op = ttk.cuda_kernel_op(unique(), spec, meta_fn=meta, eager_fn=meta)
    assert "(Tensor x) -> Tensor" in str(op.default._schema)


def test_bad_scalar_type():
    expect(r"py_type: <class 'str'> is not supported",
           sigmoid_spec(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("s", str)]))


def test_reserved_name():
    expect(r"name 'stream' is not a usable argument name: it is reserved: the TensorRT plugin's impl",
           sigmoid_spec(inputs=[ttk.InputDecl("stream")], extras=[ttk.Numel(0)],
                        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs(0))]))
    for bad in ("outputs", "tactic", "self"):
        expect(rf"name '{bad}' is not a usable argument name: it is reserved",
               sigmoid_spec(inputs=[ttk.InputDecl(bad)], extras=[ttk.Numel(0)],
                            outputs=[ttk.OutputDecl("y", shape=ttk.SameAs(0))]))
    expect(r"name 'lambda' is not a usable argument name: it is a Python keyword",
           sigmoid_spec(inputs=[ttk.InputDecl("lambda")], extras=[ttk.Numel(0)],
                        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs(0))]))
    expect(r"outputs\[0\]: name 'class' is not a usable name: it is a Python keyword",
           sigmoid_spec(outputs=[ttk.OutputDecl("class", shape=ttk.SameAs(0))]))
    expect(r"outputs\[0\]: name '2y' is not a usable name: it is not a Python identifier",
           sigmoid_spec(outputs=[ttk.OutputDecl("2y", shape=ttk.SameAs(0))]))


def test_tensorrt_reserved_namespace():
    for ns in ("trt", "tensorrt", "std"):
        expect(rf"namespace '{ns}' is reserved by TensorRT", sigmoid_spec(), op_name=f"{ns}::sig")


def test_names_that_clash_with_nothing_are_accepted(monkeypatch):
    """An output named ``out`` and an input named ``inputs`` or ``out`` reach no signature they clash with."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique()
    op = ttk.cuda_kernel_op(name, sigmoid_spec(inputs=[ttk.InputDecl("inputs")], extras=[ttk.Numel("inputs")],
                                               outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("inputs"))]))
    assert str(op.default._schema).endswith("(Tensor inputs) -> Tensor")
    x = torch.randn(3, 5, device="meta")
    assert op(x).shape == (3, 5)  # the fake impl, through the dispatcher
    name2 = unique()
    op2 = ttk.cuda_kernel_op(name2, sigmoid_spec(inputs=[ttk.InputDecl("out")], extras=[ttk.Numel("out")],
                                                 outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("out"))]))
    assert str(op2.default._schema).endswith("(Tensor out) -> Tensor")


def test_template_without_dtypes():
    expect(r"is a template over T but no dtypes are declared", sigmoid_spec(kernel_name="k<T>"))


def test_dtypes_without_template():
    expect(r"has no template parameter T", sigmoid_spec(dtypes=[torch.float32, torch.float16]))


def test_reduction_dims_disagree_with_output():
    spec = sigmoid_spec(outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))],
                        geometry=ttk.Reduction(reduce_dims=(0,)))
    expect(r"differs from outputs\[0\].shape dims", spec)


def test_custom_fn_geometry_rejected():
    class FnGeometry:
        fn = staticmethod(lambda *a: None)

    expect(r"Custom\(fn\) callback cannot be evaluated", sigmoid_spec(geometry=FnGeometry()))


def test_bad_extra():
    expect(r"extras\[0\]: 'n' is not a size expression", sigmoid_spec(extras=["n"]))


def test_tactic_rank_mismatch():
    expect(r"tactic block \(8, 8\) has another rank",
           sigmoid_spec(geometry=ttk.Elementwise(block=(16,), layout="nd", tactics=((8, 8),))))


def test_validation_happens_before_compiling(monkeypatch):
    import trt_kernels.sources.nvrtc as comp

    def boom(*a, **k):
        raise AssertionError("compiled before validating")

    monkeypatch.setattr(comp, "_nvrtc_compile", boom)
    expect(r"duplicate name", sigmoid_spec(inputs=[ttk.InputDecl("x"), ttk.InputDecl("x")]))


@pytest.mark.parametrize("path", ["a\x00b", "", 3])
def test_an_include_path_that_is_no_directory_path_is_refused(path):
    """A NUL character cannot be in a path (the OS refuses it): the same SpecError as any other invalid path."""
    msg = expect(r"include_paths\[1\]: .* is not a directory path", sigmoid_spec(include_paths=["/opt/inc", path]))
    assert "no NUL character" in msg
