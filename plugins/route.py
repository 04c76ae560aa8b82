"""The protocol of a TensorRT route: how an op gets into TensorRT, and what the route keeps for it.

Two routes implement it: the QDP route (:class:`trt_kernels.plugins.qdp_route.QdpRoute`: a
``tensorrt.plugin`` plugin and a Torch-TensorRT converter per op) and the ONNX route
(:class:`trt_kernels.plugins.v3one.OnnxRoute`: an ``IPluginV3One`` creator per op). Each owns its
bookkeeping; :mod:`trt_kernels.plugins` hooks them all into the registry once, so a declaration, a
re-declaration and an unregistering go through every route the same way.
"""

from __future__ import annotations

from typing import Optional, Protocol

from trt_kernels.op import KernelOp


class Route(Protocol):
    """One way into TensorRT. A route that is not up (its TensorRT not imported, nothing to register
    into) takes every call and does nothing."""

    #: short name, the key of the route in :func:`trt_kernels.plugins.route_status`
    name: str

    def check(self, kop: KernelOp, old: Optional[KernelOp]) -> None:
        """Refuse (raise :class:`~trt_kernels.errors.SpecError`, naming the op and the fix) a declaration
        ``kop`` replacing ``old`` that this route cannot take, before anything of ``old`` changes."""

    def register(self, kop: KernelOp) -> None:
        """Give ``kop`` (a new op, or a re-declaration) what this route registers for it; a failure is
        recorded on the op and logged, never raised: the eager op stays usable."""

    def forget(self, kop: KernelOp) -> None:
        """``kop`` was unregistered: what the route registered for it stops serving it."""

    def status(self, kop: KernelOp) -> str:
        """What this route has for ``kop``, in words (for status rows)."""
