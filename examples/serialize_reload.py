"""Compile a model using a scalar op and a multi-output op with Torch-TensorRT, save it, reload it
in fresh processes (one importing trt_kernels, one not) and compare with eager.

The engine's plugin layers use the AOT impl (the PTX and the baked scalar are in the engine),
so the process that does not import trt_kernels can still run it. Without TensorRT this
script says what it could not run. Run: ``python examples/serialize_reload.py`` (CUDA GPU).
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
    def forward(self, x):
        s, c = torch.ops.kern_save.sin_cos(torch.ops.kern_save.scale(x, 0.75))
        return s * c


RELOAD = textwrap.dedent("""
    import sys, torch, torch_tensorrt
    if sys.argv[3] == "with":
        import trt_kernels  # noqa: F401
    x = torch.load(sys.argv[2]).cuda()
    m = torch_tensorrt.load(sys.argv[1]).module()
    out = m(x)
    ref = torch.sin(0.75 * x) * torch.cos(0.75 * x)
    assert torch.allclose(out, ref, atol=1e-5, rtol=1e-5), (out - ref).abs().max()
    assert (sys.argv[3] == "with") == ("trt_kernels" in sys.modules)
    print("reload", sys.argv[3], "trt_kernels: OK")
""")


def main() -> int:
    declare()
    x = torch.randn(16, 257, device="cuda")
    ref = torch.sin(0.75 * x) * torch.cos(0.75 * x)
    eager = Model()(x)
    print("eager matches reference:", torch.allclose(eager, ref, atol=1e-5, rtol=1e-5))
    from trt_kernels.plugins import tensorrt_status

    st = tensorrt_status()
    if st.get("available") != "yes":
        print(f"NOT RUN: TensorRT compile, save and reload: {st.get('reason')}")
        return 0
    import torch_tensorrt

    trt_model = torch_tensorrt.compile(Model().eval(), ir="dynamo", inputs=[x],
                                       enabled_precisions={torch.float32}, min_block_size=1)
    out = trt_model(x)
    assert torch.allclose(out, ref, atol=1e-5, rtol=1e-5)
    print("TensorRT module matches reference")
    with tempfile.TemporaryDirectory() as d:
        path = pathlib.Path(d) / "model.ep"
        xin = pathlib.Path(d) / "x.pt"
        torch_tensorrt.save(trt_model, str(path), inputs=[x])
        torch.save(x.cpu(), xin)
        for mode in ("with", "without"):
            r = subprocess.run([sys.executable, "-c", RELOAD, str(path), str(xin), mode], capture_output=True, text=True)
            print(r.stdout.strip() or r.stderr.strip()[-2000:])
            if r.returncode != 0:
                return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
