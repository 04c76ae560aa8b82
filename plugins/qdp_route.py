"""The QDP route: a ``tensorrt.plugin`` plugin (:mod:`trt_kernels.plugins.qdp`) and a Torch-TensorRT
converter (:mod:`trt_kernels.converters`) per op, registered together.

TensorRT's plugin registry cannot replace a plugin, so a re-declaration reuses the registered one
(its functions read the builder's current declaration) when the plugin signature is the same, and
is refused by :meth:`QdpRoute.check` before anything changes when it is not. The converter, once
registered for an op's overload, converts with the op's current declaration.
"""

from __future__ import annotations

import logging
import threading
import types
from typing import Callable, Dict, Mapping, Optional

from trt_kernels.errors import SpecError
from trt_kernels.op import KernelOp

_LOG = logging.getLogger("trt_kernels")


def converter_status(kop: KernelOp) -> str:
    if kop.sig.mutated:
        return ("registered (Torch-TensorRT dynamo, for the op's torch.ops.higher_order.auto_functionalized_v2 "
                "calls on whole tensors)")
    return "registered (Torch-TensorRT dynamo)"


class QdpRoute:
    """The QDP route. ``modules()``: ``(tensorrt, tensorrt.plugin)`` while the TensorRT side is up, else
    None (the route then registers nothing; :func:`trt_kernels.plugins.init` brings it up)."""

    name = "qdp"

    def __init__(self, modules: Callable[[], Optional[tuple]]):
        self._modules = modules
        self._lock = threading.RLock()
        # op name -> (plugin signature, PluginBuilder, TensorRTSide) of the plugin registered under that name (a plain
        # tuple: a NamedTuple would compile generated code when this module is imported)
        self._plugins: Dict[str, tuple] = {}
        self._view = types.MappingProxyType(self._plugins)
        self._converted: Dict[str, object] = {}  # op name -> the OpOverload its converter is registered for

    @property
    def plugins(self) -> Mapping[str, tuple]:
        """The plugins registered in this process: op name -> (signature, PluginBuilder, TensorRTSide); a
        read-only view that follows later registrations."""
        return self._view

    def check(self, kop: KernelOp, old: Optional[KernelOp]) -> None:
        from trt_kernels.plugins.qdp import PluginBuilder

        mods = self._modules()
        with self._lock:
            entry = self._plugins.get(kop.op_name)
        if entry is None or mods is None:
            return
        new = PluginBuilder(kop, *mods).signature()
        if new != entry[0]:
            raise SpecError(
                f"{kop.op_name}: its TensorRT plugin is already registered in this process with another signature "
                f"({entry[0]} -> {new}), and TensorRT's plugin registry cannot replace a plugin. Fix: keep the "
                "inputs, scalar types, outputs and AOT/JIT mode of the first declaration, use a new op name, "
                "or restart the process")

    def forget(self, kop: KernelOp) -> None:
        """Its plugin stays registered in TensorRT (it cannot be removed) but no longer holds the
        declaration; building it raises UnregisteredOpError."""
        with self._lock:
            entry = self._plugins.get(kop.op_name)
            if entry is not None and entry[1].kop_or_none is kop:
                entry[1].kop = None

    def register(self, kop: KernelOp) -> None:
        mods = self._modules()
        if mods is None:
            return
        if self._register_plugin(kop, *mods):
            self._register_converter(kop)

    def _register_plugin(self, kop: KernelOp, trt, trtp) -> bool:
        """The op's plugin (registered now, or the one registered under its name); False if it has none."""
        from trt_kernels.plugins.qdp import PluginBuilder, register_plugin_builder

        with self._lock:
            entry = self._plugins.get(kop.op_name)
            builder = PluginBuilder(kop, trt, trtp)
            if entry is not None and entry[0] == builder.signature():
                entry[1].kop = kop  # the registered plugin serves the new declaration
                kop.tensorrt.plugin, kop.tensorrt.aot = entry[2].plugin, entry[2].aot
                return True
            if entry is not None:  # refused by check() unless TensorRT came up in between
                kop.tensorrt.plugin = f"failed: the plugin {kop.op_name} is registered with another signature"
                _LOG.warning("trt_kernels: %s: %s", kop.op_name, kop.tensorrt.plugin)
                return False
            why_not = builder.unsupported_outputs()
            if why_not:
                kop.tensorrt.plugin = f"not registered: {why_not}"
                kop.tensorrt.converter = "not registered (no plugin)"
                _LOG.info("trt_kernels: %s: no TensorRT plugin: %s", kop.op_name, why_not)
                return False
            try:
                builder, status = register_plugin_builder(kop, trt, trtp, builder)
            except Exception as e:  # noqa: BLE001 - report per op, keep the eager op usable
                kop.tensorrt.plugin = f"failed: {type(e).__name__}: {e}"
                _LOG.warning("trt_kernels: %s: TensorRT plugin registration failed: %s", kop.op_name, e)
                return False
            self._plugins[kop.op_name] = (builder.signature(), builder, status)
            kop.tensorrt.plugin, kop.tensorrt.aot = status.plugin, status.aot
            return True

    def _register_converter(self, kop: KernelOp) -> None:
        from trt_kernels.converters import register_converter
        from trt_kernels.plugins.qdp import attr_field

        with self._lock:
            if self._converted.get(kop.op_name) is kop.overload:
                kop.tensorrt.converter = converter_status(kop)
                return
        try:
            register_converter(kop, attr_field)
            with self._lock:
                self._converted[kop.op_name] = kop.overload
            kop.tensorrt.converter = converter_status(kop)
        except Exception as e:  # noqa: BLE001
            kop.tensorrt.converter = f"failed: {type(e).__name__}: {e}"
            _LOG.warning("trt_kernels: %s: converter registration failed: %s", kop.op_name, e)

    def status(self, kop: KernelOp) -> str:
        return (f"plugin: {kop.tensorrt.plugin or 'not registered'}; "
                f"converter: {kop.tensorrt.converter or 'not registered'}")
