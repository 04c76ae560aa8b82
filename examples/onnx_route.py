"""The ONNX route: a model calling a trt-kernels op, exported to ONNX and built into a TensorRT-RTX engine.

Each call of the op becomes one TensorRT plugin node; TensorRT-RTX's ONNX parser imports it as this
package's IPluginV3One plugin, and its builder builds the engine. That works on a machine without a
GPU (TensorRT-RTX builds on a CPU); running the engine needs a GPU TensorRT-RTX supports (RTX GPUs:
compute capability 8.0, 8.6, 8.9, 12.x), where this script also checks it against the eager op.

Needs `pip install 'trt-kernels[rtx]'`; without it, it says what is missing and exits with status 1.
(TensorRT-RTX's parser loads `libtensorrt_rtx.so` by that name, which its wheel does not ship:
`v3one.parser_problem` makes the name resolve inside this process, see trt_kernels.plugins.rtx_lib.)
The exported model lives in a temporary folder removed at the end.
"""

import importlib.util
import logging
import os
import sys
import tempfile
import warnings

import torch

import trt_kernels as ttk

SRC = r"""
extern "C" __global__ void onnx_ex_scale(const float* x, float alpha, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}
"""

ttk.cuda_kernel_op(
    "onnx_ex::scale",
    ttk.KernelSpec(
        kernel_source=SRC,
        kernel_name="onnx_ex_scale",
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
        extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,)),
    ),
)


class Model(torch.nn.Module):
    def forward(self, x):
        return torch.ops.onnx_ex.scale(x, 0.5)


def main() -> int:
    missing = [m for m in ("tensorrt_rtx", "onnx", "onnxscript") if importlib.util.find_spec(m) is None]
    if missing:
        print(f"examples/onnx_route.py: not run: {', '.join(missing)} not installed "
              "(pip install 'trt-kernels[rtx]')", file=sys.stderr)
        return 1
    from trt_kernels import onnx_export

    # torch's ONNX exporter says it skips torchvision's ops when torchvision is not installed, and its
    # pytree warns of a deprecation inside torch; neither concerns this model
    logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)
    warnings.filterwarnings("ignore", message=".*LeafSpec.*", category=FutureWarning)
    with tempfile.TemporaryDirectory(prefix="onnx_route_") as tmp:
        return build(onnx_export, os.path.join(tmp, "model.onnx"))


def build(onnx_export, path: str) -> int:
    model = Model()
    x = torch.randn(8, 1000)
    proto = onnx_export.export(model, (x,), path, dynamic_shapes={"x": {0: torch.export.Dim("batch")}})
    print(f"exported model.onnx: nodes {[(n.domain, n.op_type) for n in proto.graph.node]}")

    import tensorrt_rtx as trt  # or tensorrt

    from trt_kernels.plugins import v3one

    problem = v3one.parser_problem(trt)
    if problem:
        print(f"examples/onnx_route.py: not run: {problem}", file=sys.stderr)
        return 1
    logger = trt.Logger(trt.Logger.WARNING)
    v3one.register(trt)                             # a creator per op in trt.get_plugin_registry()
    builder = trt.Builder(logger)
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, logger)
    if not parser.parse_from_file(path):
        print("examples/onnx_route.py: the parse failed:", [str(parser.get_error(i)) for i in range(parser.num_errors)],
              file=sys.stderr)
        return 1
    config = builder.create_builder_config()
    profile = builder.create_optimization_profile()
    profile.set_shape(network.get_input(0).name, (1, 1000), (8, 1000), (64, 1000))
    config.add_optimization_profile(profile)
    engine_bytes = builder.build_serialized_network(network, config)
    if engine_bytes is None:
        print("examples/onnx_route.py: the build failed (TensorRT-RTX's log above says why)", file=sys.stderr)
        return 1
    print(f"built a TensorRT-RTX engine holding the plugin onnx_ex::scale: {engine_bytes.nbytes} bytes")
    if not torch.cuda.is_available():
        print("no CUDA GPU here: the engine was built, not run (TensorRT-RTX runs engines on RTX GPUs)")
        return 0
    engine = trt.Runtime(logger).deserialize_cuda_engine(engine_bytes)
    if engine is None:
        print("TensorRT-RTX did not load the engine on this GPU (its log above says why)")
        return 0
    ctx = engine.create_execution_context()
    xs = torch.randn(5, 1000, device="cuda")
    ys = torch.empty_like(xs)
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    ctx.set_input_shape(names[0], tuple(xs.shape))
    ctx.set_tensor_address(names[0], xs.data_ptr())
    ctx.set_tensor_address(names[1], ys.data_ptr())
    assert ctx.execute_async_v3(torch.cuda.current_stream().cuda_stream)
    torch.cuda.synchronize()
    torch.testing.assert_close(ys, torch.ops.onnx_ex.scale(xs, 0.5), rtol=0, atol=0)
    print("the engine's output equals the eager op's, bit for bit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
