"""Run in a child process by test_rtx_gallery.py (see rtx_child.py for why a child): every gallery kernel that
returns fresh outputs, exported to ONNX through the package's ONNX route (one op in a module, its tensors the
model's inputs, static shapes), parsed and built by TensorRT-RTX's real builder on the CPU.

usage: rtx_gallery_child.py NAMESPACE -> one JSON line "RESULT {...}": per kernel, whether the parser and the
builder took the model, their errors, the engine's size and the network's output shapes next to the op's."""

import importlib.util
import json
import pathlib
import sys

import tensorrt_rtx as trt
import torch

from trt_kernels import registry
from trt_kernels.onnx_export import export
from trt_kernels.plugins import v3one

ROOT = pathlib.Path(__file__).resolve().parents[3]


class Logger(trt.ILogger):
    def __init__(self):
        trt.ILogger.__init__(self)

    def log(self, severity, msg):
        pass


def main(ns):
    spec = importlib.util.spec_from_file_location("_ttk_rtx_gallery", ROOT / "examples" / "gallery" / "declare.py")
    gallery = sys.modules[spec.name] = importlib.util.module_from_spec(spec)  # (its dataclasses look it up)
    spec.loader.exec_module(gallery)
    skip = gallery.triton_missing()
    kernels = [k for k in gallery.GALLERY.values() if not (k.triton and skip)]
    ops = {k.name: (f"{ns}::{k.name}", k.declare(name=f"{ns}::{k.name}")) for k in kernels}
    v3one.register(trt, ops=[name for name, _ in ops.values()])
    logger = Logger()
    out = {"version": trt.__version__, "kernels": {}}
    for k in kernels:
        name, op = ops[k.name]
        kw = {"dtype": k.dtypes[0]} if len(k.dtypes) > 1 else {}
        args = k.inputs("cpu", 37, **kw)
        tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
        r = {"aot": registry.get(name).aot.aot}
        try:
            proto = export(gallery.one_op_module(op, args).eval(), tensors)
        except Exception as e:  # noqa: BLE001 - reported per kernel
            r.update(exported=False, errors=[f"{type(e).__name__}: {e}"[:500]])
            out["kernels"][k.name] = r
            continue
        b = trt.Builder(logger)
        net = b.create_network(0)
        parser = trt.OnnxParser(net, logger)
        r["exported"] = True
        r["parsed"] = bool(parser.parse(proto.SerializeToString()))
        r["errors"] = [str(parser.get_error(i)) for i in range(parser.num_errors)]
        if r["parsed"]:
            eng = b.build_serialized_network(net, b.create_builder_config())
            r["engine_bytes"] = len(bytes(eng)) if eng is not None else None
            r["outputs"] = [[int(d) for d in net.get_output(i).shape] for i in range(net.num_outputs)]
            with torch.no_grad():
                got = op(*[torch.empty(a.shape, dtype=a.dtype, device="meta") if isinstance(a, torch.Tensor)
                           else a for a in args])
            r["expected_outputs"] = [list(t.shape) for t in (got if isinstance(got, tuple) else (got,))]
        out["kernels"][k.name] = r
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
