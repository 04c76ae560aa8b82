"""Compile a model using a scalar op and a multi-output op with Torch-TensorRT, save it, reload it
in fresh processes (one importing trt_kernels, one not) and compare with eager.

The engine's plugin layers use the AOT impl (the PTX and the baked scalar are in the engine),
so the process that does not import trt_kernels can still run it. Where TensorRT is absent but
Torch-TensorRT's Python and NVIDIA's ``tensorrt`` wheel are, the TensorRT half runs over
``trt_kernels.testing``'s emulated libnvinfer and says so; there the module is saved with
``trt_kernels.testing.save_compiled`` (Torch-TensorRT 2.11 cannot ``torch_tensorrt.save`` a
module on its Python runtime) and the fresh processes import ``tensorrt`` from the emulator's
shim. Without either, the script says what it could not run.
Run: ``python examples/serialize_reload.py`` (CUDA GPU).
"""

import pathlib
import subprocess
import sys
import tempfile
import textwrap

import torch

import trt_kernels as ttk

SCALE = """
extern "C" __global__ void my_scale(const float* x, float alpha, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
"""
SIN_COS = """
extern "C" __global__ void my_sin_cos(const float* x, int n, float* s, float* c) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { s[i] = sinf(x[i]); c[i] = cosf(x[i]); }
}
"""


def declare():
    ttk.cuda_kernel_op("kern_save::scale", ttk.KernelSpec(
        kernel_source=SCALE, kernel_name="my_scale",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,))))
    ttk.cuda_kernel_op("kern_save::sin_cos", ttk.KernelSpec(
        kernel_source=SIN_COS, kernel_name="my_sin_cos", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("x")), ttk.OutputDecl("c", shape=ttk.SameAs("x"))],
        extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(256,))))


class Model(torch.nn.Module):
    """Two of our ops in a row: one engine with two plugin layers, one with a baked scalar."""

    def forward(self, x):
        return torch.ops.kern_save.sin_cos(torch.ops.kern_save.scale(x, 0.75))


def reference(x):
    return torch.sin(0.75 * x), torch.cos(0.75 * x)


def close(out, ref) -> bool:
    return all(torch.allclose(o, r, atol=1e-5, rtol=1e-5) for o, r in zip(out, ref, strict=True))


RELOAD = textwrap.dedent("""
    import sys, torch, torch_tensorrt
    if sys.argv[3] == "with":
        import trt_kernels  # noqa: F401
    x = torch.load(sys.argv[2]).cuda()
    if sys.argv[4] == "emulated":  # a pickled module (trt_kernels.testing.save_compiled)
        m = torch.load(sys.argv[1], weights_only=False)
    else:
        m = torch_tensorrt.load(sys.argv[1]).module()
    s, c = m(x)
    assert torch.allclose(s, torch.sin(0.75 * x), atol=1e-5, rtol=1e-5), s
    assert torch.allclose(c, torch.cos(0.75 * x), atol=1e-5, rtol=1e-5), c
    assert (sys.argv[3] == "with") == ("trt_kernels" in sys.modules)
    print("reload", sys.argv[3], "trt_kernels: OK" + (" (libnvinfer emulated)" if sys.argv[4] == "emulated" else ""))
""")


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/serialize_reload.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels status|inspect|compile examples/cuda_kernel_op.py` show and compile ops like its two.",
              file=sys.stderr)
        return 1
    declare()
    x = torch.randn(16, 257, device="cuda")
    ref = reference(x)
    print("eager matches reference:", close(Model()(x), ref))
    from trt_kernels import testing
    from trt_kernels.plugins import tensorrt_status

    st = tensorrt_status()
    env, emulated = None, st.get("available") != "yes" or testing.is_emulated()
    if st.get("available") == "yes" and emulated:  # already over the emulator (e.g. the shim on PYTHONPATH)
        env = testing.fresh_process_env()
    elif emulated:
        why = testing.emulation_unavailable_reason()
        if why is not None:
            print(f"NOT RUN: TensorRT compile, save and reload: {st.get('reason')}; emulated tier: {why}")
            return 0
        testing.emulate_tensorrt()
        env = testing.fresh_process_env()
    import torch_tensorrt

    trt_version = sys.modules["tensorrt"].__version__
    label = f"TensorRT {trt_version} API, libnvinfer emulated" if emulated else f"TensorRT {trt_version}"
    label = f"(Torch-TensorRT {torch_tensorrt.__version__.split('+')[0]}, {label})"
    trt_model = torch_tensorrt.compile(Model().eval(), ir="dynamo", inputs=[x],
                                       enabled_precisions={torch.float32}, min_block_size=1)
    assert close(trt_model(x), ref)
    print("TensorRT module matches reference", label)
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / ("model.pt" if emulated else "model.ep")
        xin = pathlib.Path(d) / "x.pt"
        if emulated:
            testing.save_compiled(trt_model, path)
        else:
            torch_tensorrt.save(trt_model, str(path), inputs=[x])
        torch.save(x.cpu(), xin)
        for mode in ("with", "without"):
            r = subprocess.run([sys.executable, "-c", RELOAD, str(path), str(xin), mode,
                                "emulated" if emulated else "real"], capture_output=True, text=True, env=env)
            print(r.stdout.strip() or r.stderr.strip()[-2000:])
            if r.returncode != 0:
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
