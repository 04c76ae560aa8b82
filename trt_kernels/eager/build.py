"""Building this package's two extension modules (the compiled launcher, C; the native kernel, C++):
finding the compiler, running it, writing the result into the cache atomically, loading it.

No process state: :mod:`trt_kernels.eager.compiled_launcher` and :mod:`trt_kernels.eager.native` decide what to build
and keep what they loaded; :mod:`trt_kernels.cache_trust` decides what in the cache may be loaded.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence, Tuple

BUILD_TIMEOUT_S = 300


@functools.lru_cache(maxsize=1)
def abi_tag() -> Tuple[str, str, str]:
    """What a built module depends on besides its source: the interpreter's cache tag and extension
    suffix (which carry the Python ABI) and the platform. (The suffix is the import system's, the
    platform ``sys.platform`` and the machine: reading sysconfig's instead cost a first declaration
    1.5 ms on the GPU machine, where nothing had loaded sysconfig's data yet.)"""
    import importlib.machinery

    suffixes = importlib.machinery.EXTENSION_SUFFIXES
    return (str(sys.implementation.cache_tag), suffixes[0] if suffixes else ".so",
            f"{sys.platform}-{os.uname().machine if hasattr(os, 'uname') else 'unknown'}")


def find_compiler(env_var: str, names: Sequence[str], kind: str) -> Tuple[Optional[List[str]], str]:
    """``(argv of the compiler, where it came from)``; ``(None, why)`` where none is found. ``$env_var``
    (``CC`` / ``CXX``) wins, and only it is tried when set; then sysconfig's variable of that name, then
    ``names`` on PATH."""
    import shlex
    import shutil
    import sysconfig

    env = os.environ.get(env_var, "").strip()
    if env:
        try:
            argv = shlex.split(env)
        except ValueError as e:
            return None, f"${env_var}={env!r} does not parse ({e})"
        if argv and shutil.which(argv[0]):
            return [shutil.which(argv[0]) or argv[0]] + argv[1:], f"${env_var}={env}"
        return None, f"the {kind} compiler ${env_var}={env!r} was not found"
    tried = []
    cfg = str(sysconfig.get_config_var(env_var) or "").strip()
    if cfg:
        try:
            argv = shlex.split(cfg)
        except ValueError:
            argv = []
        if argv and shutil.which(argv[0]):
            return [shutil.which(argv[0]) or argv[0]] + argv[1:], f"sysconfig {env_var}={cfg}"
        tried.append(f"sysconfig's {cfg!r}")
    for name in names:
        path = shutil.which(name)
        if path:
            return [path], name
    tried.append(f"{', '.join(names)} on PATH")
    return None, f"no {kind} compiler found (tried {', '.join(tried)}); set {env_var} or install {names[0]}"


def python_includes() -> Tuple[List[str], Optional[str]]:
    """``([include dirs], None)``, or ``([], why)`` where ``Python.h`` is missing."""
    import sysconfig

    scheme = sysconfig.get_default_scheme() if hasattr(sysconfig, "get_default_scheme") else None
    if scheme == "posix_local":  # Debian's scheme: the headers are under posix_prefix's paths
        scheme = "posix_prefix"
    paths = sysconfig.get_paths(scheme=scheme) if scheme else sysconfig.get_paths()
    dirs = []
    for key in ("include", "platinclude"):
        d = paths.get(key)
        if d and d not in dirs:
            dirs.append(d)
    if not any(os.path.isfile(os.path.join(d, "Python.h")) for d in dirs):
        v = f"{sys.version_info[0]}.{sys.version_info[1]}"
        return [], (f"Python.h not found in {', '.join(dirs) or 'sysconfig include paths'}: Python's development "
                    f"headers are not installed (e.g. apt install python{v}-dev, or dnf install python{v}-devel)")
    return dirs, None


def run_compiler(cc: List[str], origin: str, kind: str, source: bytes, src_name: str, flags: Sequence[str],
                 out: Path) -> Tuple[bool, str]:
    """Compile ``source`` (written as ``src_name`` in a temporary directory) into the shared object
    ``out``: ``cc + flags + [src, -o, out]``. ``(True, origin)`` or ``(False, why)``."""
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory(prefix="trt_kernels_build_") as tmp:
        src = os.path.join(tmp, src_name)
        with open(src, "wb") as f:
            f.write(source)
        argv = cc + list(flags) + [src, "-o", str(out)]
        try:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S, cwd=tmp,
                               stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            return False, f"the {kind} compiler ({origin}) could not be run: {type(e).__name__}: {e}"
    if r.returncode != 0:
        tail = " | ".join(ln.strip() for ln in (r.stderr or r.stdout or "").strip().splitlines()[-4:])
        return False, f"the {kind} compiler ({origin}) failed with exit status {r.returncode}: {tail}"
    return True, origin


def build_into(path: Path, source: bytes, compile_module: Callable[[Path, bytes], Tuple[bool, str]]
               ) -> Tuple[Optional[bool], str]:
    """Build ``source`` into the cache file ``path``: compiled into a temporary file next to it, then
    renamed (atomic: processes building the same key at once write the same bytes). ``(True, how)``,
    ``(False, why)`` where the build failed, ``(None, why)`` where the cache directory cannot be written."""
    import tempfile

    from trt_kernels.cache_store import make_private_dirs

    try:
        make_private_dirs(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        os.close(fd)
    except OSError as e:
        return None, f"the cache directory {path.parent} cannot be written ({e})"
    try:
        ok, how = compile_module(Path(tmp), source)
        if ok:
            os.chmod(tmp, 0o700)  # the compiler wrote it with the umask's mode: private to you, as entries are
            os.replace(tmp, path)
        return ok, how
    finally:
        if os.path.exists(tmp):
            try:
                os.unlink(tmp)
            except OSError:
                pass


def import_extension(path: Path, name: str):
    """Load the extension module at ``path`` as ``name`` (not entered in ``sys.modules``)."""
    import importlib.machinery
    import importlib.util

    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    if spec is None:
        raise ImportError(f"no import spec for {path}")
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def load_or_build(path: Path, source: bytes, compile_module: Callable[[Path, bytes], Tuple[bool, str]],
                  import_module: Callable[[Path], Any], what: str, log) -> Tuple[Any, Optional[bool], str, Path]:
    """The module cached at ``path`` (``what`` names it in messages), built into it first where absent or
    unloadable: ``(module, True, how, where)``; or ``(None, False, why, where)`` where it cannot be had,
    ``(None, None, why, where)`` where the cache directory cannot be written (the caller may build
    elsewhere). ``where`` is the file the module is (or would be) loaded from.

    A module at ``path`` that fails :mod:`~trt_kernels.cache_trust`'s rule (another user's file, or one in a
    directory others can write) is never loaded: the module is built into this process's private directory
    instead, said once with the path, the owner and the fix."""
    from trt_kernels import cache_trust
    from trt_kernels.cache_store import problem

    prob = problem(path)
    if prob is not None:
        private = cache_trust.private_dir()
        cache_trust.say_once(f"module:{path}", log, "trt_kernels: not loading the cached %s %s: %s; building it "
                             "into %s for this process instead. Fix: %s", what, path, prob,
                             private or "a temporary directory", prob.fix)
        if private is None:
            return None, None, f"the cached {what} {path} is not trusted ({prob})", path
        path = private / path.parent.name / path.name
    if path.is_file():
        try:
            return import_module(path), True, f"loaded from the cache ({path})", path
        except Exception as e:  # noqa: BLE001 - damaged or foreign: rebuilt below
            log.warning("trt_kernels: the cached %s %s cannot be loaded (%s); rebuilding it", what, path, e)
    ok, how = build_into(path, source, compile_module)
    if not ok:
        return None, ok, how, path
    try:
        return import_module(path), True, f"built with {how} into the cache ({path})", path
    except Exception as e:  # noqa: BLE001
        return None, False, f"the {what} {path} was built but does not load ({type(e).__name__}: {e})", path
