"""Who may write the disk cache: the rule that decides whether this process trusts what it finds there.

Everything in the cache is executed: PTX and CUBIN are launched on the GPU, and shared objects (the
compiled launcher, the native kernel, the TensorRT-RTX name stub) are loaded into the process. Their
names follow from public facts (the source, the ABI, the platform), so a cache that another local user
can write lets them run code as you. This module holds the rule, as OpenSSH's ``StrictModes`` holds it for key files:

- every directory **above** the cache root is owned by you or root, and writable by group or others
  only with the sticky bit (as ``/tmp`` is);
- the cache **root and every directory from it to an entry** are owned by you or root and not writable
  by group or others;
- the **entry** itself is owned by you and not writable by group or others;
- a **symbolic link** on the way is owned by you or root, and the directories it leads to pass the
  same rule.

A path not there yet passes: this package creates what it needs, 0700 (entries 0600, modules 0700).

Where the cache root fails the rule, the process reads and writes :func:`private_dir` instead (made
0700 in the system's temporary directory, removed at exit) and says so once, with the path, the owner
and the fix; an entry or module that fails it is not read or loaded, and is rebuilt privately.

A team may share compiled kernels **read-only** on purpose: ``TRT_KERNELS_SHARED_CACHE_DIR`` names a
directory whose NVRTC and Triton entries (never shared objects) are read after your own cache misses.
Naming it trusts its owner: its directories and entries must be owned by that owner (or root) and not
writable by group or others, above it the rule above. It is never written.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Tuple

from trt_kernels._record import Frozen, plain_record

SHARED_ENV = "TRT_KERNELS_SHARED_CACHE_DIR"
#: Symbolic links followed on one path before it is refused (the kernel's own limit is 40).
MAX_LINKS = 40
_WRITABLE = stat.S_IWGRP | stat.S_IWOTH


@plain_record
class Problem(Frozen):
    """Why a path in the cache is not trusted: ``path`` (the file, directory or link that fails the
    rule), ``what`` (``"owner"``, ``"mode"``, ``"links"``), ``why`` (a sentence) and ``fix``."""

    path: str
    what: str
    why: str
    fix: str

    def __init__(self, path: str, what: str, why: str, fix: str) -> None:
        self.__dict__.update(path=path, what=what, why=why, fix=fix)

    def __str__(self) -> str:
        return f"{self.path} {self.why}"


def me() -> int:
    """The user this process acts as (its effective uid)."""
    return os.geteuid()


def who(uid: int) -> str:
    """``uid 1000 (alice)``, or ``uid 1000`` where the name cannot be had."""
    try:
        import pwd

        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def _writers(mode: int) -> str:
    return " and ".join(w for bit, w in ((stat.S_IWGRP, "its group"), (stat.S_IWOTH, "all users")) if mode & bit)


def _owner_problem(path: str, uid: int, kind: str) -> Problem:
    return Problem(path, "owner", f"({kind}) is owned by {who(uid)}, not by you ({who(me())}) or root",
                   f"set TRT_KERNELS_CACHE_DIR to a directory only you can write (the default ~/.cache/trt_kernels "
                   f"is one), and remove {path} if nobody should have put it there")


def _dir_problem(path: str, st: os.stat_result, strict: bool, owners: FrozenSet[int]) -> Optional[Problem]:
    if st.st_uid not in owners:
        return _owner_problem(path, st.st_uid, "a directory")
    if st.st_mode & _WRITABLE and (strict or not st.st_mode & stat.S_ISVTX):
        mode = oct(stat.S_IMODE(st.st_mode))
        fix = (f"chmod go-w {path}" if st.st_uid == me() else
               "set TRT_KERNELS_CACHE_DIR to a directory only you can write (the default ~/.cache/trt_kernels is "
               "one)")
        return Problem(path, "mode", f"(a directory, mode {mode}) is writable by {_writers(st.st_mode)}"
                       + ("" if strict else " without the sticky bit"), fix)
    return None


def file_problem(path: str, st: os.stat_result, owner: Optional[int] = None) -> Optional[Problem]:
    """Why the cache file ``path`` (its ``lstat``/``fstat`` result ``st``) is not to be trusted: it must be
    owned by ``owner`` (default: you; a uid: the shared cache's owner) and not writable by group or others."""
    mine = me() if owner is None else owner
    if st.st_uid != mine:
        whose = f"you ({who(mine)})" if mine == me() else f"the shared cache's owner ({who(mine)})"
        return _shared(Problem(path, "owner", f"is owned by {who(st.st_uid)}, not by {whose}",
                               f"remove {path} if nobody should have put it there (`trt-kernels cache clear` leaves "
                               "what another user wrote)"), owner)
    if st.st_mode & _WRITABLE:
        return _shared(Problem(path, "mode", f"(mode {oct(stat.S_IMODE(st.st_mode))}) is writable by "
                               f"{_writers(st.st_mode)}", f"chmod go-w {path}"), owner)
    return None


def _shared(prob: Optional[Problem], owner: Optional[int]) -> Optional[Problem]:
    """``prob`` as said of the shared read-only cache (``owner``: its owner's uid; None: your own cache, ``prob``
    as it is): what its owner can do, or stop reading it (your own cache's fixes, such as setting
    ``TRT_KERNELS_CACHE_DIR``, do not apply to it)."""
    if prob is None or owner is None:
        return prob
    act = {"mode": f"chmod go-w {prob.path}", "owner": f"remove {prob.path} if nobody should have put it there"}.get(
        prob.what, f"make {prob.path} a plain directory")
    return Problem(prob.path, prob.what, prob.why, f"the shared cache's owner ({who(owner)}) can {act}; or unset "
                   f"{SHARED_ENV} to stop reading it")


def dir_problem(path: Path, root: Path, owner: Optional[int] = None) -> Optional[Problem]:
    """Why the directory ``path`` (the cache root ``root`` or a directory in it) is not to be trusted:
    the directories above ``root`` by the lenient rule (sticky bit allowed), ``root`` and those below
    it by the strict one, following symbolic links. ``owner``: whose cache it is (default: you; a
    shared cache's owner). Components that do not exist yet pass.

    A directory that passes is not judged again in the process (:func:`forget` drops the verdicts): only
    you or root can change or replace a directory that passes and whose parents pass, so a warm lookup
    costs a dictionary look-up here (the entry's own ``fstat`` is :func:`file_problem`'s)."""
    uid = me()
    owners = _OWNERS.get((uid, owner))
    if owners is None:
        owners = _OWNERS.setdefault((uid, owner), frozenset((uid, 0) if owner is None else (uid, 0, owner)))
    key = (os.fspath(path), os.fspath(root), owners)
    if key in _PASSED:
        return None
    prob, real = _root_verdict(root, owners)
    if prob is not None or real is None:
        return _shared(prob, owner)
    prob, real = _walk(real, _below(path, root), 0, owners, [0])
    if prob is None and real is not None:
        _PASSED.add(key)
    return _shared(prob, owner)


def _below(path: Path, root: Path) -> Tuple[str, ...]:
    """The components of ``path`` below ``root`` (string operations: this runs for every entry read)."""
    p, r = os.fspath(path), os.fspath(root).rstrip(os.sep)
    if p != r and not p.startswith(r + os.sep):
        p, r = os.path.abspath(p), os.path.abspath(r).rstrip(os.sep)
        if p != r and not p.startswith(r + os.sep):
            raise ValueError(f"{path} is not under the cache root {root}")
    return tuple(c for c in p[len(r) + 1:].split(os.sep) if c and c != ".")


_OWNERS: Dict[Tuple[int, Optional[int]], FrozenSet[int]] = {}
_ROOTS: Dict[Tuple[str, FrozenSet[int]], Tuple[Optional[Problem], Optional[str]]] = {}
_PASSED: set = set()  # (directory, root, owners) that passed, with every directory up to /


def _root_verdict(root: Path, owners: FrozenSet[int]) -> Tuple[Optional[Problem], Optional[str]]:
    """``(problem, real path of root)`` for the cache root and the directories above it, kept once made
    (real path None where root is not there yet: judged again at the next look)."""
    key = (os.fspath(root), owners)
    hit = _ROOTS.get(key)
    if hit is not None:
        return hit
    parts = Path(os.path.abspath(key[0])).parts
    prob = _dir_problem(parts[0], os.lstat(parts[0]), len(parts) == 1, owners)
    real: Optional[str] = parts[0]
    if prob is None:
        prob, real = _walk(parts[0], parts[1:], len(parts) - 2, owners, [0])
    if real is not None or prob is not None:
        _ROOTS[key] = (prob, real)
    return prob, real


def _walk(start: str, parts: Tuple[str, ...], strict_from: int, owners: FrozenSet[int], links: list
          ) -> Tuple[Optional[Problem], Optional[str]]:
    """Walk ``parts`` from the real (already checked) directory ``start``, one component at a time,
    following symbolic links (a link's target walked from ``/`` the same way, its last component strict
    where the link is). Components at an index of ``parts`` >= ``strict_from`` get the strict rule.
    ``(problem, real path reached)``; the path is None where a component is not there yet."""
    cur = start
    for i, name in enumerate(parts):
        strict = i >= strict_from
        if name == "..":
            cur = os.path.dirname(cur)  # cur is real: no link left in it
            continue
        nxt = os.path.join(cur, name)
        try:
            st = os.lstat(nxt)
        except OSError:
            return None, None  # not there yet (this package creates it 0700), or unreadable: nothing to trust
        if stat.S_ISLNK(st.st_mode):
            if st.st_uid not in owners:
                return _owner_problem(nxt, st.st_uid, "a symbolic link"), nxt
            links[0] += 1
            if links[0] > MAX_LINKS:
                return Problem(nxt, "links", f"is reached through more than {MAX_LINKS} symbolic links",
                               "set TRT_KERNELS_CACHE_DIR to a plain directory"), nxt
            target = Path(os.path.join(cur, os.readlink(nxt))).parts
            top = target[0]
            prob = _dir_problem(top, os.lstat(top), strict and len(target) == 1, owners)
            if prob is not None:
                return prob, top
            prob, real = _walk(top, target[1:], len(target) - 2 if strict else len(target), owners, links)
            if prob is not None or real is None:
                return prob, real
            cur = real
            continue
        if not stat.S_ISDIR(st.st_mode):
            return None, None  # not a directory: nothing can be read through it (the writer repairs it)
        prob = _dir_problem(nxt, st, strict, owners)
        if prob is not None:
            return prob, nxt
        cur = nxt
    return None, cur


def path_problem(path: Path, root: Path, owner: Optional[int] = None) -> Optional[Problem]:
    """Why the cache file ``path`` under ``root`` is not to be trusted: its directories by
    :func:`dir_problem`, the file itself (if there, never followed) by :func:`file_problem`."""
    prob = dir_problem(path.parent, root, owner)
    if prob is not None:
        return prob
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return Problem(str(path), "link", f"is a symbolic link (to {os.readlink(path)}), not a file this package "
                       "wrote", f"remove {path}")
    return file_problem(str(path), st, owner)


# ---------------- the process's private directory ----------------

_LOCK = threading.Lock()
_PRIVATE: Dict[int, Path] = {}  # pid -> its private directory (a forked child makes its own)
_SAID: set = set()


def private_dir() -> Optional[Path]:
    """This process's private cache directory: made 0700 in the system's temporary directory at its first
    use, removed at exit; None where it cannot be made or does not pass the rule itself."""
    pid = os.getpid()
    d = _PRIVATE.get(pid)
    if d is not None:
        return d
    import tempfile

    with _LOCK:
        d = _PRIVATE.get(pid)
        if d is not None:
            return d
        try:
            d = Path(tempfile.mkdtemp(prefix="trt_kernels-private-"))
        except OSError:
            return None
        if dir_problem(d, d) is not None:
            _remove(pid, d)
            return None
        import atexit

        atexit.register(_remove, pid, d)
        _PRIVATE[pid] = d
        return d


def _remove(pid: int, d: Path) -> None:
    if os.getpid() == pid:  # never from a forked child: the directory is its parent's
        import shutil

        shutil.rmtree(d, ignore_errors=True)  # loaded modules stay mapped


_CHOSEN: Dict[str, Tuple[Optional[Path], Optional[Problem]]] = {}


def choose(root: Path) -> Tuple[Optional[Path], Optional[Problem]]:
    """``(the directory to use, why root was refused)`` for the cache root ``root``: ``(root, None)``
    where it passes the rule, else ``(private_dir(), problem)``. Decided once per root and process:
    every read still checks the root and the entry (:func:`dir_problem`, :func:`file_problem`), so a
    root that stops passing later is read from no more; only the move to the private directory waits
    for the next process."""
    hit = _CHOSEN.get(os.fspath(root))
    if hit is None:
        prob = dir_problem(root, root)
        hit = _CHOSEN.setdefault(os.fspath(root), (root, None) if prob is None else (private_dir(), prob))
    return hit


def say_once(key: str, log, msg: str, *args) -> bool:
    """Log ``msg`` at warning level the first time ``key`` is seen in this process, at debug level after."""
    import logging

    with _LOCK:
        first = key not in _SAID
        _SAID.add(key)
    log.log(logging.WARNING if first else logging.DEBUG, msg, *args)
    return first


def shared_dir() -> Optional[Tuple[Path, int]]:
    """``(the shared read-only cache, its owner's uid)`` where ``TRT_KERNELS_SHARED_CACHE_DIR`` names an
    existing directory; else None."""
    value = os.environ.get(SHARED_ENV)
    if not value or not value.strip():
        return None
    d = Path(value).expanduser()
    try:
        st = os.stat(d)
    except OSError:
        return None
    return (d, st.st_uid) if stat.S_ISDIR(st.st_mode) else None


def forget() -> None:
    """Forget what was said, the verdicts kept on cache roots and the roots chosen, and remove this
    process's private directory (tests: each starts as a fresh process would)."""
    with _LOCK:
        _SAID.clear()
        _ROOTS.clear()
        _PASSED.clear()
        _CHOSEN.clear()
        d = _PRIVATE.pop(os.getpid(), None)
    if d is not None:
        _remove(os.getpid(), d)


__all__ = ("Problem", "dir_problem", "path_problem", "file_problem", "private_dir", "shared_dir", "me", "who")
