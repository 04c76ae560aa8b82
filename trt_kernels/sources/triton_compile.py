"""The Triton toolchain: compile a ``@triton.jit`` function to PTX + CUBIN, cache it, and fit its
PTX to TensorRT's argument layout (:mod:`trt_kernels.sources.triton_source` is the kernel source built on it).

Triton is an optional dependency (``pip install 'trt-kernels[triton]'``); nothing here imports it
at module import time, and :func:`require_triton` names the extra when it is missing.

What Triton's compiled kernel looks like (triton 3.5/3.6, read from its ``backends/nvidia``
sources and checked by the tests): the ``.entry`` takes the non-constexpr parameters of the
Python signature in order, then **two hidden 64-bit pointers**, ``global_scratch`` and
``profile_scratch``; Triton's own launcher passes a per-launch buffer of
``grid_x * grid_y * grid_z * num_ctas * size`` bytes for each (NULL when the size is 0).
Dynamic shared memory is ``metadata.shared`` bytes and the block is ``num_warps * 32`` threads
(the PTX pins it with ``.reqntid``).

TensorRT's AOT launch passes ``(input pointers, extra args, output pointers)`` and nothing else,
so it cannot pass the hidden pointers. When both scratch sizes are 0, the kernel never reads
them: :func:`trt_kernels.sources.ptx_entry.strip_hidden_params` removes them from the PTX ``.entry`` (after
checking that the body names neither), which makes the PTX take exactly TensorRT's layout. Otherwise no AOT
launch of the kernel is defined and the op's plugin uses its JIT impl.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from trt_kernels import cache_store
from trt_kernels.errors import CompileError, SpecError
from trt_kernels.sources.kernel_source import ptx_isa

_LOG = logging.getLogger("trt_kernels")
_MAGIC = cache_store.TRITON_MAGIC
_FORMAT = 2  # 2: the store checksums whole entries (1: a checksum of PTX + CUBIN only)
EXTRA = "trt-kernels[triton]"



def require_triton(what: str = "triton_kernel_op"):
    """``import triton`` or raise an ImportError that names the extra to install."""
    try:
        import triton
        import triton.backends.compiler  # noqa: F401 - GPUTarget, used to compile without a GPU
    except Exception as e:  # noqa: BLE001 - ImportError, or a broken install
        raise ImportError(
            f"{what} needs Triton, which does not import here ({type(e).__name__}: {e}). "
            f"Fix: pip install '{EXTRA}' (Triton 3.x); CUDA C++ ops (cuda_kernel_op) do not need it"
        ) from e
    return triton


def triton_version() -> Optional[str]:
    try:
        import triton

        return str(triton.__version__)
    except Exception:  # noqa: BLE001
        return None


def option_names() -> Optional[frozenset]:
    """The options ``triton.compile`` takes for NVIDIA GPUs (its CUDA backend's option fields; it ignores any
    other name silently); None where this Triton keeps them elsewhere."""
    try:
        import dataclasses

        from triton.backends.nvidia.compiler import CUDAOptions

        return frozenset(f.name for f in dataclasses.fields(CUDAOptions))
    except Exception:  # noqa: BLE001 - another Triton's layout: the names are not checked
        return None


# ---------------- the compiled kernel ----------------


@dataclass(frozen=True)
class TritonKernel:
    """One compiled specialization (dtype, constexprs, num_warps, num_stages) for one arch."""

    name: str  # the PTX/CUBIN symbol
    ptx: bytes  # as Triton wrote it (user parameters + hidden ones)
    cubin: bytes
    arch: str  # "sm_90"
    num_warps: int
    num_ctas: int
    shared: int  # dynamic shared memory, bytes
    global_scratch_size: int
    global_scratch_align: int
    profile_scratch_size: int
    profile_scratch_align: int
    launch_cooperative_grid: bool
    launch_pdl: bool
    hash: str  # Triton's own hash of the compilation
    triton_version: str
    from_cache: bool = False
    entry: Optional[str] = None  # the cache file it was read from or written to; None: none holds it

    @property
    def block(self) -> int:
        return self.num_warps * 32

    @property
    def needs_scratch(self) -> bool:
        return self.global_scratch_size > 0 or self.profile_scratch_size > 0

    @property
    def ptx_isa(self) -> Optional[Tuple[int, int]]:
        return ptx_isa(self.ptx)


def cuda_version_for_ptx_isa(isa: Tuple[int, int]) -> Tuple[int, int]:
    """The CUDA release that introduced PTX ISA ``isa`` (the inverse of Triton's
    ``ptx_get_version``): ISA 8.0-8.5 -> CUDA 12.0-12.5, 8.6 -> 12.7, 8.7 -> 12.8, 8.8 -> 12.9,
    9.x -> 13.x."""
    major, minor = isa
    if major >= 9:
        return 13 + (major - 9), minor
    if major == 8:
        return (12, minor) if minor < 6 else (12, minor + 1)
    return (11, minor) if major == 7 else (10, 0)


def ptx_version_for_cuda(cuda: Tuple[int, int]) -> int:
    """Triton's ``ptx_version`` option value for the newest PTX ISA CUDA ``cuda`` loads (e.g. 87 for 12.8)."""
    major, minor = cuda
    if major >= 13:
        return 90 + (major - 13) * 10 + minor
    if major == 12:
        return 80 + minor if minor < 6 else 80 + minor - 1
    return 70 + minor


def ptx_driver_note(isa: Optional[Tuple[int, int]], driver: Optional[Tuple[int, int]]) -> Optional[str]:
    """A sentence if the CUDA ``driver`` cannot JIT-load PTX of ISA ``isa`` that Triton wrote; else None."""
    if driver is None or isa is None:
        return None
    need = cuda_version_for_ptx_isa(isa)
    if tuple(need) <= tuple(driver):
        return None
    return (f"Triton wrote PTX ISA {isa[0]}.{isa[1]} (CUDA {need[0]}.{need[1]}), newer than the CUDA driver "
            f"(CUDA {driver[0]}.{driver[1]}): the driver cannot JIT-load it, so a TensorRT engine embedding it would "
            "fail to build or load; eager launches use the CUBIN. Fix: pass compile_options={'ptx_version': "
            f"{ptx_version_for_cuda(driver)}}} (an older PTX ISA) or update the driver")


# ---------------- cache ----------------


def _encode(k: TritonKernel) -> bytes:
    """An entry's payload (:func:`~trt_kernels.cache_store.pack_payload`): the metadata and format as
    the header, then the PTX and the CUBIN. The store frames and checksums it."""
    meta = {f: v for f, v in asdict(k).items() if f not in ("ptx", "cubin", "from_cache", "entry")}
    return cache_store.pack_payload(dict(meta, format=_FORMAT), ptx=k.ptx, cubin=k.cubin)


def _decode(payload: bytes, key: str, entry: Path) -> TritonKernel:
    """The kernel in the payload the store has checked of the entry at ``entry``; raises on one of another
    format or key."""
    meta, (ptx, cubin) = cache_store.unpack_payload(payload, "ptx", "cubin")
    if meta.pop("format") != _FORMAT or meta["hash"] != key:
        raise ValueError("other format or key")
    meta.pop("entry", None)  # (never written: where an entry lies is where it was read)
    return TritonKernel(ptx=ptx, cubin=cubin, from_cache=True, entry=str(entry), **meta)


# ---------------- compile ----------------

_MEMO = cache_store.LRUMemo(cache_store.MEMO_ENTRIES)  # Triton's hash -> TritonKernel, most recently used kept


def forget() -> None:
    """Forget the kernels this process compiled or read (tests: the next compile reads the disk cache or
    runs Triton, as in a fresh process)."""
    _MEMO.clear()


def _target(arch: str):
    from triton.backends.compiler import GPUTarget

    m = re.match(r"^sm_(\d+)[af]?$", arch)
    if not m:
        raise SpecError(f"arch {arch!r} is not of the form sm_XY. Fix: e.g. 'sm_90'")
    return GPUTarget("cuda", int(m.group(1)), 32)


def triton_hash(src, target, options: Mapping[str, Any]) -> Optional[str]:
    """Triton's own hash of this compilation (what ``triton.compile`` keys its cache by), or None
    where this Triton's internals differ (then nothing is cached on disk by us)."""
    try:
        from triton._C.libtriton import get_cache_invalidating_env_vars
        from triton.compiler.compiler import make_backend
        from triton.runtime.cache import get_cache_key

        backend = make_backend(target)
        opts = backend.parse_options(dict(options, **src.parse_options()))
        key = get_cache_key(src, backend, opts, env_vars=get_cache_invalidating_env_vars())
        return hashlib.sha256(key.encode("utf-8")).hexdigest()
    except Exception as e:  # noqa: BLE001 - internal API drift: compile without our cache
        _LOG.debug("trt_kernels: cannot compute Triton's cache key (%s)", e)
        return None


def fp_fusion_option(options: Mapping[str, Any]) -> Dict[str, Any]:
    """``options`` with ``enable_fp_fusion`` made explicit: Triton 3.9 warns on every compile that leaves
    it to ``TRITON_DEFAULT_FP_FUSION`` (whose default, fusion on, becomes off in 3.10). An explicit
    option, or that environment variable, wins; otherwise fusion stays on, as every Triton 3.x up to
    3.9 compiles (and as ``kernel[grid]`` launches of the same kernel do today)."""
    out = dict(options)
    if "enable_fp_fusion" not in out:
        env = os.environ.get("TRITON_DEFAULT_FP_FUSION")
        out["enable_fp_fusion"] = True if env is None else env.strip().lower() in ("1", "true", "on", "yes")
    return out


def _entry_path(key: str) -> Optional[Path]:
    """Where this process writes the kernel of Triton hash ``key`` (under
    :func:`~trt_kernels.cache_store.cache_root`); None when the cache is disabled."""
    root = cache_store.cache_root()
    return root / "triton" / f"{key}.bin" if root is not None else None


def compile_triton(fn, signature: Mapping[str, str], constexprs: Mapping[str, Any], *, arch: str,
                   options: Mapping[str, Any], label: str,
                   attrs: Optional[Mapping[Tuple[int, ...], Any]] = None) -> TritonKernel:
    """Compile ``fn`` (a ``@triton.jit`` function) for ``arch`` without a GPU; PTX, CUBIN and metadata.
    ``attrs``: Triton's per-parameter attributes (``{(index in fn.params,): [["tt.divisibility", 16]]}``),
    what ``kernel[grid]`` derives from a launch's arguments.

    Cached under the package's cache directory (:func:`trt_kernels.cache_store.cache_root`) as
    ``triton/<Triton's hash>.bin`` (atomic writes, the whole entry checksummed by the store; Triton's hash
    covers the attributes)."""
    triton = require_triton()
    src = triton.compiler.ASTSource(fn=fn, signature=dict(signature), constexprs=dict(constexprs),
                                    attrs=dict(attrs or {}))
    target = _target(arch)
    key = triton_hash(src, target, options)
    if key is not None:
        hit = _MEMO.get(key)
        if hit is not None:
            return hit
    path = _entry_path(key) if key is not None else None
    k = None
    for root in (cache_store.read_roots() if key is not None else ()):
        where = root[0] / "triton" / f"{key}.bin"
        k = cache_store.read_entry(where, _MAGIC, lambda payload: _decode(payload, key, where), root)
        if k is not None:
            break
    if k is None:
        try:
            ck = triton.compile(src, target=target, options=dict(options))
        except Exception as e:  # noqa: BLE001 - Triton's errors carry the source location
            from trt_kernels.sources.archs import feature_hint

            hint = feature_hint(str(e), arch)
            raise CompileError(f"{label}: Triton could not compile {getattr(fn, '__name__', fn)!r} for {arch} "
                               f"(signature {dict(signature)}, constexprs {dict(constexprs)}, options "
                               f"{dict(options)}{f', attributes {dict(attrs)}' if attrs else ''})"
                               f"{f': {hint}' if hint else ''}:\n{e}") from e
        md = ck.metadata
        ptx = ck.asm["ptx"]
        k = TritonKernel(
            name=str(md.name), ptx=(ptx.encode() if isinstance(ptx, str) else bytes(ptx)).rstrip(b"\x00"),
            cubin=bytes(ck.asm["cubin"]), arch=arch, num_warps=int(md.num_warps),
            num_ctas=int(getattr(md, "num_ctas", 1)), shared=int(md.shared),
            global_scratch_size=int(getattr(md, "global_scratch_size", 0) or 0),
            global_scratch_align=int(getattr(md, "global_scratch_align", 1) or 1),
            profile_scratch_size=int(getattr(md, "profile_scratch_size", 0) or 0),
            profile_scratch_align=int(getattr(md, "profile_scratch_align", 1) or 1),
            launch_cooperative_grid=bool(getattr(md, "launch_cooperative_grid", False)),
            launch_pdl=bool(getattr(md, "launch_pdl", False)),
            hash=str(key or ck.hash), triton_version=str(triton.__version__),
        )
        if path is not None and cache_store.write_entry(path, _MAGIC, _encode(k)):
            k = replace(k, entry=str(path))
    if key is not None:
        k = _MEMO.setdefault(key, k)
    return k
