"""The TensorRT side (``trt_kernels.plugins``): the routes that take each op into TensorRT.

Two routes (:class:`~trt_kernels.plugins.route.Route`, in :data:`ROUTES`): the QDP route (a QDP plugin
and a Torch-TensorRT converter per op, :mod:`trt_kernels.plugins.qdp_route`) and the ONNX route (an
``IPluginV3One`` creator per op, :mod:`trt_kernels.plugins.v3one`). This package hooks them into the
registry once: every declaration is checked by, and then registered with, each route in turn, and
every unregistering is told to each; a route that is not up does nothing.

This package is where ``tensorrt`` is imported; the core never does. The TensorRT side
is initialised the first time an op is declared (or by :func:`init`): if ``tensorrt``
with a usable QDP layer (TensorRT 10.15 or newer; Torch-TensorRT reports 10.14 broken for
QDP plugins) and ``torch_tensorrt`` import, every op declared so far and every later one
gets a plugin and a converter. Otherwise ops stay eager-only and the reason is logged
once and reported by :func:`tensorrt_status` (and ``trt-kernels status``).

Which TensorRT a user has comes from their Torch-TensorRT, which pins it per release
(:data:`PAIRINGS`, from :mod:`trt_kernels.plugins.pairing`): torch 2.11 means Torch-TensorRT 2.11 over
TensorRT 10.15.1. Torch-TensorRT 2.11 sets ``ENABLED_FEATURES.qdp_plugin = False`` on TensorRT
10.14/10.15; that flag gates only its own plugin generators (``custom_op``, ``generate_plugin``,
``generate_plugin_converter``), which this package does not use: its converters add their layers
with ``network.add_plugin`` themselves. So the flag is reported as a note, not taken as "QDP unusable".
"""

from __future__ import annotations

import importlib.util
import logging
import sys
import threading
from typing import Dict, Optional, Tuple, Union

from trt_kernels import registry
from trt_kernels.op import KernelOp
from trt_kernels.plugins import v3one
from trt_kernels.plugins.pairing import PAIRINGS, pairing_problem, pairings_text, qdp_usable  # noqa: F401 - re-exported
from trt_kernels.plugins.qdp_route import QdpRoute
from trt_kernels.plugins.route import Route

_LOG = logging.getLogger("trt_kernels")
_LOCK = threading.RLock()
# the TensorRT side's state: "available", "reason", "notes", "backend" (shown by tensorrt_status) and "_modules"
# ((tensorrt, tensorrt.plugin) once available)
_STATE: Dict[str, object] = {}


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


def _qdp_modules() -> Optional[tuple]:
    return _STATE.get("_modules")


#: the QDP route: up once :func:`init` found a usable TensorRT and Torch-TensorRT
QDP = QdpRoute(_qdp_modules)
#: the QDP plugins registered in this process, by op name (:attr:`QdpRoute.plugins`: read-only, live)
QDP_PLUGINS = QDP.plugins
#: every route, in the order a declaration goes through them
ROUTES: Tuple[Route, ...] = (QDP, v3one.ROUTE)


def _check(kop: KernelOp, old: Optional[KernelOp]) -> None:
    for route in ROUTES:
        route.check(kop, old)


def _register(kop: KernelOp) -> None:
    for route in ROUTES:
        route.register(kop)


def _forget(kop: KernelOp) -> None:
    for route in ROUTES:
        route.forget(kop)


def _wire() -> None:
    """Hook the routes into the registry (the hooks are kept once however often this runs) and hand them
    every op declared so far."""
    registry.on_check(_check)
    registry.on_remove(_forget)
    registry.on_register(_register)


def init(force: bool = False) -> bool:
    """Initialise the TensorRT side once (bring the QDP route up); True if plugins and converters are being
    registered."""
    with _LOCK:
        if _STATE.get("available") == "yes":
            return True
        if "available" in _STATE and not force:
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
    _wire()  # the QDP route, up now, takes the ops declared so far
    return True


def tensorrt_status() -> Dict[str, str]:
    """``{"available": "yes"|"no", "reason": ...}`` for the TensorRT side in this process."""
    with _LOCK:
        if "available" not in _STATE:
            mods, reason = _probe()
            if mods is None:
                return {"available": "no", "reason": reason}
            return {"available": "not initialised", "reason": "call trt_kernels.plugins.init() or declare an op"}
        return {k: v for k, v in _STATE.items() if not k.startswith("_")}


def route_status(op: Union[str, KernelOp]) -> Dict[str, str]:
    """``{route name: what it has for the op}`` for the op ``op`` (a name or a declared op), on every route."""
    kop = registry.get(op) if isinstance(op, str) else op
    return {route.name: route.status(kop) for route in ROUTES}


_wire()  # a route coming up later (init(), v3one.register) finds the hooks in place
