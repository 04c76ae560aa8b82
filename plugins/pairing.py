"""The TensorRT / Torch-TensorRT version pairing: which TensorRT each Torch-TensorRT release requires,
and whether a TensorRT has a usable QDP AOT layer.

Which TensorRT a user has comes from their Torch-TensorRT, which pins it per release
(:data:`PAIRINGS`): torch 2.11 means Torch-TensorRT 2.11 over TensorRT 10.15.1. Nothing here imports
tensorrt: ``trt-kernels doctor`` and the TensorRT side's probe read versions they already have.
"""

from __future__ import annotations

from typing import Optional


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
