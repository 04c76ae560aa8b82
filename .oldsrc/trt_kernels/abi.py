"""The kernel ABI: what the spec says the kernel takes, and what the PTX says it takes.

Calling convention: ``(tensor input pointers..., scalar inputs..., extras..., output pointers...)``.
After compiling, the ``.entry`` of the kernel in the PTX is read (count, byte size
and kind of each parameter) and compared with the spec, which catches the commonest
silent bug: arguments in the wrong order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import torch

from . import dtypes as _dt
from .errors import KernelABIError
from .spec import KernelSpec, Validated


@dataclass(frozen=True)
class Param:
    """One kernel parameter: ``kind`` is ``ptr``, ``int``, ``float`` or ``bool``; ``code`` its struct code."""

    kind: str
    size: int
    code: str  # struct format code used to pack it
    label: str  # how the spec describes it, for messages


_SCALAR = {float: ("float", 4, "f", "float"), int: ("int", 4, "i", "int"), bool: ("bool", 1, "?", "bool")}


def expected_params(spec: KernelSpec, v: Validated, dtype: torch.dtype) -> List[Param]:
    """The parameter list the spec implies for the kernel instantiated at ``dtype``."""
    out: List[Param] = []
    for d in v.tensor_decls:
        ct = _dt.c_type(d.dtype or dtype)
        out.append(Param("ptr", 8, "Q", f"const {ct}* {d.name}"))
    for s in v.scalar_decls:
        kind, size, code, ct = _SCALAR[s.py_type]
        out.append(Param(kind, size, code, f"{ct} {s.name}"))
    for i, e in enumerate(spec.extras):
        out.append(Param("int", 4, "i", f"int extra{i} /* {e} */"))
    for o in spec.outputs or ():
        if o.dtype is not None:
            odt = o.dtype
        elif o.dtype_from is not None:
            odt = v.tensor_decls[v.tensor_names.index(o.dtype_from)].dtype or dtype
        else:
            src = getattr(o.shape, "input_idx", 0)
            idx = v.tensor_names.index(src) if isinstance(src, str) else src
            odt = v.tensor_decls[idx].dtype or dtype
        out.append(Param("ptr", 8, "Q", f"{_dt.c_type(odt)}* {o.name}"))
    return out


_ENTRY_ANY = re.compile(r"\.entry\s+(?P<name>[\w$%.]+)\s*\((?P<params>[^)]*)\)")
# ``.param .u64 k_param_0``, ``.param .align 2 .b8 k_param_2[2]``, and pointer qualifiers as LLVM's
# NVPTX back end (Triton) writes them: ``.param .u64 .ptr .global .align 1 k_param_0``
_PARAM = re.compile(
    r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<type>[a-z]+)(?P<bits>\d+)"
    r"(?:\s+\.ptr(?:\s+\.(?:global|shared|const|local))?(?:\s+\.align\s+\d+)?)?"
    r"\s+[\w$]+(?:\[(?P<count>\d+)\])?"
)


def ptx_params(ptx: bytes, symbol: str) -> Optional[List[Tuple[str, int]]]:
    """``[(ptx type, bytes), ...]`` of the ``.entry`` named ``symbol`` in ``ptx``; None if absent."""
    text = ptx.decode(errors="replace")
    params = None
    for m in _ENTRY_ANY.finditer(text):  # one precompiled pattern for every symbol
        if m.group("name") == symbol:
            params = m.group("params")
            break
    if params is None:
        return None
    out = []
    for pm in _PARAM.finditer(params):
        bits = int(pm.group("bits"))
        count = int(pm.group("count") or 1)
        out.append((f"{pm.group('type')}{bits}" + (f"[{count}]" if pm.group("count") else ""), bits // 8 * count))
    return out


def _kind_ok(kind: str, ptx_type: str) -> bool:
    base = ptx_type.split("[")[0]
    if kind == "float":
        return base in ("f32", "b32")
    if kind == "int":
        return base in ("u32", "s32", "b32")
    if kind == "bool":
        return base in ("u8", "s8", "b8")
    return base in ("u64", "s64", "b64")


def check_abi(op_name: str, kernel_name: str, symbol: str, ptx: bytes, params: Sequence[Param]) -> None:
    """Raise :class:`KernelABIError` if the PTX entry's parameters differ from ``params``."""
    found = ptx_params(ptx, symbol)
    expected_sig = ",\n    ".join(p.label for p in params)
    if found is None:
        raise KernelABIError(
            f"{op_name}: kernel {kernel_name!r} (symbol {symbol!r}) has no .entry in the compiled PTX. "
            "Fix: mark it __global__ and make kernel_name match it"
        )
    bad = len(found) != len(params) or any(
        size != p.size or not _kind_ok(p.kind, t) for (t, size), p in zip(found, params)
    )
    if bad:
        got = ", ".join(t for t, _ in found)
        raise KernelABIError(
            f"{op_name}: kernel {kernel_name!r} takes {len(found)} parameters ({got}) but the spec "
            f"implies {len(params)}:\n  __global__ void {kernel_name}(\n    {expected_sig})\n"
            "The calling convention is (tensor input pointers, scalar inputs, extras, output pointers), "
            "each in declaration order; extras are C ints. "
            "Fix: reorder the kernel's parameters or the spec's inputs/extras/outputs to agree"
        )
