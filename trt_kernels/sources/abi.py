"""The kernel ABI: what the spec says the kernel takes, and what the PTX says it takes.

Calling convention: ``(tensor input pointers..., scalar inputs..., extras..., output pointers...)``.
After compiling, the ``.entry`` of the kernel in the PTX is read (count, byte size
and kind of each parameter) and compared with the spec, which catches the commonest
silent bug: arguments in the wrong order. NVRTC's cache entries record each kernel's
``.entry`` parameters when compiled (:func:`trt_kernels.sources.nvrtc.compile_program`), so a
declaration served from the cache checks them without reading the PTX again (and without
compiling the patterns below, which cost about 0.7 ms per process).
"""

from __future__ import annotations

import re
from typing import List, Optional, Sequence, Tuple

from trt_kernels.errors import KernelABIError
from trt_kernels.signature import Param

# (patterns as text: the re module compiles and caches them at the first use, not at import)
_ENTRY_ANY = r"\.entry\s+(?P<name>[\w$%.]+)\s*\((?P<params>[^)]*)\)"
# ``.param .u64 k_param_0``, ``.param .align 2 .b8 k_param_2[2]``, and pointer qualifiers as LLVM's
# NVPTX back end (Triton) writes them: ``.param .u64 .ptr .global .align 1 k_param_0``
_PARAM = (
    r"\.param\s+(?:\.align\s+(?P<align>\d+)\s+)?\.(?P<type>[a-z]+)(?P<bits>\d+)"
    r"(?:\s+\.ptr(?:\s+\.(?:global|shared|const|local))?(?:\s+\.align\s+\d+)?)?"
    r"\s+[\w$]+(?:\[(?P<count>\d+)\])?"
)


def ptx_params(ptx: bytes, symbol: str) -> Optional[List[Tuple[str, int]]]:
    """``[(ptx type, bytes), ...]`` of the ``.entry`` named ``symbol`` in ``ptx``; None if absent."""
    text = ptx.decode(errors="replace")
    params = None
    for m in re.finditer(_ENTRY_ANY, text):  # one pattern for every symbol
        if m.group("name") == symbol:
            params = m.group("params")
            break
    if params is None:
        return None
    out = []
    for pm in re.finditer(_PARAM, params):
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


def param_ok(found: Sequence[Tuple[str, int]], params: Sequence[Param]) -> List[bool]:
    """Per position (the longer of the two lists), whether the PTX parameter is the declared one."""
    return [i < len(found) and i < len(params) and found[i][1] == params[i].size
            and _kind_ok(params[i].kind, found[i][0])
            for i in range(max(len(found), len(params)))]


def check_abi(op_name: str, kernel_name: str, symbol: str, ptx: bytes, params: Sequence[Param], *,
              hidden: str = "", found: Optional[Sequence[Tuple[str, int]]] = None) -> int:
    """Raise :class:`KernelABIError` if the PTX entry's parameters differ from ``params``; returns how many
    parameters follow them. ``hidden``: what the compiler appends after the declared parameters (Triton's
    scratch pointers), which may then follow as 64-bit values; empty: nothing may follow. ``found``: the
    entry's parameters as :func:`ptx_params` read them from this PTX before (a cache entry records them);
    None: read them now."""
    if found is None:
        found = ptx_params(ptx, symbol)
    expected_sig = ",\n    ".join(p.label for p in params)
    if found is None:
        raise KernelABIError(
            f"{op_name}: kernel {kernel_name!r} (symbol {symbol!r}) has no .entry in the compiled PTX. "
            "Fix: mark it __global__ and make kernel_name match it"
        )
    extra = found[len(params):]
    ok = param_ok(found[:len(params)], params)
    bad = len(found) < len(params) or not all(ok) or (extra and not hidden) or any(size != 8 for _, size in extra)
    if bad:
        got = ", ".join(t for t, _ in found)
        then = f", then {hidden}" if hidden else ""
        raise KernelABIError(
            f"{op_name}: kernel {kernel_name!r} takes {len(found)} parameters ({got}) but the spec "
            f"implies {len(params)}{then}:\n  __global__ void {kernel_name}(\n    {expected_sig})\n"
            "The calling convention is (tensor input pointers, scalar inputs, extras, output pointers), "
            "each in declaration order; extras are C ints. "
            "Fix: reorder the kernel's parameters or the spec's inputs/extras/outputs to agree"
        )
    return len(extra)
