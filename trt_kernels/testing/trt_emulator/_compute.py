"""What TensorRT's standard layers compute, in torch: the emulated engine's reference implementations.

``run(rec, inputs, out_shapes, ev)`` computes one layer of an engine plan (``rec``: its kind and the
parameters ``_layers`` recorded) from torch tensors ``inputs`` (None for an optional input not set),
giving one tensor per output of the shapes ``out_shapes`` (evaluated from the plan's dimension
expressions); ``ev`` evaluates a recorded dimension expression at the call's input shapes. Device
agnostic: the engine runs it on the GPU, the unit tests on the CPU against torch's own operators.
Floating-point work is done in the tensors' own type, except where noted; TensorRT's kernels may
differ in rounding (they choose their own accumulation order and precision), so compare with tolerances.
"""

import math
from typing import Any, Callable, Dict, List, Optional, Sequence

import torch
import torch.nn.functional as F

Eval = Callable[[Any], int]

#: TensorRT DataType name -> torch dtype
DTYPES = {"FLOAT": torch.float32, "HALF": torch.float16, "BF16": torch.bfloat16, "INT8": torch.int8,
          "INT32": torch.int32, "INT64": torch.int64, "BOOL": torch.bool, "UINT8": torch.uint8}


def weights(j: Dict[str, Any], device) -> torch.Tensor:
    """Recorded weights (``{"dtype", "data"}``) as a flat tensor on ``device``."""
    raw = bytearray(bytes.fromhex(j["data"]))  # a writable copy: torch.frombuffer needs one
    return torch.frombuffer(raw, dtype=DTYPES[j["dtype"]]).clone().to(device) if raw else \
        torch.empty(0, dtype=DTYPES[j["dtype"]], device=device)


def _elementwise(p, x, out, ev):
    a, b = x
    op = p["op"]
    if op == "SUM":
        return a + b
    if op == "SUB":
        return a - b
    if op == "PROD":
        return a * b
    if op == "DIV":
        if a.is_floating_point():
            return a / b
        return torch.div(a, b, rounding_mode="trunc")  # integer DIV rounds toward zero
    if op == "FLOOR_DIV":
        return torch.div(a, b, rounding_mode="floor")
    if op == "POW":
        return torch.pow(a, b)
    if op == "MAX":
        return torch.maximum(a, b)
    if op == "MIN":
        return torch.minimum(a, b)
    if op == "AND":
        return a & b
    if op == "OR":
        return a | b
    if op == "XOR":
        return a ^ b
    if op == "EQUAL":
        return a == b
    if op == "GREATER":
        return a > b
    if op == "LESS":
        return a < b
    raise ValueError(f"ElementWise {op} is not emulated")


_UNARY = {
    "EXP": torch.exp, "LOG": torch.log, "SQRT": torch.sqrt, "RECIP": torch.reciprocal, "ABS": torch.abs,
    "NEG": torch.neg, "SIN": torch.sin, "COS": torch.cos, "TAN": torch.tan, "SINH": torch.sinh, "COSH": torch.cosh,
    "ASIN": torch.asin, "ACOS": torch.acos, "ATAN": torch.atan, "ASINH": torch.asinh, "ACOSH": torch.acosh,
    "ATANH": torch.atanh, "CEIL": torch.ceil, "FLOOR": torch.floor, "ERF": torch.erf, "NOT": torch.logical_not,
    "SIGN": torch.sign, "ROUND": torch.round, "ISINF": torch.isinf, "ISNAN": torch.isnan,
}


def _unary(p, x, out, ev):
    return _UNARY[p["op"]](x[0])


def _activation(p, x, out, ev):
    t, a, b, v = p["type"], p["alpha"], p["beta"], x[0]
    if t == "RELU":
        return torch.relu(v)
    if t == "SIGMOID":
        return torch.sigmoid(v)
    if t == "TANH":
        return torch.tanh(v)
    if t == "LEAKY_RELU":
        return torch.where(v >= 0, v, v * a)
    if t == "ELU":
        return torch.where(v >= 0, v, a * torch.expm1(v))
    if t == "SELU":
        return torch.where(v > 0, b * v, b * (a * torch.exp(v) - a))
    if t == "SOFTSIGN":
        return v / (1 + v.abs())
    if t == "SOFTPLUS":
        return a * torch.log1p(torch.exp(b * v))
    if t == "CLIP":
        return v.clamp(a, b)
    if t == "HARD_SIGMOID":
        return (a * v + b).clamp(0, 1)
    if t == "SCALED_TANH":
        return a * torch.tanh(b * v)
    if t == "THRESHOLDED_RELU":
        return torch.where(v > a, v, torch.zeros_like(v))
    if t == "GELU_ERF":
        return F.gelu(v)
    if t == "GELU_TANH":
        return F.gelu(v, approximate="tanh")
    raise ValueError(f"Activation {t} is not emulated")


def _select(p, x, out, ev):
    return torch.where(x[0], x[1], x[2])


def _shuffle(p, x, out, ev):
    v = x[0].permute(*p["first"]) if p["first"] else x[0]
    v = v.reshape([ev(d) for d in p["reshape"]])
    return v.permute(*p["second"]) if p["second"] else v


def _shape(p, x, out, ev):
    return torch.tensor(list(x[0].shape), dtype=torch.int64, device=x[0].device)


def _unsqueeze(p, x, out, ev):
    v = x[0]
    for a in p["axes"]:
        v = v.unsqueeze(a)
    return v


def _gather(p, x, out, ev):
    data, idx = x
    axis = p["axis"]
    n = data.shape[axis]
    flat = idx.reshape(-1).long()
    if flat.numel() and n == 0:
        raise IndexError("gather from an empty axis")
    if flat.numel() and bool(((flat < -n) | (flat >= n)).any()):
        raise IndexError(f"gather index out of range for an axis of {n}")
    picked = data.index_select(axis, torch.remainder(flat, max(n, 1)))
    return picked.reshape(list(data.shape[:axis]) + list(idx.shape) + list(data.shape[axis + 1:]))


def _concatenation(p, x, out, ev):
    return torch.cat(list(x), dim=p["axis"])


def _slice(p, x, out, ev):
    v, shape = x[0], out[0]
    fill = x[4] if len(x) > 4 else None
    mode = p["mode"]
    mask = None
    for axis, (s0, st) in enumerate(zip(p["start"], p["stride"])):
        n, dim = shape[axis], v.shape[axis]
        idx = ev(s0) + ev(st) * torch.arange(n, device=v.device)
        if mode == "STRICT_BOUNDS":
            if n and bool(((idx < 0) | (idx >= dim)).any()):
                raise IndexError(f"slice reads outside axis {axis} of size {dim} (SampleMode.STRICT_BOUNDS)")
        elif mode == "WRAP":
            idx = torch.remainder(idx, dim)
        elif mode == "CLAMP":
            idx = idx.clamp(0, dim - 1)
        elif mode == "REFLECT":
            period = 2 * (dim - 1) if dim > 1 else 1
            idx = torch.remainder(idx, period)
            idx = torch.where(idx >= dim, period - idx, idx)
        elif mode == "FILL":
            inside = (idx >= 0) & (idx < dim)
            shape_m = [1] * len(shape)
            shape_m[axis] = n
            m = inside.reshape(shape_m)
            mask = m if mask is None else mask & m
            idx = idx.clamp(0, max(dim - 1, 0))
        else:
            raise ValueError(f"SampleMode.{mode} is not emulated")
        v = v.index_select(axis, idx) if dim else v.new_zeros([*v.shape[:axis], n, *v.shape[axis + 1:]])
    if mask is not None:
        value = fill.reshape(()) if fill is not None else torch.zeros((), dtype=v.dtype, device=v.device)
        v = torch.where(mask, v, value.to(v.dtype))
    return v


def _matrix_multiply(p, x, out, ev):
    a, b = x
    if p["op0"] == "TRANSPOSE":
        a = a.transpose(-1, -2)
    if p["op1"] == "TRANSPOSE":
        b = b.transpose(-1, -2)
    va, vb = p["op0"] == "VECTOR", p["op1"] == "VECTOR"
    if va:
        a = a.unsqueeze(-2)
    if vb:
        b = b.unsqueeze(-1)
    r = torch.matmul(a, b)
    if vb:
        r = r.squeeze(-1)
    if va:
        r = r.squeeze(-2 if not vb else -1)
    return r


def _softmax(p, x, out, ev):
    v = x[0]
    if v.dtype in (torch.float16, torch.bfloat16):  # accumulate in float, as TensorRT's kernels do
        return torch.softmax(v.float(), dim=p["axis"]).to(v.dtype)
    return torch.softmax(v, dim=p["axis"])


def _reduce(p, x, out, ev):
    v, axes, keep = x[0], p["axes"], p["keep_dims"]
    op = p["op"]
    if not axes:
        return v.clone()
    if op == "SUM":
        return v.sum(dim=axes, keepdim=keep, dtype=v.dtype)
    if op == "AVG":
        return v.float().mean(dim=axes, keepdim=keep).to(v.dtype)
    if op == "MAX":
        return v.amax(dim=axes, keepdim=keep)
    if op == "MIN":
        return v.amin(dim=axes, keepdim=keep)
    if op == "PROD":
        r = v
        for a in sorted(axes, reverse=True):
            r = r.prod(dim=a, keepdim=keep, dtype=v.dtype)
        return r
    raise ValueError(f"Reduce {op} is not emulated")


def _pad(v, pre, post, value=0.0):
    pads = []
    for a, b in zip(reversed(pre), reversed(post)):
        pads += [a, b]
    return F.pad(v, pads, value=value) if any(pads) else v


def _fit(v, window, stride, dilation, out_sizes, value):
    """Pad the end of each spatial axis so that ``out_sizes`` windows fit (rounding the output size up)."""
    extra = []
    n = len(window)
    for j in range(n):
        need = (out_sizes[j] - 1) * stride[j] + dilation[j] * (window[j] - 1) + 1
        extra.append(max(0, need - v.shape[v.dim() - n + j]))
    return _pad(v, [0] * n, extra, value) if any(extra) else v


def _conv_fn(n):
    return {1: F.conv1d, 2: F.conv2d, 3: F.conv3d}[n]


def _convolution(p, x, out, ev):
    v = x[0]
    n = len(p["window"])
    c = v.shape[1]
    if "kernel" in p:
        w = weights(p["kernel"], v.device).reshape([p["maps"], c // p["groups"]] + p["window"])
    else:
        w = x[1]
    bias = None
    if "bias" in p:
        bias = weights(p["bias"], v.device)
    elif len(x) > 2 and x[2] is not None:
        bias = x[2]
    v = _pad(v, p["pre"], p["post"])
    v = _fit(v, p["window"], p["stride"], p["dilation"], [ev(d) for d in p["out"]], 0.0)
    r = _conv_fn(n)(v, w.to(v.dtype), None if bias is None else bias.to(v.dtype), stride=p["stride"],
                    dilation=p["dilation"], groups=p["groups"])
    return r[(slice(None), slice(None)) + tuple(slice(0, ev(d)) for d in p["out"])]


def _pooling(p, x, out, ev):
    v = x[0]
    window, stride, n = p["window"], p["stride"], len(p["window"])
    sizes = [ev(d) for d in p["out"]]
    ones = [1] * n
    if p["type"] == "MAX":
        padded = _fit(_pad(v, p["pre"], p["post"], -math.inf), window, stride, ones, sizes, -math.inf)
        r = {1: F.max_pool1d, 2: F.max_pool2d, 3: F.max_pool3d}[n](padded, window, stride)
    elif p["type"] == "AVERAGE":
        pool = {1: F.avg_pool1d, 2: F.avg_pool2d, 3: F.avg_pool3d}[n]
        work = v.float()
        padded = _fit(_pad(work, p["pre"], p["post"]), window, stride, ones, sizes, 0.0)
        total = pool(padded, window, stride) * math.prod(window)
        if p["exclude_padding"]:
            inside = _fit(_pad(torch.ones_like(work[:1, :1]), p["pre"], p["post"]), window, stride, ones, sizes, 0.0)
            count = pool(inside, window, stride) * math.prod(window)
        else:  # the padded window (explicit padding counts; the rounding-up tail does not)
            padded_area = _pad(torch.ones_like(work[:1, :1]), p["pre"], p["post"], 1.0)
            count = pool(_fit(padded_area, window, stride, ones, sizes, 0.0), window, stride) * math.prod(window)
        r = (total / count).to(v.dtype)
    else:
        raise ValueError(f"PoolingType.{p['type']} is not emulated")
    return r[(slice(None), slice(None)) + tuple(slice(0, s) for s in sizes)]


def _scale(p, x, out, ev):
    v = x[0]
    mode, axis = p["mode"], p["channel_axis"]
    if mode == "UNIFORM":
        shape: Sequence[int] = []
    elif mode == "CHANNEL":
        shape = [v.shape[axis]] + [1] * (v.dim() - axis - 1)
    else:
        shape = list(v.shape[axis:])

    def coef(key, default):
        if key not in p:
            return default
        w = weights(p[key], v.device).to(v.dtype)
        return w.reshape(shape) if shape else w.reshape(())

    r = v * coef("scale", 1.0) + coef("shift", 0.0)
    if "power" in p:
        r = torch.pow(r, coef("power", 1.0))
    return r


def _normalization(p, x, out, ev):
    v, scale, bias = x
    work = v.float()
    mean = work.mean(dim=p["axes"], keepdim=True)
    var = work.var(dim=p["axes"], keepdim=True, unbiased=False)
    return ((work - mean) * torch.rsqrt(var + p["epsilon"]) * scale.float() + bias.float()).to(v.dtype)


_RUN = {
    "ELEMENTWISE": _elementwise, "UNARY": _unary, "ACTIVATION": _activation, "SELECT": _select,
    "SHUFFLE": _shuffle, "SHAPE": _shape, "UNSQUEEZE": _unsqueeze, "GATHER": _gather,
    "CONCATENATION": _concatenation, "SLICE": _slice, "MATRIX_MULTIPLY": _matrix_multiply, "SOFTMAX": _softmax,
    "REDUCE": _reduce, "CONVOLUTION": _convolution, "POOLING": _pooling, "SCALE": _scale,
    "NORMALIZATION": _normalization,
}


def run(kind: str, params: Dict[str, Any], inputs: List[Optional[torch.Tensor]], out_shapes: List[List[int]],
        ev: Eval) -> List[torch.Tensor]:
    """One standard layer's outputs (see the module's docstring)."""
    fn = _RUN.get(kind)
    if fn is None:
        raise ValueError(f"layer type {kind} is not emulated")
    r = fn(params, inputs, out_shapes, ev)
    outs = list(r) if isinstance(r, (tuple, list)) else [r]
    for k, (o, s) in enumerate(zip(outs, out_shapes)):
        if list(o.shape) != list(s):
            raise RuntimeError(f"{kind}: output {k} has shape {tuple(o.shape)} where the engine's shape inference "
                               f"said {tuple(s)}")
    return outs
