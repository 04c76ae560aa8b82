"""Run in a child process by test_rtx_written_sizes.py (see rtx_child.py for why a child): the gallery's kernels
whose output sizes the kernel writes (``DATA_DEPENDENT``: ``ttk.Written``), each exported to ONNX through the
package's ONNX route with static and with dynamic input shapes, parsed and built by TensorRT-RTX's real builder on
the CPU.

usage: rtx_written_child.py NAMESPACE -> one JSON line "RESULT {...}": per kernel and shape mode, whether the parser
and the builder took the model, their errors, the engine's size, the network's output shapes, and the plugin
layer's outputs (name, shape, type) as the network holds them."""

import importlib.util
import json
import pathlib
import sys

import tensorrt_rtx as trt
import torch

from trt_kernels.onnx_export import export
from trt_kernels.plugins import v3one

ROOT = pathlib.Path(__file__).resolve().parents[3]


class Logger(trt.ILogger):
    def __init__(self):
        trt.ILogger.__init__(self)
        self.errors = []

    def log(self, severity, msg):
        if severity in (trt.ILogger.Severity.ERROR, trt.ILogger.Severity.INTERNAL_ERROR):
            self.errors.append(msg[:500])


def main(ns):
    spec = importlib.util.spec_from_file_location("_ttk_rtx_written", ROOT / "examples" / "gallery" / "declare.py")
    gallery = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gallery)
    kernels = list(gallery.DATA_DEPENDENT.values())
    ops = {k.name: k.declare(name=f"{ns}::{k.name}") for k in kernels}
    v3one.register(trt, ops=[f"{ns}::{k.name}" for k in kernels])
    logger = Logger()
    out = {"version": trt.__version__, "kernels": {}}
    for k in kernels:
        args = k.inputs("cpu", 37)
        tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
        mod = gallery.one_op_module(ops[k.name], args).eval()
        for mode in ("static", "dynamic"):
            r = {}
            dyn = None
            if mode == "dynamic":  # the first axis of every tensor input, one size
                n = torch.export.Dim("n", min=1, max=4096)
                dyn = tuple({0: n} for _ in tensors)
            try:
                proto = export(mod, tensors, dynamic_shapes=dyn)
            except Exception as e:  # noqa: BLE001 - reported
                r.update(exported=False, errors=[f"{type(e).__name__}: {e}"[:500]])
                out["kernels"][f"{k.name}/{mode}"] = r
                continue
            logger.errors.clear()
            b = trt.Builder(logger)
            net = b.create_network(0)
            parser = trt.OnnxParser(net, logger)
            r["parsed"] = bool(parser.parse(proto.SerializeToString()))
            r["errors"] = [str(parser.get_error(i)) for i in range(parser.num_errors)]
            r["outputs"] = [[int(d) for d in net.get_output(i).shape] for i in range(net.num_outputs)]
            layer = next(net.get_layer(i) for i in range(net.num_layers)
                         if net.get_layer(i).type == trt.LayerType.PLUGIN_V3)
            r["plugin_outputs"] = [[layer.get_output(i).name, [int(d) for d in layer.get_output(i).shape],
                                    str(layer.get_output(i).dtype)] for i in range(layer.num_outputs)]
            config = b.create_builder_config()
            if mode == "dynamic":
                profile = b.create_optimization_profile()
                for i in range(net.num_inputs):
                    t = net.get_input(i)
                    shape = list(t.shape)
                    lo, hi = list(shape), list(shape)
                    lo[0], hi[0] = 1, 512
                    opt = list(shape)
                    opt[0] = 37
                    profile.set_shape(t.name, lo, opt, hi)
                config.add_optimization_profile(profile)
            eng = b.build_serialized_network(net, config)
            r["engine_bytes"] = len(bytes(eng)) if eng is not None else None
            r["build_errors"] = list(logger.errors)
            out["kernels"][f"{k.name}/{mode}"] = r
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
