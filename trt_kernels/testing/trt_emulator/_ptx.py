"""The least check of a plugin's PTX that needs no GPU: its structure, as the driver's JIT
(``cuModuleLoadData``) and ``cuModuleGetFunction`` would see it.

TensorRT loads an AOT plugin's PTX through the driver: text that is not PTX fails there
(``CUDA_ERROR_INVALID_PTX``), a kernel name the module does not define fails the function lookup
(``CUDA_ERROR_NOT_FOUND``). On a GPU the emulator lets the driver decide (``_cuda.Kernel``); without
one it checks what the driver would read first: a ``.version`` directive as the first statement,
a ``.target`` no newer than the device, ``.address_size 64`` (CUDA 12 dropped 32-bit device code),
and a ``.entry`` defining the kernel name (``.visible .entry name(``, ``.weak .entry name(`` for
template instantiations, or ``.entry name(``). It also adds up the static shared memory the entry
declares (``.shared`` arrays in its body and at module scope), which counts against the 48 KB a
launch may use without the opt-in (see ``_device``). Comments are ignored."""

import re
from typing import List, Optional, Tuple

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_VERSION = re.compile(r"\.version\s+(\d+)\.(\d+)\b")
_TARGET = re.compile(r"\.target\s+sm_(\d+)([a-z]?)\b[^\n]*")
_ADDRESS = re.compile(r"\.address_size\s+(\d+)\b")
_ENTRY = re.compile(r"(?:^|[\s;}])((?:\.(?:visible|weak|extern)\s+)?)\.entry\s+([A-Za-z_$%][\w$]*)\s*([(.{])")
_SHARED = re.compile(r"(?<![\w.])\.shared\s+(?:\.align\s+\d+\s+)?(?:\.v(\d)\s+)?\.[a-z]+(\d+)\s+[\w$]+"
                     r"((?:\s*\[\s*\d+\s*\])*)\s*;")
_DIM = re.compile(r"\[\s*(\d+)\s*\]")


class PtxError(ValueError):
    """What the driver would refuse about a PTX module, named as the driver names it."""


def _strip(text: str) -> str:
    return _COMMENTS.sub(lambda m: "\n" * m.group().count("\n") or " ", text)


def _body(text: str, start: int) -> Tuple[int, int]:
    """``(open, close)`` offsets of the ``{ ... }`` body that follows ``start`` (braces nest in PTX)."""
    i = text.find("{", start)
    if i < 0:
        return -1, -1
    depth = 0
    for j in range(i, len(text)):
        c = text[j]
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i, j
    return i, -1


def _shared_bytes(text: str) -> int:
    total = 0
    for m in _SHARED.finditer(text):
        vec, bits, dims = int(m.group(1) or 1), int(m.group(2)), _DIM.findall(m.group(3))
        n = 1
        for d in dims:
            n *= int(d)
        total += max(bits // 8, 1) * vec * n
    return total


def entries(ptx: bytes) -> List[str]:
    """The kernel names the module defines (``.entry`` with a body, not ``.extern``)."""
    text = _strip(ptx.decode("latin-1"))
    return [m.group(2) for m in _ENTRY.finditer(text) if "extern" not in m.group(1)]


def target(ptx: bytes) -> Optional[Tuple[int, str]]:
    """``(arch, suffix)`` of the module's ``.target`` directive (``(90, "a")`` for ``sm_90a``), or ``None``
    where it has none (comments ignored)."""
    m = _TARGET.search(_strip(bytes(ptx).decode("latin-1")))
    return (int(m.group(1)), m.group(2)) if m else None


def runs_on(arch: int, suffix: str, cc: Tuple[int, int]) -> bool:
    """Whether the driver of a compute ``cc`` device loads PTX for ``.target sm_{arch}{suffix}``: PTX for
    ``sm_XY`` is JIT-compiled for any device of that compute capability or newer; an ``a`` target only for
    exactly that one; an ``f`` target only within its major family (notes/fleet_engines.md, section D)."""
    want = cc[0] * 10 + cc[1]
    return not (arch > want or (suffix == "a" and arch != want) or (suffix == "f" and arch // 10 != cc[0]))


def check(ptx: bytes, name: str, cc: Tuple[int, int]) -> int:
    """Raise :class:`PtxError` where the driver of a compute ``cc`` device would refuse to load ``ptx``
    or to find ``name`` in it; else the bytes of static shared memory the entry ``name`` declares."""
    load = "cuModuleLoadData would fail with CUDA_ERROR_INVALID_PTX (218)"
    if b"\x00" in ptx.rstrip(b"\x00"):
        raise PtxError(f"{load}: the kernel is not PTX text (it holds NUL bytes: a CUBIN or another binary? "
                       "TensorRT's AOT plugins take PTX)")
    text = _strip(ptx.decode("latin-1"))
    statements = text.split()
    if not statements or not _VERSION.match(text.lstrip()):
        first = statements[0][:40] if statements else "(nothing)"
        raise PtxError(f"{load}: not PTX: the first statement must be a .version directive, found {first!r}")
    rest = text.lstrip()[_VERSION.match(text.lstrip()).end():].lstrip()
    target = _TARGET.match(rest)
    if target is None:
        raise PtxError(f"{load}: the .version directive must be followed by .target sm_XX")
    arch, suffix = int(target.group(1)), target.group(2)
    if not runs_on(arch, suffix, cc):
        raise PtxError(f"{load}: .target sm_{arch}{suffix} cannot run on a compute {cc[0]}.{cc[1]} device")
    address = _ADDRESS.search(text)
    if address is None or address.group(1) != "64":
        found = f".address_size {address.group(1)}" if address else "no .address_size directive"
        raise PtxError(f"{load}: {found}; 64-bit device code needs .address_size 64")
    defined = [m for m in _ENTRY.finditer(text) if "extern" not in m.group(1)]
    match = next((m for m in defined if m.group(2) == name), None)
    if match is None:
        raise PtxError(f"cuModuleGetFunction would fail with CUDA_ERROR_NOT_FOUND (500): the PTX defines no "
                       f"kernel named {name!r} (its .entry names: {[m.group(2) for m in defined]})")
    start, end = _body(text, match.end())
    if start < 0 or end < 0:
        raise PtxError(f"{load}: the .entry {name!r} has no complete {{ ... }} body")
    module_scope, depth = [], 0
    for i, c in enumerate(text):  # module-scope text: outside every body
        if c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
        elif depth == 0:
            module_scope.append(c)
    return _shared_bytes("".join(module_scope)) + _shared_bytes(text[start:end + 1])
