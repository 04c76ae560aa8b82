"""The TensorRT side (``trt_kernels.plugins``): a QDP plugin and a Torch-TensorRT converter per op.

This package is where ``tensorrt`` is imported; the core never does. The TensorRT side
is initialised the first time an op is declared (or by :func:`init`): if ``tensorrt``
with a usable QDP layer (TensorRT 10.15 or newer; Torch-TensorRT reports 10.14 broken for
QDP plugins) and ``torch_tensorrt`` import, every op declared so far and every later one
gets a plugin and a converter. Otherwise ops stay eager-only and the reason is logged
once and reported by :func:`tensorrt_status` (and ``trt-kernels status``).

Which TensorRT a user has comes from their Torch-TensorRT, which pins it per release
(:data:`PAIRINGS`): torch 2.11 means Torch-TensorRT 2.11 over TensorRT 10.15.1. Torch-TensorRT
2.11 sets ``ENABLED_FEATURES.qdp_plugin = False`` on TensorRT 10.14/10.15; that flag gates only
its own plugin generators (``custom_op``, ``generate_plugin``, ``generate_plugin_converter``),
which this package does not use: its converters add their layers with ``network.add_plugin``
themselves. So the flag is reported as a note, not taken as "QDP unusable".
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


#: Torch-TensorRT release (major, minor) -> the TensorRT versions it requires (its wheel's
#: Requires-Dist on tensorrt-cu13-bindings/-libs), as (lowest, below); each pins torch to its own minor
PAIRINGS = {(2, 11): ("10.15.1", "10.16"), (2, 12): ("10.16.1", "10.17"), (2, 13): ("11.0.0", "11.1"),
            (2, 14): ("11.1.0", "11.2")}


def pairings_text() -> str:
    """:data:`PAIRINGS` in words: ``torch 2.11 -> TensorRT 10.15.1, 2.12 -> 10.16.1, ...``."""
    items = [f"{'torch ' if i == 0 else ''}{ma}.{mi} -> {'TensorRT ' if i == 0 else ''}{lo}"
             for i, ((ma, mi), (lo, _)) in enumerate(sorted(PAIRINGS.items()))]
    return ", ".join(items)


def qdp_usable(version: str) -> Optional[str]:
    """None if TensorRT ``version`` has a usable QDP AOT layer, else the reason it has not."""
    t = _version_tuple(version)
    fix = f"install the TensorRT your Torch-TensorRT requires ({pairings_text()})"
    if t[:2] == (10, 14):
        return f"TensorRT {version}: Torch-TensorRT reports 10.14 broken for QDP plugins; {fix}"
    if t < (10, 15, 0):
        return f"TensorRT {version} is too old for this package's AOT QDP plugins; {fix}"
    return None


def pairing_problem(trt_version: str, torch_tensorrt_version: str) -> Optional[str]:
    """Why this TensorRT is not the one this Torch-TensorRT requires, or None (also for releases not
    in :data:`PAIRINGS`)."""
    want = PAIRINGS.get(_version_tuple(torch_tensorrt_version)[:2])
    if want is None or not trt_version:
        return None
    lo, below = want
    if _version_tuple(lo) <= _version_tuple(trt_version) < _version_tuple(below):
        return None
    return (f"torch_tensorrt {torch_tensorrt_version} requires TensorRT >={lo},<{below} but TensorRT {trt_version} "
            f"is installed: pip install 'tensorrt-cu13>={lo},<{below}' (or the torch-tensorrt release paired with it)")


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
    return (trt, trtp, torch_tensorrt), None


def _notes(trt, torch_tensorrt) -> str:
    """What a user should know about this TensorRT / Torch-TensorRT pair (not reasons to refuse)."""
    notes = []
    features = getattr(torch_tensorrt, "ENABLED_FEATURES", None)
    if features is not None and not getattr(features, "qdp_plugin", True):
        notes.append("torch_tensorrt reports ENABLED_FEATURES.qdp_plugin = False: its own plugin generators "
                     "(custom_op, generate_plugin) are off; trt_kernels' converters add plugin layers themselves "
                     "and are not affected")
    problem = pairing_problem(getattr(trt, "__version__", ""), getattr(torch_tensorrt, "__version__", ""))
    if problem:
        notes.append(problem)
    return "; ".join(notes)


# op name -> (plugin signature, PluginBuilder, status) of the QDP plugin registered under that name.
# TensorRT's plugin registry cannot replace a plugin, so a re-declaration reuses the registered one
# (its functions read the builder's current declaration) when the signature is the same, and is
# refused before anything changes when it is not.
_PLUGINS: Dict[str, tuple] = {}
_CONVERTED: Dict[str, object] = {}  # op name -> the OpOverload its converter is registered for


def _check_redeclaration(kop, old) -> None:
    from trt_kernels.errors import SpecError
    from trt_kernels.plugins.qdp import PluginBuilder

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
            "scalar types, outputs and AOT/JIT mode of the first declaration, use a new op name, "
            "or restart the process")


def _forget_op(kop) -> None:
    """An unregistered op: its plugin stays registered in TensorRT (it cannot be removed) but no longer
    holds the declaration; building it raises UnregisteredOpError."""
    with _LOCK:
        entry = _PLUGINS.get(kop.op_name)
        if entry is not None and entry[1].kop_or_none is kop:
            entry[1].kop = None


def _register_op(kop) -> None:
    from trt_kernels.converters import register_converter
    from trt_kernels.plugins.qdp import PluginBuilder, attr_field, register_plugin_builder

    trt, trtp = _STATE["_modules"]
    with _LOCK:
        entry = _PLUGINS.get(kop.op_name)
        builder = PluginBuilder(kop, trt, trtp)
        if entry is not None and entry[0] == builder.signature():
            entry[1].kop = kop  # the registered plugin serves the new declaration
            kop.tensorrt.plugin, kop.tensorrt.aot = entry[2].plugin, entry[2].aot
        elif entry is not None:  # refused by _check_redeclaration unless TensorRT came up in between
            kop.tensorrt.plugin = f"failed: the plugin {kop.op_name} is registered with another signature"
            _LOG.warning("trt_kernels: %s: %s", kop.op_name, kop.tensorrt.plugin)
            return
        else:
            why_not = builder.unsupported_outputs()
            if why_not:
                kop.tensorrt.plugin = f"not registered: {why_not}"
                kop.tensorrt.converter = "not registered (no plugin)"
                _LOG.info("trt_kernels: %s: no TensorRT plugin: %s", kop.op_name, why_not)
                return
            try:
                builder, status = register_plugin_builder(kop, trt, trtp, builder)
            except Exception as e:  # noqa: BLE001 - report per op, keep the eager op usable
                kop.tensorrt.plugin = f"failed: {type(e).__name__}: {e}"
                _LOG.warning("trt_kernels: %s: TensorRT plugin registration failed: %s", kop.op_name, e)
                return
            _PLUGINS[kop.op_name] = (builder.signature(), builder, status)
            kop.tensorrt.plugin, kop.tensorrt.aot = status.plugin, status.aot
        if _CONVERTED.get(kop.op_name) is kop.overload:
            kop.tensorrt.converter = "registered (Torch-TensorRT dynamo)"
            return
    try:
        register_converter(kop, attr_field)
        with _LOCK:
            _CONVERTED[kop.op_name] = kop.overload
        kop.tensorrt.converter = "registered (Torch-TensorRT dynamo)"
    except Exception as e:  # noqa: BLE001
        kop.tensorrt.converter = f"failed: {type(e).__name__}: {e}"
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
        _STATE.update(available="yes", reason="", _modules=mods[:2])
        notes = _notes(mods[0], mods[2])
        if notes:
            _STATE["notes"] = notes
            _LOG.info("trt_kernels: %s", notes)
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
