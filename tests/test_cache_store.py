"""The disk cache under faults and bad input (issue 15): no damaged entry is trusted, its
header included, and a bad entry is recompiled and rewritten with one warning."""

import json
import logging
import os
import random

import pytest

from trt_kernels import compile as comp
from kernels import SIGMOID

ARCH = "sm_90"


@pytest.fixture
def cache(tmp_path, monkeypatch, caplog):
    root = tmp_path / "cache"
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    comp._MEMO.clear()
    caplog.set_level(logging.DEBUG, logger="trt_kernels")
    calls = []
    real = comp._nvrtc_compile

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(comp, "_nvrtc_compile", counting)
    yield root, calls
    comp._MEMO.clear()


def _compile(source=SIGMOID, arch=ARCH, fresh=True):
    if fresh:
        comp._MEMO.clear()  # as a fresh process sees the cache
    return comp.compile_program(source, ["my_sigmoid"], arch=arch)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "trt_kernels" and r.levelno >= logging.WARNING]


def _same(a, b):
    return (a.ptx, a.cubin, a.lowered, a.arch, a.nvrtc_version, a.log, a.key, a.toolchain) == \
           (b.ptx, b.cubin, b.lowered, b.arch, b.nvrtc_version, b.log, b.key, b.toolchain)


# ---------------- 2. the whole entry is checksummed ----------------


def test_no_single_bit_flip_is_trusted(cache):
    """Every bit of the first KiB (magic, framing, the codec's JSON header) and of 64 sampled
    bytes of PTX and CUBIN, flipped one at a time: the entry is rejected or reads as the original."""
    root, _ = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    blob = path.read_bytes()
    ident = comp._toolchain_id()

    def read():
        comp._MEMO.clear()
        return comp._lookup(good.key, ARCH, ident)

    assert _same(read(), good)  # the intact entry is read
    rng = random.Random(15)
    head = min(len(blob), 1024)
    offsets = list(range(head)) + rng.sample(range(head, len(blob)), 64) + [len(blob) - 1]
    trusted = []
    with open(path, "r+b", buffering=0) as f:  # flip in place, one byte at a time
        for i in offsets:
            for bit in range(8):
                f.seek(i)
                f.write(bytes([blob[i] ^ (1 << bit)]))
                got = read()
                if got is not None and not _same(got, good):
                    trusted.append((i, bit))
            f.seek(i)
            f.write(blob[i:i + 1])
    assert path.read_bytes() == blob
    assert trusted == [], f"{len(trusted)} flipped entries trusted, first at byte/bit {trusted[:5]}"


def test_lengths_moved_between_ptx_and_cubin_are_rejected(cache):
    """The header's ptx_len + 1 and cubin_len - 1 (same total) once handed out wrong PTX and CUBIN."""
    root, _ = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    blob = path.read_bytes()
    plen, clen = len(good.ptx), len(good.cubin)
    d = 1 if len(str(plen + 1)) == len(str(plen)) and len(str(clen - 1)) == len(str(clen)) else -1
    old = (f'"ptx_len": {plen}, "cubin_len": {clen}').encode()
    new = (f'"ptx_len": {plen + d}, "cubin_len": {clen - d}').encode()
    assert blob.count(old) == 1 and len(new) == len(old)
    path.write_bytes(blob.replace(old, new))
    comp._MEMO.clear()
    assert comp._lookup(good.key, ARCH, comp._toolchain_id()) is None


def test_a_bad_entry_is_recompiled_and_rewritten_once_with_one_warning(cache, caplog):
    root, calls = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x10
    path.write_bytes(bytes(blob))
    comp._MEMO.clear()
    caplog.clear()
    # a declaration reads the entry (the ABI check) before the launch compiles: one problem, one warning
    assert comp.cached_program(SIGMOID, ["my_sigmoid"]) is None
    again = _compile(fresh=False)
    assert not again.from_cache and _same(again, good) and len(calls) == 2
    warned = _warnings(caplog)
    assert len(warned) == 1 and str(path) in warned[0] and "corrupt" in warned[0], warned
    assert _compile().from_cache and len(calls) == 2  # rewritten whole
    assert len(_warnings(caplog)) == 1


def test_triton_entries_are_framed_and_checked_by_the_store(tmp_path):
    """The Triton codec's entries: no flipped bit trusted either (no Triton needed)."""
    from trt_kernels import cache_store
    from trt_kernels import triton_source as ts

    k = ts.TritonKernel(name="k", ptx=b".version 8.7\n.entry k()\n{ ret; }\n", cubin=b"\x7fELF" + os.urandom(300),
                        arch=ARCH, num_warps=4, num_ctas=1, shared=0, global_scratch_size=0, global_scratch_align=1,
                        profile_scratch_size=0, profile_scratch_align=1, launch_cooperative_grid=False,
                        launch_pdl=False, hash="ab" * 32, triton_version="3.6.0")
    path = tmp_path / "triton" / f"{k.hash}.bin"
    cache_store.write_entry(path, ts._MAGIC, ts._encode(k))
    blob = path.read_bytes()
    assert blob.startswith(b"TRTKT\x00")

    def read():
        return cache_store.read_entry(path, ts._MAGIC, lambda p: ts._decode(p, k.hash))

    good = read()
    assert good == ts.TritonKernel(**{**k.__dict__, "from_cache": True})
    with open(path, "r+b", buffering=0) as f:
        for i in range(len(blob)):
            for bit in range(8):
                f.seek(i)
                f.write(bytes([blob[i] ^ (1 << bit)]))
                got = read()
                assert got is None or got == good, (i, bit)
            f.seek(i)
            f.write(blob[i:i + 1])


def test_an_entry_of_the_older_format_is_replaced_without_a_warning(tmp_path, caplog):
    """Triton's cache path does not change with our format (it is Triton's hash): an entry an
    earlier trt-kernels wrote is recompiled and rewritten, said at info level, not as corruption."""
    from trt_kernels import cache_store
    from trt_kernels import triton_source as ts

    caplog.set_level(logging.DEBUG, logger="trt_kernels")
    header = json.dumps({"format": 1, "hash": "ab" * 32, "ptx_len": 3, "cubin_len": 0}, sort_keys=True).encode()
    path = tmp_path / "triton" / f"{'ab' * 32}.bin"
    path.parent.mkdir()
    path.write_bytes(b"TRTKT\x00" + len(header).to_bytes(4, "little") + header + b"ptx")
    assert cache_store.read_entry(path, ts._MAGIC, lambda p: ts._decode(p, "ab" * 32)) is None
    assert _warnings(caplog) == []
    assert any(r.levelno == logging.INFO and "older trt-kernels format" in r.getMessage() for r in caplog.records)
