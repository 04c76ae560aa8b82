"""The disk cache's store: opaque entries, framed and checked.

The store keeps bytes; each kind of entry has its own codec (:mod:`trt_kernels.compile` for
NVRTC programs, :mod:`trt_kernels.triton_source` for Triton kernels) that turns a payload into
a program and back. Every entry on disk is framed by the store as::

    magic (6 bytes: b"TRTKC\\0" NVRTC, b"TRTKT\\0" Triton) + SHA-256 of the payload (32 bytes) + payload

and :func:`read_entry` hands a codec nothing whose magic and digest do not match, so a flipped
bit anywhere in an entry (its header included) means a recompile, never a trusted entry.

Where the cache lives: ``$TRT_KERNELS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/trt_kernels`` or
``~/.cache/trt_kernels``); ``TRT_KERNELS_CACHE=0`` turns it off. Layout::

    <cache>/<program key: 64 hex>/<arch>.bin    NVRTC programs (trt_kernels.compile)
    <cache>/triton/<Triton's hash: 64 hex>.bin  Triton kernels (trt_kernels.triton_source)
    <entry>.<random>.tmp                        a write in progress (temporary file + os.replace)
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Callable, Optional, Set, TypeVar

T = TypeVar("T")
_LOG = logging.getLogger("trt_kernels")

NVRTC_MAGIC = b"TRTKC\x00"
TRITON_MAGIC = b"TRTKT\x00"

_DIGEST = hashlib.sha256().digest_size


def cache_dir() -> Optional[Path]:
    """The cache directory, or None when ``TRT_KERNELS_CACHE`` turns the cache off."""
    flag = os.environ.get("TRT_KERNELS_CACHE", "1").strip().lower()
    if flag in ("0", "false", "off", "no", "disable", "disabled"):
        return None
    env = os.environ.get("TRT_KERNELS_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trt_kernels"


# ---------------- framing ----------------


def frame(magic: bytes, payload: bytes) -> bytes:
    """An entry's bytes: ``magic + SHA-256(payload) + payload``."""
    return magic + hashlib.sha256(payload).digest() + payload


def unframe(blob: bytes, magic: bytes) -> bytes:
    """The payload of an entry framed by :func:`frame`; ValueError unless magic and digest match."""
    if not blob.startswith(magic):
        raise ValueError(f"not a {magic[:-1].decode()} entry (bad magic)")
    start = len(magic) + _DIGEST
    if len(blob) < start:
        raise ValueError(f"truncated ({len(blob)} bytes)")
    payload = blob[start:]
    if hashlib.sha256(payload).digest() != blob[len(magic):start]:
        raise ValueError("checksum mismatch")
    return payload


def _older_format(blob: bytes, magic: bytes) -> bool:
    """Whether ``blob`` looks like an entry of the unframed format (magic, 4-byte length, JSON)
    that trt-kernels wrote before the store checksummed whole entries."""
    n = len(magic)
    return blob.startswith(magic) and blob[n + 4:n + 6] == b'{"'


# ---------------- reporting: once per entry ----------------

_REPORT_LOCK = threading.Lock()
_REPORTED: Set[str] = set()  # entries whose problem was said at warning level (until rewritten)


def _once(path: Path, level: int, msg: str, *args) -> None:
    with _REPORT_LOCK:
        first = str(path) not in _REPORTED
        _REPORTED.add(str(path))
    _LOG.log(level if first else logging.DEBUG, msg, *args)


def read_entry(path: Path, magic: bytes, decode: Callable[[bytes], T]) -> Optional[T]:
    """The payload of the entry at ``path`` through ``decode``; None when there is no usable entry
    (absent, unreadable, corrupt, or ``decode`` raised), so the caller recompiles and rewrites it.
    A problem with one entry is logged at warning level once."""
    try:
        blob = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        _once(path, logging.WARNING, "trt_kernels: cannot read cache entry %s (%s); recompiling", path, e)
        return None
    try:
        payload = unframe(blob, magic)
    except ValueError as e:
        if _older_format(blob, magic):
            _once(path, logging.INFO, "trt_kernels: cache entry %s is of an older trt-kernels format; recompiling "
                  "and rewriting it", path)
        else:
            _once(path, logging.WARNING, "trt_kernels: cache entry %s is corrupt (%s); recompiling and rewriting "
                  "it", path, e)
        return None
    try:
        return decode(payload)
    except Exception as e:  # noqa: BLE001 - a checksummed payload its codec refuses: recompile
        _once(path, logging.WARNING, "trt_kernels: cache entry %s cannot be used (%s); recompiling and rewriting "
              "it", path, e)
        return None


# ---------------- writing ----------------


def write_entry(path: Path, magic: bytes, payload: bytes) -> None:
    """Frame ``payload`` (:func:`frame`) and write it to ``path`` atomically (temporary file,
    fsync, rename); a failure is logged, not raised."""
    blob = frame(magic, payload)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        _LOG.warning("trt_kernels: cannot write cache entry %s (%s); continuing without caching", path, e)
        return
    with _REPORT_LOCK:
        _REPORTED.discard(str(path))  # a later problem with this entry is news again
