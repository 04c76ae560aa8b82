"""ONNX export (trt_kernels.onnx_export) on CPU: each op call becomes one TensorRT plugin node.

The seed's seven cases and the two other kernel sources, each as a one-op model with a dynamic
batch: one node per call with op_type = the op's name, plugin_namespace / plugin_version "2" and
the scalars as typed attributes, wired to the graph's inputs and outputs, whose shapes and dtypes
are the fake impl's (first dim symbolic). Then a chain of ops, interleaved scalars of every type,
and the errors.
"""

import pytest
import torch

onnx = pytest.importorskip("onnx", reason="ONNX export needs onnx (pip install 'trt-kernels[onnx]')")
pytest.importorskip("onnxscript", reason="ONNX export needs onnxscript (pip install 'trt-kernels[onnx]')")

import kernels  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from trt_kernels import onnx_export, registry  # noqa: E402
from trt_kernels.cli import seed_cases as sc  # noqa: E402
from trt_kernels.errors import OnnxExportError  # noqa: E402

NS = "ttk_onnx"
ONNX_DTYPES = {torch.float32: onnx.TensorProto.FLOAT, torch.float16: onnx.TensorProto.FLOAT16}
BATCH = torch.export.Dim("batch")


@pytest.fixture(scope="module")
def declared():
    cases = {c.name: c for c in sc.declare(NS, sc.ALL_CASES)}
    ttk.cuda_kernel_op(f"{NS}::mixed", kernels.mixed_spec(), supports_dynamic_shapes=True)
    return cases


def attributes(node):
    return {a.name: (a.type, onnx.helper.get_attribute_value(a)) for a in node.attribute}


def plugin_nodes(proto):
    return [n for n in proto.graph.node if n.domain == NS]


def check_plugin_node(node, name, scalars=()):
    """op_type, domain and attributes of ``ns::name``'s node; ``scalars``: (name, onnx type, value)."""
    assert node.op_type == name and node.domain == NS
    attrs = attributes(node)
    assert attrs.pop("plugin_namespace") == (onnx.AttributeProto.STRING, NS.encode())
    assert attrs.pop("plugin_version") == (onnx.AttributeProto.STRING, b"2")
    assert set(attrs) == {s[0] for s in scalars}
    for s_name, s_type, value in scalars:
        a_type, a_value = attrs[s_name]
        assert a_type == s_type, s_name
        assert a_value == pytest.approx(value, rel=1e-6), s_name


def dims(value_info):
    return [d.dim_param or d.dim_value for d in value_info.type.tensor_type.shape.dim]


@pytest.mark.parametrize("case_name", [c.name for c in sc.ALL_CASES])
def test_case_exports_as_one_plugin_node(declared, case_name):
    case = next(c for c in sc.ALL_CASES if c.name == case_name)
    if case.unavailable() is not None:
        pytest.skip(case.unavailable())
    kop = registry.get(case.op_name(NS))
    tensors, scalars = case.make_inputs(torch.device("cpu"))
    model = sc.CaseModel(NS, case.name, scalars, len(tensors)).eval()
    proto = onnx_export.export(model, tensors, dynamic_shapes=tuple({0: BATCH} for _ in tensors))
    onnx.checker.check_model(proto, full_check=True)

    (node,) = proto.graph.node  # one node per op call, nothing else
    kinds = {float: onnx.AttributeProto.FLOAT, int: onnx.AttributeProto.INT, bool: onnx.AttributeProto.INT}
    check_plugin_node(node, case.name, [(s.name, kinds[s.py_type], v) for s, v in zip(kop.sig.scalar_decls, scalars)])
    assert any(o.domain == NS and o.version == 1 for o in proto.opset_import)
    assert list(node.input) == [i.name for i in proto.graph.input]
    assert list(node.output) == [o.name for o in proto.graph.output]

    # outputs: the fake impl's shape (first dim symbolic) and dtype
    meta = sc.as_tuple(sc.op(case, NS)(*(torch.empty(t.shape, device="meta") for t in tensors), *scalars))
    assert len(proto.graph.output) == len(meta)
    for out, ref in zip(proto.graph.output, meta):
        assert out.type.tensor_type.elem_type == ONNX_DTYPES[ref.dtype]
        got = dims(out)
        assert len(got) == ref.dim()
        assert isinstance(got[0], str) and got[0]  # dim_param, not dim_value
        assert got[1:] == list(ref.shape[1:])
    for inp, t in zip(proto.graph.input, tensors):
        assert dims(inp) == ["batch", *t.shape[1:]]


def test_chain_of_ops_is_wired_node_to_node(declared, tmp_path):
    ops = getattr(torch.ops, NS)

    class Chain(torch.nn.Module):
        def forward(self, x):
            y = ops.scale(x, 3.0)
            s, c = ops.sin_cos(ops.sigmoid(y))
            return s, ops.add(c, y)

    path = tmp_path / "chain.onnx"
    proto = onnx_export.export(Chain().eval(), (torch.randn(4, 16),), path, dynamic_shapes=({0: BATCH},))
    onnx.checker.check_model(proto, full_check=True)
    assert onnx.load(str(path)).graph.node[0].op_type == "scale"
    scale, sigmoid, sin_cos, add = proto.graph.node
    for node, name in ((scale, "scale"), (sigmoid, "sigmoid"), (sin_cos, "sin_cos"), (add, "add")):
        check_plugin_node(node, name, [("alpha", onnx.AttributeProto.FLOAT, 3.0)] if name == "scale" else ())
    assert list(scale.input) == [proto.graph.input[0].name]
    assert list(sigmoid.input) == [scale.output[0]]
    assert list(sin_cos.input) == [sigmoid.output[0]] and len(sin_cos.output) == 2
    assert list(add.input) == [sin_cos.output[1], scale.output[0]]
    assert [o.name for o in proto.graph.output] == [sin_cos.output[0], add.output[0]]
    # the intermediate values carry their shapes and dtypes, the batch symbolic
    infos = {v.name: v for v in proto.graph.value_info}
    for name in (scale.output[0], sigmoid.output[0], sin_cos.output[1]):
        assert infos[name].type.tensor_type.elem_type == onnx.TensorProto.FLOAT
        assert dims(infos[name]) == ["batch", 16]


def test_interleaved_scalars_of_every_type(declared):
    ops = getattr(torch.ops, NS)

    class Mixed(torch.nn.Module):
        def forward(self, a, b):
            return ops.mixed(a, 1.5, b, -7, True)

    proto = onnx_export.export(Mixed().eval(), (torch.randn(4, 8), torch.randn(4, 8)),
                               dynamic_shapes=({0: "n"}, {0: "n"}))
    (node,) = proto.graph.node
    check_plugin_node(node, "mixed", [("alpha", onnx.AttributeProto.FLOAT, 1.5), ("k", onnx.AttributeProto.INT, -7),
                                      ("flag", onnx.AttributeProto.INT, 1)])
    assert list(node.input) == ["a", "b"]  # the tensors, scalars removed
    assert dims(proto.graph.output[0]) == ["n", 8]


def test_scalar_from_a_tensor_is_a_clear_error(declared):
    ops = getattr(torch.ops, NS)

    class FromTensor(torch.nn.Module):
        def forward(self, x):
            return ops.scale(x, x.sum().item())

    with pytest.raises(OnnxExportError, match=rf"{NS}::scale: float argument 'alpha' is not a constant"):
        onnx_export.export(FromTensor().eval(), (torch.randn(4, 16),), dynamic_shapes=({0: BATCH},))


def test_translation_refuses_a_non_constant_scalar(declared):
    """What the translation function does if a traced scalar is a graph value, not a constant."""
    fn = onnx_export.translation_table([f"{NS}::mixed"])[getattr(torch.ops, NS).mixed.default]
    with pytest.raises(OnnxExportError,
                       match=r"ttk_onnx::mixed: int argument 'k' is not a constant in the traced graph"):
        fn(object(), 1.0, object(), object(), True)
    with pytest.raises(OnnxExportError, match=r"'k' is 4294967296, outside int32"):
        fn(object(), 1.0, object(), 2 ** 32, True)


def test_table_holds_only_trt_kernels_ops(declared):
    @torch.library.custom_op(f"{NS}_plain::twice", mutates_args=())
    def twice(x: torch.Tensor) -> torch.Tensor:
        return x * 2

    table = onnx_export.translation_table()
    assert getattr(torch.ops, NS).scale.default in table
    assert twice._opoverload not in table
    # every op but those that write inputs in place (ONNX nodes have no in-place outputs)
    assert set(table) == {k.overload for k in registry.all_ops() if not k.sig.mutated}
    with pytest.raises(OnnxExportError, match=rf"{NS}_plain::twice: not an op registered with trt_kernels"):
        onnx_export.translation_table([f"{NS}_plain::twice"])
    assert list(onnx_export.translation_table([getattr(torch.ops, NS).scale])) == [getattr(torch.ops, NS).scale.default]


def test_op_left_out_of_ops_is_named(declared):
    ops = getattr(torch.ops, NS)

    class Two(torch.nn.Module):
        def forward(self, x):
            return ops.sigmoid(ops.scale(x, 2.0))

    with pytest.raises(OnnxExportError, match=rf"{NS}::sigmoid: called by the model but left out of ops="):
        onnx_export.export(Two().eval(), (torch.randn(4, 16),), ops=[f"{NS}::scale"])


def test_torchscript_exporter_is_refused(declared):
    with pytest.raises(OnnxExportError, match="dynamo=False"):
        onnx_export.export(sc.CaseModel(NS, "sigmoid").eval(), (torch.randn(2, 3),), dynamo=False)


def test_tuple_attribute_and_default(declared, monkeypatch):
    """A tuple input is one INTS (FLOATS) attribute; a default the traced call left out is written out."""
    from support import load_example

    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    ex = load_example("circular_pad")
    ttk.cuda_kernel_op(f"{NS}::cpad", ex.circular_pad_spec())
    ttk.cuda_kernel_op(f"{NS}::rms", ex.rms_norm_spec())
    ops = getattr(torch.ops, NS)

    class M(torch.nn.Module):
        def forward(self, x, w):
            return ops.rms(ops.cpad(x, (1, 2, 0, 0))[0], w), ops.rms(x[0], w[:5], eps=0.5)

    proto = onnx_export.export(M().eval(), (torch.randn(2, 4, 5), torch.randn(8)))
    cpad, rms1, rms2 = plugin_nodes(proto)
    check_plugin_node(cpad, "cpad", [("pads", onnx.AttributeProto.INTS, [1, 2, 0, 0])])
    check_plugin_node(rms1, "rms", [("eps", onnx.AttributeProto.FLOAT, 1e-6)])  # left out by torch, written here
    check_plugin_node(rms2, "rms", [("eps", onnx.AttributeProto.FLOAT, 0.5)])
    assert [dims(o) for o in proto.graph.output] == [[4, 8], [4, 5]]
    fn = onnx_export.translation_table([f"{NS}::cpad"])[ops.cpad.default]
    with pytest.raises(OnnxExportError, match=r"ttk_onnx::cpad: argument 'pads' takes 4 ints, traced as \(1, 2\)"):
        fn(object(), (1, 2))
    with pytest.raises(OnnxExportError, match=r"int argument 'pads'\[3\] is not a constant in the traced graph"):
        fn(object(), (1, 2, 3, object()))


def test_type_parameters_in_the_node_schema(declared, monkeypatch):
    """A kernel with two type parameters: each input's type constraint lists the dtypes the declared
    combinations give it (x: float16 / bfloat16 / float32; w: float32), the output's x's."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = f"{NS}::rms_mixed"
    ttk.cuda_kernel_op(name, kernels.rmsnorm_mixed_spec())
    schema = onnx_export._node_schema(registry.get(name), onnx)
    cons = {c.type_param_str: set(c.allowed_type_strs) for c in schema.type_constraints}
    assert cons["T_x"] == {"tensor(float16)", "tensor(bfloat16)", "tensor(float)"}
    assert cons["T_w"] == {"tensor(float)"}
    assert cons["O0"] == cons["T_x"]
