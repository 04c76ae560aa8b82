"""The disk cache's store: opaque entries, framed and checked, read and written safely.

The store keeps bytes; each kind of entry has its own codec (:mod:`trt_kernels.sources.nvrtc` for
NVRTC programs, :mod:`trt_kernels.sources.triton_compile` for Triton kernels) that turns a payload into
a program and back, both through :func:`pack_payload` / :func:`unpack_payload`. Every entry on
disk is framed by the store as::

    magic (6 bytes: b"TRTKC\\0" NVRTC, b"TRTKT\\0" Triton, b"TRTKA\\0" autotune record) + SHA-256 of the
    payload (32 bytes) + payload

and :func:`read_entry` hands a codec nothing whose magic and digest do not match, so a flipped
bit anywhere in an entry (its header included) means a recompile, never a trusted entry.

Where the cache lives: ``$TRT_KERNELS_CACHE_DIR`` (default ``$XDG_CACHE_HOME/trt_kernels`` or
``~/.cache/trt_kernels``); ``TRT_KERNELS_CACHE=0`` turns it off. Layout::

    <cache>/<program key: 64 hex>/<arch>.bin    NVRTC programs (trt_kernels.sources.nvrtc)
    <cache>/triton/<Triton's hash: 64 hex>.bin  Triton kernels (trt_kernels.sources.triton_compile)
    <cache>/autotune/<64 hex>.bin               an eager @triton.autotune choice (trt_kernels.eager.cuda_kernel)
    <cache>/launcher/<64 hex><EXT_SUFFIX>       the compiled eager launcher (trt_kernels.eager.compiled_launcher)
    <entry>.<random>.tmp                        a write in progress (temporary file + os.replace)

Reads open regular files only (no FIFO, device or symbolic link; at most
:data:`MAX_ENTRY_BYTES`). Writes are atomic, remove temporary files older than
:data:`STALE_TMP_SECONDS` in the directory they write to, and repair what is in the way where
that is safe: an empty directory where an entry belongs, a regular file or symbolic link where
a program-key directory belongs. Where the cache cannot be written, a process says so once.
:func:`clear` removes only what this package wrote, recognised by name and magic.
"""

from __future__ import annotations

import errno
import functools
import hashlib
import json
import logging
import os
import re
import stat
import struct
import tempfile
import threading
import time
from collections import OrderedDict
from dataclasses import field
from pathlib import Path
from typing import Callable, Hashable, List, Optional, Set, Tuple, TypeVar

from trt_kernels import cache_trust
from trt_kernels._record import FACTORY, Record, plain_record

T = TypeVar("T")
V = TypeVar("V")
_LOG = logging.getLogger("trt_kernels")

NVRTC_MAGIC = b"TRTKC\x00"
TRITON_MAGIC = b"TRTKT\x00"
AUTOTUNE_MAGIC = b"TRTKA\x00"  # a config index with the identity it was timed for: data, checked before use
#: An entry larger than this is not read (a cache entry is a few KiB to a few MiB).
MAX_ENTRY_BYTES = 256 << 20
#: A temporary file older than this (seconds) is a write that died; it is removed.
STALE_TMP_SECONDS = 3600
#: How many compiled programs a process keeps in memory per codec (least recently used go first).
MEMO_ENTRIES = 256

_DIGEST = hashlib.sha256().digest_size


class _Pattern:
    """A regular expression compiled at its first use (writing, cleaning or clearing the cache) rather than
    at import, where compiling the store's six cost ~0.35 ms of every start-up."""

    __slots__ = ("text", "_compiled")

    def __init__(self, text: str):
        self.text, self._compiled = text, None

    def fullmatch(self, s: str):
        if self._compiled is None:
            self._compiled = re.compile(self.text)
        return self._compiled.fullmatch(s)


_KEY = _Pattern(r"[0-9a-f]{64}")
_ARCH_BIN = _Pattern(r"sm_\d+[af]?\.bin")
_KEY_BIN = _Pattern(r"[0-9a-f]{64}\.bin")
_TMP = _Pattern(r"(?:sm_\d+[af]?|[0-9a-f]{64})\.bin\.[A-Za-z0-9_]+\.tmp")  # mkstemp(prefix=entry + ".")
_LAUNCHER_SO = _Pattern(r"[0-9a-f]{64}\.[A-Za-z0-9_.-]+")  # <key><EXT_SUFFIX>, an ELF shared object
_LAUNCHER_TMP = _Pattern(r"[0-9a-f]{64}\.[A-Za-z0-9_.-]+\.tmp")  # its build in progress (mkstemp)
_RTX_STUB = _Pattern(r"libtensorrt_rtx-alias-[0-9a-f]{16}\.so")  # rtx/: the TensorRT-RTX name stub (rtx_stub)
_RTX_TMP = _Pattern(r"libtensorrt_rtx-alias-[0-9a-f]{16}\.so\.[A-Za-z0-9_]+\.tmp")
ELF_MAGIC = b"\x7fELF"
_OPEN = (os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
         | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))


def cache_dir() -> Optional[Path]:
    """The cache directory, or None when ``TRT_KERNELS_CACHE`` turns the cache off."""
    env = os.environ
    return _cache_dir(env.get("TRT_KERNELS_CACHE", "1"), env.get("TRT_KERNELS_CACHE_DIR"), env.get("XDG_CACHE_HOME"),
                      env.get("HOME"))


@functools.lru_cache(maxsize=8)
def _cache_dir(flag: str, cache_dir_env: Optional[str], xdg: Optional[str], home: Optional[str]) -> Optional[Path]:
    # (the Path for given settings, made once: each declaration asks for it several times)
    if flag.strip().lower() in ("0", "false", "off", "no", "disable", "disabled"):
        return None
    if cache_dir_env:
        return Path(cache_dir_env).expanduser()
    base = xdg or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "trt_kernels"


def cache_root() -> Optional[Path]:
    """The directory this process reads and writes entries in: the cache directory (:func:`cache_dir`)
    where it passes :mod:`~trt_kernels.cache_trust`'s rule (only you can write it), else this process's
    private directory, said once with the path, the owner and the fix; None when the cache is off (or
    neither can be had)."""
    root = cache_dir()
    if root is None:
        return None
    private, prob = cache_trust.choose(root)
    if prob is None:
        return root
    cache_trust.say_once(
        f"root:{root}", _LOG, "trt_kernels: the compile cache %s is not private to you: %s. Whoever can write there "
        "could make this process run their code (cached kernels are launched, cached modules loaded), so nothing "
        "in it is read or loaded; this process compiles into %s instead (said once; `trt-kernels doctor` shows "
        "it). Fix: %s", root, prob, private or "memory only (no private directory could be made)", prob.fix)
    return private


def read_roots() -> List[Tuple[Path, Optional[int]]]:
    """Where entries are looked up, in order: ``(cache_root(), None)``, then the shared read-only cache
    ``(TRT_KERNELS_SHARED_CACHE_DIR, its owner's uid)`` where one is named (NVRTC and Triton entries
    only; nothing is ever written there)."""
    roots: List[Tuple[Path, Optional[int]]] = []
    root = cache_root()
    if root is not None:
        roots.append((root, None))
    shared = cache_trust.shared_dir()
    if shared is not None:
        roots.append(shared)
    return roots


def trust() -> dict:
    """The cache's trust as ``doctor`` and ``status`` show it: ``{"cache", "trusted", "problem", "fix",
    "using", "shared", "shared_problem"}`` (values None where they do not apply)."""
    root = cache_dir()
    out = {"cache": str(root) if root is not None else None, "trusted": None, "problem": None, "fix": None,
           "using": None, "shared": None, "shared_problem": None}
    if root is not None:
        prob = cache_trust.dir_problem(root, root)
        out.update(trusted=prob is None, problem=str(prob) if prob else None, fix=prob.fix if prob else None)
        using = cache_root()
        out["using"] = str(using) if using is not None else None
    shared = cache_trust.shared_dir()
    if shared is not None:
        prob = cache_trust.dir_problem(shared[0], shared[0], shared[1])
        out.update(shared=f"{shared[0]} (owner {cache_trust.who(shared[1])})",
                   shared_problem=str(prob) if prob else None)
    return out


def problem(path: Path) -> Optional[cache_trust.Problem]:
    """Why the cache file ``path`` is not to be trusted (:func:`cache_trust.path_problem`, under the root
    or shared cache that holds it), or None."""
    root, owner = _root_of(path)
    return cache_trust.path_problem(path, root, owner)


def _root_of(path: Path) -> Tuple[Path, Optional[int]]:
    """The root (and, for the shared cache, its owner) that ``path`` lies under; its own directory where
    it lies under none (a path a caller chose)."""
    p = os.path.abspath(path)
    for root, owner in read_roots():
        r = os.path.abspath(root)
        if p.startswith(r.rstrip(os.sep) + os.sep):
            return root, owner
    return Path(p).parent, None


def make_private_dirs(d: Path) -> None:
    """Make the directory ``d`` and its missing parents, each 0700 (private to you)."""
    missing = []
    p = Path(os.path.abspath(d))
    while not os.path.lexists(p):
        missing.append(p)
        if p.parent == p:
            break
        p = p.parent
    for m in reversed(missing):
        try:
            os.mkdir(m, 0o700)
        except FileExistsError:
            pass  # another process made it meanwhile (its owner is checked before anything is read there)


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


def pack_payload(header: dict, **blobs: bytes) -> bytes:
    """A codec's payload: a 4-byte little-endian header length, the JSON ``header`` (with a
    ``<name>_len`` for each blob added), then the blobs in the order given."""
    meta = dict(header, **{f"{name}_len": len(b) for name, b in blobs.items()})
    head = json.dumps(meta).encode()
    return struct.pack("<I", len(head)) + head + b"".join(blobs.values())


def unpack_payload(payload: bytes, *names: str) -> Tuple[dict, List[bytes]]:
    """``(header, [blob, ...])`` of a :func:`pack_payload` payload whose blobs are ``names``, in order;
    ValueError when the lengths do not add up (the ``<name>_len`` keys are taken out of the header)."""
    (hlen,) = struct.unpack_from("<I", payload, 0)
    header = json.loads(payload[4:4 + hlen])
    lens = [int(header.pop(f"{n}_len")) for n in names]
    body = payload[4 + hlen:]
    if len(body) != sum(lens):
        raise ValueError(f"the lengths of {', '.join(names)} do not add up to the entry's")
    out, pos = [], 0
    for n in lens:
        out.append(bytes(body[pos:pos + n]))
        pos += n
    return header, out


def _older_format(blob: bytes, magic: bytes) -> bool:
    """Whether ``blob`` looks like an entry of the unframed format (magic, 4-byte length, JSON)
    that trt-kernels wrote before the store checksummed whole entries."""
    n = len(magic)
    return blob.startswith(magic) and blob[n + 4:n + 6] == b'{"'


# ---------------- reporting: once per entry, once per cache ----------------

_REPORT_LOCK = threading.Lock()
_REPORTED: Set[str] = set()  # entries whose problem was said at warning level (until rewritten)
_UNWRITABLE: Set[str] = set()  # caches this process said it cannot write


def _once(path: Path, level: int, msg: str, *args) -> None:
    with _REPORT_LOCK:
        first = str(path) not in _REPORTED
        _REPORTED.add(str(path))
    _LOG.log(level if first else logging.DEBUG, msg, *args)


def _cannot_write(path: Path, err: BaseException) -> None:
    root = cache_dir()
    where = str(root if root is not None else path.parent)
    with _REPORT_LOCK:
        first = where not in _UNWRITABLE
        _UNWRITABLE.add(where)
    fix = (f"remove the directory {path}, which trt-kernels did not make" if isinstance(err, IsADirectoryError) else
           f"make {where} writable, set TRT_KERNELS_CACHE_DIR to a writable directory, or TRT_KERNELS_CACHE=0 to turn "
           "the disk cache off")
    _LOG.log(logging.WARNING if first else logging.DEBUG,
             "trt_kernels: cannot write the compile cache entry %s (%s); compiling without caching (said once "
             "per process, later failures are logged at debug level). Fix: %s", path, err, fix)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISLNK, "a symbolic link")):
        if test(mode):
            return name
    return "not a regular file"


class _Unusable(OSError):
    """What is at an entry's path is not an entry to read: ``why`` says what it is."""

    def __init__(self, path: Path, why: str, is_dir: bool = False):
        super().__init__(f"{path} {why}")
        self.why, self.is_dir = why, is_dir


class _Untrusted(_Unusable):
    """The entry at a path fails :mod:`~trt_kernels.cache_trust`'s rule: ``problem`` says how."""

    def __init__(self, path: Path, prob: cache_trust.Problem):
        super().__init__(path, prob.why)
        self.problem = prob


def _read_regular(path: Path, limit: int, prefix: Optional[int] = None, owner: Optional[int] = -1) -> bytes:
    """The bytes of ``path`` (its first ``prefix`` bytes if given) if it is a regular file of at
    most ``limit`` bytes; never follows a symbolic link, never blocks on a FIFO, never reads a device.
    ``owner`` (None: you; a uid: a shared cache's owner; -1: not checked): the file, as opened, must pass
    :func:`cache_trust.file_problem` (else :class:`_Untrusted`)."""
    try:
        fd = os.open(path, _OPEN)
    except OSError as e:
        if e.errno == errno.ELOOP:
            try:
                st = os.lstat(path)
            except OSError:
                raise e from None
            if stat.S_ISLNK(st.st_mode):
                raise _Unusable(path, f"is a symbolic link (to {os.readlink(path)}), not a regular file") from None
        raise
    chunks: List[bytes] = []
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _Unusable(path, f"is {_kind(st.st_mode)}, not a regular file", stat.S_ISDIR(st.st_mode))
        if owner != -1:
            prob = cache_trust.file_problem(str(path), st, owner)
            if prob is not None:
                raise _Untrusted(path, prob)
        if st.st_size > limit:
            raise _Unusable(path, f"has {st.st_size} bytes, more than the {limit} an entry may have")
        want, n, step = (limit + 1 if prefix is None else prefix), 0, st.st_size + 1
        while n < want:
            chunk = os.read(fd, min(want - n, step))
            if not chunk:
                break
            chunks.append(chunk)
            n, step = n + len(chunk), 1 << 20
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > limit:
        raise _Unusable(path, f"has more than the {limit} bytes an entry may have")
    return data


def read_entry(path: Path, magic: bytes, decode: Callable[[bytes], T],
               root: Optional[Tuple[Path, Optional[int]]] = None) -> Optional[T]:
    """The payload of the entry at ``path`` through ``decode``; None when there is no usable entry
    (absent, not a regular file, unreadable, corrupt, or ``decode`` raised), so the caller
    recompiles and rewrites it. A problem with one entry is logged at warning level once.

    Nothing is read that fails :mod:`~trt_kernels.cache_trust`'s rule (a directory on the way or the
    file owned by another user, or writable by group or others): said once, with the fix. ``root``: the
    :func:`read_roots` item ``path`` lies under, where the caller knows it."""
    top, owner = _root_of(path) if root is None else root
    # (what happens next: an entry of the shared cache is never rewritten, the program goes to your own cache)
    redo = "recompiling and rewriting it" if owner is None else "compiling it into your own cache instead"
    prob = cache_trust.dir_problem(path.parent, top, owner)
    try:
        if prob is not None:
            raise _Untrusted(path, prob)
        blob = _read_regular(path, MAX_ENTRY_BYTES, owner=owner)
    except (FileNotFoundError, NotADirectoryError):
        return None  # absent; a file where the key directory belongs is repaired by the write
    except _Untrusted as e:
        cache_trust.say_once(f"entry:{path}", _LOG, "trt_kernels: not trusting the cache entry %s: %s; compiling "
                             "it in this process instead. Fix: %s", path, e.problem, e.problem.fix)
        return None
    except _Unusable as e:
        if e.is_dir:  # the write removes it if empty, else says it cannot write
            _LOG.debug("trt_kernels: cache entry %s is a directory; recompiling", path)
        else:
            _once(path, logging.WARNING, "trt_kernels: cache entry %s %s; %s", path, e.why, redo)
        return None
    except OSError as e:
        _once(path, logging.WARNING, "trt_kernels: cannot read cache entry %s (%s); recompiling", path, e)
        return None
    try:
        payload = unframe(blob, magic)
    except ValueError as e:
        if _older_format(blob, magic):
            _once(path, logging.INFO, "trt_kernels: cache entry %s is of an older trt-kernels format; %s", path,
                  redo)
        else:
            _once(path, logging.WARNING, "trt_kernels: cache entry %s is corrupt (%s); %s", path, e, redo)
        return None
    try:
        return decode(payload)
    except Exception as e:  # noqa: BLE001 - a checksummed payload its codec refuses: recompile
        _once(path, logging.WARNING, "trt_kernels: cache entry %s cannot be used (%s); %s", path, e, redo)
        return None


# ---------------- writing, with repairs ----------------


def _ensure_dir(d: Path) -> None:
    """Make the directory ``d`` an entry goes in. A regular file or symbolic link named like a
    program key (64 hex digits) where a key directory belongs is ours to replace: removed, logged."""
    try:
        st = os.lstat(d)
    except FileNotFoundError:
        make_private_dirs(d)
        return
    if stat.S_ISDIR(st.st_mode):
        return
    if _KEY.fullmatch(d.name) and (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        what = (f"a symbolic link to {os.readlink(d)}" if stat.S_ISLNK(st.st_mode)
                else f"a regular file of {st.st_size} bytes")
        try:
            os.unlink(d)
        except FileNotFoundError:
            pass  # another process repaired it first
        _LOG.warning("trt_kernels: removed %s (%s) from the compile cache: a program's directory belongs there",
                     d, what)
        make_private_dirs(d)
        return
    if stat.S_ISLNK(st.st_mode) and d.is_dir():
        return  # e.g. <cache>/triton linked elsewhere by its owner
    raise NotADirectoryError(errno.ENOTDIR, f"{_kind(st.st_mode)} is where a cache directory belongs", str(d))


def remove_stale_temporaries(d: Path, max_age: float = STALE_TMP_SECONDS) -> int:
    """Remove this package's temporary files (``<entry>.bin.<random>.tmp``, regular files) older
    than ``max_age`` seconds from the directory ``d``; how many were removed."""
    now, n = time.time(), 0
    try:
        with os.scandir(d) as it:
            for e in it:
                if not _TMP.fullmatch(e.name):
                    continue
                try:
                    st = e.stat(follow_symlinks=False)
                    if stat.S_ISREG(st.st_mode) and now - st.st_mtime > max_age:
                        os.unlink(e.path)
                        n += 1
                except OSError:
                    pass  # another process removed or replaced it
    except OSError as e:
        _LOG.debug("trt_kernels: cannot list %s for stale temporary files (%s)", d, e)
    if n:
        _LOG.info("trt_kernels: removed %d temporary file(s) older than %d s (writes that died) from %s", n, max_age, d)
    return n


def _replace(tmp: str, path: Path) -> None:
    try:
        os.replace(tmp, path)
    except IsADirectoryError:
        try:
            os.rmdir(path)
        except OSError as e:
            if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                raise IsADirectoryError(errno.EISDIR, "a directory that is not empty is where the entry belongs "
                                        f"(remove {path})", str(path)) from None
            raise
        _LOG.warning("trt_kernels: removed the empty directory %s from the compile cache: an entry belongs there",
                     path)
        os.replace(tmp, path)


def write_entry(path: Path, magic: bytes, payload: bytes) -> bool:
    """Frame ``payload`` (:func:`frame`) and write it to ``path`` atomically (temporary file,
    fsync, rename); whether it was written. A failure is logged (once per process and cache at warning
    level), not raised."""
    blob = frame(magic, payload)
    root, owner = _root_of(path)
    prob = cache_trust.dir_problem(path.parent, root, owner)
    try:
        st = os.lstat(path)
        if prob is None and st.st_uid != cache_trust.me():
            prob = cache_trust.file_problem(str(path), st)
    except OSError:
        pass
    if prob is not None:  # said where it was read; nothing another user owns or can swap is written over
        _LOG.debug("trt_kernels: not writing the cache entry %s: %s", path, prob)
        return False
    try:
        _ensure_dir(path.parent)
        remove_stale_temporaries(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            _replace(tmp, path)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
    except OSError as e:
        _cannot_write(path, e)
        return False
    with _REPORT_LOCK:
        _REPORTED.discard(str(path))  # a later problem with this entry is news again
    return True


def _entry_magic(rel: Path) -> Optional[bytes]:
    """The magic of the entry at ``rel`` (a path relative to a cache root) by the layout: an NVRTC program's
    ``<key>/<arch>.bin``, a Triton kernel's ``triton/<hash>.bin``; None for anything else."""
    parts = rel.parts
    if len(parts) == 2 and _KEY.fullmatch(parts[0]) and _ARCH_BIN.fullmatch(parts[1]):
        return NVRTC_MAGIC
    if len(parts) == 2 and parts[0] == "triton" and _KEY_BIN.fullmatch(parts[1]):
        return TRITON_MAGIC
    return None


def adopt(path: Path) -> Optional[Path]:
    """Copy the NVRTC or Triton entry at ``path``, found in the shared read-only cache, into :func:`cache_root`
    at the same place: read as every entry is (the trust rule, the checksum), written as every entry is. The
    path of the entry in your cache (``path`` itself where it lies there already), or None where there is none
    or it could not be copied (said as any unreadable or unwritable entry is). For ``trt-kernels compile``,
    which fills the cache a deployment ships: a build found in the shared cache is not in that one yet."""
    root = cache_root()
    if root is None:
        return None
    top, owner = _root_of(path)
    if os.path.abspath(top) == os.path.abspath(root):
        return path
    rel = Path(os.path.relpath(path, top))
    magic = _entry_magic(rel)
    if magic is None:
        return None
    payload = read_entry(path, magic, lambda p: p, (top, owner))
    if payload is None:
        return None
    dest = root / rel
    return dest if write_entry(dest, magic, payload) else None


# ---------------- cache clear ----------------


@plain_record
class ClearReport(Record):
    """What :func:`clear` removed and what it left."""

    root: Path
    entries: int = 0  # cache entries removed (any format version)
    temporaries: int = 0  # temporary files removed
    directories: int = 0  # program-key directories (and triton/) removed once empty
    removed_bytes: int = 0
    kept: int = 0  # files, links and other things this package did not write, left as they were
    kept_bytes: int = 0
    foreign: int = 0  # of those, files named like entries but owned by another user (never ours to remove)
    kept_examples: List[str] = field(default_factory=list)  # the first five places of kept_places
    errors: List[str] = field(default_factory=list)
    kept_places: int = 0  # where those are: each a file, a link or a directory with everything under it

    def __init__(self, root: Path, entries: int = 0, temporaries: int = 0, directories: int = 0, removed_bytes: int = 0,
                 kept: int = 0, kept_bytes: int = 0, foreign: int = 0, kept_examples: List[str] = FACTORY,
                 errors: List[str] = FACTORY, kept_places: int = 0) -> None:
        self.root = root
        self.entries = entries
        self.temporaries = temporaries
        self.directories = directories
        self.removed_bytes = removed_bytes
        self.kept = kept
        self.kept_bytes = kept_bytes
        self.foreign = foreign
        self.kept_examples = [] if kept_examples is FACTORY else kept_examples
        self.errors = [] if errors is FACTORY else errors
        self.kept_places = kept_places


def _starts_with(path: str, magic: bytes) -> bool:
    try:
        return _read_regular(Path(path), MAX_ENTRY_BYTES, prefix=len(magic)) == magic
    except OSError:
        return False


def _keep(rep: ClearReport, path: str, st: os.stat_result) -> None:
    """Count a foreign thing (a directory: everything under it, never following a link)."""
    rep.kept_places += 1
    if len(rep.kept_examples) < 5:
        rep.kept_examples.append(path)
    if not stat.S_ISDIR(st.st_mode):
        rep.kept += 1
        rep.kept_bytes += st.st_size
        return
    for top, dirs, files in os.walk(path, followlinks=False):
        for name in files + [d for d in dirs if os.path.islink(os.path.join(top, d))]:
            try:
                rep.kept_bytes += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                pass
            rep.kept += 1


def _clear_files(rep: ClearReport, d: str, entry: "re.Pattern[str]", magic: bytes, only: Optional[Set[str]] = None,
                 tmp: "re.Pattern[str]" = _TMP):
    """Remove entries named like ``entry`` that start with ``magic``, and temporary files (named like
    ``tmp``), from ``d``; keep the rest. ``only``: names to look at (the others are not this call's business)."""
    kept, me = False, cache_trust.me()
    with os.scandir(d) as it:
        items = [e for e in it if only is None or e.name in only]
    for e in items:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        named = stat.S_ISREG(st.st_mode) and (
            tmp.fullmatch(e.name) or (entry.fullmatch(e.name) and _starts_with(e.path, magic)))
        if not named or st.st_uid != me:  # another user's file is theirs, whatever its name
            kept = True
            rep.foreign += bool(named)
            _keep(rep, e.path, st)
            continue
        try:
            os.unlink(e.path)
        except FileNotFoundError:
            continue
        except OSError as err:
            kept = True
            rep.errors.append(f"{e.path}: {err}")
            continue
        rep.removed_bytes += st.st_size
        if e.name.endswith(".tmp"):
            rep.temporaries += 1
        else:
            rep.entries += 1
    return kept


def rtx_stub(root: Path, data: bytes) -> Path:
    """Where the TensorRT-RTX name stub ``data`` (``trt_kernels.plugins.rtx_lib``) lies in the cache ``root``."""
    return root / "rtx" / f"libtensorrt_rtx-alias-{hashlib.sha256(data).hexdigest()[:16]}.so"


def clear(root: Path) -> ClearReport:
    """Remove what this package wrote under the cache directory ``root`` and nothing else.

    Ours: ``<64 hex>/sm_XY.bin`` entries starting with the NVRTC magic, ``triton/<64 hex>.bin``
    entries starting with the Triton magic, ``<64 hex>.bin`` at the top starting with the NVRTC
    magic (format 1), ``autotune/<64 hex>.bin`` records starting with the autotune magic, and temporary
    files ``*.bin.<random>.tmp`` next to them; all regular files,
    whatever the format version after the magic; ``launcher/<64 hex><EXT_SUFFIX>`` shared objects
    (ELF), the TensorRT-RTX name stub ``rtx/libtensorrt_rtx-alias-<16 hex>.so`` (ELF) and their temporary files.
    A program-key directory (and ``triton/``, ``launcher/``, ``autotune/``, ``rtx/``) is removed when that leaves
    it empty. Only what you own is ours: a file or directory of another
    user, whatever its name, is kept (and counted as ``foreign``). Everything else, symbolic links
    included (never followed), is left untouched and counted in the report; ``root`` itself stays.
    """
    rep = ClearReport(root=root)
    try:
        top = [e for e in os.scandir(root)]
    except (FileNotFoundError, NotADirectoryError):
        return rep
    loose = set()
    for e in top:
        try:
            st = e.stat(follow_symlinks=False)
        except OSError:
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        ours = st.st_uid == cache_trust.me()
        if is_dir and ours and (_KEY.fullmatch(e.name) or e.name in ("triton", "launcher", "autotune", "rtx")):
            pattern, magic, tmp = {"triton": (_KEY_BIN, TRITON_MAGIC, _TMP),
                                   "autotune": (_KEY_BIN, AUTOTUNE_MAGIC, _TMP),
                                   "launcher": (_LAUNCHER_SO, ELF_MAGIC, _LAUNCHER_TMP),
                                   "rtx": (_RTX_STUB, ELF_MAGIC, _RTX_TMP)}.get(
                e.name, (_ARCH_BIN, NVRTC_MAGIC, _TMP))
            try:
                kept = _clear_files(rep, e.path, pattern, magic, tmp=tmp)
            except OSError as err:
                rep.errors.append(f"{e.path}: {err}")
                continue
            if not kept:
                try:
                    os.rmdir(e.path)
                    rep.directories += 1
                except OSError:  # written to meanwhile
                    pass
        elif not is_dir and (_KEY_BIN.fullmatch(e.name) or _TMP.fullmatch(e.name)):
            loose.add(e.name)
        else:
            _keep(rep, e.path, st)
    if loose:
        _clear_files(rep, str(root), _KEY_BIN, NVRTC_MAGIC, only=loose)
    return rep


# ---------------- the in-memory memo ----------------


class LRUMemo:
    """A thread-safe map of at most ``maxsize`` items; the least recently used is dropped first.

    Compiled programs found or built by a process, so a second declaration of one program reads
    no disk; bounded, so a process that declares many programs does not keep all of them.
    """

    def __init__(self, maxsize: int = MEMO_ENTRIES):
        self.maxsize = maxsize
        self._items: "OrderedDict[Hashable, object]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable):
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def setdefault(self, key: Hashable, value: V) -> V:
        """The value kept for ``key`` (``value``, unless another thread put one first)."""
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key]  # type: ignore[return-value]
            self._items[key] = value
            while len(self._items) > self.maxsize:
                self._items.popitem(last=False)
            return value

    def items(self) -> List[Tuple[Hashable, object]]:
        """A snapshot, least recently used first."""
        with self._lock:
            return list(self._items.items())

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items

