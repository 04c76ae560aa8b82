"""Run in a child process by test_rtx_builder.py (TensorRT-RTX's parser aborts the process it runs in
when libtensorrt_rtx.so does not resolve; the package makes it resolve, and a child keeps a failure apart).

usage: rtx_child.py NAMESPACE  -> one JSON line "RESULT {...}" on stdout: per case, what the parser and
the builder did with the exported model, what our plugin was asked, and what deserializing said."""

import json
import sys

import tensorrt_rtx as trt
import torch

from trt_kernels import registry
from trt_kernels.cli import seed_cases as sc
from trt_kernels.onnx_export import export
from trt_kernels.plugins import v3one

LOG = []
PROFILE_MAX = 2048  # the profile's largest batch (every case's inputs fit)


class Logger(trt.ILogger):
    def __init__(self):
        trt.ILogger.__init__(self)

    def log(self, severity, msg):
        LOG.append(f"{severity.name}: {msg}")


def dims(d):
    return [int(d[i]) for i in range(len(d))]


def build(logger, model_bytes, tensors):
    """(parsed, errors, engine bytes or None, network output shapes)"""
    b = trt.Builder(logger)
    net = b.create_network(0)
    parser = trt.OnnxParser(net, logger)
    if not parser.parse(model_bytes):
        return False, [str(parser.get_error(i)) for i in range(parser.num_errors)], None, []
    cfg = b.create_builder_config()
    prof = b.create_optimization_profile()
    for i, t in enumerate(tensors):
        rest = tuple(t.shape[1:])
        prof.set_shape(net.get_input(i).name, (1,) + rest, (int(t.shape[0]),) + rest, (PROFILE_MAX,) + rest)
    cfg.add_optimization_profile(prof)
    eng = b.build_serialized_network(net, cfg)
    outs = [dims(net.get_output(i).shape) for i in range(net.num_outputs)]
    return True, [], (bytes(eng) if eng is not None else None), outs


def run(engine, case, ns):
    """Run the engine on fresh inputs (the case's shape, and a batch of 1) against the eager op and the
    torch reference: {"max_abs_diff_eager": ..., "matches_reference": ...} per batch."""
    ctx = engine.create_execution_context()
    names = [engine.get_tensor_name(i) for i in range(engine.num_io_tensors)]
    ins = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.INPUT]
    outs = [n for n in names if engine.get_tensor_mode(n) == trt.TensorIOMode.OUTPUT]
    res = {}
    for batch in (None, 1):
        tensors, scalars = case.make_inputs(torch.device("cuda"))
        if batch is not None:
            tensors = tuple(t[:batch].contiguous() for t in tensors)
        for n, t in zip(ins, tensors):
            ctx.set_input_shape(n, tuple(t.shape))
            ctx.set_tensor_address(n, t.data_ptr())
        got = []
        for n in outs:
            t = torch.empty(tuple(ctx.get_tensor_shape(n)), device="cuda", dtype=torch.float32)
            ctx.set_tensor_address(n, t.data_ptr())
            got.append(t)
        stream = torch.cuda.current_stream()
        ok = ctx.execute_async_v3(stream.cuda_stream)
        stream.synchronize()
        eager = sc.as_tuple(sc.op(case, ns)(*tensors, *scalars))
        ref = case.reference(*tensors, *scalars)
        res[str(batch or "full")] = {
            "executed": bool(ok),
            "max_abs_diff_eager": max(float((g - e).abs().max()) if g.numel() else 0.0 for g, e in zip(got, eager)),
            "reference_mismatch": sc.mismatch(case, tuple(got), ref)}
    return res


class Chain(torch.nn.Module):
    def __init__(self, ns):
        super().__init__()
        self.ops = getattr(torch.ops, ns)

    def forward(self, x):
        return self.ops.sin_cos(self.ops.sigmoid(self.ops.scale(x, 0.5)))


def main(ns):
    logger = Logger()
    cases = sc.declare(ns, sc.ALL_CASES)
    unregistered = sc.declare(ns + "_late", [sc.CASES[0]])[0]  # declared, its creator never registered
    v3one.register(trt, ops=[c.op_name(ns) for c in cases])
    out = {"version": trt.__version__, "cases": {}}
    for c in cases:
        kop = registry.get(c.op_name(ns))
        tensors, scalars = c.make_inputs(torch.device("cpu"))
        model = sc.CaseModel(ns, c.name, scalars, len(tensors)).eval()
        batch = torch.export.Dim("batch", min=1, max=PROFILE_MAX)
        names = ["x"] if len(tensors) == 1 else ["a", "b"]
        proto = export(model, tuple(tensors), dynamic_shapes={n: {0: batch} for n in names})
        del LOG[:]
        parsed, errors, engine, outs = build(logger, proto.SerializeToString(), tensors)
        r = {"parsed": parsed, "errors": errors, "engine_bytes": len(engine) if engine else None,
             "outputs": outs, "tactics": kop.tactics,
             "expected_outputs": [list(o.shape) for o in sc.as_tuple(sc.op(c, ns)(
                 *[torch.empty((7,) + tuple(t.shape[1:]), device="meta") for t in tensors], *scalars))]}
        calls = [call for p in v3one._KEEP if getattr(p, "op_name", None) == kop.op_name for call in p.calls]
        r["configure_plugin"] = [list(map(list, x[1])) + [list(map(list, x[2])), list(map(list, x[3]))]
                                 for x in calls if x[0] == "configure_plugin"][:1]
        r["valid_tactics"] = [x[1] for x in calls if x[0] == "get_valid_tactics"][:1]
        if engine:
            # the plugin's fields, serialized with the engine, read back by the creator
            creator = trt.get_plugin_registry().get_creator(kop.name, v3one.PLUGIN_VERSION, kop.namespace)
            plugin = next(p for p in v3one._KEEP if getattr(p, "op_name", None) == kop.op_name)
            again = creator.create_plugin(kop.name, plugin.get_fields_to_serialize(), trt.TensorRTPhase.RUNTIME)
            r["fields"] = {"given": dict(zip([d.name for d in kop.sig.scalar_decls], scalars)),
                           "serialized": plugin.scalars, "read_back": again.scalars}
            del LOG[:]
            runtime = trt.Runtime(logger)
            deserialized = runtime.deserialize_cuda_engine(engine)
            r["deserialized"] = deserialized is not None
            r["deserialize_log"] = [m for m in LOG if m.startswith(("ERROR", "INTERNAL_ERROR"))][:2]
            if deserialized is not None and torch.cuda.is_available():
                r["run"] = run(deserialized, c, ns)
        out["cases"][c.name] = r
    # a chained model: scale -> sigmoid -> sin_cos, each op a plugin layer fed by the one before
    chain = Chain(ns).eval()
    x = torch.randn(6, 128)
    proto = export(chain, (x,), dynamic_shapes={"x": {0: torch.export.Dim("batch", min=1, max=PROFILE_MAX)}})
    parsed, errors, engine, outs = build(logger, proto.SerializeToString(), (x,))
    out["chain"] = {"parsed": parsed, "errors": errors, "engine_bytes": len(engine) if engine else None,
                    "outputs": outs, "nodes": [n.op_type for n in proto.graph.node]}
    # a model naming an op whose creator this process never registered: TensorRT's error, no crash
    t, s = unregistered.make_inputs(torch.device("cpu"))
    proto = export(sc.CaseModel(ns + "_late", unregistered.name, s, len(t)).eval(), tuple(t))
    parsed, errors, _, _ = build(logger, proto.SerializeToString(), t)
    out["unregistered"] = {"parsed": parsed, "errors": errors}
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
