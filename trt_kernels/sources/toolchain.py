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

CUDA header directories (``cuda_fp16.h`` ...) are looked up only when something
must really be compiled (:func:`include_dirs`); the cache key covers them through
:func:`headers_identity` (the ``nvidia-cuda-runtime`` version and the
``CUDA_HOME`` / ``CUDA_PATH`` settings), which reads no header.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import List, Optional, Sequence, Tuple

_LOCK = threading.Lock()
_loaded_identity: Optional[str] = None  # set once NVRTC is loaded and its file differs from the prediction
_headers_resolved = False

_NVRTC_DIST = "nvidia-cuda-nvrtc"
_RUNTIME_DIST = "nvidia-cuda-runtime"


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
    prefix = name.replace("-", "_").lower() + "-"
    for entry in sys.path:
        if not isinstance(entry, str) or not os.path.isdir(os.path.join(entry or ".", "nvidia")):
            continue
        for n in _listdir(entry):
            if n.endswith(".dist-info") and n.lower().startswith(prefix):
                return os.path.join(entry, n)
    return None


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
    """What decides which CUDA headers a compile sees, without reading any: the given include
    paths, else the ``nvidia-cuda-runtime`` version and ``CUDA_HOME`` / ``CUDA_PATH``."""
    if extra is not None:
        return "given:" + os.pathsep.join(extra)
    return _default_headers_identity(os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""))


@functools.lru_cache(maxsize=None)
def _default_headers_identity(cuda_home: str, cuda_path: str) -> str:
    return f"{_RUNTIME_DIST}=={_dist_version(_RUNTIME_DIST)};CUDA_HOME={cuda_home};CUDA_PATH={cuda_path}"


def include_dirs(extra: Optional[Sequence[str]] = None) -> list:
    """Where CUDA headers (``cuda_fp16.h`` ...) are: ``extra`` if given (``KernelSpec.include_paths``),
    else the pip ``nvidia-cuda-runtime`` wheel through ``cuda.pathfinder``, then
    ``$CUDA_HOME/include`` and ``/usr/local/cuda/include``. Called only when compiling."""
    if extra is not None:
        return list(dict.fromkeys(extra))
    return list(_default_include_dirs(os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")))


@functools.lru_cache(maxsize=None)
def _default_include_dirs(cuda_home: Optional[str], cuda_path: Optional[str]) -> Tuple[str, ...]:
    global _headers_resolved
    _headers_resolved = True
    dirs = []
    try:
        from cuda import pathfinder

        found = pathfinder.find_nvidia_header_directory("cudart")
        if found:
            dirs.append(str(found))
    except Exception:  # noqa: BLE001 - fall back to a system toolkit
        pass
    for root in (cuda_home, cuda_path, "/usr/local/cuda"):
        if root and os.path.isfile(os.path.join(root, "include", "cuda_fp16.h")):
            dirs.append(os.path.join(root, "include"))
            break
    return tuple(dict.fromkeys(dirs))


def headers_resolved() -> bool:
    """Whether this process has looked up the default CUDA header directories."""
    return _headers_resolved


