"""Which function the eager fast path launches kernels with: the compiled launcher, or cuda.bindings.

The compiled launcher is a small C extension module written for this package
(``trt_kernels/eager/_claunch.c``: Python's C API only, no CUDA or torch headers) that converts the
kernel's parameters on the stack and calls the driver's ``cuLaunchKernel``. It replaces the
call through cuda.bindings, most of whose cost per launch is converting its arguments.

It is built on the first eager launch of the process (never at ``import trt_kernels`` or when
an op is declared) with the system C compiler (``$CC``, else sysconfig's ``CC``, else ``gcc``,
``clang`` or ``cc``) and Python's headers, and kept in the disk cache::

    <cache>/launcher/<key: 64 hex><EXT_SUFFIX>     key = SHA-256(source, Python ABI, platform)

(written atomically, so processes building the same key at once are safe; a later process
loads it without running a compiler). Where no compiler or no ``Python.h`` is found, or the
build or the load fails, launches go through cuda.bindings as before: one warning is logged
once, and ``trt-kernels doctor`` and ``trt-kernels status`` say which launcher is in use and
why (:func:`describe`). Tests compare the two: :func:`use` / :func:`using` choose the launcher
of the (dtype, ranks) launchers built from then on.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from trt_kernels._record import Frozen, plain_record
from trt_kernels.eager import build

_LOG = logging.getLogger("trt_kernels")

SOURCE = Path(__file__).with_name("_claunch.c")
MODULE = "_claunch"  # the C file's PyInit__claunch
ABI = 2  # the C file's TRTK_LAUNCHER_ABI: a module reporting another is not used
KINDS = ("auto", "compiled", "python")
CUDA_VERSION_ASKED = 12000  # the cuLaunchKernel ABI asked of cuGetProcAddress (unchanged since CUDA 4.0)


@plain_record
class Launcher(Frozen):
    """The outcome of preparing the compiled launcher: ``kind`` is ``"compiled"`` (``launch`` is the
    C function) or ``"python"`` (cuda.bindings' ``cuLaunchKernel``); ``reason`` says why."""

    kind: str
    reason: str
    path: Optional[str] = None
    launch: Optional[Callable[..., int]] = None
    max_params: int = 0
    module: Any = None

    def __init__(self, kind: str, reason: str, path: Optional[str] = None, launch: Optional[Callable[..., int]] = None,
                 max_params: int = 0, module: Any = None) -> None:
        self.__dict__.update(kind=kind, reason=reason, path=path, launch=launch, max_params=max_params, module=module)


_LOCK = threading.Lock()
_prepared: Optional[Launcher] = None
_preference = "auto"


# ---------------- choosing ----------------


def use(kind: str) -> str:
    """Choose the launcher of the launchers built from now on (an op's launcher for a (dtype, ranks)
    is built at its first call): ``"auto"`` (the compiled one where it can be had, the default),
    ``"compiled"`` (it or a :class:`~trt_kernels.LaunchError` naming why not) or ``"python"``
    (cuda.bindings). Returns the previous choice; :func:`using` restores it for you."""
    global _preference
    if kind not in KINDS:
        from trt_kernels.errors import InputError

        raise InputError(f"trt_kernels.eager.compiled_launcher.use: {kind!r} is not a launcher. "
                         f"Fix: pass one of {', '.join(KINDS)}")
    with _LOCK:
        prev, _preference = _preference, kind
    return prev


@contextlib.contextmanager
def using(kind: str) -> Iterator[None]:
    """``with using("python"): ...``: :func:`use` for the block, the previous choice after it."""
    prev = use(kind)
    try:
        yield
    finally:
        use(prev)


def preference() -> str:
    return _preference


def for_new_launcher(n_params: int) -> Optional[Launcher]:
    """The compiled launcher for a launcher about to be built, or None for cuda.bindings' (chosen
    with :func:`use`; prepared on the first call of the process)."""
    pref = _preference
    if pref == "python":
        return None
    lau = prepare()
    if lau.kind == "compiled" and n_params <= lau.max_params:
        return lau
    if pref == "compiled":
        from trt_kernels.errors import LaunchError

        why = lau.reason if lau.kind != "compiled" else (f"the kernel has {n_params} parameters, more than the "
                                                         f"{lau.max_params} it takes")
        raise LaunchError("the compiled eager launcher was asked for "
                          f"(trt_kernels.eager.compiled_launcher.use('compiled')) but cannot be used: {why}")
    return None


def describe() -> Dict[str, str]:
    """``{"launcher": "compiled" | "python", "reason": ...}``: what this process launches with (or,
    before its first eager launch, will), without building or loading anything (``status``)."""
    if _preference == "python":
        return {"launcher": "python", "reason": "chosen with trt_kernels.eager.compiled_launcher.use('python')"}
    lau = _prepared
    if lau is not None:
        return {"launcher": lau.kind, "reason": lau.reason}
    from trt_kernels.cache_store import cache_root, problem

    root = cache_root()
    try:
        path = module_path(root) if root is not None else None
    except OSError as e:
        return {"launcher": "python", "reason": f"the launcher's source {SOURCE} cannot be read ({e})"}
    untrusted = problem(path) if path is not None and path.is_file() else None
    if path is not None and path.is_file() and untrusted is None:
        return {"launcher": "compiled", "reason": f"in the cache ({path}); loaded at the first eager launch"}
    cc, origin = find_compiler()
    if cc is None:
        return {"launcher": "python", "reason": origin}
    _, missing = python_includes()
    if missing:
        return {"launcher": "python", "reason": missing}
    return {"launcher": "compiled", "reason": f"built with {origin} at the first eager launch"
            + ("" if root is not None else " (not cached: TRT_KERNELS_CACHE=0)")
            + (f" into a private directory (the cached one is not trusted: {untrusted})" if untrusted else "")}


# ---------------- preparing (once per process) ----------------


def prepare() -> Launcher:
    """Build or load the compiled launcher and bind it to the driver, once per process (never
    raises: a failure is the cuda.bindings launcher with the reason, logged once)."""
    global _prepared
    lau = _prepared
    if lau is not None:
        return lau
    with _LOCK:
        if _prepared is None:
            from trt_kernels.cache_store import cache_root

            lau = load(cache_root())
            if lau.kind == "compiled":
                lau = bind(lau)
            if lau.kind != "compiled":
                _LOG.warning("trt_kernels: eager launches go through cuda.bindings' cuLaunchKernel, not the compiled "
                             "launcher: %s (said once; `trt-kernels doctor` shows it)", lau.reason)
            _prepared = lau
        return _prepared


def bind(lau: Launcher) -> Launcher:
    """Hand the driver's ``cuLaunchKernel`` to a loaded module (the python launcher, with the
    reason, where the driver cannot give it)."""
    try:
        addr = driver_entry()
    except Exception as e:  # noqa: BLE001 - no driver, or an old cuda-bindings
        return Launcher("python", f"the driver's cuLaunchKernel could not be resolved ({type(e).__name__}: {e})",
                        lau.path)
    lau.module.set_entry(addr)
    return lau


def driver_entry() -> int:
    """The address of the driver's ``cuLaunchKernel`` that cuda.bindings would call: through its
    ``cuGetProcAddress`` (the driver library the process uses), for the legacy default stream,
    or the per-thread one where ``CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM`` asks cuda.bindings for it."""
    from trt_kernels.eager.driver import driver, ensure_driver, error_text

    ensure_driver()
    cu = driver()
    flags = cu.CUdriverProcAddress_flags
    try:
        ptds = int(os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0") or 0) != 0
    except ValueError:
        ptds = False
    flag = flags.CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM if ptds else flags.CU_GET_PROC_ADDRESS_LEGACY_STREAM
    res = cu.cuGetProcAddress(b"cuLaunchKernel", CUDA_VERSION_ASKED, flag)
    if int(res[0]) != 0:
        raise RuntimeError(f"cuGetProcAddress(cuLaunchKernel) failed: {error_text(res[0])}")
    addr = int(res[1])
    if not addr:
        raise RuntimeError("cuGetProcAddress(cuLaunchKernel) gave a NULL pointer")
    return addr


# ---------------- building and loading (no process state) ----------------


def source_bytes() -> bytes:
    return SOURCE.read_bytes()


def abi_tag() -> Tuple[str, str, str]:
    """The Python ABI and platform a built module depends on (see :func:`trt_kernels.eager.build.abi_tag`)."""
    return build.abi_tag()


def cache_key(source: Optional[bytes] = None) -> str:
    import hashlib

    h = hashlib.sha256()
    h.update(b"trt_kernels compiled launcher\0")
    h.update(source if source is not None else source_bytes())
    for part in abi_tag():
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def module_path(root: Path, source: Optional[bytes] = None) -> Path:
    return root / "launcher" / f"{cache_key(source)}{abi_tag()[1]}"


def find_compiler() -> Tuple[Optional[List[str]], str]:
    """``(argv of the C compiler, where it came from)``; ``(None, why)`` where none is found.
    ``$CC`` wins (and only it is tried when set), then sysconfig's ``CC``, then gcc, clang, cc."""
    return build.find_compiler("CC", ("gcc", "clang", "cc"), "C")


def python_includes() -> Tuple[List[str], Optional[str]]:
    """``([include dirs], None)``, or ``([], why)`` where ``Python.h`` is missing."""
    return build.python_includes()


def compile_module(out: Path, source: bytes) -> Tuple[bool, str]:
    """Compile ``source`` into the shared object ``out``: ``(True, how)`` or ``(False, why)``."""
    cc, origin = find_compiler()
    if cc is None:
        return False, origin
    includes, missing = python_includes()
    if missing:
        return False, missing
    return build.run_compiler(cc, origin, "C", source, "_claunch.c",
                               ["-shared", "-fPIC", "-O2", *[f"-I{d}" for d in includes]], out)


def import_module(path: Path):
    """Load the extension module at ``path`` (not entered in ``sys.modules``)."""
    mod = build.import_extension(path, f"trt_kernels.{MODULE}")
    if getattr(mod, "ABI", None) != ABI or not callable(getattr(mod, "launch", None)):
        raise ImportError(f"{path} is not this trt-kernels' launcher (ABI {getattr(mod, 'ABI', None)}, expected {ABI})")
    return mod


def _loaded(mod, path: Path, how: str) -> Launcher:
    return Launcher("compiled", how, str(path), mod.launch, int(mod.MAX_PARAMS), mod)


def load(root: Optional[Path]) -> Launcher:
    """The compiled launcher from the cache under ``root`` (built into it first where absent), not
    yet bound to the driver; or the python launcher with the reason. ``root`` None (cache off):
    built into a temporary directory, loaded, removed."""
    try:
        source = source_bytes()
    except OSError as e:
        return Launcher("python", f"the launcher's source {SOURCE} cannot be read ({e})")
    if root is None:
        return _load_uncached(source, "the disk cache is off (TRT_KERNELS_CACHE=0)")
    path = module_path(root, source)
    mod, ok, how, path = build.load_or_build(path, source, compile_module, import_module, "compiled launcher", _LOG)
    if ok is None:
        return _load_uncached(source, how)
    return _loaded(mod, path, how) if mod is not None else Launcher("python", how)


def _load_uncached(source: bytes, why: str) -> Launcher:
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="trt_kernels_launcher_")
    try:
        path = Path(tmp) / f"{MODULE}{abi_tag()[1]}"
        ok, how = compile_module(path, source)
        if not ok:
            return Launcher("python", how)
        try:
            lau = _loaded(import_module(path), path, f"built with {how}, not cached: {why}")
            return Launcher(lau.kind, lau.reason, None, lau.launch, lau.max_params, lau.module)
        except Exception as e:  # noqa: BLE001
            return Launcher("python", f"the compiled launcher was built but does not load ({type(e).__name__}: {e})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # a loaded shared object stays mapped


__all__ = ("use", "using", "describe", "prepare", "Launcher")
