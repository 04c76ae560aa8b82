"""CUDA C++ as a kernel source: NVRTC compiles it to PTX (for TensorRT) and CUBIN (for eager).

:class:`CudaSource` holds the NVRTC side of a :class:`~trt_kernels.spec.KernelSpec` (source text,
kernel name, NVRTC options, include paths, C++ standard, arch override), checked when it is made.
A template kernel (``kernel_name="k<T>"``) is instantiated once per declared dtype through NVRTC
name expressions; ``cuda_fp16.h`` / ``cuda_bf16.h`` are included when a dtype needs them.
Compiling and the disk cache are :mod:`trt_kernels.sources.nvrtc`'s.
"""

from __future__ import annotations

import re
from typing import Dict, List, Optional

import torch

from trt_kernels import dtypes as _dt
from trt_kernels.signature import Signature
from trt_kernels.sources import abi as _abi
from trt_kernels.sources.kernel_source import Binary, KernelImage, KernelSource, Version
from trt_kernels.sources.nvrtc import (
    CompiledProgram,
    cached_program,
    compile_program,
    normalize_arch,
    program_key,
)
from trt_kernels.spec import KernelSpec
from trt_kernels.validate import check_encodable, check_type_params, fail, kernel_dtypes, sequence


def _params_pattern(type_params, kernel_name: str) -> "Optional[re.Pattern[str]]":
    """Matches any of the type parameters as a whole word of ``kernel_name``'s template arguments; None where
    the name instantiates no template (no ``<``: nothing to match, and no expression compiled at a warm start)."""
    if "<" not in kernel_name:
        return None
    return re.compile(r"\b(" + "|".join(re.escape(p) for p in type_params) + r")\b")


# NVRTC options the package sets itself: a user's copy would contradict what the cache entry says
_CONTROLLED_OPTIONS = {
    "--gpu-architecture": "the arch: set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH",
    "-arch": "the arch: set KernelSpec(arch_override='sm_90') or TRT_KERNELS_ARCH",
    "--std": "the C++ standard: set KernelSpec(compile_std='c++17')",
    "-std": "the C++ standard: set KernelSpec(compile_std='c++17')",
    "--include-path": "include directories: set KernelSpec(include_paths=[...])",
    "-I": "include directories: set KernelSpec(include_paths=[...])",
    "--relocatable-device-code": "relocatable code needs a link step this package does not do: drop it",
    "-rdc": "relocatable code needs a link step this package does not do: drop it",
    "--device-c": "relocatable code needs a link step this package does not do: drop it",
    "-dc": "relocatable code needs a link step this package does not do: drop it",
    "--dlink-time-opt": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "-dlto": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "--gen-opt-lto": "link-time-optimization IR is not loadable PTX/CUBIN: drop it",
    "--fdevice-syntax-only": "it makes no PTX or CUBIN: drop it",
    "-fdevice-syntax-only": "it makes no PTX or CUBIN: drop it",
}
_STDS = ("c++03", "c++11", "c++14", "c++17", "c++20")


class CudaSource(KernelSource):
    """A ``__global__`` function in CUDA C++ source, compiled by NVRTC (``cuda_kernel_op``)."""

    entry_point = "cuda_kernel_op"
    needs_arch = True
    shared_mem_from_build = False
    aot_from_build = False

    def __init__(self, sig: Signature, spec: KernelSpec):
        self.sig = sig
        self.op_name = sig.op_name
        self.kernel_name = spec.kernel_name
        self.options = tuple(spec.compile_options)
        self.std = spec.compile_std
        self.include_paths = list(spec.include_paths) if spec.include_paths is not None else None
        self.arch_override = spec.arch_override
        self.min_arch = None if spec.min_arch is None else normalize_arch(spec.min_arch)  # (checked when validated)
        self._pattern = _params_pattern(sig.type_params, self.kernel_name)
        self.names = [self.name_expression(d) for d in sig.kernel_dtypes]
        self.text = with_headers(spec.kernel_source, _dt.flat(sig.kernel_dtypes) + [
            d for d in [t.dtype for t in sig.tensor_decls] + [o.dtype for o in sig.outputs]
            if isinstance(d, torch.dtype)])

    @staticmethod
    def check(op: str, spec: KernelSpec) -> None:
        """The NVRTC side of a spec, before anything else of it is read: :class:`SpecError` naming the field."""
        if not isinstance(spec.kernel_source, str) or not spec.kernel_source.strip():
            raise fail(op, "kernel_source", "empty or not a string", "pass the CUDA C++ source text")
        if not isinstance(spec.kernel_name, str) or not spec.kernel_name.strip():
            raise fail(op, "kernel_name", "empty or not a string",
                        "name the __global__ function (e.g. 'my_kernel' or 'k<T>')")
        for fld in ("kernel_source", "kernel_name"):
            check_encodable(op, fld, getattr(spec, fld))
        _check_build_fields(op, spec)
        tp = check_type_params(op, spec.type_params)
        kd = kernel_dtypes(op, spec.dtypes, tp)
        if len(tp) > 1:
            missing = [p for p in tp if not re.search(r"\b" + re.escape(p) + r"\b", spec.kernel_name)]
            if missing:
                raise fail(op, "kernel_name", f"{spec.kernel_name!r} does not name the type parameter(s) {missing} of "
                            f"type_params={list(tp)}", f"name the instantiation with every parameter, e.g. "
                            f"kernel_name='{spec.kernel_name.split('<')[0].strip()}<{', '.join(tp)}>'")
            return
        t = _params_pattern(tp, spec.kernel_name)
        if kd is not None and len(kd) > 1 and (t is None or not t.search(spec.kernel_name)):
            raise fail(
                op, "kernel_name",
                f"{spec.kernel_name!r} has no template parameter {tp[0]} but dtypes lists {len(kd)} dtypes",
                f"write the kernel as 'template <typename {tp[0]}> __global__ void k(...)' "
                f"and set kernel_name='k<{tp[0]}>'",
            )
        if kd is None and t is not None and t.search(spec.kernel_name):
            raise fail(
                op, "dtypes", f"kernel_name {spec.kernel_name!r} is a template over {tp[0]} but no dtypes are declared",
                f"pass dtypes=[torch.float32, ...] listing what {tp[0]} may be",
            )

    def name_expression(self, dtype) -> str:
        """The NVRTC name expression instantiating the kernel for ``dtype`` (``k<T>`` -> ``k<__half>``; with
        several type parameters, ``dtype`` is a combination: ``k<T, W>`` -> ``k<__half, float>``)."""
        if self._pattern is None:
            return self.kernel_name
        b = self.sig.binding(dtype)
        return self._pattern.sub(lambda m: _dt.c_type(b[m.group(1)]), self.kernel_name)

    def key(self) -> str:
        from trt_kernels.sources.nvrtc import toolchain_id

        return program_key(self.text, self.names, self.options, self.std, self.include_paths, toolchain_id())

    def build(self, arch: Optional[str], *, check_abi: bool = True) -> Binary:
        prog = compile_program(self.text, self.names, arch=normalize_arch(arch), options=self.options, std=self.std,
                               include_paths=self.include_paths, label=self.op_name)
        return self._binary(prog, check_abi)

    def cached_build(self) -> Optional[Binary]:
        prog = cached_program(self.text, self.names, options=self.options, std=self.std,
                              include_paths=self.include_paths)
        return self._binary(prog, True) if prog is not None else None

    def _binary(self, prog: CompiledProgram, check_abi: bool) -> Binary:
        kernels: Dict = {}
        for d, n in zip(self.sig.kernel_dtypes, self.names):
            symbol = prog.lowered[n]
            if check_abi and self.sig.has_outputs:  # without outputs the declaration does not say what it takes
                _abi.check_abi(self.op_name, n, symbol, prog.ptx, self.sig.params(d), found=prog.params_of(symbol))
            kernels[(d, 0)] = KernelImage(symbol=symbol, image=prog.cubin, ptx=prog.ptx, aot_ptx=prog.ptx)
        nv = ".".join(map(str, prog.nvrtc_version))
        return Binary(arch=prog.arch, kernels=kernels, toolchain=f"NVRTC {nv}", from_cache=prog.from_cache,
                      entries=(prog.entry,) if prog.entry is not None else (), log=prog.log,
                      details={"key": prog.key, "nvrtc": nv, "cubin_bytes": len(prog.cubin),
                               "ptx_bytes": len(prog.ptx), "kernels": len(prog.lowered)})

    def ptx_note(self, binary: Binary, driver: Optional[Version]) -> Optional[str]:
        from trt_kernels.sources.ptxcheck import ptx_loadable_note

        nv = tuple(int(x) for x in str(binary.details["nvrtc"]).split("."))
        return ptx_loadable_note(nv, driver)

    def unsupported_arch(self, arch: str) -> Optional[str]:
        from trt_kernels.sources.nvrtc import unsupported_arch

        return unsupported_arch(arch)

    def describe(self) -> str:
        opts = f", options {list(self.options)}" if self.options else ""
        return f"CUDA C++ kernel {self.kernel_name!r} (NVRTC, -std={self.std}{opts})"


def with_headers(source: str, dtypes: List[Optional[torch.dtype]]) -> str:
    """Prepend ``#include <cuda_fp16.h>`` / ``<cuda_bf16.h>`` when one of ``dtypes`` needs it."""
    needed = []
    for d in dtypes:
        h = _dt.header(d) if d is not None else None
        if h and h not in needed and h not in source:
            needed.append(h)
    if not needed:
        return source
    # '#line 1' after the includes: NVRTC's messages give the line numbers of the user's source
    return "".join(f"#include <{h}>\n" for h in needed) + "#line 1\n" + source


def _check_build_fields(op: str, spec: KernelSpec) -> None:
    """compile_options, include_paths, compile_std, arch_override and min_arch: the NVRTC side of a spec."""
    opts = sequence(op, "compile_options", spec.compile_options,
                     "pass NVRTC flags as a list of str, e.g. compile_options=['--use_fast_math']")
    for i, o in enumerate(opts):
        if not isinstance(o, str) or not o.strip():
            raise fail(op, f"compile_options[{i}]", f"{o!r} is not an NVRTC flag", "give each flag as a non-empty str")
        check_encodable(op, f"compile_options[{i}]", o)
        flag = o.strip()
        for name, why in _CONTROLLED_OPTIONS.items():
            if flag == name or flag.startswith(name + "=") or (name in ("-I", "-arch") and flag.startswith(name)):
                raise fail(op, f"compile_options[{i}]", f"{o!r} sets what the package controls ({why.split(':')[0]})",
                            why.split(": ", 1)[1] if ": " in why else why)
    if spec.include_paths is not None:
        paths = sequence(op, "include_paths", spec.include_paths,
                          "pass a list of directories, e.g. include_paths=['/opt/inc']")
        for i, d in enumerate(paths):
            if not isinstance(d, str) or not d or "\0" in d:
                raise fail(op, f"include_paths[{i}]", f"{d!r} is not a directory path",
                           "give each directory as a str (no NUL character)")
            check_encodable(op, f"include_paths[{i}]", d)
    if spec.compile_std not in _STDS:
        raise fail(op, "compile_std", f"{spec.compile_std!r} is not a C++ standard NVRTC takes",
                    f"use one of {list(_STDS)}")
    if spec.arch_override is not None:
        from trt_kernels.sources.archs import check_arch_override

        check_arch_override(op, spec.arch_override)
    if spec.min_arch is not None:
        from trt_kernels.sources.archs import check_min_arch

        check_min_arch(op, spec.min_arch)
