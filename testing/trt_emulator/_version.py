"""Which TensorRT the emulator models: the version of the bindings wheel whose pure-Python
``tensorrt`` package runs over it (set by :mod:`bootstrap` before the emulator is imported).

A user's TensorRT comes from their Torch-TensorRT (``Requires-Dist``): torch 2.11 pairs with
Torch-TensorRT 2.11 over TensorRT 10.15.1; torch 2.13 with Torch-TensorRT 2.13 over TensorRT 11.0.
The emulator's names, enum values and behaviour follow the line of the version it models
(``PROFILE``); a version outside the lines it models is refused at bootstrap."""

import sys

#: the bindings version this process emulates, e.g. "10.15.1.29" (bootstrap sets it on the package
#: before importing the emulator; imported on its own, e.g. by a test reading the sources, 11.4)
VERSION: str = getattr(sys.modules.get(__package__ or ""), "_EMULATED_VERSION", None) or "11.4.0.106"
MAJOR_MINOR = tuple(int(p) for p in VERSION.split(".")[:2])
#: "10.15" or "11": the line of TensorRT whose names and enum values the emulator exposes
PROFILE = "10.15" if MAJOR_MINOR == (10, 15) else "11" if MAJOR_MINOR[0] == 11 else ""
