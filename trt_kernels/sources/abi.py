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


def _kind_ok(kind: str, ptx_type: str, size: int = 4) -> bool:
    base = ptx_type.split("[")[0]
    if kind == "float":
        return base in ("f32", "b32")
    if kind == "int":
        return base in (("u32", "s32", "b32") if size == 4 else ("u64", "s64", "b64"))
    if kind == "bool":
        return base in ("u8", "s8", "b8")
    return base in ("u64", "s64", "b64")


def param_ok(found: Sequence[Tuple[str, int]], params: Sequence[Param]) -> List[bool]:
    """Per position (the longer of the two lists), whether the PTX parameter is the declared one."""
    return [i < len(found) and i < len(params) and found[i][1] == params[i].size
            and _kind_ok(params[i].kind, found[i][0], params[i].size)
            for i in range(max(len(found), len(params)))]


def entry_names(ptx: bytes) -> List[str]:
    """The symbols of the ``.entry`` directives in ``ptx``, in order."""
    import re

    return [m.decode() for m in re.findall(rb"\.entry\s+([A-Za-z_$%][\w$]*)", ptx)]


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
            f"{op_name}: kernel {kernel_name!r} takes {len(found)} parameters ({got}) but the declaration gives "
            + (f"{len(params)}{then}" if len(found) != len(params) or then else "others")
            + f":\n  __global__ void {kernel_name}(\n    {expected_sig})\n"
            + "".join(f"  {line}\n" for line in differences(found, params, hidden))
            + f"Fix: {_fix(found, params, hidden)}"
        )
    return len(extra)


def differences(found: Sequence[Tuple[str, int]], params: Sequence[Param], hidden: str = "") -> List[str]:
    """One line per parameter position where the kernel and the declaration differ."""
    out = []
    for i, good in enumerate(param_ok(found[:len(params)], params)):
        if good:
            continue
        if i >= len(found):
            out.append(f"parameter {i}: the kernel has none; the declaration gives {params[i].label}")
        else:
            out.append(f"parameter {i}: the kernel has {found[i][0]}; the declaration gives {params[i].label} "
                       f"({_ptx_kind(params[i])})")
    if not hidden:
        out += [f"parameter {i}: the kernel has {t}; the declaration gives none"
                for i, (t, _) in enumerate(found[len(params):], len(params))]
    return out


def _ptx_kind(p: Param) -> str:
    return {"float": "f32", "bool": "u8", "ptr": "a 64-bit pointer"}.get(p.kind, f"{'u' if p.code.isupper() else 's'}"
                                                                        f"{p.size * 8}")


def _fix(found: Sequence[Tuple[str, int]], params: Sequence[Param], hidden: str) -> str:
    """The fix for the first difference, by its case."""
    ok = param_ok(found[:len(params)], params)
    first = next((i for i, g in enumerate(ok) if not g), None)
    if len(found) < len(params):
        return (f"the declaration gives {len(params) - len(found)} parameter(s) more than the kernel takes: remove "
                "them from inputs/extras/outputs, or check kernel_name")
    if len(found) > len(params) and not hidden:
        return (f"the kernel takes {len(found) - len(params)} parameter(s) more than the declaration gives: declare "
                "each, a size or constant in extras (ttk.SizeArg(name, value, ctype=...)), a by-value argument in "
                "inputs (ttk.ScalarInput)")
    if first is None:
        return "the parameters the compiler appends must be 64-bit pointers: check kernel_name and compile_options"
    kind, size = found[first][0].split("[")[0], found[first][1]
    p = params[first]
    reorder = ("the order differs: name the declaration's inputs, outputs and extras (ttk.SizeArg) as the kernel's "
               "parameters, or pass params=[...] listing the declared names in the kernel's order")
    if any(params[i].kind == "ptr" for i, g in enumerate(ok) if not g):
        return reorder  # a pointer where the kernel has a value (or the reverse): the order
    if p.role == "extra" and p.kind == "int" and size != p.size and kind[0] in "usb" and kind[1:] in ("32", "64"):
        want = "'long long' or 'size_t'" if size == 8 else "'int' or 'unsigned'"
        return f"give this entry of extras the kernel's C type: ttk.SizeArg(name, value, ctype={want})"
    if p.role == "scalar":
        return _scalar_fix(p, kind, size) or reorder
    if p.role == "extra" and kind == "f32":
        return "a float where the declaration has one of extras: declare it in inputs as ttk.ScalarInput(name, float)"
    return reorder


def _scalar_fix(p: Param, kind: str, size: int) -> str:
    """The fix where the kernel's parameter at a scalar input's position is a value of another type or width
    (empty: none that a type change makes; then the order differs)."""
    name = p.label.split(" /*")[0].rsplit(" ", 1)[-1]
    if p.element is not None:
        name = name.rsplit("_", 1)[0]
    if p.kind == "int" and kind[0] in "usb" and kind[1:] in ("32", "64") and size != p.size:
        if size == 8:
            return (f"the kernel's parameter is a 64-bit integer ({kind}): declare it so, "
                    f"ttk.ScalarInput({name!r}, int, ctype='long long') (or the kernel's own spelling: 'long', "
                    "'int64_t', 'uint64_t', 'size_t'); if it is a pointer, the order differs: name the declaration's "
                    "inputs, outputs and extras as the kernel's parameters, or pass params=[...]")
        return (f"the kernel's parameter is a 32-bit integer ({kind}): declare it so, "
                f"ttk.ScalarInput({name!r}, int, ctype='int') (or 'unsigned')")
    want = {"f32": "float", "u8": "bool", "s8": "bool", "b8": "bool", "u32": "int", "s32": "int"}.get(kind)
    if want is not None:
        return f"declare this ttk.ScalarInput of inputs with type {want} (the kernel's {kind})"
    if kind == "f64":
        return ("the kernel's parameter is a double, which scalar inputs do not take: make it a float in the kernel "
                "and declare ttk.ScalarInput(name, float), or pass the value in a tensor input")
    return ""
