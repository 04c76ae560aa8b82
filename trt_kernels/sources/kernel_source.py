"""Where a kernel's code comes from: the :class:`KernelSource` protocol and what a build gives.

Three sources implement it, as equals: CUDA C++ compiled by NVRTC
(:mod:`trt_kernels.sources.cuda_source`), PTX text given by the user (:mod:`trt_kernels.sources.ptx_source`) and a
``@triton.jit`` function compiled by Triton (:mod:`trt_kernels.sources.triton_source`). Each is built
with the op's :class:`~trt_kernels.signature.Signature` and checks its own code against it (the
kernel ABI); ``build(arch)`` gives a :class:`Binary`: one :class:`KernelImage` per (dtype,
tactic), each with what an eager launch loads and what TensorRT's AOT plugin embeds (or why it
cannot). The op record (:class:`~trt_kernels.op.KernelOp`), the launches, the TensorRT plugin and
the command line read a ``Binary`` and never ask which source made it.
"""

from __future__ import annotations

import re
from dataclasses import field
from types import MappingProxyType
from typing import Any, Dict, FrozenSet, Mapping, Optional, Tuple

import torch

from trt_kernels._record import FACTORY, Frozen, plain_record

Version = Tuple[int, int]
_NO_DETAILS: Mapping[str, object] = MappingProxyType({})


def ptx_isa(ptx: bytes) -> Optional[Version]:
    """The PTX ISA version of ``.version`` in ``ptx`` (e.g. (9, 0) for CUDA 13.0), or None."""
    m = re.search(rb"^\.version\s+(\d+)\.(\d+)", ptx, re.M)
    return (int(m.group(1)), int(m.group(2))) if m else None


@plain_record
class KernelImage(Frozen):
    """One launchable kernel: the code for one dtype (and, for sources with per-tactic code, one tactic)."""

    symbol: str  # the entry's name in the PTX / CUBIN
    image: bytes  # what the driver loads for eager launches: a CUBIN, or NUL-terminated PTX (JIT-loaded)
    ptx: bytes  # the PTX as compiled: its .entry lists every parameter the kernel takes
    aot_ptx: Optional[bytes]  # PTX whose .entry takes exactly the declared parameters (TensorRT's AOT launch)
    aot_reason: Optional[str] = None  # why there is no aot_ptx
    shared_mem: int = 0  # dynamic shared memory (bytes) the code itself needs, whatever the geometry says
    # (bytes per block, alignment) of each pointer the compiler appended after the declared parameters
    # (Triton's scratch buffers); a size of 0 means the launch passes NULL there
    scratch: Tuple[Tuple[int, int], ...] = ()
    # the declared parameters (positions) the code was compiled with as constants (a specialization's ONE):
    # its .entry lacks them, and launches do not pass them
    folded: Tuple[int, ...] = ()

    def __init__(self, symbol: str, image: bytes, ptx: bytes, aot_ptx: Optional[bytes],
                 aot_reason: Optional[str] = None, shared_mem: int = 0,
                 scratch: Tuple[Tuple[int, int], ...] = (), folded: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(symbol=symbol, image=image, ptx=ptx, aot_ptx=aot_ptx, aot_reason=aot_reason,
                             shared_mem=shared_mem, scratch=scratch, folded=tuple(folded))

    @property
    def needs_scratch(self) -> bool:
        return any(size > 0 for size, _ in self.scratch)

    @property
    def ptx_isa(self) -> Optional[Version]:
        """The PTX ISA version of ``.version`` in the PTX (e.g. (9, 0) for CUDA 13.0)."""
        return ptx_isa(self.ptx)


@plain_record
class Binary(Frozen):
    """What a source built for one arch (``arch`` None: code any device loads, e.g. PTX text)."""

    arch: Optional[str]
    kernels: Dict[Tuple[torch.dtype, int], KernelImage]  # (dtype, tactic); tactic 0: the same code for every tactic
    toolchain: str  # what built it, for reports: "NVRTC 13.0", "Triton 3.6.0", "none (PTX given)"
    from_cache: bool = False  # every part was read from the disk cache
    entries: Tuple[str, ...] = ()  # the disk cache entries holding it
    log: str = ""  # the compiler's messages
    # source-specific facts for reports (JSON-able)
    details: Mapping[str, object] = field(default_factory=lambda: _NO_DETAILS)

    def __init__(self, arch: Optional[str], kernels: Dict[Tuple[torch.dtype, int], KernelImage], toolchain: str,
                 from_cache: bool = False, entries: Tuple[str, ...] = (), log: str = "",
                 details: Mapping[str, object] = FACTORY) -> None:
        self.__dict__.update(arch=arch, kernels=kernels, toolchain=toolchain, from_cache=from_cache, entries=entries,
                             log=log, details=_NO_DETAILS if details is FACTORY else details)

    def kernel(self, dtype: torch.dtype, tactic: int = 1) -> KernelImage:
        k = self.kernels.get((dtype, 0))
        return k if k is not None else self.kernels[(dtype, max(int(tactic or 1), 1))]

    @property
    def n_hidden(self) -> int:
        """How many pointers the compiler appended after the declared parameters (the same for every kernel)."""
        return len(next(iter(self.kernels.values())).scratch) if self.kernels else 0

    @property
    def aot_reason(self) -> Optional[str]:
        """Why some kernel has no PTX for TensorRT's AOT launch (None: every kernel has one)."""
        reasons = [k.aot_reason for k in self.kernels.values() if k.aot_reason]
        if not reasons:
            return None
        return "AOT unavailable: " + "; ".join(dict.fromkeys(reasons)) + "; the JIT impl runs the kernel instead"


class KernelSource:
    """Where an op's kernel code comes from: the base of ``CudaSource``, ``PtxSource`` and ``TritonSource``.

    (A plain base class, not a ``typing.Protocol``: creating a Protocol class costs a millisecond
    of every ``import trt_kernels``, and the three sources are ours.)"""

    #: the entry point that declares ops of this source (``cuda_kernel_op``, ``ptx_op``, ``triton_kernel_op``)
    entry_point: str
    #: whether a build is per GPU arch (False: one build serves every device)
    needs_arch: bool
    #: whether the code's own dynamic shared memory is known only once built (Triton's ``metadata.shared``):
    #: then the launch plan takes the largest over the op's dtypes for the arch
    shared_mem_from_build: bool
    #: whether TensorRT's AOT launch is possible is known only once built (Triton: a config's kernel may
    #: have no AOT PTX, e.g. one that needs a scratch buffer)
    aot_from_build: bool
    #: the arch the declaration pins (``arch_override``), or None
    arch_override: Optional[str]
    #: the lowest arch the declaration says the op's code must load on, or its kernel needs (``min_arch``,
    #: normalized), or None (:meth:`trt_kernels.op.KernelOp.aot_target`)
    min_arch: Optional[str] = None

    def key(self) -> str:
        """A hex digest of everything the source compiles (its code, options and toolchain version)."""
        raise NotImplementedError

    def build(self, arch: Optional[str], *, check_abi: bool = True) -> Binary:
        """Compile (or read from the disk cache) for ``arch``; with ``check_abi``, raise
        :class:`~trt_kernels.errors.KernelABIError` where the code's parameters differ from the signature."""
        raise NotImplementedError

    def cached_build(self) -> Optional[Binary]:
        """A build for any arch from the disk cache (ABI-checked), without compiling, loading a compiler or
        asking a GPU anything; None if there is none."""
        raise NotImplementedError

    def name_expression(self, dtype: torch.dtype) -> str:
        """How the kernel is named at ``dtype`` (``k<__half>``, a PTX symbol, a Triton function's name)."""
        raise NotImplementedError

    def ptx_note(self, binary: Binary, driver: Optional[Version]) -> Optional[str]:
        """Why the CUDA ``driver`` cannot JIT-load the binary's AOT PTX, with the fix; None if it can."""
        raise NotImplementedError

    def describe(self) -> str:
        """One line for reports: the source kind, the kernel and its options."""
        raise NotImplementedError

    def unsupported_arch(self, arch: str) -> Optional[str]:
        """Why this source's compiler cannot build for ``arch`` (``sm_50``), naming the archs it can; None when
        it can, or cannot tell without compiling (the build then reports the compiler's own error)."""
        return None

    def specialization(self, dtype: Any) -> Tuple[Tuple[int, int], ...]:
        """``(parameter position, flags)`` of each kernel parameter whose code depends on a call's value
        (:mod:`trt_kernels.recipe`: ALIGNED, ONE); empty (the default): the same code for every call."""
        return ()

    def specialized(self, dtype: Any, tactic: int, arch: Optional[str], aligned: FrozenSet[int],
                    ones: FrozenSet[int]) -> KernelImage:
        """The code for ``dtype`` and ``tactic`` compiled assuming the parameters at positions ``aligned`` are
        multiples of 16 and those at ``ones`` equal 1 (their parameters leave the ``.entry``); cached like a
        build. Only sources with a :meth:`specialization` are asked."""
        raise NotImplementedError
