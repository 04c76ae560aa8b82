"""The emulator's engine format: what ``build_serialized_network`` returns and
``Runtime.deserialize_cuda_engine`` reads.

``MAGIC`` (8 bytes), then a little-endian ``u32`` format version, a ``u32`` payload length, the
SHA-256 of the payload (32 bytes) and the payload: UTF-8 JSON of the engine plan (see
``_builder._Build.run``). Everything an AOT plugin layer needs at run time is inside (kernel
name, PTX, launch parameters and extra arguments as dimension expressions), so deserializing
needs neither the plugin's Python code nor the library that declared it, as with a real AOT
engine. This is NOT TensorRT's plan format: real TensorRT cannot read these bytes, nor the
emulator TensorRT's.
"""

import hashlib
import json
import struct
from typing import Any, Dict

MAGIC = b"TRTKEMU\x00"
#: 2: the plan records ``tensorrt_version`` and ``compute_capability`` (checked when deserialized);
#: 3: also ``hardware_compatibility_level`` (by name), which with the VERSION_COMPATIBLE and EXCLUDE_LEAN_RUNTIME
#: flags among ``config.flags`` decides where the plan deserializes (``_engine.Runtime``)
VERSION = 3
_HEADER = struct.Struct("<8sII32s")


class FormatError(ValueError):
    pass


def encode(plan: Dict[str, Any]) -> bytes:
    payload = json.dumps(plan, sort_keys=True, separators=(",", ":")).encode()
    return _HEADER.pack(MAGIC, VERSION, len(payload), hashlib.sha256(payload).digest()) + payload


def decode(blob) -> Dict[str, Any]:
    data = bytes(blob)
    if len(data) < _HEADER.size or not data.startswith(MAGIC):
        raise FormatError("not an engine built by the TensorRT emulator (bad magic); real TensorRT plans "
                          "cannot be run by the emulator")
    _, version, length, digest = _HEADER.unpack_from(data)
    if version != VERSION:
        raise FormatError(f"engine format version {version}; this emulator reads version {VERSION}")
    payload = data[_HEADER.size:]
    if len(payload) != length:
        raise FormatError(f"truncated engine: {len(payload)} of {length} payload bytes")
    if hashlib.sha256(payload).digest() != digest:
        raise FormatError("corrupt engine: checksum mismatch")
    return json.loads(payload)
