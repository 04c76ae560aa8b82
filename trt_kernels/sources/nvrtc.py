"""NVRTC compilation (PTX and CUBIN from one program) with a disk cache.

One NVRTC program per (source, name expressions, options, arch) gives both
the PTX that TensorRT's AOT plugin embeds and the CUBIN that eager launches
load, plus the lowered (mangled) name of every name expression. Compiling
needs no GPU: give the arch (``KernelSpec.arch_override`` or the
``TRT_KERNELS_ARCH`` environment variable, e.g. ``sm_90``).

Headers: the include path is the kernel's ``include_paths``, then the CUDA runtime headers, CCCL
and the toolkit's (:func:`trt_kernels.sources.toolchain.include_dirs`); NVRTC also gets the
package's own device-side ``<stdint.h>``, ``<cmath>``, ``<cfloat>`` ... in memory and a prelude
pre-included into every program (:mod:`trt_kernels.sources.std_headers`). A header that cannot be
used (not found, host-only such as ``<vector>``, or one that brings host code such as
``<cub/cub.cuh>``) fails with a :class:`CompileError` that says why and what to do.

Cache: ``$TRT_KERNELS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/trt_kernels`` or
``~/.cache/trt_kernels``); ``TRT_KERNELS_CACHE=0`` disables it. Layout (format 3):
``<cache>/<program key>/<arch>.bin``. The program key is a SHA-256 of everything
that changes the output except the arch (source, name expressions, options, C++
standard, which headers (directories and the built-in ones' text), the NVRTC toolchain's identity from
:mod:`trt_kernels.sources.toolchain`, read from disk without loading libnvrtc, and the format),
so a process whose kernels are all cached never loads NVRTC nor looks for headers, and
the entries of one program for every arch sit in one directory (a declaration can
check the kernel's parameters from any of them before a GPU is queried).

This module is the NVRTC entries' codec; :mod:`trt_kernels.cache_store` keeps the bytes.
The store frames each entry as ``b"TRTKC\\0"`` + SHA-256 of the payload + payload, writes it
atomically (temporary file + ``os.replace``) and hands :func:`_decode` only a payload whose
digest matches, so no bit of an entry, header included, is trusted unchecked. The payload is
a 4-byte little-endian header length, a JSON header (lowered names, arch, NVRTC version, log,
PTX and CUBIN lengths, program key, toolchain identity, format), the PTX, then the CUBIN. A
corrupt entry, or one recording another toolchain, key, arch or format, is recompiled and
rewritten, never trusted. Programs found or built are kept in memory too, the
:data:`~trt_kernels.cache_store.MEMO_ENTRIES` most recently used.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

from trt_kernels._record import Frozen, plain_record, replace
from trt_kernels.cache_store import (
    MEMO_ENTRIES,
    NVRTC_MAGIC,
    LRUMemo,
    cache_root,
    pack_payload,
    read_entry,
    read_roots,
    unpack_payload,
    write_entry,
)
from trt_kernels.errors import CompileError
from trt_kernels.sources import toolchain
from trt_kernels.sources.archs import feature_hint, normalize_arch
from trt_kernels.sources.kernel_source import ptx_isa
from trt_kernels.sources.toolchain import include_dirs  # noqa: F401 - re-exported (cli, tests)

_LOG = logging.getLogger("trt_kernels")
_FORMAT = 3  # 3: the store checksums whole entries (2: <key>/<arch>.bin, a checksum of PTX + CUBIN only)
_MAGIC = NVRTC_MAGIC
#: The built-in headers' part of every program's key: :func:`trt_kernels.sources.std_headers.digest` of their
#: texts, kept here as a constant so that a warm start neither imports nor builds them.
#: ``tests/unit/test_headers.py`` fails where a text changes and this does not (set it to the new digest:
#: programs built with the old texts then compile anew).
BUILTIN_HEADERS = "18472901fb5d2c24"


@plain_record
class CompiledProgram(Frozen):
    """What NVRTC made of one source for one arch."""

    ptx: bytes
    cubin: bytes
    lowered: Dict[str, str]  # name expression -> symbol in the PTX/CUBIN
    arch: str  # "sm_90"
    nvrtc_version: Tuple[int, int]
    log: str
    key: str  # the program key (the cache directory's name)
    from_cache: bool
    toolchain: str = ""  # identity of the NVRTC that built it (trt_kernels.sources.toolchain)
    # symbol -> its .entry parameters in the PTX, as trt_kernels.sources.abi.ptx_params read them when it was compiled
    # (recorded in the cache entry, so a declaration served from the cache checks the ABI without parsing
    # the PTX); None: not recorded (an entry written before they were), read from the PTX when needed
    entry_params: Optional[Dict[str, Optional[Tuple[Tuple[str, int], ...]]]] = None
    entry: Optional[str] = None  # the cache file it was read from or written to; None: none holds it

    def __init__(self, ptx: bytes, cubin: bytes, lowered: Dict[str, str], arch: str, nvrtc_version: Tuple[int, int],
                 log: str, key: str, from_cache: bool, toolchain: str = "",
                 entry_params: Optional[Dict[str, Optional[Tuple[Tuple[str, int], ...]]]] = None,
                 entry: Optional[str] = None) -> None:
        self.__dict__.update(ptx=ptx, cubin=cubin, lowered=lowered, arch=arch, nvrtc_version=nvrtc_version, log=log,
                             key=key, from_cache=from_cache, toolchain=toolchain, entry_params=entry_params,
                             entry=entry)

    def params_of(self, symbol: str) -> Optional[Tuple[Tuple[str, int], ...]]:
        """The ``.entry`` parameters of ``symbol`` as recorded when compiled; None if not recorded."""
        return self.entry_params.get(symbol) if self.entry_params is not None else None

    @property
    def ptx_isa(self) -> Optional[Tuple[int, int]]:
        """The PTX ISA version of ``.version`` in the PTX (e.g. (9, 0) for CUDA 13.0)."""
        return ptx_isa(self.ptx)


def _check(result, what: str):
    err = result[0]
    if int(err) != 0:
        from cuda.bindings import nvrtc

        _, msg = nvrtc.nvrtcGetErrorString(err)
        raise CompileError(f"NVRTC {what} failed: {msg.decode() if isinstance(msg, bytes) else msg}")
    if len(result) == 1:
        return None
    return result[1] if len(result) == 2 else result[1:]


def nvrtc_version() -> Tuple[int, int]:
    from cuda.bindings import nvrtc

    major, minor = _check(nvrtc.nvrtcVersion(), "nvrtcVersion")
    return int(major), int(minor)


def nvrtc_supported_archs() -> Tuple[int, ...]:
    """The archs the loaded NVRTC compiles for, as numbers (``(75, 80, ..., 90, 100, ...)``)."""
    from cuda.bindings import nvrtc

    return tuple(int(a) for a in _check(nvrtc.nvrtcGetSupportedArchs(), "nvrtcGetSupportedArchs"))


def unsupported_arch(arch: str) -> Optional[str]:
    """Why the NVRTC here cannot compile for ``arch`` (naming the archs it can), or None; None also where NVRTC
    cannot be asked (compiling then says why). Loads NVRTC."""
    m = re.match(r"sm_(\d+)", normalize_arch(arch))
    try:
        archs = nvrtc_supported_archs()
        version = ".".join(map(str, nvrtc_version()))
    except Exception:  # noqa: BLE001 - NVRTC cannot be asked; compiling reports why
        return None
    if not m or not archs or int(m.group(1)) in archs:
        return None
    return f"NVRTC {version} cannot compile for {arch} (it compiles for {', '.join(f'sm_{a}' for a in archs)})"


def env_arch() -> Optional[str]:
    """``TRT_KERNELS_ARCH`` if set (no CUDA query), else None; ValueError naming it and the fix where it is no arch."""
    env = os.environ.get("TRT_KERNELS_ARCH")
    if not env:
        return None
    try:
        return normalize_arch(env)
    except ValueError as e:
        raise ValueError(f"TRT_KERNELS_ARCH={env}: {e}. Fix: set it to the arch to compile for, e.g. "
                         "TRT_KERNELS_ARCH=sm_90, or unset it to use the visible GPU's") from None


#: The compile arch where none is given, no GPU is visible and ``TRT_KERNELS_ARCH`` is unset (a CPU machine):
#: the kernel is compiled for it to check its parameters and fill the cache; launching needs the GPU's arch.
DEFAULT_ARCH = "sm_90"
#: where :func:`compile_arch` says the arch came from when it is :data:`DEFAULT_ARCH`
DEFAULT_ORIGIN = "the default: no GPU visible and TRT_KERNELS_ARCH unset"


def compile_arch(given: Optional[str] = None) -> Tuple[str, str]:
    """The one rule for the arch to compile for, and where it came from (said the same way by declaring,
    ``info``, ``status``, ``inspect`` and ``compile``): ``given`` (``--arch``, ``arch_override``), else
    ``TRT_KERNELS_ARCH``, else the visible GPU's arch, else :data:`DEFAULT_ARCH`."""
    if given:
        return normalize_arch(given), "given"
    env = env_arch()
    if env:
        return env, "TRT_KERNELS_ARCH"
    found = default_arch()
    if found:
        return found, "the visible GPU"
    return DEFAULT_ARCH, DEFAULT_ORIGIN


def default_arch() -> Optional[str]:
    """``TRT_KERNELS_ARCH`` if set, else the current CUDA device's arch, else None."""
    env = env_arch()
    if env:
        return env
    try:
        import torch

        if torch.cuda.is_available():
            return normalize_arch(torch.cuda.get_device_capability())
    except Exception:  # noqa: BLE001 - no usable CUDA here means "no default"
        pass
    return None


# ---------------- cache ----------------


def program_key(source: str, names: Sequence[str], options: Sequence[str], std: str,
                include_paths: Optional[Sequence[str]], toolchain_id: str) -> str:
    """The cache directory of one program: everything that changes NVRTC's output but the arch."""
    payload = json.dumps(
        {"format": _FORMAT, "source": source, "names": list(names), "options": list(options), "std": std,
         "headers": toolchain.headers_identity(include_paths), "builtin_headers": BUILTIN_HEADERS,
         "own_headers": toolchain.own_headers(source, include_paths),
         "toolchain": toolchain_id},
        sort_keys=True,
    ).encode()
    return hashlib.sha256(payload).hexdigest()


def _encode(prog: CompiledProgram) -> bytes:
    """The payload of an entry (the store frames and checksums it)."""
    header = {"lowered": prog.lowered, "arch": prog.arch, "nvrtc": list(prog.nvrtc_version), "log": prog.log,
              "key": prog.key, "toolchain": prog.toolchain, "format": _FORMAT}
    if prog.entry_params is not None:
        header["entry_params"] = {sym: [list(p) for p in ps] if ps is not None else None
                                  for sym, ps in prog.entry_params.items()}
    return pack_payload(header, ptx=prog.ptx, cubin=prog.cubin)


def _decode(payload: bytes, key: str, arch: str, toolchain_id: str, entry: Path) -> CompiledProgram:
    """The program in the payload the store has checked of the entry at ``entry``; raises on one for another
    key, arch, format or NVRTC."""
    header, (ptx, cubin) = unpack_payload(payload, "ptx", "cubin")
    if header.get("format") != _FORMAT or header["arch"] != arch or header["key"] != key:
        raise ValueError(f"entry for format {header.get('format')} / {header['arch']} / key {header['key']}, "
                         f"wanted {_FORMAT} / {arch} / {key}")
    if header.get("toolchain") != toolchain_id:  # never hand out what another NVRTC built
        raise ValueError(f"built by another NVRTC ({header.get('toolchain')!r})")
    return CompiledProgram(ptx=ptx, cubin=cubin, lowered=dict(header["lowered"]), arch=header["arch"],
                           nvrtc_version=tuple(header["nvrtc"]), log=header["log"], key=key, from_cache=True,
                           toolchain=toolchain_id, entry_params=_decode_params(header.get("entry_params")),
                           entry=str(entry))


def _decode_params(recorded) -> Optional[Dict[str, Optional[Tuple[Tuple[str, int], ...]]]]:
    """An entry's recorded ``.entry`` parameters; None when absent or not in the shape written (the PTX is
    read instead)."""
    if not isinstance(recorded, dict):
        return None
    out: Dict[str, Optional[Tuple[Tuple[str, int], ...]]] = {}
    for sym, ps in recorded.items():
        if ps is None:
            out[sym] = None
        elif isinstance(ps, list) and all(isinstance(p, list) and len(p) == 2 and isinstance(p[0], str)
                                          and type(p[1]) is int for p in ps):
            out[sym] = tuple((t, b) for t, b in ps)
        else:
            return None
    return out


# ---------------- compile ----------------

_MEMO = LRUMemo(MEMO_ENTRIES)  # (program key, arch) -> CompiledProgram, most recently used kept


def forget() -> None:
    """Forget the programs this process compiled or read (tests: the next build reads the disk cache or
    compiles, as in a fresh process)."""
    _MEMO.clear()


def toolchain_id() -> str:
    """The NVRTC identity for keys: from disk if it can be told, else by loading NVRTC."""
    ident = toolchain.identity()
    if ident is None:
        ident = toolchain.confirm_loaded(nvrtc_version())
    return ident


def _entry_path(key: str, arch: str) -> Optional[Path]:
    """Where this process writes (and first looks for) the entry: under :func:`cache_root`."""
    cdir = cache_root()
    return cdir / key / f"{arch}.bin" if cdir is not None else None


def _lookup(key: str, arch: str, ident: str, roots=None) -> Optional[CompiledProgram]:
    hit = _MEMO.get((key, arch))
    if hit is not None:
        return hit
    for root in (read_roots() if roots is None else roots):
        path = root[0] / key / f"{arch}.bin"
        prog = read_entry(path, _MAGIC, lambda payload: _decode(payload, key, arch, ident, path), root)
        if prog is not None:
            return _MEMO.setdefault((key, arch), prog)
    return None


def cached_program(
    source: str,
    name_expressions: Sequence[str],
    *,
    options: Sequence[str] = (),
    std: str = "c++17",
    include_paths: Optional[Sequence[str]] = None,
) -> Optional[CompiledProgram]:
    """A cached build of this program for *any* arch, without compiling, loading NVRTC or querying
    a GPU; None if there is none (or the toolchain cannot be told without loading NVRTC).

    A kernel's parameter list in the PTX does not depend on the arch, so a declaration checks
    the kernel ABI against such an entry and leaves the arch-specific CUBIN to the first launch.
    """
    ident = toolchain.identity()
    roots = read_roots()
    if ident is None or not roots:
        return None
    key = program_key(source, name_expressions, options, std, include_paths, ident)
    for (k, _arch), prog in reversed(_MEMO.items()):
        if k == key:
            return _MEMO.setdefault((k, _arch), prog)
    for root in roots:
        try:
            names = sorted(os.listdir(root[0] / key))
        except OSError:
            continue
        for n in names:
            if n.endswith(".bin"):
                prog = _lookup(key, n[: -len(".bin")], ident, [root])
                if prog is not None:
                    return prog
    return None


def compile_program(
    source: str,
    name_expressions: Sequence[str],
    *,
    arch: str,
    options: Sequence[str] = (),
    std: str = "c++17",
    include_paths: Optional[Sequence[str]] = None,
    label: str = "kernel",
) -> CompiledProgram:
    """Compile ``source`` for ``arch`` (e.g. ``"sm_90"``) with NVRTC; PTX, CUBIN and lowered names.

    A cache hit loads no NVRTC and reads no CUDA header (only yours, for the key). Raises :class:`CompileError`
    with NVRTC's log if the source does not compile, or if a name expression names no ``__global__`` function.
    """
    arch = normalize_arch(arch)
    ident = toolchain_id()
    key = program_key(source, name_expressions, options, std, include_paths, ident)
    prog = _lookup(key, arch, ident)
    if prog is not None:
        return prog
    version = nvrtc_version()  # loads NVRTC: from here on, key by the library really loaded
    loaded = toolchain.confirm_loaded(version)
    if loaded != ident:
        _LOG.info("trt_kernels: the NVRTC loaded (%s) is not the one predicted (%s); keying the cache by it",
                  loaded, ident)
        ident = loaded
        key = program_key(source, name_expressions, options, std, include_paths, ident)
        prog = _lookup(key, arch, ident)
        if prog is not None:
            return prog
    from trt_kernels.sources import std_headers  # (the texts are needed only to compile)

    opts = [f"--gpu-architecture={arch}", f"-std={std}", *std_headers.options()]
    opts += [f"-I{d}" for d in toolchain.include_dirs(include_paths)]
    opts += list(options)
    prog = _nvrtc_compile(source, name_expressions, opts, arch, version, key, label, ident)
    path = _entry_path(key, arch)
    if path is not None and write_entry(path, _MAGIC, _encode(prog)):
        prog = replace(prog, entry=str(path))
    return _MEMO.setdefault((key, arch), prog)


def _nvrtc_output(prog, get_size, get, what: str) -> bytes:
    """One of NVRTC's outputs (log, PTX, CUBIN) as ``bytes``.

    NVRTC writes into the buffer it is given, so the buffer is a fresh ``bytearray``:
    never a ``bytes`` object, which is immutable and may be one of CPython's shared
    singletons (``b" " * 1`` *is* the interpreter's cached ``b" "``; writing NVRTC's
    terminating NUL into it would turn every ``b" "`` in the process into ``b"\\x00"``).
    """
    size = int(_check(get_size(prog), f"nvrtcGet{what}Size"))
    buf = bytearray(max(size, 1))
    _check(get(prog, buf), f"nvrtcGet{what}")
    return bytes(buf)


def _include_path(opts) -> Tuple[list, list]:
    """The ``-I`` directories of ``opts`` in order, and those of them the user gave (not a default one)."""
    search = [o[2:] for o in opts if o.startswith("-I")]
    defaults = set(toolchain.include_dirs())
    return search, [d for d in search if d not in defaults]


def _nvrtc_compile(source, names, opts, arch, version, key, label, toolchain_id="") -> CompiledProgram:
    """One NVRTC program. NVRTC also gets the built-in standard headers in memory, less those a directory the
    user gave holds (:func:`trt_kernels.sources.std_headers.for_compile`)."""
    from cuda.bindings import nvrtc

    from trt_kernels.sources import std_headers

    search, given = _include_path(opts)
    headers = std_headers.for_compile(given)
    prog = _check(nvrtc.nvrtcCreateProgram(source.encode(), f"{label}.cu".encode(), len(headers),
                                           [t.encode() for _, t in headers], [n.encode() for n, _ in headers]),
                  "nvrtcCreateProgram")
    try:
        for n in names:
            try:
                _check(nvrtc.nvrtcAddNameExpression(prog, n.encode()), f"nvrtcAddNameExpression({n!r})")
            except CompileError as e:
                raise CompileError(f"{label}: kernel_name {n!r} is not a name expression NVRTC takes ({e}). "
                                   "Fix: name the __global__ function, e.g. 'my_kernel' or 'k<T>'") from None
        bopts = [o.encode() for o in opts]
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(bopts), bopts)
        log = _nvrtc_output(prog, nvrtc.nvrtcGetProgramLogSize, nvrtc.nvrtcGetProgramLog, "ProgramLog")
        log = log.rstrip(b"\x00").decode(errors="replace").strip()
        if int(err) != 0:
            if "nv_mangled_name" in log or "name expression" in log:
                raise CompileError(
                    f"{label}: kernel_name {', '.join(map(repr, names))} names no __global__ function in the "
                    "source (a template needs its parameter, e.g. 'k<T>'). NVRTC said:\n" + log
                )
            hint = std_headers.compile_hint(log, search)
            if hint is None and "target" in log:
                hint = feature_hint(log, arch)
            if hint is None and "--gpu-architecture" in log:
                problem = unsupported_arch(arch)
                if problem is not None:
                    hint = (f"{problem}. Fix: compile for one of those (arch_override= / TRT_KERNELS_ARCH / --arch), "
                            "or install an nvidia-cuda-nvrtc that knows the arch")
            if hint is not None:
                raise CompileError(f"{label}: NVRTC could not compile the kernel source for {arch}: {hint}\n"
                                   f"NVRTC said:\n{log}")
            raise CompileError(f"{label}: NVRTC could not compile the kernel source for {arch}:\n{log}")
        lowered = {}
        for n in names:
            res = nvrtc.nvrtcGetLoweredName(prog, n.encode())
            if int(res[0]) != 0:
                raise CompileError(
                    f"{label}: kernel_name {n!r} names no __global__ function in the source "
                    "(for a template, the name expression must instantiate it, e.g. 'k<float>')"
                )
            lowered[n] = res[1].decode() if isinstance(res[1], bytes) else str(res[1])
        ptx = _nvrtc_output(prog, nvrtc.nvrtcGetPTXSize, nvrtc.nvrtcGetPTX, "PTX")
        cubin = _nvrtc_output(prog, nvrtc.nvrtcGetCUBINSize, nvrtc.nvrtcGetCUBIN, "CUBIN")
    finally:
        nvrtc.nvrtcDestroyProgram(prog)
    from trt_kernels.sources.abi import ptx_params

    ptx = ptx.rstrip(b"\x00")
    found = {sym: ptx_params(ptx, sym) for sym in lowered.values()}
    params = {sym: tuple(ps) if ps is not None else None for sym, ps in found.items()}
    return CompiledProgram(ptx=ptx, cubin=cubin, lowered=lowered, arch=arch, nvrtc_version=version, log=log, key=key,
                           from_cache=False, toolchain=toolchain_id, entry_params=params)
