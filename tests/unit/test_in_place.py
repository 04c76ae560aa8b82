"""Inputs a kernel writes in place (``InputDecl(name, mutated=True)``): an optimizer step declared as
written. CPU tier: the schema, the fake impl under torch.export, the launch packing (nothing allocated,
the caller's tensors passed), and the refusals; the GPU tier runs it (tests/gpu/test_in_place_gpu.py)."""

import pytest
import torch

import trt_kernels as ttk
from kernels import adamw_spec, unique
from test_fastpath import Recorder, StubKernel
from trt_kernels import registry
from trt_kernels.eager.fastpath import build_launcher
from trt_kernels.errors import OnnxExportError

SCALARS = (1e-3, 0.9, 0.999, 0.1, 0.001, 1e-8, 0.01)


def _declare(spec):
    name = unique("ttk_inplace")
    op = ttk.cuda_kernel_op(name, spec)
    return op, registry.lookup(name)


def test_the_schema_marks_the_written_inputs_and_returns_nothing():
    op, kop = _declare(adamw_spec())
    assert str(op.default._schema).split("(", 1)[1] == (
        "Tensor(a!) params_memory, Tensor grads_memory, Tensor(b!) m_memory, Tensor(c!) v_memory, "
        "float learning_rate, float beta1, float beta2, float beta1_correction, float beta2_correction, float eps, "
        "float weight_decay) -> ()")
    assert kop.sig.mutated == (0, 2, 3) and kop.sig.outputs == ()
    assert [p.role for p in kop.sig.params(torch.float32)] == ["input"] * 4 + ["extra"] + ["scalar"] * 7


def test_the_launch_passes_the_callers_tensors_and_returns_none():
    _, kop = _declare(adamw_spec())
    r = kop.recipe(torch.float32, (1, 1, 1, 1))
    holder = {}
    fn = build_launcher(kop, r, StubKernel(), launch=lambda *a: holder["rec"](*a), stream=lambda dev: 3)
    holder["rec"] = rec = Recorder(fn.pack)
    p, g, m, v = (torch.randn(300) for _ in range(4))
    assert fn(p, g, m, v, *SCALARS) is None
    vals = rec.calls[-1]["vals"]
    assert vals[:5] == [p.data_ptr(), g.data_ptr(), m.data_ptr(), v.data_ptr(), 300]
    assert rec.calls[-1]["grid"] == (2, 1, 1)
    with pytest.raises(ttk.InputError, match=r"input 'm_memory' is written in place \(mutated=True\) but is not "
                                             r"contiguous"):
        fn(p, g, torch.randn(600)[::2], v, *SCALARS)


def test_torch_export_traces_the_in_place_op():
    op, _ = _declare(adamw_spec())

    class Step(torch.nn.Module):
        def forward(self, p, g, m, v):
            op(p, g, m, v, *SCALARS)
            return p * 1

    args = tuple(torch.randn(40) for _ in range(4))
    ep = torch.export.export(Step(), args)
    text = str(ep.graph)
    assert op.default._schema.name.split("::")[1] in text


@pytest.mark.parametrize("kw, match", [
    (dict(backward=lambda ctx, *g: g), r"backward: given for an op that writes 'params_memory', 'm_memory', "
                                       r"'v_memory' in place"),
    (dict(schema="(Tensor params_memory, Tensor grads_memory, Tensor(b!) m_memory, Tensor(c!) v_memory, "
                 "float learning_rate, float beta1, float beta2, float beta1_correction, float beta2_correction, "
                 "float eps, float weight_decay) -> ()"),
     r"argument 'params_memory': is written in place by the kernel"),
])
def test_what_cannot_apply_to_an_in_place_op_is_refused(kw, match):
    with pytest.raises(ttk.SpecError, match=match):
        ttk.cuda_kernel_op(unique("ttk_inplace"), adamw_spec(), **kw)


def test_an_op_without_mutated_inputs_still_refuses_an_aliasing_schema():
    from kernels import sigmoid_spec

    with pytest.raises(ttk.SpecError, match=r"argument 'x': is declared to alias or be written in place"):
        ttk.cuda_kernel_op(unique("ttk_inplace"), sigmoid_spec(arch_override="sm_90"),
                           schema="(Tensor(a!) x) -> Tensor")


def test_outputs_stay_required_without_a_mutated_input():
    from kernels import sigmoid_spec

    with pytest.raises(ttk.SpecError, match=r"outputs: missing"):
        ttk.cuda_kernel_op(unique("ttk_inplace"), sigmoid_spec(outputs=[], arch_override="sm_90"))


def test_the_onnx_route_refuses_a_named_in_place_op_and_leaves_it_out_of_the_whole_table():
    pytest.importorskip("onnxscript")
    from trt_kernels import onnx_export

    op, kop = _declare(adamw_spec())
    assert kop.overload not in onnx_export.translation_table()
    with pytest.raises(OnnxExportError, match=r"writes 'params_memory', 'm_memory', 'v_memory' in place, which "
                                                  r"the ONNX route does not export"):
        onnx_export.translation_table([kop.op_name])
