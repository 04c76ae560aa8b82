"""Which NVRTC would compile, and where CUDA headers are, found without loading anything.

The disk cache is keyed by the compiler that builds an entry. Asking NVRTC for its
version (``nvrtcVersion``) means loading libnvrtc, which costs tens of milliseconds
in a process that then compiles nothing because every kernel is cached. So the
toolchain is identified by what is on disk: the ``nvidia-cuda-nvrtc`` distribution's
version and the library file's path, size and modification time (the file
``cuda.bindings`` loads through ``cuda.pathfinder``). :func:`identity` reads file
metadata only; nothing is loaded or imported besides ``importlib.metadata``.

Where the prediction could be wrong (a libnvrtc other than the pip wheel's gets
loaded, or none can be found), correctness does not depend on it: after NVRTC has
been loaded to compile, :func:`confirm_loaded` looks at the file that was really
mapped into the process and, if it differs, switches this process to that identity,
so an entry is only ever stored under (and found by) the identity of the NVRTC that
built it. Each entry also records the identity it was built with, and a reader
rejects an entry whose recorded identity is not the current one.

CUDA header directories are looked up only when something must really be compiled
(:func:`include_dirs`): a kernel's ``KernelSpec.include_paths`` first, then the defaults, as nvcc
users expect to find them: the CUDA runtime headers (``cuda_fp16.h``, ``cooperative_groups.h`` ...,
from the pip ``nvidia-cuda-runtime`` wheel through ``cuda.pathfinder``), CCCL (``cuda/std/...``,
``nv/target``, ``cub/...``, which ``<cooperative_groups.h>`` needs) and the CUDA toolkit's
``include`` directory. The cache key covers them through :func:`headers_identity` (the given paths,
the ``nvidia-cuda-runtime`` and ``nvidia-cuda-cccl`` versions, ``CUDA_HOME`` / ``CUDA_PATH`` and
where ``/usr/local/cuda`` points), which looks nothing up and reads no header. The headers that are
yours, which you edit (those a kernel includes from the current directory, from its headers' own
directories or from its ``include_paths``), are read, and their contents are part of the key
(:func:`own_headers`): an edited header compiles anew.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Dict, List, Optional, Sequence, Tuple

_LOCK = threading.Lock()
_loaded_identity: Optional[str] = None  # set once NVRTC is loaded and its file differs from the prediction
_headers_resolved = False

_NVRTC_DIST = "nvidia-cuda-nvrtc"
_RUNTIME_DIST = "nvidia-cuda-runtime"
_CCCL_DISTS = ("nvidia-cuda-cccl", "nvidia-cuda-cccl-cu12")  # CUDA 13 and 12 wheels of CCCL
_TOOLKIT = "/usr/local/cuda"


def _is_nvrtc_library(name: str) -> bool:
    base = os.path.basename(name)
    if "builtins" in base:
        return False
    if sys.platform == "win32":
        return base.startswith("nvrtc64_") and base.endswith(".dll")
    return base.startswith("libnvrtc.so")


@functools.lru_cache(maxsize=None)
def _listdir(path: str) -> Tuple[str, ...]:
    try:
        return tuple(os.listdir(path or "."))
    except OSError:
        return ()


def _dist_info(name: str) -> Optional[str]:
    """The ``<name>-<version>.dist-info`` directory of the NVIDIA wheel ``name`` (``nvidia-cuda-nvrtc``...)
    on ``sys.path`` (the first, as ``importlib.metadata`` finds it), by listing the ``sys.path``
    directories that hold an ``nvidia/`` package (where those wheels install their files); None if
    there is none (then ``importlib.metadata`` is asked).

    ``importlib.metadata`` answers the same but costs about 0.6 ms per question in a fresh process
    (it indexes every ``sys.path`` entry and parses the metadata as e-mail headers), three questions
    per warm start; this is a ``stat`` per entry, a listing per site directory and, for the version,
    one header line."""
    found = _dist_infos().get(name.replace("-", "_").lower())
    return os.path.join(*found) if found is not None else None


@functools.lru_cache(maxsize=None)
def _dist_infos() -> Dict[str, Tuple[str, str]]:
    """``{normalized distribution name: (sys.path entry, its .dist-info directory's name)}`` in the
    ``sys.path`` directories that hold an ``nvidia/`` package, the first of each name (one pass for every
    question a warm start asks)."""
    out: Dict[str, Tuple[str, str]] = {}
    for entry in sys.path:
        if not isinstance(entry, str) or not os.path.isdir(os.path.join(entry or ".", "nvidia")):
            continue
        for n in _listdir(entry):
            if n.endswith(".dist-info") and "-" in n:
                out.setdefault(n.split("-", 1)[0].lower(), (entry, n))
    return out


def _dist_version(name: str) -> Optional[str]:
    info = _dist_info(name)
    if info is not None:
        try:
            with open(os.path.join(info, "METADATA"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("Version:"):
                        return line[len("Version:"):].strip()
                    if not line.strip():  # end of the headers
                        break
        except OSError:
            pass
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _file_identity(path: str) -> Optional[str]:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _pip_library() -> Optional[str]:
    """The libnvrtc file of the ``nvidia-cuda-nvrtc`` wheel, from its file list (no import, no load)."""
    info = _dist_info(_NVRTC_DIST)
    if info is not None:
        try:
            with open(os.path.join(info, "RECORD"), encoding="utf-8", errors="replace") as f:
                for line in f:
                    rel = line.split(",", 1)[0]
                    if _is_nvrtc_library(rel):
                        path = os.path.join(os.path.dirname(info), rel)
                        if os.path.isfile(path):
                            return path
        except OSError:
            pass
    from importlib import metadata

    try:
        dist = metadata.distribution(_NVRTC_DIST)
    except metadata.PackageNotFoundError:
        return None
    for f in dist.files or ():
        if _is_nvrtc_library(str(f)):
            path = str(dist.locate_file(f))
            if os.path.isfile(path):
                return path
    return None


def _system_library() -> Optional[str]:
    """libnvrtc of a system toolkit (``$CUDA_HOME``, ``$CUDA_PATH``, ``/usr/local/cuda``)."""
    sub = ("bin",) if sys.platform == "win32" else ("lib64", "lib")
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if not root:
            continue
        for s in sub:
            d = os.path.join(root, s)
            try:
                names = sorted(os.listdir(d))
            except OSError:
                continue
            for n in names:
                if _is_nvrtc_library(n) and not os.path.islink(os.path.join(d, n)):
                    return os.path.join(d, n)
    return None


@functools.lru_cache(maxsize=1)
def _predicted_identity() -> Optional[str]:
    lib = _pip_library()
    if lib is not None:
        ident = _file_identity(lib)
        if ident is not None:
            return f"{_NVRTC_DIST}=={_dist_version(_NVRTC_DIST)}@{ident}"
    lib = _system_library()
    if lib is not None:
        ident = _file_identity(lib)
        if ident is not None:
            return f"system@{ident}"
    return None


def identity() -> Optional[str]:
    """The NVRTC that would compile here, as a string for cache keys; None if it cannot be told
    without loading NVRTC (then :func:`loaded_identity` is the one to use)."""
    return _loaded_identity if _loaded_identity is not None else _predicted_identity()


def _mapped_nvrtc() -> List[str]:
    """The libnvrtc files mapped into this process (Linux; empty elsewhere)."""
    found: List[str] = []
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                parts = line.split(None, 5)  # address perms offset dev inode [path]
                if len(parts) == 6:
                    path = parts[5].strip()
                    if path.startswith("/") and _is_nvrtc_library(path) and path not in found:
                        found.append(path)
    except OSError:
        pass
    return found


def loaded_identity(version: Tuple[int, int]) -> str:
    """The identity of the NVRTC that is loaded now (call after loading it): the mapped file
    where the platform says which it is, else the predicted file plus ``nvrtcVersion``.
    With several libnvrtc mapped (another library brought its own), the predicted one wins if
    it is among them, else one whose name carries ``version``'s major."""
    predicted = _predicted_identity()
    mapped = [(p, _file_identity(p)) for p in _mapped_nvrtc()]
    mapped = [(p, i) for p, i in mapped if i is not None]
    if predicted is not None and any(predicted.endswith("@" + i) for _, i in mapped):
        return predicted
    if mapped:
        major = [(p, i) for p, i in mapped if f".so.{version[0]}" in p or f"64_{version[0]}" in p]
        return f"loaded@{(major or mapped)[0][1]}"
    if predicted is not None:
        return predicted
    return f"nvrtc-{version[0]}.{version[1]}@unknown-file"


def confirm_loaded(version: Tuple[int, int]) -> str:
    """After NVRTC has been loaded: the identity to key entries with from now on in this process."""
    global _loaded_identity
    ident = loaded_identity(version)
    with _LOCK:
        if ident != _predicted_identity():
            _loaded_identity = ident
    return ident


def headers_identity(extra: Optional[Sequence[str]]) -> str:
    """What decides which CUDA headers a compile sees, without reading any: the given include paths
    (searched first), then what decides the default directories (the ``nvidia-cuda-runtime`` and
    ``nvidia-cuda-cccl`` versions, ``CUDA_HOME`` / ``CUDA_PATH``, the toolkit ``/usr/local/cuda`` is).
    ``None`` and ``[]`` see the same directories and give the same identity."""
    given = os.pathsep.join(extra) if extra else ""
    return f"given:{given};" + _default_headers_identity(os.environ.get("CUDA_HOME", ""),
                                                          os.environ.get("CUDA_PATH", ""))


#: the most headers of yours :func:`own_headers` follows from one source (a bound on a declaration's cost)
OWN_HEADERS_MAX = 256


def own_headers(source: str, extra: Optional[Sequence[str]]) -> str:
    """A digest of the headers of yours ``source`` includes, directly or through each other: those NVRTC finds in
    the current directory (a quoted ``#include`` of the source itself), in the including header's directory (its
    quoted ones) or in ``extra`` (``KernelSpec.include_paths``, relative ones from the current directory), by
    their names as included and their contents; ``""`` where there is none. A header found in none of those
    comes from the CUDA directories or the package's built-in headers, which :func:`headers_identity` covers. An
    ``#include`` inside a block comment or an inactive ``#if`` is followed too (the key may then change for
    nothing, never stay the same for a change); one whose name a macro gives is not."""
    if "include" not in source:
        return ""
    import hashlib

    dirs = [os.path.abspath(d) for d in extra or ()]
    found: Dict[str, str] = {}  # real path -> "name as included=content digest"
    todo = [(source, os.getcwd())]
    while todo and len(found) < OWN_HEADERS_MAX:
        text, here = todo.pop()
        for quote, name in _includes(text):
            for d in ([here] if quote == '"' else []) + dirs:
                path = os.path.join(d, name)
                if not os.path.isfile(path):
                    continue
                real = os.path.realpath(path)
                if real not in found:
                    try:
                        with open(real, "rb") as f:
                            data = f.read(1 << 24)
                    except OSError:
                        break  # (unreadable: NVRTC's compile says so)
                    found[real] = f"{name}={hashlib.sha256(data).hexdigest()}"
                    todo.append((data.decode("utf-8", "replace"), os.path.dirname(real)))
                break
    # (by name and contents, not where they are: a cache filled from one directory serves a copy elsewhere)
    return ";".join(sorted(found.values()))


def _includes(text: str) -> List[Tuple[str, str]]:
    """``(quote, name)`` of each ``#include "name"`` / ``#include <name>`` line in ``text``."""
    out = []
    if "include" not in text:
        return out
    for line in text.splitlines():
        s = line.lstrip()
        if not s.startswith("#"):
            continue
        s = s[1:].lstrip()
        if not s.startswith("include"):
            continue
        s = s[len("include"):].lstrip()
        close = {'"': '"', "<": ">"}.get(s[:1])
        end = s.find(close, 1) if close else -1
        if end > 1:
            out.append((s[0], s[1:end]))
    return out


@functools.lru_cache(maxsize=None)
def _default_headers_identity(cuda_home: str, cuda_path: str) -> str:
    cccl = ",".join(f"{d}=={_wheel_version(d)}" for d in _CCCL_DISTS if _wheel_version(d) is not None)
    return (f"{_RUNTIME_DIST}=={_dist_version(_RUNTIME_DIST)};cccl={cccl};CUDA_HOME={cuda_home};"
            f"CUDA_PATH={cuda_path};toolkit={os.path.realpath(_TOOLKIT)}")


def _wheel_version(name: str) -> Optional[str]:
    """The version of NVIDIA wheel ``name`` if one is installed beside the others (``nvidia/`` on
    ``sys.path``); None otherwise, without asking ``importlib.metadata`` (a cost a warm start avoids)."""
    return _dist_version(name) if _dist_info(name) is not None else None


def include_dirs(extra: Optional[Sequence[str]] = None) -> list:
    """Where NVRTC looks for headers, in order: ``extra`` (``KernelSpec.include_paths``), then the CUDA
    runtime headers (the pip ``nvidia-cuda-runtime`` wheel through ``cuda.pathfinder``), CCCL
    (:func:`_cccl_dir`) and the CUDA toolkit's ``include`` (``$CUDA_HOME``, ``$CUDA_PATH``,
    ``/usr/local/cuda``); each once, each only if it is a directory. Called only when compiling."""
    given = [d for d in (extra or ()) if os.path.isdir(d)]
    dirs, seen = [], set()
    for d in [*given, *_default_include_dirs(os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"))]:
        real = os.path.realpath(d)
        if real not in seen:
            seen.add(real)
            dirs.append(d)
    return dirs


@functools.lru_cache(maxsize=None)
def _default_include_dirs(cuda_home: Optional[str], cuda_path: Optional[str]) -> Tuple[str, ...]:
    global _headers_resolved
    _headers_resolved = True
    runtime = None
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
        runtime = str(found) if found else None
    except Exception:  # noqa: BLE001 - fall back to a system toolkit
        pass
    roots = [r for r in (cuda_home, cuda_path, _TOOLKIT) if r]
    toolkit = next((os.path.join(r, "include") for r in roots
                    if os.path.isfile(os.path.join(r, "include", "cuda_fp16.h"))), None)
    dirs = [d for d in (runtime, _cccl_dir(runtime, roots), toolkit) if d and os.path.isdir(d)]
    return tuple(dict.fromkeys(dirs))


def _has_cccl(d: str) -> bool:
    return os.path.isfile(os.path.join(d, "cuda", "std", "version"))


def _cccl_dir(runtime: Optional[str], roots: Sequence[str]) -> Optional[str]:
    """CCCL's include directory (the one holding ``cuda/std``, ``cub``, ``nv/target``); None if there is
    none or the runtime headers' directory already holds it (CUDA 12 toolkits).

    Looked for first where it is cheap to look and next to the runtime headers in use: ``<runtime>/cccl``
    (the layout of the CUDA 13 wheels, conda and toolkits), the ``nvidia-cuda-cccl`` wheels' directories on
    ``sys.path`` (``nvidia/cu13/include/cccl``, CUDA 12's ``nvidia/cuda_cccl/include``), each toolkit root's
    ``include/cccl``; then ``cuda.pathfinder.find_nvidia_header_directory("cccl")`` (pathfinder 1.9 on),
    which finds the same in those places but otherwise starts a Python subprocess to find the toolkit
    (measured: 140 ms), so it is asked last."""
    if runtime is not None and _has_cccl(runtime):
        return None
    candidates = [os.path.join(runtime, "cccl")] if runtime else []
    for entry in sys.path:
        if not isinstance(entry, str):
            continue
        base = os.path.join(entry or ".", "nvidia")
        names = _listdir(base)
        cu = sorted((n for n in names if n[:2] == "cu" and n[2:].isdigit()), key=lambda n: -int(n[2:]))
        candidates += [os.path.join(base, n, "include", "cccl") for n in cu]
        candidates.append(os.path.join(base, "cuda_cccl", "include"))
    candidates += [os.path.join(r, "include", "cccl") for r in roots]
    for c in candidates:
        if _has_cccl(c):
            return c
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cccl")
        return str(found) if found else None
    except Exception:  # noqa: BLE001 - an older pathfinder does not know "cccl"
        return None


def headers_resolved() -> bool:
    """Whether this process has looked up the default CUDA header directories."""
    return _headers_resolved


