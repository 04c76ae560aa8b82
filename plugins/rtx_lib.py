"""Make ``dlopen("libtensorrt_rtx.so")`` find TensorRT-RTX inside this process, with no step outside it.

TensorRT-RTX 1.7's ONNX parser opens its runtime library by the bare name ``libtensorrt_rtx.so`` to add a
plugin layer, and the ``tensorrt-rtx-cu13-libs`` wheel ships only ``libtensorrt_rtx.so.1`` (its soname);
the failed ``dlopen`` ends in ``std::terminate``. A bare name resolves through the search path (fixed
when the process started: ``LD_LIBRARY_PATH`` set later is not read) or to a library already loaded whose
soname is that name. So :func:`make_resolvable` writes, in this package's cache, a stub shared object
whose soname is ``libtensorrt_rtx.so`` and whose one dependency is the wheel's library by its absolute
path, and loads it: the dynamic loader then answers the parser's ``dlopen`` with the stub, and symbol
lookups through that handle search the stub's dependency, the one TensorRT-RTX library already in the
process (the same file: not a second copy). Nothing outside the cache folder and this process changes.

The stub is an ELF64 x86-64 (or AArch64) object of about 400 bytes: three program headers (one
read-write ``PT_LOAD`` of the whole file, ``PT_DYNAMIC``, a non-executable ``PT_GNU_STACK``) and a
dynamic section with ``DT_SONAME``, ``DT_NEEDED``, an empty symbol table and its hash table; no code.
"""

from __future__ import annotations

import ctypes
import logging
import os
import pathlib
import platform
import struct
from typing import Optional

_LOG = logging.getLogger("trt_kernels")

RTX_NAME = "libtensorrt_rtx.so"
_HANDLES = []  # the loaded stubs: kept for the life of the process, as the loader keeps them

_MACHINES = {"x86_64": 62, "AMD64": 62, "aarch64": 183, "arm64": 183}  # EM_X86_64, EM_AARCH64
_PT_LOAD, _PT_DYNAMIC, _PT_GNU_STACK = 1, 2, 0x6474E551
_DT_NULL, _DT_NEEDED, _DT_HASH, _DT_STRTAB, _DT_SYMTAB, _DT_STRSZ, _DT_SYMENT, _DT_SONAME = 0, 1, 4, 5, 6, 10, 11, 14


def stub_object(soname: str, needed: str, machine: Optional[str] = None) -> bytes:
    """The bytes of a shared object with soname ``soname`` depending on ``needed`` (an absolute path), and
    nothing else."""
    em = _MACHINES.get(machine or platform.machine())
    if em is None:
        raise OSError(f"no stub shared object for machine {machine or platform.machine()!r}")
    n_ph = 3
    head = 64 + 56 * n_ph
    strtab = b"\0" + soname.encode() + b"\0" + os.fsencode(needed) + b"\0"
    so_off, need_off = 1, 2 + len(soname.encode())

    def align(n: int) -> int:
        return (n + 7) & ~7

    str_at = head
    sym_at = align(str_at + len(strtab))
    hash_at = sym_at + 24  # one symbol: the null one
    dyn_at = align(hash_at + 16)
    dynamic = [(_DT_NEEDED, need_off), (_DT_SONAME, so_off), (_DT_HASH, hash_at), (_DT_STRTAB, str_at),
               (_DT_SYMTAB, sym_at), (_DT_STRSZ, len(strtab)), (_DT_SYMENT, 24), (_DT_NULL, 0)]
    dyn = b"".join(struct.pack("<qQ", tag, val) for tag, val in dynamic)
    size = dyn_at + len(dyn)
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, version 1, System V
    ehdr = ident + struct.pack("<HHIQQQIHHHHHH", 3, em, 1, 0, 64, 0, 0, 64, 56, n_ph, 64, 0, 0)  # ET_DYN
    phdrs = (struct.pack("<IIQQQQQQ", _PT_LOAD, 6, 0, 0, 0, size, size, 0x1000)  # RW: the loader relocates
             + struct.pack("<IIQQQQQQ", _PT_DYNAMIC, 6, dyn_at, dyn_at, dyn_at, len(dyn), len(dyn), 8)
             + struct.pack("<IIQQQQQQ", _PT_GNU_STACK, 6, 0, 0, 0, 0, 0, 16))
    body = bytearray(size)
    body[:head] = ehdr + phdrs
    body[str_at:str_at + len(strtab)] = strtab
    body[hash_at:hash_at + 16] = struct.pack("<IIII", 1, 1, 0, 0)  # nbucket 1, nchain 1: empty
    body[dyn_at:] = dyn
    return bytes(body)


def _resolves(name: str) -> bool:
    try:
        ctypes.CDLL(name)
        return True
    except OSError:
        return False


def rtx_library() -> Optional[pathlib.Path]:
    """The wheel's ``libtensorrt_rtx.so.1``, or None."""
    try:
        import tensorrt_rtx_libs
    except ImportError:
        return None
    path = pathlib.Path(tensorrt_rtx_libs.__file__).parent / "libtensorrt_rtx.so.1"
    return path if path.is_file() else None


def make_resolvable() -> Optional[str]:
    """Make ``libtensorrt_rtx.so`` resolve in this process (a stub in the cache, see the module); None when
    it does, else why not. The stub is loaded as the cache's other shared objects are (the cache's trust
    rule: a file another user could have written is never loaded; built privately instead)."""
    if _resolves(RTX_NAME):
        return None
    target = rtx_library()
    if target is None:
        return "the tensorrt-rtx-cu13-libs wheel's libtensorrt_rtx.so.1 is not installed"
    try:
        data = stub_object(RTX_NAME, os.path.realpath(target))
    except OSError as e:
        return str(e)
    from trt_kernels import cache_trust
    from trt_kernels.cache_store import cache_root, rtx_stub
    from trt_kernels.eager.build import load_or_build

    root = cache_root() or cache_trust.private_dir()
    if root is None:
        return "no cache directory to write the stub in (TRT_KERNELS_CACHE is off and no private directory)"
    stub = rtx_stub(root, data)

    def write(path: pathlib.Path, blob: bytes):
        path.write_bytes(blob)
        return True, "written"

    handle, ok, how, where = load_or_build(stub, data, write, lambda path: ctypes.CDLL(str(path)),
                                           "TensorRT-RTX name stub", _LOG)
    if handle is None:
        return f"the stub {where} could not be written or loaded: {how}"
    _HANDLES.append(handle)
    return None if _resolves(RTX_NAME) else f"the stub {where} loaded but {RTX_NAME} still does not resolve"
