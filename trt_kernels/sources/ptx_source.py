"""PTX text as a kernel source (``ptx_op``): nothing is compiled; the driver JIT-loads the PTX.

The PTX's ``.entry`` is checked against the signature when the op is declared (when the
declaration says what the kernel takes), and the same text is what TensorRT's AOT plugin embeds.
One build serves every device: the driver compiles the PTX for the GPU it loads it on.
"""

from __future__ import annotations

import hashlib
from typing import Optional

import torch

from trt_kernels.errors import SpecError
from trt_kernels.signature import Signature
from trt_kernels.sources import abi as _abi
from trt_kernels.sources.kernel_source import Binary, KernelImage, KernelSource, Version


class PtxSource(KernelSource):
    """PTX text and the symbol of its kernel's ``.entry``."""

    entry_point = "ptx_op"
    needs_arch = False
    shared_mem_from_build = False
    aot_from_build = False
    arch_override = None

    @staticmethod
    def check(op: str, ptx) -> bytes:
        """The PTX as bytes, checked to be PTX text (before anything else of the declaration is read)."""
        if isinstance(ptx, str):
            try:
                ptx = ptx.encode()
            except UnicodeEncodeError:
                raise SpecError(f"{op}: ptx: not ASCII/UTF-8 text. "
                                "Fix: pass the PTX as written by the compiler") from None
        if not isinstance(ptx, (bytes, bytearray)):
            raise SpecError(f"{op}: ptx: expected the PTX as str or bytes, got {type(ptx).__name__}. Fix: pass "
                            "bytes(...) or the text")
        if b".entry" not in ptx:
            raise SpecError(f"{op}: ptx: not PTX text (no .entry found). Fix: pass the PTX as str or bytes")
        text = bytes(ptx).rstrip(b"\x00")
        if not text.isascii() or b"\x00" in text:
            bad = next(i for i, c in enumerate(text) if c > 0x7F or c == 0)
            what = "a NUL byte, where the driver stops reading" if text[bad] == 0 else f"byte {text[bad]:#x}, not ASCII"
            line = text.count(b"\n", 0, bad) + 1
            raise SpecError(f"{op}: ptx: line {line} has {what}: PTX is ASCII text, which ptxas and the driver refuse "
                            "otherwise. Fix: pass the PTX as the compiler wrote it (a comment added by hand may carry "
                            "it)")
        return bytes(ptx)

    def __init__(self, sig: Signature, ptx, symbol: str):
        op = sig.op_name
        ptx = self.check(op, ptx)
        if not isinstance(symbol, str) or not symbol.strip():
            raise SpecError(f"{op}: kernel_name: empty or not a string. Fix: pass the symbol of the PTX's .entry")
        if "<" in symbol:
            raise SpecError(f"{op}: kernel_name {symbol!r}: ptx_op takes the PTX symbol, not a C++ name expression. "
                            "Fix: pass the mangled name from the PTX's .entry line")
        entries = _abi.entry_names(ptx)
        if symbol not in entries:
            raise SpecError(f"{op}: kernel_name {symbol!r}: the PTX has no .entry of that name (its entries: "
                            f"{', '.join(entries) or 'none'}). Fix: pass the symbol of the .entry to launch")
        self.sig = sig
        self.ptx = bytes(ptx).rstrip(b"\x00")
        self.kernel_name = symbol
        self._binary = self._make()
        if sig.has_outputs:  # the declaration says what the kernel takes: the .entry must agree now
            for d in sig.kernel_dtypes:
                _abi.check_abi(op, symbol, symbol, self.ptx, sig.params(d))

    def _make(self) -> Binary:
        image = KernelImage(symbol=self.kernel_name, image=self.ptx + b"\x00", ptx=self.ptx, aot_ptx=self.ptx)
        return Binary(arch=None, kernels={(d, 0): image for d in self.sig.kernel_dtypes}, toolchain="none (PTX given)",
                      details={"ptx_bytes": len(self.ptx)})

    def name_expression(self, dtype: torch.dtype) -> str:
        return self.kernel_name

    def key(self) -> str:
        return hashlib.sha256(self.ptx).hexdigest()

    def build(self, arch: Optional[str], *, check_abi: bool = True) -> Binary:
        return self._binary  # checked when the op was declared

    def cached_build(self) -> Optional[Binary]:
        return self._binary

    def ptx_note(self, binary: Binary, driver: Optional[Version]) -> Optional[str]:
        return None  # the user's PTX: its ISA is theirs to match to the driver

    def describe(self) -> str:
        return f"PTX, entry {self.kernel_name!r} ({len(self.ptx)} bytes; loaded by the driver's JIT)"
