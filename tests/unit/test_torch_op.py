"""The torch side on CPU: schema, fake impl, torch.export with a dynamic batch dim, errors."""

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import ROW_SUM, SIN_COS, row_sum_spec, scale_spec, sigmoid_spec, unique
from trt_kernels import registry


def ns_op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


@pytest.fixture(scope="module")
def ops():
    names = dict(sig=unique("ttk_exp"), scale=unique("ttk_exp"), rows=unique("ttk_exp"), sc=unique("ttk_exp"))
    ttk.cuda_kernel_op(names["sig"], sigmoid_spec())
    ttk.cuda_kernel_op(names["scale"], scale_spec())
    ttk.cuda_kernel_op(names["rows"], row_sum_spec(kernel_source=ROW_SUM))
    ttk.cuda_kernel_op(names["sc"], sigmoid_spec(
        kernel_source=SIN_COS, kernel_name="my_sin_cos",
        outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("x")), ttk.OutputDecl("c", shape=ttk.SameAs("x"))]))
    return {k: ns_op(v) for k, v in names.items()}


def test_schemas(ops):
    assert str(ops["sig"].default._schema).endswith("(Tensor x) -> Tensor")
    assert str(ops["scale"].default._schema).endswith("(Tensor x, float alpha) -> Tensor")
    assert str(ops["sc"].default._schema).endswith("(Tensor x) -> (Tensor, Tensor)")


def test_fake_impl_shapes_and_dtypes(ops):
    with FakeTensorMode():
        x = torch.empty(5, 7, 3)
        assert ops["sig"](x).shape == (5, 7, 3)
        assert ops["scale"](x, 2.0).dtype == torch.float32
        assert ops["rows"](x).shape == (5, 7)
        s, c = ops["sc"](x)
        assert s.shape == c.shape == (5, 7, 3)


def test_fake_impl_rejects_undeclared_dtype(ops):
    with FakeTensorMode():
        x = torch.empty(4, dtype=torch.float16)
        with pytest.raises(ttk.InputError, match="input dtype float16 is not one the kernel declares"):
            ops["sig"](x)


class Model(torch.nn.Module):
    def __init__(self, ops):
        super().__init__()
        self.ops = ops

    def forward(self, x):
        y = self.ops["scale"](self.ops["sig"](x), 0.5)
        s, c = self.ops["sc"](y)
        return self.ops["rows"](s + c)


def test_export_with_dynamic_batch(ops):
    batch = torch.export.Dim("batch", min=1, max=4096)
    ep = torch.export.export(Model(ops), (torch.randn(8, 16),), dynamic_shapes={"x": {0: batch}})
    targets = [n.target for n in ep.graph.nodes if n.op == "call_function"]
    for k in ("sig", "scale", "sc", "rows"):
        assert ops[k].default in targets
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    shape = out.meta["val"].shape
    assert len(shape) == 1 and isinstance(shape[0], torch.SymInt)  # the batch stays symbolic
    # the exported program's fake impl holds at another batch size
    with FakeTensorMode(shape_env=None) as m:
        fx = m.from_tensor(torch.randn(3, 16))
        assert Model(ops)(fx).shape == (3,)


def test_export_round_trip_serialization(ops, tmp_path):
    ep = torch.export.export(Model(ops), (torch.randn(8, 16),),
                             dynamic_shapes={"x": {0: torch.export.Dim("b", min=1, max=64)}})
    path = tmp_path / "m.pt2"
    torch.export.save(ep, path)
    ep2 = torch.export.load(path)
    assert [n.target for n in ep2.graph.nodes if n.op == "call_function"] == \
        [n.target for n in ep.graph.nodes if n.op == "call_function"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_eager_call_without_gpu_is_clear(ops):
    with pytest.raises(ttk.NoCudaDeviceError,
                       match=r"runs on CUDA devices only; got x on cpu\. No CUDA device is visible"):
        ops["sig"](torch.randn(3))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_eager_call_without_gpu_names_the_meta_tensor_route(ops):
    """The error says how to trace or export without a GPU, with the call's own shapes, and that call works."""
    x = torch.randn(4, 16)
    with pytest.raises(ttk.NoCudaDeviceError) as ei:
        ops["scale"](x, 0.5)
    msg = str(ei.value)
    assert "To trace or export without a GPU, pass meta tensors as the example inputs, e.g. " \
           "torch.export.export(model, (torch.empty(4, 16, device='meta'),))" in msg, msg
    with pytest.raises(ttk.NoCudaDeviceError, match=r"torch\.empty\(\(\), device='meta', dtype=torch\.float16\),\)\)"):
        ops["sig"](torch.randn((), dtype=torch.float16))
    # what it suggests runs: export Model with those meta tensors
    suggested = msg[msg.index("torch.export.export(model, ") + len("torch.export.export(model, "):-1]
    ep = torch.export.export(Model(ops), eval(suggested))  # noqa: S307 - the message's own code
    out = [n for n in ep.graph.nodes if n.op == "output"][0].args[0][0]
    assert tuple(out.meta["val"].shape) == (4,) and out.meta["val"].device.type == "meta"


def test_reregistering_replaces_and_conflicts_are_refused():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    first = registry.get(name)
    ttk.cuda_kernel_op(name, scale_spec())  # notebook re-run with a changed spec
    assert registry.get(name) is not first
    assert str(ns_op(name).default._schema).endswith("(Tensor x, float alpha) -> Tensor")
    lib = torch.library.Library("ttk_foreign", "FRAGMENT")
    lib.define("taken(Tensor x) -> Tensor")
    with pytest.raises(ttk.SpecError, match="torch already has an op of that name"):
        ttk.cuda_kernel_op("ttk_foreign::taken", sigmoid_spec())


def test_unregister():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    ttk.unregister(name)
    with pytest.raises(KeyError):
        registry.get(name)
    ttk.cuda_kernel_op(name, sigmoid_spec())  # the name is free again
    assert registry.get(name).op_name == name
    ttk.unregister(name)
    # a second time (or a name never declared): a KeyError as before, now with the fix and read as written
    with pytest.raises(KeyError) as raised:
        ttk.unregister(name)
    assert isinstance(raised.value, ttk.errors.UnknownOpError)
    assert str(raised.value).startswith(f"{name!r} was not registered with trt_kernels (or was unregistered already). "
                                        "Fix: unregister a name declared in this process (declared now: ")


def test_override_schema_inferred_from_meta_fn():
    def meta(x: torch.Tensor, k: int) -> torch.Tensor:
        return x.new_empty((x.shape[0] * k,))

    spec = ttk.KernelSpec(kernel_source='extern "C" __global__ void r(const float* x, int k, float* y) {}',
                          kernel_name="r", inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int)])
    op = ttk.cuda_kernel_op(unique(), spec, meta_fn=meta, eager_fn=meta)
    assert str(op.default._schema).endswith("(Tensor x, SymInt k) -> Tensor")
    with FakeTensorMode():
        assert op(torch.empty(4), 3).shape == (12,)
