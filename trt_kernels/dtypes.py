"""The dtypes a kernel may declare, with their C spelling and TensorRT names."""

from __future__ import annotations

import torch

# torch dtype -> (C++ type used to instantiate a template, TensorRT autotune type name, header)
_TABLE = {
    torch.float32: ("float", "FP32", None),
    torch.float16: ("__half", "FP16", "cuda_fp16.h"),
    torch.bfloat16: ("__nv_bfloat16", "BF16", "cuda_bf16.h"),
    torch.float64: ("double", None, None),
    torch.int32: ("int", "INT32", None),
    torch.int64: ("long long", "INT64", None),
    torch.int8: ("signed char", "INT8", None),
    torch.uint8: ("unsigned char", "UINT8", None),
    torch.bool: ("bool", "BOOL", None),
}

SUPPORTED = tuple(_TABLE)


def c_type(dtype: torch.dtype) -> str:
    return _TABLE[dtype][0]


def trt_name(dtype: torch.dtype) -> str | None:
    """TensorRT's name for the dtype in ``trtp.AutoTuneCombination`` (None: TensorRT lacks it)."""
    return _TABLE[dtype][1]


def header(dtype: torch.dtype) -> str | None:
    return _TABLE[dtype][2]


def short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def label(kdt, type_params=("T",)) -> str:
    """A kernel dtype for messages: ``float16``, or ``(T=float16, W=float32)`` for several type parameters."""
    if isinstance(kdt, tuple):
        return "(" + ", ".join(f"{p}={short(d)}" for p, d in zip(type_params, kdt)) + ")"
    return short(kdt)


def flat(kdts) -> list:
    """Every dtype named by the kernel dtypes ``kdts`` (entries may be tuples), each once, in order."""
    out: list = []
    for k in kdts:
        for d in (k if isinstance(k, tuple) else (k,)):
            if d not in out:
                out.append(d)
    return out
