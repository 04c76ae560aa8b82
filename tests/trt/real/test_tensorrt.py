"""Real TensorRT: compile each seed case with torch_tensorrt, dynamic shapes, save and reload,
fresh-process AOT reload without trt_kernels. Skipped where TensorRT is absent."""

import subprocess
import sys

import pytest
import torch

from support import ROOT, load_example


def _trt_reason():
    if not torch.cuda.is_available():
        return "needs a CUDA GPU"
    from trt_kernels.plugins import init, tensorrt_status

    init()
    st = tensorrt_status()
    if st.get("backend"):
        return f"tensorrt here is {st['backend']}, not TensorRT (that tier is tests/trt/emulated/test_trt_emulated.py)"
    return None if st.get("available") == "yes" else f"TensorRT side unavailable: {st.get('reason')}"


REASON = _trt_reason()
pytestmark = [pytest.mark.skipif(REASON is not None, reason=str(REASON))]


@pytest.fixture(scope="module")
def ex():
    return load_example("cuda_kernel_op")


def _compile(model, inputs, **kw):
    import torch_tensorrt

    return torch_tensorrt.compile(model, ir="dynamo", inputs=inputs, enabled_precisions={torch.float32},
                                  min_block_size=1, **kw)


def _cases(ex):
    r = lambda *s: torch.randn(*s, device="cuda")  # noqa: E731
    x = r(4, 128)
    a, b = r(257), r(257)
    x2 = r(33, 47)
    xr = r(8, 300)
    xrep = r(1024)
    xsc = r(7, 31)
    return [
        ("sigmoid", ex.SigmoidModel(), (x,), torch.sigmoid(x)),
        ("add", ex.AddModel(), (a, b), a + b),
        ("scale", ex.ScaleModel(2.5), (x,), 2.5 * x),
        ("relu_2d", ex.Relu2DModel(), (x2,), torch.relu(x2)),
        ("row_sum", ex.RowSumModel(), (xr,), xr.sum(-1)),
        ("repeat2", ex.Repeat2Model(), (xrep,), torch.repeat_interleave(xrep, 2)),
        ("sin_cos", ex.SinCosModel(), (xsc,), (torch.sin(xsc), torch.cos(xsc))),
    ]


@pytest.mark.parametrize("case", range(7))
def test_seed_case_compiles_into_the_engine(ex, case):
    name, model, inputs, ref = _cases(ex)[case]
    trt_model = _compile(model.cuda().eval(), list(inputs))
    for _ in range(5):
        out = trt_model(*inputs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        refs = ref if isinstance(ref, tuple) else (ref,)
        for o, rr in zip(outs, refs):
            torch.testing.assert_close(o, rr, atol=1e-4, rtol=1e-4)
    # the op ran inside TensorRT, not as a PyTorch fallback
    gm = trt_model if isinstance(trt_model, torch.fx.GraphModule) else None
    if gm is not None:
        targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
        assert not any("kern_ex" in t for t in targets), targets


def test_dynamic_batch(ex):
    import torch_tensorrt

    spec = torch_tensorrt.Input(min_shape=(1, 64), opt_shape=(8, 64), max_shape=(32, 64), dtype=torch.float32)
    trt_model = _compile(ex.RowSumModel().cuda().eval(), [spec])
    for b in (1, 5, 32):
        x = torch.randn(b, 64, device="cuda")
        torch.testing.assert_close(trt_model(x), x.sum(-1), atol=1e-4, rtol=1e-4)


def test_save_reload_and_fresh_process_without_trt_kernels():
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "serialize_reload.py")], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "reload with trt_kernels: OK" in r.stdout and "reload without trt_kernels: OK" in r.stdout
