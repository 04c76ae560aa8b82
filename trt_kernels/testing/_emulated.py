"""Real Torch-TensorRT over the emulated libnvinfer, in this process or in a fresh one.

:func:`emulate_tensorrt` makes ``import tensorrt`` give the emulator (NVIDIA's Python package
over :mod:`trt_kernels.testing.trt_emulator`) and ``import torch_tensorrt`` give Torch-TensorRT's
own Python with its native libraries (``torch_tensorrt/lib/*.so``, ``_C*.so``, all linked to
libnvinfer) left out: a copy of the installed package (or of a given wheel) without them, put
first on ``sys.path``. Torch-TensorRT then uses its Python runtime, and
``torch_tensorrt.compile(model, ..., min_block_size=1)`` runs its real lowering, partitioning,
converter registry and interpreter, our converters and plugins, the emulator's builder, and
engines launched by the emulator's runtime. This changes the process for good (as installing
TensorRT would); call it only in processes meant for this, such as a test session or an example.

Needs a CUDA GPU (Torch-TensorRT queries it at import), a torch that Torch-TensorRT's version
pairs with (2.11 for torch 2.11), ``pip install --no-deps torch-tensorrt==<that version> dllist``
and the ``tensorrt-cu13-bindings`` wheel (the ``test`` extra).
"""

import contextlib
import copyreg
import hashlib
import importlib.util
import os
import pathlib
import pickle
import shutil
import sys
import tempfile
import types
import zipfile
from typing import Any, Dict, Iterator, Optional

from . import SHIM_PATH, bootstrap

#: a torch-tensorrt wheel to take Torch-TensorRT's Python from instead of the installed package
WHEEL_VAR = "TRT_KERNELS_TORCH_TENSORRT_WHEEL"
_NATIVE_SUFFIXES = (".so", ".pyd", ".dll", ".dylib")
_NATIVE_DIRS = {"lib", "bin", "include"}


def _pure_copy(files, version_tag: str) -> pathlib.Path:
    """Write ``(relative path, bytes-reader)`` pairs of the pure-Python part into a cached folder."""
    root = pathlib.Path(tempfile.gettempdir()) / f"trt_kernels_pure_torch_tensorrt_{version_tag}"
    marker = root / "torch_tensorrt" / "__init__.py"
    if marker.is_file():
        return root
    tmp = pathlib.Path(tempfile.mkdtemp(prefix=root.name + ".", dir=root.parent))
    for rel, read in files:
        dest = tmp / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(read())
    try:
        os.replace(tmp, root)
    except OSError:  # another process made it first
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def _keep(rel: str) -> bool:
    parts = pathlib.PurePosixPath(rel).parts
    return (len(parts) > 1 and parts[0] == "torch_tensorrt" and parts[1] not in _NATIVE_DIRS
            and not rel.endswith(_NATIVE_SUFFIXES) and ".so." not in rel)


def pure_torch_tensorrt(source: Optional[str] = None) -> pathlib.Path:
    """A folder holding ``torch_tensorrt/`` without its native libraries, from the wheel ``source`` (or
    ``$TRT_KERNELS_TORCH_TENSORRT_WHEEL``) or else from the installed package (found, not imported)."""
    source = source or os.environ.get(WHEEL_VAR)
    if source:
        whl = pathlib.Path(source)
        tag = hashlib.sha256(whl.read_bytes()).hexdigest()[:16]
        with zipfile.ZipFile(whl) as zf:
            names = [n for n in zf.namelist() if not n.endswith("/") and _keep(n)]
            return _pure_copy([(n, (lambda n=n: zf.read(n))) for n in names], tag)
    spec = importlib.util.find_spec("torch_tensorrt")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("torch_tensorrt is not installed: pip install --no-deps torch-tensorrt==<the version "
                          f"that pairs with your torch> dllist (or set {WHEEL_VAR} to its wheel)")
    pkg = pathlib.Path(list(spec.submodule_search_locations)[0])
    files = sorted(p for p in pkg.rglob("*") if p.is_file() and _keep(p.relative_to(pkg.parent).as_posix()))
    digest = hashlib.sha256()
    for p in files:
        st = p.stat()
        digest.update(f"{p.relative_to(pkg.parent)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return _pure_copy([(p.relative_to(pkg.parent), p.read_bytes) for p in files], digest.hexdigest()[:16])


def is_emulated(trt_module=None) -> bool:
    """Whether ``tensorrt`` (the given module, or the one imported in this process) is the emulator.

    Looks through Torch-TensorRT's ``TensorRTProxyModule`` (which takes ``sys.modules["tensorrt"]``
    once ``torch_tensorrt`` is imported) without going through its ``__getattr__``."""
    mod = trt_module if trt_module is not None else sys.modules.get("tensorrt")
    for m in (mod, getattr(mod, "__dict__", {}).get("_target_module")):
        if m is not None and "__emulated__" in getattr(m, "__dict__", {}):
            return True
    return False


def emulation_unavailable_reason() -> Optional[str]:
    """``None`` when :func:`emulate_tensorrt` can work here, else why not."""
    try:
        import torch
    except ImportError:
        return "torch is not installed"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (Torch-TensorRT queries the GPU when it is imported)"
    path, why = bootstrap().find_bindings_dir()
    if path is None:
        return why
    if "tensorrt" in sys.modules and not is_emulated():
        return "a real tensorrt is already imported in this process"
    if "torch_tensorrt" not in sys.modules and not os.environ.get(WHEEL_VAR) \
            and importlib.util.find_spec("torch_tensorrt") is None:
        return ("torch_tensorrt is not installed (pip install --no-deps torch-tensorrt==<the version that pairs "
                f"with torch {torch.__version__.split('+')[0]}> dllist)")
    return None


def emulate_tensorrt(torch_tensorrt_source: Optional[str] = None):
    """Install the emulated ``tensorrt`` and a native-library-free ``torch_tensorrt`` in this process;
    returns ``(tensorrt, torch_tensorrt)``. Declared ops get their plugins and converters now
    (and later ones as they are declared). Refuses where a real ``tensorrt`` is imported."""
    reason = emulation_unavailable_reason()
    if reason is not None:
        raise RuntimeError(f"cannot emulate TensorRT here: {reason}")
    trt = sys.modules.get("tensorrt")
    if trt is None:
        for k in [k for k in sys.modules if k.startswith("tensorrt.")]:
            del sys.modules[k]
        trt = bootstrap().load()
    if "torch_tensorrt" not in sys.modules:
        folder = str(pure_torch_tensorrt(torch_tensorrt_source))
        if folder not in sys.path:
            sys.path.insert(0, folder)
    import torch_tensorrt

    if pathlib.Path(torch_tensorrt.__file__).parent.joinpath("lib", "libtorchtrt.so").exists():
        raise RuntimeError(f"torch_tensorrt was imported from {torch_tensorrt.__file__}, with its native "
                           "libraries; emulate_tensorrt() must run before anything imports torch_tensorrt")
    from trt_kernels.plugins import init

    init(force=True)
    return trt, torch_tensorrt


def fresh_process_env(base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Environment for a new Python process in which ``import tensorrt`` is the emulator and
    ``import torch_tensorrt`` its native-library-free copy, without importing trt_kernels."""
    env = dict(os.environ if base is None else base)
    parts = [SHIM_PATH, str(pure_torch_tensorrt())]
    if env.get("PYTHONPATH"):
        parts.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


@contextlib.contextmanager
def force_tactic(op_name: str, tactic: int) -> Iterator[None]:
    """Builds inside the block choose ``tactic`` for ``op_name``'s plugin instead of timing them
    (the emulator's own knob; real TensorRT picks by timing or from an editable timing cache)."""
    native = sys.modules.get("tensorrt.tensorrt")
    if native is None or not is_emulated():
        raise RuntimeError("force_tactic needs the emulated tensorrt (emulate_tensorrt())")
    table = native._builder.FORCED_TACTICS
    old = table.get(op_name)
    table[op_name] = int(tactic)
    try:
        yield
    finally:
        if old is None:
            table.pop(op_name, None)
        else:
            table[op_name] = old


class _ModulePickler(pickle.Pickler):
    """Pickles a Torch-TensorRT compiled module whose engines run on the Python runtime: the few
    attributes pickle cannot hold (CUDA device properties and streams, which the runtime recreates
    or does not use on its default path, and TensorRT ``Dims``, which it recomputes from the engine
    when unpickled) are stored as ``None`` / lists. Nothing global is changed: the table is this
    pickler's own, and what it writes refers to builtins only, so loading needs no trt_kernels."""

    dispatch_table = copyreg.dispatch_table.copy()


def _pickle_module():
    import torch

    table = _ModulePickler.dispatch_table
    none = (type(None), ())
    table[torch._C._CudaDeviceProperties] = lambda _: none
    table[torch.cuda.Stream] = lambda _: none
    native = sys.modules.get("tensorrt.tensorrt")
    if native is not None and is_emulated():
        table[native.Dims] = lambda d: (list, (list(d),))

    module = types.ModuleType("trt_kernels_compiled_module_pickle")
    module.Pickler, module.Unpickler = _ModulePickler, pickle.Unpickler
    module.dump, module.load, module.loads = pickle.dump, pickle.load, pickle.loads
    return module


def save_compiled(module: Any, path) -> None:
    """Save what ``torch_tensorrt.compile`` returned (engines and all) with ``torch.save``.

    Torch-TensorRT 2.11 cannot export a module whose engines run on its Python runtime
    (``torch_tensorrt.save`` needs its C++ ``execute_engine`` op; see docs/tensorrt.md), so this pickles
    the module itself; :func:`load_compiled` (or ``torch.load(path, weights_only=False)``)
    reloads it, in any process that can import ``torch_tensorrt`` and a ``tensorrt``."""
    import torch

    torch.save(module, path, pickle_module=_pickle_module())


def load_compiled(path) -> Any:
    import torch

    return torch.load(path, weights_only=False)
