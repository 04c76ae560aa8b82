"""AOT replay of the seven seed cases: what each op's TensorRT ``aot_impl`` describes, launched
on the GPU the way TensorRT launches it, compared bit for bit with the eager op.

No TensorRT needed: NVIDIA's pure-Python ``tensorrt.plugin`` (from the
``tensorrt-cu13-bindings`` wheel, installed or named by ``TRT_STANDIN_BINDINGS``) runs over
a CPU stand-in of the native library. Run: ``python examples/aot_replay.py`` (CUDA GPU).
"""

import importlib.util
import pathlib
import sys

import torch

import trt_kernels as ttk
from trt_kernels.testing import aot_replay

HERE = pathlib.Path(__file__).resolve().parent


def load_seed_example():
    name = "_ttk_example_cuda_kernel_op"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, HERE / "cuda_kernel_op.py")
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
    return sys.modules[name]


def declare_extra_ops(ex):
    """Beyond the seed: the sigmoid with TensorRT tactics, and a float/half/bf16 template."""
    ttk.cuda_kernel_op("kern_replay::sigmoid_tactics", ttk.KernelSpec(
        kernel_source=ex.CU_SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,), tactics=((128,), (1024,)))))
    ttk.cuda_kernel_op("kern_replay::row_sum_tactics", ttk.KernelSpec(
        kernel_source=ex.CU_ROW_SUM.replace("sbuf[256]", "sbuf[1024]"), kernel_name="my_row_sum",
        inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))],
        extras=[ttk.DimSize("x", -1)], geometry=ttk.Reduction(reduce_dims=(-1,), block_size=256, tactics=(128, 1024))))
    ttk.cuda_kernel_op("kern_replay::tsigmoid", ttk.KernelSpec(
        kernel_source="""
template <typename T>
__global__ void tsig(const T* x, int n, T* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = static_cast<float>(x[i]); y[i] = static_cast<T>(1.0f / (1.0f + __expf(-v))); }
}""", kernel_name="tsig<T>", dtypes=[torch.float32, torch.float16, torch.bfloat16],
        inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.Numel("x")], geometry=ttk.Elementwise(block=(256,))))


def cases(ex):
    """(label, op, args, tactics, on_standin) for every case, dtype and tactic."""
    r = lambda *s, dt=torch.float32: torch.randn(*s, device="cuda").to(dt)  # noqa: E731

    def give_trtp(env):  # case 6's hand-written aot_fn reads the module global `trtp`
        ex.trtp = env.trtp

    out = []
    for shape in [(1,), (257,), (4, 128), (33, 47)]:
        out.append((f"sigmoid {shape}", "kern_ex::sigmoid", (r(*shape),), [None], None))
    for shape in [(257,), (33, 47)]:
        out.append((f"add {shape}", "kern_ex::add", (r(*shape), r(*shape)), [None], None))
    for shape in [(257,), (4, 128)]:
        out.append((f"scale {shape}", "kern_ex::scale", (r(*shape), float(torch.randn(()).item())), [None], None))
    for shape in [(1, 1), (33, 47), (100, 300)]:
        out.append((f"relu_2d {shape}", "kern_ex::relu_2d", (r(*shape),), [None], None))
    for shape in [(8, 256), (3, 257), (1, 5000)]:
        out.append((f"row_sum {shape}", "kern_ex::row_sum", (r(*shape),), [None], None))
    for n in [1, 257, 1024]:
        out.append((f"repeat2 ({n},)", "kern_ex::repeat2", (r(n),), [None], give_trtp))
    for shape in [(7, 31), (257,)]:
        out.append((f"sin_cos {shape}", "kern_ex::sin_cos", (r(*shape),), [None], None))
    out.append(("sigmoid tactics (4097,)", "kern_replay::sigmoid_tactics", (r(4097),), [1, 2, 3], None))
    out.append(("row_sum tactics (5, 3000)", "kern_replay::row_sum_tactics", (r(5, 3000),), [1, 2, 3], None))
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        out.append((f"tsigmoid {str(dt)[6:]} (1000,)", "kern_replay::tsigmoid", (r(1000, dt=dt),), [None], None))
    return out


def main() -> int:
    if not torch.cuda.is_available():  # importing needs no GPU; running does
        print("examples/aot_replay.py: not run: it launches its kernels on a CUDA GPU, and none is visible here "
              "(torch.cuda.is_available() is False). Without a GPU, "
              "`trt-kernels inspect examples/cuda_kernel_op.py` shows the seed ops' plans that it replays.",
              file=sys.stderr)
        return 1
    ex = load_seed_example()
    declare_extra_ops(ex)
    rows = []
    for label, op, args, tactics, hook in cases(ex):
        for t in tactics:
            res = aot_replay(op, *args, tactic=t, on_standin=hook)
            rows.append((label, res.tactic, res.kernel_name, res.grid, res.block, res.extra_args, res.bitwise_equal))
    ex.trtp = None
    print(f"{'case':28s} {'tactic':>6s} {'kernel':18s} {'grid':>16s} {'block':>14s}  {'extra args':24s} bitwise")
    for label, t, k, g, b, e, ok in rows:
        es = str(e) if len(str(e)) <= 24 else str(e)[:21] + "..."
        print(f"{label:28s} {t:6d} {k[:18]:18s} {str(g):>16s} {str(b):>14s}  {es:24s} {'equal' if ok else 'DIFFERENT'}")
    n_ok = sum(r[-1] for r in rows)
    print(f"{n_ok}/{len(rows)} replays equal eager bit for bit")
    return 0 if n_ok == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
