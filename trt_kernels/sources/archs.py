"""Which GPUs code compiled for an arch loads on: the facts behind engines for a fleet of GPU generations.

A CUBIN runs only on its own major arch (sm_80 CUBIN: 8.0 and 8.6, not 9.0); PTX is compiled by the driver
for the GPU it loads on, so PTX for ``sm_80`` loads on every GPU of compute capability 8.0 and newer. An
``a`` target (``sm_90a``: wgmma, setmaxnreg) loads only on that exact compute capability and an ``f`` target
(``sm_100f``) only within its major family. TensorRT's AOT plugins embed PTX, so the arch the PTX targets
decides where an engine holding the plugin can be deserialized:

* a plain engine runs only on a GPU of the building GPU's compute capability;
* a hardware-compatible engine (``HardwareCompatibilityLevel.AMPERE_PLUS``, Torch-TensorRT's
  ``hardware_compatible=True``) must run on every GPU of compute capability 8.0 and newer, so its plugins'
  PTX must target sm_80 (or lower) with no suffix (:data:`LEVEL_FLOOR`).

The arch an op's AOT code targets is chosen by one rule, :meth:`trt_kernels.op.KernelOp.aot_target`.
Lowering the arch can slow a kernel without any error (bf16 arithmetic and atomics become fp32 or CAS loops
below sm_90); a feature a lower arch lacks (TMA, wgmma, ``fence.proxy.async``) fails to compile, and
:func:`feature_hint` turns ptxas's words into the fix.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

#: the environment variable naming the lowest arch the AOT plugins' PTX must load on (``sm_80``)
MIN_ARCH_ENV = "TRT_KERNELS_MIN_ARCH"

#: TensorRT's hardware compatibility levels that widen where an engine runs, and the lowest arch each must load on
LEVEL_FLOOR = {"AMPERE_PLUS": "sm_80"}

#: GPU generations by the compute capability they start at: (compute capability, family, cards), for reports
GENERATIONS = (
    ((7, 5), "Turing", "T4, RTX 20"),
    ((8, 0), "Ampere", "A100, A30"),
    ((8, 6), "Ampere", "A10, A40, RTX 30"),
    ((8, 9), "Ada", "L4, L40, RTX 40"),
    ((9, 0), "Hopper", "H100, H200"),
    ((10, 0), "Blackwell", "B200, GB200"),
    ((12, 0), "Blackwell", "RTX 50, RTX PRO"),
)


def normalize_arch(arch) -> str:
    """``"sm_90"``, ``"90"``, ``90``, ``(9, 0)`` or ``"compute_90"`` -> ``"sm_90"``."""
    if isinstance(arch, tuple):
        if len(arch) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in arch):
            raise ValueError(f"arch {arch!r}: expected a (major, minor) pair such as (9, 0)")
        return f"sm_{arch[0]}{arch[1]}"
    if isinstance(arch, bool) or not isinstance(arch, (str, int)):
        raise ValueError(f"arch {arch!r}: expected something like 'sm_90', 'sm_90a' or 90")
    s = str(arch).strip()
    if s.isdigit():
        return f"sm_{s}"
    for prefix in ("sm_", "compute_"):  # (sm|compute)_<digits>[a|f], read without a regular expression
        if s.startswith(prefix):
            num = s[len(prefix):]
            suffix = num[-1:] if num.endswith(("a", "f")) else ""
            digits = num[: len(num) - len(suffix)]
            if digits.isascii() and digits.isdigit():
                return f"sm_{digits}{suffix}"
            break
    raise ValueError(f"arch {arch!r}: expected something like 'sm_90', 'sm_90a' or 90")


def arch_key(arch: str) -> Tuple[int, str]:
    """``"sm_90a"`` -> ``(90, "a")``, ``"sm_86"`` -> ``(86, "")`` (a normalized arch)."""
    num = arch[3:] if arch.startswith("sm_") else arch
    suffix = num[-1] if num[-1:] in ("a", "f") else ""
    return int(num[: len(num) - len(suffix)]), suffix


def below(arch: str, floor: str) -> bool:
    """Whether ``arch`` is of an older generation than ``floor`` (normalized archs; suffixes aside)."""
    return arch_key(arch)[0] < arch_key(floor)[0]


def covers(arch: str, floor: str) -> bool:
    """Whether PTX for ``arch`` loads on every GPU of compute capability ``floor`` and newer: a plain target
    no higher than ``floor`` (an ``a`` or ``f`` target loads on one arch or one family only)."""
    n, suffix = arch_key(arch)
    return not suffix and n <= arch_key(floor)[0]


def loads_on(arch: str, cards: bool = False) -> str:
    """Where PTX for ``arch`` loads, in words: ``compute capability 8.0 and newer (Ampere, Ada, Hopper,
    Blackwell)``; with ``cards``, the cards of each generation too."""
    n, suffix = arch_key(arch)
    major, minor = n // 10, n % 10
    if suffix == "a":
        return f"compute capability {major}.{minor} only (sm_{n}a code runs on that arch alone)"
    gens = [(fam, c) for cc, fam, c in GENERATIONS if cc >= (major, minor) and (suffix != "f" or cc[0] == major)]
    families: dict = {}
    for fam, c in gens:
        families.setdefault(fam, []).append(c)
    names = [f"{fam} ({', '.join(cs)})" if cards else fam for fam, cs in families.items()]
    where = (f"compute capability {major}.{minor} and newer of the {major}.x family only" if suffix == "f"
             else f"compute capability {major}.{minor} and newer")
    return where + (f" ({', '.join(names)})" if names else "")


def in_hardware_compatible_engines(arch: str) -> str:
    """Whether PTX for ``arch`` may be in an AMPERE_PLUS engine, as a short phrase for reports."""
    floor = LEVEL_FLOOR["AMPERE_PLUS"]
    if covers(arch, floor):
        return "yes"
    return f"no (it must target {floor} or lower: set {MIN_ARCH_ENV}={floor}, or build with hardware_compatible)"


def ptx_target(ptx) -> Optional[str]:
    """The ``.target`` of PTX text (bytes or str; ``sm_80``, ``sm_90a``), or None where it has none."""
    if isinstance(ptx, str):
        ptx = ptx.encode("latin-1", "replace")
    at = ptx.find(b"\n.target ")
    if at < 0:
        at = ptx.find(b".target ")
        if at != 0:
            return None
    else:
        at += 1
    word = ptx[at + len(b".target "):].split(None, 1)
    if not word:
        return None
    return word[0].split(b",")[0].decode("ascii", "replace")


#: the compute capabilities GPUs have, from sm_75 on (NVRTC 13.5's list, and sm_101, which CUDA 13 renamed sm_110):
#: a floor between two of them names no GPU; one above the last may be a GPU newer than this list
KNOWN_ARCHS = (75, 80, 86, 87, 88, 89, 90, 100, 101, 103, 107, 110, 120, 121)


def arch_problem(arch: str) -> Optional[str]:
    """Why nothing can be compiled for ``arch`` (normalized): below sm_75, the lowest arch NVRTC 13 compiles for, or
    a compute capability no GPU has (sm_85) below the newest one known; None otherwise."""
    num = arch_key(arch)[0]
    if num < 75:
        return f"{arch} is below sm_75, the lowest arch NVRTC 13 compiles for"
    if num < KNOWN_ARCHS[-1] and num not in KNOWN_ARCHS:
        lower, higher = max(a for a in KNOWN_ARCHS if a < num), min(a for a in KNOWN_ARCHS if a > num)
        return f"{arch} is no GPU's compute capability (the nearest: sm_{lower} and sm_{higher})"
    return None


def floor_problem(arch: str) -> Optional[str]:
    """Why ``arch`` (normalized) cannot be a floor (:func:`arch_problem`, said for a floor)."""
    problem = arch_problem(arch)
    if problem and not below(arch, "sm_75"):
        problem += "; a floor is the arch of the oldest GPU the code must run on"
    return problem


def check_min_arch(op: str, value) -> str:
    """A declaration's ``min_arch``, normalized; :class:`~trt_kernels.errors.SpecError` naming the field where it
    is no arch, one NVRTC and TensorRT cannot target (below sm_75), or no GPU's (:func:`floor_problem`)."""
    from trt_kernels.validate import fail

    try:
        arch = normalize_arch(value)
    except (ValueError, TypeError):
        raise fail(op, "min_arch", f"{value!r} is not a GPU arch", "write it like 'sm_80', 'sm_90a' or 80") from None
    problem = floor_problem(arch)
    if problem:
        fix = ("use min_arch='sm_75' or higher ('sm_80' for TensorRT's hardware-compatible engines)"
               if below(arch, "sm_75") else
               "use the arch of the oldest GPU the op must run on, e.g. min_arch='sm_80' (A100) or "
               "'sm_86' (A10, RTX 30)")
        raise fail(op, "min_arch", problem, fix)
    return arch


def check_arch_override(op: str, value) -> str:
    """A declaration's ``arch_override``, normalized; :class:`~trt_kernels.errors.SpecError` naming the field where it
    is no arch, or none NVRTC 13 compiles for: below sm_75 or no GPU's (NVRTC said only "invalid value for
    --gpu-architecture", naming no field)."""
    from trt_kernels.validate import fail

    try:
        arch = normalize_arch(value)
    except (ValueError, TypeError):
        raise fail(op, "arch_override", f"{value!r} is not a GPU arch",
                   "write it like 'sm_90', 'sm_90a' or 90") from None
    problem = arch_problem(arch)
    if problem:
        raise fail(op, "arch_override", problem, "give the arch of the GPU to compile for, e.g. arch_override='sm_90', "
                   "or leave it out (the visible GPU's, or TRT_KERNELS_ARCH)")
    return arch


def env_min_arch() -> Optional[str]:
    """:data:`MIN_ARCH_ENV`, normalized, or None where it is unset (ValueError naming it where it is no arch, below
    sm_75, or no GPU's)."""
    value = os.environ.get(MIN_ARCH_ENV)
    if not value:
        return None
    try:
        arch = normalize_arch(value)
    except ValueError as e:
        raise ValueError(f"{MIN_ARCH_ENV}={value}: {e}. Fix: {MIN_ARCH_ENV}=sm_80, or unset it") from None
    problem = floor_problem(arch)
    if problem:
        raise ValueError(f"{MIN_ARCH_ENV}={value}: {problem}. Fix: {MIN_ARCH_ENV}=sm_80, or unset it")
    return arch


def level_of(settings) -> Optional[str]:
    """The hardware compatibility level a Torch-TensorRT compilation asks for (its ``hardware_compatible``
    setting sets AMPERE_PLUS), or None for a plain engine."""
    return "AMPERE_PLUS" if getattr(settings, "hardware_compatible", False) else None


def feature_hint(log: str, arch: str) -> Optional[str]:
    """Where a compile for ``arch`` failed because the code uses a feature of a newer arch (ptxas: ``Feature
    'cp.async.bulk' requires .target sm_90 or higher``, ``Instruction 'wgmma.fence' not supported on .target
    'sm_80'``): the fix, naming the feature's arch where the log does; else None."""
    need = None
    marker = "requires .target sm_"
    at = log.find(marker)
    if at >= 0:
        digits = ""
        for ch in log[at + len(marker):]:
            if not (ch.isdigit() or (digits and ch in "af")):
                break
            digits += ch
        need = f"sm_{digits}" if digits else None
    if need is None and "not supported on .target" not in log:
        return None
    what = (f"the code uses a feature of {need} or newer (ptxas names it below), which {arch} lacks" if need else
            f"the code uses an instruction that {arch} lacks (ptxas names it below; wgmma and setmaxnreg need sm_90a)")
    example = need or "sm_90a"
    return (f"{what}. Fix: declare the kernel's own minimum, min_arch={example!r} (its AOT plugin then loads on "
            f"{loads_on(example)}, so it cannot be in a hardware-compatible engine), or guard that code with "
            f"`#if __CUDA_ARCH__ >= {arch_key(example)[0]}0` and give lower archs another path")
