"""Triton ops in real Torch-TensorRT over trt_kernels.testing's emulated libnvinfer (marker
``trt_emulated``): a model mixing Triton ops and a CUDA C++ op compiles into one engine of AOT
plugin layers, runs, reloads in this process and in a fresh one without trt_kernels or triton; a
Triton kernel that needs a scratch buffer runs as a JIT layer. Emulated is not TensorRT: see
tests/trt/emulated/test_trt_emulated.py."""

import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")

import emulated as emu  # noqa: E402
import triton_kernels as tk  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from kernels import SIGMOID, unique  # noqa: E402
from trt_kernels import registry  # noqa: E402


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


@pytest.fixture(scope="module")
def names(tt):
    n = {k: unique("tri_emu") for k in ("scale", "rms", "am", "sig", "tma")}
    tk.declare_scale(n["scale"])
    tk.declare_rmsnorm(n["rms"])
    tk.declare_add_mul(n["am"])
    if torch.cuda.get_device_capability()[0] >= 9:  # device-side tensor descriptors need sm_90+
        tk.declare_tma_copy(n["tma"])
    ttk.cuda_kernel_op(n["sig"], ttk.KernelSpec(
        kernel_source=SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,))))
    return n


class Mixed(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.scale, self.rms, self.am, self.sig = (_op(n[k]) for k in ("scale", "rms", "am", "sig"))

    def forward(self, x, w):
        z = self.rms(self.sig(self.scale(x, 0.5)), w, 1e-6)
        return self.am(z, x)


def reference(x, w):
    y = torch.sigmoid(x * 0.5 + 1.0)
    z = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return z + x, z * x


def _check(out, ref, tol=1e-4):
    for o, r in zip(out, ref):
        torch.testing.assert_close(o, r, atol=tol, rtol=tol)


def test_triton_and_cuda_ops_in_one_engine(tt, names):
    x, w = torch.randn(16, 300, device="cuda"), torch.randn(300, device="cuda")
    trt_model = emu.compile_trt(tt, Mixed(names), [x, w])
    layers = emu.layers(trt_model)
    assert [layer["plugin"] for layer in layers] == [names[k] for k in ("scale", "sig", "rms", "am")]
    assert {layer["kind"] for layer in layers} == {"aot_plugin"}
    assert [layer["kernel_name"] for layer in layers] == ["scale_shift_kernel", "my_sigmoid", "rmsnorm_kernel",
                                                          "add_mul_kernel"]
    _check(trt_model(x, w), reference(x, w))
    x2, w2 = torch.randn_like(x), torch.randn_like(w)  # fresh inputs through the same engine
    _check(trt_model(x2, w2), Mixed(names)(x2, w2), tol=1e-5)


def test_dynamic_batch(tt, names):
    spec = tt[1].Input(min_shape=(1, 512), opt_shape=(8, 512), max_shape=(64, 512), dtype=torch.float32)
    wspec = tt[1].Input(shape=(512,), dtype=torch.float32)
    trt_model = emu.compile_trt(tt, Mixed(names), [spec, wspec])
    w = torch.randn(512, device="cuda")
    for b in (1, 7, 64):
        x = torch.randn(b, 512, device="cuda")
        _check(trt_model(x, w), reference(x, w))


@pytest.mark.parametrize("tactic", [1, 2, 3])
def test_every_triton_tactic_builds_and_matches(tt, names, tactic):
    from trt_kernels.testing import force_tactic

    class One(torch.nn.Module):
        def forward(self, x):
            return _op(names["scale"])(x, -1.25)

    x = torch.randn(5, 3333, device="cuda")
    with force_tactic(names["scale"], tactic):
        trt_model = emu.compile_trt(tt, One(), [x])
    (layer,) = emu.layers(trt_model)
    assert layer["tactic"] == tactic and layer["tactics"] == [1, 2, 3]
    torch.testing.assert_close(trt_model(x), x * -1.25 + 1.0)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_half_precision(tt, names, dtype):
    class R(torch.nn.Module):
        def forward(self, x, w):
            return _op(names["rms"])(x, w, 1e-5)

    x, w = torch.randn(9, 777, device="cuda", dtype=dtype), torch.randn(777, device="cuda", dtype=dtype)
    trt_model = emu.compile_trt(tt, R(), [x, w])
    out = trt_model(x, w)
    assert out.dtype == dtype
    torch.testing.assert_close(out, R()(x, w), atol=0, rtol=0)  # same PTX semantics, same bits
    torch.testing.assert_close(out, tk.rmsnorm_ref(x, w, 1e-5), atol=2e-2, rtol=2e-2)


def test_aot_code_assumes_only_what_every_launch_of_the_engine_gives(tt, names):
    """The AOT layer's PTX assumes TensorRT's 256-byte aligned tensors, and a size divisible by 16 only where the
    engine's shapes fix it: static shapes (32768 elements) get vector loads; a dynamic batch does not, and every
    batch in its range runs right (odd element counts included); the engine refuses none of them."""
    class One(torch.nn.Module):
        def forward(self, x):
            return _op(names["scale"])(x, 0.25)

    x = torch.randn(64, 512, device="cuda")
    static = emu.compile_trt(tt, One(), [x])
    (layer,) = emu.layers(static)
    assert layer["kind"] == "aot_plugin" and "ld.global.v4" in layer["ptx"]
    torch.testing.assert_close(static(x), x * 0.25 + 1.0)
    dynamic = emu.compile_trt(tt, One(), [tt[1].Input(min_shape=(1, 3), opt_shape=(8, 3), max_shape=(99, 3),
                                                       dtype=torch.float32, name="x")])
    (layer,) = emu.layers(dynamic)
    assert layer["kind"] == "aot_plugin" and "ld.global.v4" not in layer["ptx"]
    for b in (1, 7, 16, 99):
        x = torch.randn(b, 3, device="cuda")
        torch.testing.assert_close(dynamic(x), x * 0.25 + 1.0)


def test_scratch_kernel_runs_as_a_jit_layer(tt, names):
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("device-side tensor descriptors need sm_90+")
    kop = registry.get(names["tma"])
    assert kop.tensorrt.aot is False and "scratch buffer" in kop.tensorrt.plugin

    class C(torch.nn.Module):
        def forward(self, x):
            return _op(names["tma"])(x)

    x = torch.randn(64, 48, device="cuda")
    trt_model = emu.compile_trt(tt, C(), [x])
    assert [layer["kind"] for layer in emu.layers(trt_model)] == ["jit_plugin"]
    torch.testing.assert_close(trt_model(x), x, atol=0, rtol=0)


RELOAD = textwrap.dedent("""
    import sys
    sys.modules["triton"] = None  # this process cannot import triton: the engine must not need it
    import torch
    m = torch.load(sys.argv[1], weights_only=False)
    x, w = torch.load(sys.argv[2]).cuda(), torch.load(sys.argv[3]).cuda()
    import tensorrt
    y = torch.sigmoid(x * 0.5 + 1.0)
    z = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    for _ in range(3):
        s, p = m(x, w)
        torch.testing.assert_close(s, z + x, atol=1e-4, rtol=1e-4)
        torch.testing.assert_close(p, z * x, atol=1e-4, rtol=1e-4)
    bad = sorted(k for k in sys.modules if k.startswith("trt_kernels"))
    assert not bad, bad
    print("fresh process:", tensorrt.__emulated__, "- without trt_kernels and triton: OK")
""")


def test_save_and_reload_in_a_fresh_process_without_trt_kernels_or_triton(tt, names, tmp_path):
    from trt_kernels.testing import fresh_process_env, load_compiled, save_compiled

    x, w = torch.randn(16, 300, device="cuda"), torch.randn(300, device="cuda")
    trt_model = emu.compile_trt(tt, Mixed(names), [x, w])
    path = tmp_path / "mixed.pt"
    save_compiled(trt_model, path)
    torch.save(x.cpu(), tmp_path / "x.pt")
    torch.save(w.cpu(), tmp_path / "w.pt")
    _check(load_compiled(path)(x, w), trt_model(x, w), tol=0)
    r = subprocess.run([sys.executable, "-c", RELOAD, str(path), str(tmp_path / "x.pt"), str(tmp_path / "w.pt")],
                       env=fresh_process_env(), capture_output=True, text=True, timeout=600,
                       cwd=pathlib.Path(path).parent)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "without trt_kernels and triton: OK" in r.stdout


def test_example_runs_its_tensorrt_half_over_the_emulator(tt):
    root = pathlib.Path(__file__).resolve().parents[3]
    r = subprocess.run([sys.executable, str(root / "examples" / "triton_kernel_op.py")], capture_output=True,
                       text=True, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr[-4000:]
    assert "[TensorRT] Triton + CUDA C++ ops compiled and run: True" in r.stdout, r.stdout
    assert "libnvinfer emulated)" in r.stdout and r.stdout.count("match torch: True") == 3, r.stdout
