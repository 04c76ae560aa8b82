"""The TensorRT side (``trt_kernels.plugins``): a QDP plugin and a Torch-TensorRT converter per op.

This package is where ``tensorrt`` is imported; the core never does. The TensorRT side
is initialised the first time an op is declared (or by :func:`init`): if ``tensorrt``
with a usable QDP layer (TensorRT 10.15+ or 11.x; 10.14.x had a bug that broke QDP
plugins) and ``torch_tensorrt`` import, every op declared so far and every later one
gets a plugin and a converter. Otherwise ops stay eager-only and the reason is logged
once and reported by :func:`tensorrt_status` (and ``trt-kernels status``).
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from typing import Dict, Optional

_LOG = logging.getLogger("trt_kernels")
_LOCK = threading.RLock()
_STATE: Dict[str, str] = {}


def _version_tuple(v: str):
    out = []
    for part in v.split(".")[:3]:
        digits = "".join(ch for ch in part if ch.isdigit())
        out.append(int(digits) if digits else 0)
    return tuple(out)


def qdp_usable(version: str) -> Optional[str]:
    """None if TensorRT ``version`` has a usable QDP AOT layer, else the reason it has not."""
    t = _version_tuple(version)
    if t[:2] == (10, 14):
        return f"TensorRT {version} has a bug that breaks QDP plugins; use 10.15+ or 11.x"
    if t < (10, 15, 0):
        return f"TensorRT {version} is too old for AOT QDP plugins; use 10.15+ or 11.x"
    return None


def _installed(name: str) -> bool:
    if name in sys.modules:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _emulated(trt) -> Optional[str]:
    """trt_kernels.testing's emulator marks its ``tensorrt`` with ``__emulated__``; Torch-TensorRT may
    have put its proxy module (``_target_module``) in front of it. Read both without ``__getattr__``."""
    for m in (trt, getattr(trt, "__dict__", {}).get("_target_module")):
        tag = getattr(m, "__dict__", {}).get("__emulated__")
        if tag:
            return tag
    return None


def _probe():
    """Import tensorrt, tensorrt.plugin and torch_tensorrt; (modules, None) or (None, reason)."""
    for name in ("tensorrt", "torch_tensorrt"):
        if not _installed(name):
            return None, f"{name} is not installed (pip install 'trt-kernels[tensorrt]')"
    try:
        import tensorrt as trt
        import tensorrt.plugin as trtp
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken native install
        return None, f"tensorrt does not import: {type(e).__name__}: {e}"
    reason = qdp_usable(getattr(trt, "__version__", "0"))
    if reason:
        return None, reason
    try:
        import torch_tensorrt
    except Exception as e:  # noqa: BLE001
        return None, f"torch_tensorrt does not import: {type(e).__name__}: {e}"
    features = getattr(torch_tensorrt, "ENABLED_FEATURES", None)
    if features is not None and not getattr(features, "qdp_plugin", True):
        return None, "torch_tensorrt reports ENABLED_FEATURES.qdp_plugin = False"
    return (trt, trtp), None


# op name -> (plugin signature, PluginBuilder, status) of the QDP plugin registered under that name.
# TensorRT's plugin registry cannot replace a plugin, so a re-declaration reuses the registered one
# (its functions read the builder's current declaration) when the signature is the same, and is
# refused before anything changes when it is not.
_PLUGINS: Dict[str, tuple] = {}
_CONVERTED: Dict[str, object] = {}  # op name -> the OpOverload its converter is registered for


def _check_redeclaration(kop, old) -> None:
    from trt_kernels.errors import SpecError

    from .qdp import PluginBuilder

    with _LOCK:
        entry = _PLUGINS.get(kop.op_name)
        if entry is None or "_modules" not in _STATE:
            return
        trt, trtp = _STATE["_modules"]
    new = PluginBuilder(kop, trt, trtp).signature()
    if new != entry[0]:
        raise SpecError(
            f"{kop.op_name}: its TensorRT plugin is already registered in this process with another signature "
            f"({entry[0]} -> {new}), and TensorRT's plugin registry cannot replace a plugin. Fix: keep the inputs, "
            "scalar types, outputs and AOT/JIT mode of the first declaration, use a new op name, or restart the process")


def _forget_op(kop) -> None:
    """An unregistered op: its plugin stays registered in TensorRT (it cannot be removed) but no longer
    holds the declaration; building it raises UnregisteredOpError."""
    with _LOCK:
        entry = _PLUGINS.get(kop.op_name)
        if entry is not None and entry[1].kop_or_none is kop:
            entry[1].kop = None


def _register_op(kop) -> None:
    from trt_kernels.converters import register_converter

    from .qdp import PluginBuilder, register_plugin_builder

    trt, trtp = _STATE["_modules"]
    with _LOCK:
        entry = _PLUGINS.get(kop.op_name)
        if entry is not None and entry[0] == PluginBuilder(kop, trt, trtp).signature():
            entry[1].kop = kop  # the registered plugin serves the new declaration
            kop.trt.update(entry[2])
        elif entry is not None:  # refused by _check_redeclaration unless TensorRT came up in between
            kop.trt["plugin"] = f"failed: the plugin {kop.op_name} is registered with another signature"
            _LOG.warning("trt_kernels: %s: %s", kop.op_name, kop.trt["plugin"])
            return
        else:
            try:
                builder, status = register_plugin_builder(kop, trt, trtp)
            except Exception as e:  # noqa: BLE001 - report per op, keep the eager op usable
                kop.trt["plugin"] = f"failed: {type(e).__name__}: {e}"
                _LOG.warning("trt_kernels: %s: TensorRT plugin registration failed: %s", kop.op_name, e)
                return
            _PLUGINS[kop.op_name] = (builder.signature(), builder, dict(status))
            kop.trt.update(status)
        if _CONVERTED.get(kop.op_name) is kop.overload:
            kop.trt["converter"] = "registered (Torch-TensorRT dynamo)"
            return
    try:
        register_converter(kop)
        with _LOCK:
            _CONVERTED[kop.op_name] = kop.overload
        kop.trt["converter"] = "registered (Torch-TensorRT dynamo)"
    except Exception as e:  # noqa: BLE001
        kop.trt["converter"] = f"failed: {type(e).__name__}: {e}"
        _LOG.warning("trt_kernels: %s: converter registration failed: %s", kop.op_name, e)


def init(force: bool = False) -> bool:
    """Initialise the TensorRT side once; True if plugins and converters are being registered."""
    from trt_kernels import registry

    with _LOCK:
        if _STATE.get("available") == "yes":
            return True
        if _STATE and not force:
            return False
        mods, reason = _probe()
        if mods is None:
            first = "reason" not in _STATE
            _STATE.update(available="no", reason=reason)
            if first:
                _LOG.info("trt_kernels: ops are eager-only: %s", reason)
            return False
        _STATE.update(available="yes", reason="", _modules=mods)
        emulated = _emulated(mods[0])
        if emulated:  # trt_kernels.testing's emulator: say so wherever the state is shown
            _STATE["backend"] = emulated
    registry.on_check(_check_redeclaration)
    registry.on_remove(_forget_op)
    registry.on_register(_register_op)
    return True


def tensorrt_status() -> Dict[str, str]:
    """``{"available": "yes"|"no", "reason": ...}`` for the TensorRT side in this process."""
    with _LOCK:
        if not _STATE:
            mods, reason = _probe()
            if mods is None:
                return {"available": "no", "reason": reason}
            return {"available": "not initialised", "reason": "call trt_kernels.plugins.init() or declare an op"}
        return {k: v for k, v in _STATE.items() if not k.startswith("_")}
