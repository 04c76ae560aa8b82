"""The registry of declared ops (:class:`~trt_kernels.op.KernelOp` records, by op name), the per-name
locks that serialize declarations, and the hooks the TensorRT side registers through."""

from __future__ import annotations

import contextlib
import threading
from typing import Callable, Dict, List, Optional

from trt_kernels.op import CHECK_ARCH, KernelOp  # noqa: F401 - re-exported: where callers have always found them

_REGISTRY: Dict[str, KernelOp] = {}
_REG_LOCK = threading.RLock()
_listeners: List[Callable[[KernelOp], None]] = []
_checkers: List[Callable[[KernelOp, Optional[KernelOp]], None]] = []  # before a (re-)declaration takes effect
_removers: List[Callable[[KernelOp], None]] = []  # after an op is unregistered

# Declarations and unregistering of one name are serialized (threads declaring the same name would
# otherwise race on torch's registration); different names proceed in parallel. A fixed set of
# locks, picked by the name's hash, so the locks do not grow with the names ever declared.
_NAME_LOCKS = tuple(threading.RLock() for _ in range(64))


def name_lock(op_name: str) -> threading.RLock:
    """The lock serializing declarations and unregistering of ``op_name``."""
    return _NAME_LOCKS[hash(op_name) % len(_NAME_LOCKS)]


_DEFER = threading.local()


@contextlib.contextmanager
def deferred_compile():
    """Declarations made in this thread inside the block compile nothing (the first launch, or the
    caller, compiles): for tools that import a user's module and then compile and report each op
    themselves (``trt-kernels inspect`` / ``compile``), so one op's error does not stop the import."""
    old = getattr(_DEFER, "on", False)
    _DEFER.on = True
    try:
        yield
    finally:
        _DEFER.on = old


def compile_deferred() -> bool:
    return getattr(_DEFER, "on", False)


def get(op_name: str) -> KernelOp:
    try:
        return _REGISTRY[op_name]
    except KeyError:
        raise KeyError(f"{op_name!r} was not registered with trt_kernels (registered: {sorted(_REGISTRY)})") from None


def all_ops() -> List[KernelOp]:
    with _REG_LOCK:
        return list(_REGISTRY.values())


def add(kop: KernelOp) -> None:
    with _REG_LOCK:
        _REGISTRY[kop.op_name] = kop
        listeners = list(_listeners)
    for fn in listeners:
        fn(kop)


def remove(op_name: str) -> Optional[KernelOp]:
    with _REG_LOCK:
        kop = _REGISTRY.pop(op_name, None)
        removers = list(_removers)
    if kop is not None:
        for fn in removers:
            fn(kop)
    return kop


def lookup(op_name: str) -> Optional[KernelOp]:
    """The op declared under ``op_name``, or None."""
    with _REG_LOCK:
        return _REGISTRY.get(op_name)


def check_declaration(kop: KernelOp, old: Optional[KernelOp]) -> None:
    """Ask every checker (the TensorRT side) whether ``kop`` may replace ``old``; they raise
    :class:`SpecError` before anything of ``old`` is touched."""
    with _REG_LOCK:
        checkers = list(_checkers)
    for fn in checkers:
        fn(kop, old)


def on_check(fn: Callable[[KernelOp, Optional[KernelOp]], None]) -> None:
    """Call ``fn(new, old)`` before every later declaration takes effect (it may refuse it)."""
    with _REG_LOCK:
        if fn not in _checkers:
            _checkers.append(fn)


def on_remove(fn: Callable[[KernelOp], None]) -> None:
    """Call ``fn(kop)`` after every later unregistering of an op."""
    with _REG_LOCK:
        if fn not in _removers:
            _removers.append(fn)


def on_register(fn: Callable[[KernelOp], None]) -> None:
    """Call ``fn(kop)`` for every op registered so far and every op registered later (a listener is kept
    once however often it is given; each call hands it the ops registered so far)."""
    with _REG_LOCK:
        if fn not in _listeners:
            _listeners.append(fn)
        existing = list(_REGISTRY.values())
    for kop in existing:
        fn(kop)
