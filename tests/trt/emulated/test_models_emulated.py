"""Real models in the emulated tier (issue 32): our ops between TensorRT's own layers, in one engine.

Four model families, each with one or two of our ops among standard layers: a transformer block (our
RMSNorm and SwiGLU around attention and linear layers), a CNN (our activation between convolutions,
batch norms and pooling), a detection head (our thresholded score among convolutions, permutes,
reshapes and a concatenation) and an MLP (our activation between linear layers and a layer norm). Each is compiled by
real Torch-TensorRT with ``min_block_size=1`` and no ``torch_executed_ops``, with a static shape and
with a dynamic batch, into one engine that holds both TensorRT's layers and our plugins; its output
must match eager PyTorch; the engine is serialized and run in a fresh process by a plain ``tensorrt``
runtime that imports neither trt_kernels nor torch_tensorrt.

The engines are emulated (``trt_kernels.testing``'s libnvinfer, TensorRT's standard layers computed by
torch): nothing here is a TensorRT result.
"""

import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch
import torch.nn.functional as F

import emulated as emu
import trt_kernels as ttk
from kernels import rmsnorm_mixed_spec, rmsnorm_reference

NS = "ttk_models"

SWIGLU = r"""
extern "C" __global__ void swiglu_fwd(const float* __restrict__ gate, const float* __restrict__ up, long long n,
                                      float* __restrict__ out) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = gate[i];
  out[i] = g / (1.0f + expf(-g)) * up[i];
}
"""

HARDSWISH = r"""
extern "C" __global__ void hswish(const float* __restrict__ x, int n, float* __restrict__ y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    float v = x[i];
    y[i] = v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) * (1.0f / 6.0f);
  }
}
"""

SCORE = r"""
// sigmoid of a logit, zeroed below a threshold
extern "C" __global__ void thresholded_score(const float* __restrict__ logits, float threshold, int n,
                                             float* __restrict__ score) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float p = 1.0f / (1.0f + expf(-logits[i]));
    score[i] = p >= threshold ? p : 0.0f;
  }
}
"""

GELU_TANH = r"""
extern "C" __global__ void gelu_tanh(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float v = x[i];
    y[i] = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v)));
  }
}
"""


def _elementwise(source, name, inputs, extras=None):
    first = inputs[0].name
    return ttk.KernelSpec(kernel_source=source, kernel_name=name, inputs=inputs,
                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs(first))],
                          extras=extras or [ttk.Numel(first)], geometry=ttk.Elementwise(block=(256,)))


@pytest.fixture(scope="module")
def ops(tt):
    ttk.cuda_kernel_op(f"{NS}::rmsnorm", rmsnorm_mixed_spec(dtypes=[(torch.float32, torch.float32)]))
    ttk.cuda_kernel_op(f"{NS}::swiglu", _elementwise(
        SWIGLU, "swiglu_fwd", [ttk.InputDecl("gate"), ttk.InputDecl("up")],
        extras=[ttk.SizeArg("n", ttk.Numel("gate"), ctype="long long")]))
    ttk.cuda_kernel_op(f"{NS}::hardswish", _elementwise(HARDSWISH, "hswish", [ttk.InputDecl("x")]))
    ttk.cuda_kernel_op(f"{NS}::score", _elementwise(SCORE, "thresholded_score",
                                                     [ttk.InputDecl("logits"), ttk.ScalarInput("threshold", float)]))
    ttk.cuda_kernel_op(f"{NS}::gelu", _elementwise(GELU_TANH, "gelu_tanh", [ttk.InputDecl("x")]))
    yield getattr(torch.ops, NS)
    for name in ("rmsnorm", "swiglu", "hardswish", "score", "gelu"):
        ttk.unregister(f"{NS}::{name}")


# ----- the models, each with a reference in plain torch -----

class TransformerBlock(torch.nn.Module):
    def __init__(self, ours: bool, d=64, heads=4, hidden=160):
        super().__init__()
        self.ours, self.heads = ours, heads
        self.norm1 = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.norm2 = torch.nn.Parameter(torch.rand(d) + 0.5)
        self.qkv, self.proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.gate, self.up = torch.nn.Linear(d, hidden, bias=False), torch.nn.Linear(d, hidden, bias=False)
        self.down = torch.nn.Linear(hidden, d)

    def rms(self, x, w):
        return torch.ops.ttk_models.rmsnorm(x, w, 1e-6) if self.ours else rmsnorm_reference(x, w, 1e-6)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.rms(x, self.norm1)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        h = self.rms(x, self.norm2)
        g, u = self.gate(h), self.up(h)
        act = torch.ops.ttk_models.swiglu(g, u) if self.ours else F.silu(g) * u
        return x + self.down(act)


def _hardswish(x):
    return x * torch.clamp(x + 3, 0, 6) / 6


class SmallCNN(torch.nn.Module):
    def __init__(self, ours: bool):
        super().__init__()
        self.ours = ours
        self.conv1, self.bn1 = torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8)
        self.conv2, self.bn2 = torch.nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2), torch.nn.BatchNorm2d(16)
        self.fc = torch.nn.Linear(16, 10)
        for bn in (self.bn1, self.bn2):  # running statistics that are not the identity
            bn.running_mean.uniform_(-0.5, 0.5)
            bn.running_var.uniform_(0.5, 2.0)
            bn.weight.data.uniform_(0.5, 1.5)
            bn.bias.data.uniform_(-0.5, 0.5)

    def act(self, x):
        return torch.ops.ttk_models.hardswish(x) if self.ours else _hardswish(x)

    def forward(self, x):
        x = F.max_pool2d(self.act(self.bn1(self.conv1(x))), 2)
        x = self.act(self.bn2(self.conv2(x)))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


class DetectionHead(torch.nn.Module):
    def __init__(self, ours: bool, channels=16, classes=5):
        super().__init__()
        self.ours, self.classes = ours, classes
        self.stem = torch.nn.Conv2d(channels, 32, 3, padding=1)
        self.cls, self.box = torch.nn.Conv2d(32, classes, 1), torch.nn.Conv2d(32, 4, 1)

    def forward(self, f):
        h = torch.relu(self.stem(f))
        logits = self.cls(h)
        if self.ours:
            score = torch.ops.ttk_models.score(logits, 0.4)
        else:
            p = torch.sigmoid(logits)
            score = torch.where(p >= 0.4, p, torch.zeros_like(p))
        b = f.shape[0]
        score = score.permute(0, 2, 3, 1).reshape(b, -1, self.classes)
        boxes = self.box(h).permute(0, 2, 3, 1).reshape(b, -1, 4)
        return torch.cat([boxes, score], dim=-1)


class MLP(torch.nn.Module):
    def __init__(self, ours: bool):
        super().__init__()
        self.ours = ours
        self.fc1, self.fc2, self.fc3 = torch.nn.Linear(32, 96), torch.nn.Linear(96, 64), torch.nn.Linear(64, 8)
        self.norm = torch.nn.LayerNorm(96)
        self.norm.weight.data.uniform_(0.5, 1.5)
        self.norm.bias.data.uniform_(-0.5, 0.5)

    def act(self, x):
        return torch.ops.ttk_models.gelu(x) if self.ours else F.gelu(x, approximate="tanh")

    def forward(self, x):
        return self.fc3(self.act(self.fc2(self.norm(self.act(self.fc1(x))))))


#: family -> (model class, input shape (batch first), TensorRT layer types the engine must hold, our ops)
FAMILIES = {
    "transformer": (TransformerBlock, (2, 12, 64), {"MATRIX_MULTIPLY", "SOFTMAX", "ELEMENTWISE", "SHUFFLE"},
                    {f"{NS}::rmsnorm", f"{NS}::swiglu"}),
    "cnn": (SmallCNN, (2, 3, 16, 16), {"CONVOLUTION", "POOLING", "MATRIX_MULTIPLY"}, {f"{NS}::hardswish"}),
    "detection": (DetectionHead, (2, 16, 10, 12), {"CONVOLUTION", "SHUFFLE", "CONCATENATION"}, {f"{NS}::score"}),
    "mlp": (MLP, (5, 32), {"MATRIX_MULTIPLY", "ELEMENTWISE", "NORMALIZATION"}, {f"{NS}::gelu"}),
}


def _models(family):
    """The model with our ops, and the same weights computing everything in plain torch."""
    cls = FAMILIES[family][0]
    torch.manual_seed(sum(map(ord, family)))
    ours = cls(True).cuda().eval()
    ref = cls(False).cuda().eval()
    ref.load_state_dict(ours.state_dict())
    return ours, ref


def _aten_outside_engines(gm):
    """aten calls left to PyTorch, outside every engine."""
    return [str(n.target) for _, m in gm.named_modules() if isinstance(m, torch.fx.GraphModule)
            for n in m.graph.nodes if n.op == "call_function" and "aten" in str(n.target)]


def _compile(tt, model, x, dynamic: bool):
    if not dynamic:
        return emu.compile_trt(tt, model, [x])
    b = x.shape[0]
    spec = tt[1].Input(min_shape=(1, *x.shape[1:]), opt_shape=tuple(x.shape), max_shape=(4 * b, *x.shape[1:]),
                       dtype=torch.float32)
    return emu.compile_trt(tt, model, [spec])


_COMPILED = {}


@pytest.fixture(scope="module")
def compiled(tt, ops):
    """family -> (dynamic?) -> compiled module, built once per module."""
    def get(family, dynamic):
        key = (family, dynamic)
        if key not in _COMPILED:
            ours, ref = _models(family)
            x = torch.randn(*FAMILIES[family][1], device="cuda")
            with torch.no_grad():
                _COMPILED[key] = (_compile(tt, ours, x, dynamic), ref, x)
        return _COMPILED[key]
    yield get
    _COMPILED.clear()


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic_batch"])
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_a_model_compiles_whole_into_one_engine_and_matches_eager(compiled, family, dynamic):
    trt_model, ref, x = compiled(family, dynamic)
    _, _, layer_types, our_ops = FAMILIES[family]
    assert len(emu.engines(trt_model)) == 1, "everything in one engine"
    assert _aten_outside_engines(trt_model) == []
    layers = emu.layers(trt_model)
    assert layer_types <= {layer.get("type") for layer in layers if layer["kind"] == "layer"}
    assert our_ops == {layer["plugin"] for layer in layers if layer["kind"] == "aot_plugin"}
    batches = (x.shape[0], 1, 3 * x.shape[0]) if dynamic else (x.shape[0],)
    with torch.no_grad():
        for b in batches:
            xb = torch.randn(b, *x.shape[1:], device="cuda")
            torch.testing.assert_close(trt_model(xb), ref(xb), atol=2e-4, rtol=2e-4)


RUN_ENGINES = textwrap.dedent("""
    import sys, torch
    import tensorrt as trt
    runtime = trt.Runtime(trt.Logger(trt.Logger.WARNING))
    for plan in sys.argv[1:]:
        case = torch.load(plan + ".pt")
        engine = runtime.deserialize_cuda_engine(open(plan, "rb").read())
        assert engine is not None, plan
        ctx = engine.create_execution_context()
        names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
        (inp,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
        (out,) = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
        stream = torch.cuda.Stream()
        for x, ref in case:
            x = x.cuda()
            assert ctx.set_input_shape(inp, tuple(x.shape))
            y = torch.empty(tuple(ctx.get_tensor_shape(out)), device="cuda")
            assert ctx.set_tensor_address(inp, x.data_ptr()) and ctx.set_tensor_address(out, y.data_ptr())
            assert ctx.execute_async_v3(stream.cuda_stream)
            stream.synchronize()
            torch.testing.assert_close(y.cpu(), ref, atol=2e-4, rtol=2e-4)
        print("ran", plan)
    loaded = sorted(k for k in sys.modules if k.split(".")[0] in ("trt_kernels", "torch_tensorrt"))
    assert not loaded, loaded
    print("plain tensorrt Runtime:", trt.__emulated__, "- ran every engine without trt_kernels or torch_tensorrt: OK")
""")


def test_the_engines_reload_and_run_in_a_fresh_process_with_plain_tensorrt(compiled, tmp_path):
    """Every family's dynamic-batch engine, serialized, is run by a process that imports neither trt_kernels nor
    torch_tensorrt (the AOT plugin layers carry their PTX; the standard layers are the emulator's)."""
    from trt_kernels.testing import fresh_process_env

    plans = []
    for family in sorted(FAMILIES):
        trt_model, ref, x = compiled(family, True)
        (engine,) = emu.engines(trt_model)
        plan = tmp_path / f"{family}.plan"
        plan.write_bytes(bytes(engine.serialize()))
        case = []
        with torch.no_grad():
            for b in (x.shape[0], 1, 3):
                xb = torch.randn(b, *x.shape[1:], device="cuda")
                case.append((xb.cpu(), ref(xb).cpu()))
        torch.save(case, str(plan) + ".pt")
        plans.append(str(plan))
    r = subprocess.run([sys.executable, "-c", RUN_ENGINES, *plans], env=fresh_process_env(), capture_output=True,
                       text=True, timeout=600, cwd=pathlib.Path(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "ran every engine without trt_kernels or torch_tensorrt: OK" in r.stdout
