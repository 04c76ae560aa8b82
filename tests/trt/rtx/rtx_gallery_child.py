"""Run in a child process by test_rtx_gallery.py (see rtx_child.py for why a child): every gallery kernel that
returns fresh outputs, exported to ONNX through the package's ONNX route (static shapes), parsed and built by
TensorRT-RTX's real builder on the CPU.

All the kernels go into one model first (a module calling each op on its own inputs, their outputs the model's, in
turn): one export (torch rebuilds its ONNX registry at every export, 1.5-2 s on the CPU machine) and one engine
holding every plugin. Where that model fails anywhere, each kernel is exported, parsed and built alone, so the
result names the kernel that fails.

usage: rtx_gallery_child.py NAMESPACE -> one JSON line "RESULT {...}": per kernel, whether the parser and the
builder took the model, their errors, the engine's size and the network's output shapes next to the op's, and
"together": whether they came from the one model."""

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


class _AllOps(torch.nn.Module):
    """Each gallery op on its own tensors (``counts[i]`` of the model's inputs, in turn); every output, in turn."""

    def __init__(self, mods, counts):
        super().__init__()
        self.mods = torch.nn.ModuleList(mods)
        self.counts = counts

    def forward(self, *xs):
        outs, i = [], 0
        for m, n in zip(self.mods, self.counts):
            r = m(*xs[i:i + n])
            i += n
            outs.extend(r if isinstance(r, (tuple, list)) else (r,))
        return tuple(outs)


def _build(logger, proto):
    """``(parsed, errors, engine bytes or None, the network's output shapes)`` of one exported model."""
    b = trt.Builder(logger)
    net = b.create_network(0)
    parser = trt.OnnxParser(net, logger)
    parsed = bool(parser.parse(proto.SerializeToString()))
    errors = [str(parser.get_error(i)) for i in range(parser.num_errors)]
    if not parsed:
        return parsed, errors, None, None
    eng = b.build_serialized_network(net, b.create_builder_config())
    return parsed, errors, len(bytes(eng)) if eng is not None else None, [
        [int(d) for d in net.get_output(i).shape] for i in range(net.num_outputs)]


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
    each = {}  # kernel -> (its module, its tensors, the op's output shapes)
    for k in kernels:
        name, op = ops[k.name]
        kw = {"dtype": k.dtypes[0]} if len(k.dtypes) > 1 else {}
        args = k.inputs("cpu", 37, **kw)
        tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
        with torch.no_grad():
            got = op(*[torch.empty(a.shape, dtype=a.dtype, device="meta") if isinstance(a, torch.Tensor)
                       else a for a in args])
        each[k.name] = (gallery.one_op_module(op, args).eval(), tensors,
                        [list(t.shape) for t in (got if isinstance(got, tuple) else (got,))])
    try:
        names = list(each)
        proto = export(_AllOps([each[n][0] for n in names], [len(each[n][1]) for n in names]).eval(),
                       tuple(t for n in names for t in each[n][1]))
        parsed, errors, size, shapes = _build(logger, proto)
    except Exception as e:  # noqa: BLE001 - then each kernel alone says which
        parsed, errors, size, shapes = False, [f"{type(e).__name__}: {e}"[:500]], None, None
    if parsed and not errors and size and shapes is not None and len(shapes) == sum(len(each[n][2]) for n in names):
        i = 0
        for n in names:
            want = each[n][2]
            out["kernels"][n] = {"aot": registry.get(ops[n][0]).aot.aot, "exported": True, "parsed": True,
                                 "errors": [], "engine_bytes": size, "outputs": shapes[i:i + len(want)],
                                 "expected_outputs": want, "together": True}
            i += len(want)
        print("RESULT " + json.dumps(out), flush=True)
        return
    out["together_errors"] = errors
    for k in kernels:
        name, _ = ops[k.name]
        mod, tensors, want = each[k.name]
        r = {"aot": registry.get(name).aot.aot, "together": False}
        try:
            proto = export(mod, tensors)
        except Exception as e:  # noqa: BLE001 - reported per kernel
            r.update(exported=False, errors=[f"{type(e).__name__}: {e}"[:500]])
            out["kernels"][k.name] = r
            continue
        r["exported"] = True
        r["parsed"], r["errors"], r["engine_bytes"], r["outputs"] = _build(logger, proto)
        if r["parsed"]:
            r["expected_outputs"] = want
        out["kernels"][k.name] = r
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
