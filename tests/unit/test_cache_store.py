"""The disk cache under faults and bad input (issue 15): `cache clear` removes only what the
package wrote; no damaged entry is trusted, header included; special files, things in the way
and unwritable caches neither hang, exhaust memory, nor warn in every compile; stale temporary
files go; the in-memory memo is bounded."""

import errno
import json
import logging
import os
import random
import re
import stat
import subprocess
import sys
import textwrap
import time
import tracemalloc
from pathlib import Path
from unittest import mock

import pytest

from kernels import SIGMOID
from support import counting_compile_cache
from trt_kernels import cli
from trt_kernels.sources import nvrtc as comp

TESTS = Path(__file__).resolve().parents[1]
ARCH = "sm_90"


@pytest.fixture
def cache(tmp_path, monkeypatch, caplog):
    root = tmp_path / "cache"
    calls = counting_compile_cache(root, monkeypatch)
    caplog.set_level(logging.DEBUG, logger="trt_kernels")
    yield root, calls
    comp.forget()


def _compile(source=SIGMOID, arch=ARCH, fresh=True):
    if fresh:
        comp.forget()  # as a fresh process sees the cache
    return comp.compile_program(source, ["my_sigmoid"], arch=arch)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "trt_kernels" and r.levelno >= logging.WARNING]


def _same(a, b):
    return (a.ptx, a.cubin, a.lowered, a.arch, a.nvrtc_version, a.log, a.key, a.toolchain) == \
           (b.ptx, b.cubin, b.lowered, b.arch, b.nvrtc_version, b.log, b.key, b.toolchain)


# ---------------- 1. cache clear removes what the package wrote, nothing else ----------------


def _clear(capsys):
    rc = cli.main(["cache", "clear"])
    return rc, capsys.readouterr().out


def test_clear_removes_our_entries_and_keeps_everything_else(cache, tmp_path, capsys):
    root, _ = cache
    a = _compile()
    b = _compile(SIGMOID + "\n// b", arch="sm_80")
    ours = [root / a.key / f"{ARCH}.bin", root / b.key / "sm_80.bin"]
    tmp_file = root / a.key / f"{ARCH}.bin.abc123xy.tmp"  # a write that died
    tmp_file.write_bytes(b"half an entry")
    tri = root / "triton" / ("ab" * 32 + ".bin")
    tri.parent.mkdir()
    tri.write_bytes(b"TRTKT\x00" + os.urandom(100))
    ours += [tmp_file, tri]
    removed_bytes = sum(p.stat().st_size for p in ours)

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / f"{ARCH}.bin").write_bytes(b"TRTKC\x00 outside the cache: never followed")
    (outside / "data.txt").write_text("precious")
    foreign = {
        "important.txt": "keep",  # the brief's example
        "notes/keep.md": "notes",
        f"{'cd' * 32}/{ARCH}.bin": "a key-named directory, an entry-named file without our magic",
        f"{'cd' * 32}/README": "someone's file",
        "other.bin": "TRTKC\x00 magic, but not where an entry lives",
    }
    for rel, text in foreign.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    (root / ("ef" * 32)).symlink_to(outside, target_is_directory=True)  # named like a key dir
    (root / a.key / "sm_86.bin").symlink_to(outside / f"{ARCH}.bin")  # named like an entry
    (root / "link-out").symlink_to(outside, target_is_directory=True)
    n_foreign = len(foreign) + 3

    rc, out = _clear(capsys)
    assert rc == 0
    for p in ours:
        assert not os.path.lexists(p), p
    assert not (root / b.key).exists() and not (root / "triton").exists()  # emptied: removed
    assert (root / a.key).is_dir()  # still holds a link that is not ours
    for rel, text in foreign.items():
        assert (root / rel).read_text() == text, rel
    for link in (root / ("ef" * 32), root / a.key / "sm_86.bin", root / "link-out"):
        assert link.is_symlink()
    assert sorted(p.name for p in outside.iterdir()) == ["data.txt", f"{ARCH}.bin"]
    assert (outside / "data.txt").read_text() == "precious"
    assert root.is_dir()
    assert f"removed from {root}: 3 cache entries, 1 temporary file, 2 emptied directories" in out
    assert f"({removed_bytes / 1024:.1f} KiB)" in out or f"({removed_bytes} bytes)" in out
    assert f"kept untouched: {n_foreign} files" in out and "did not write" in out

    rc, out = _clear(capsys)  # again: nothing of ours left, the rest still kept
    assert rc == 0 and "0 cache entries, 0 temporary files, 0 emptied directories" in out
    assert f"kept untouched: {n_foreign} files" in out


@pytest.mark.parametrize("n", [1, 5, 6, 8])
def test_clear_lists_the_first_five_places_it_kept_and_counts_the_rest(cache, capsys, n):
    root, _ = cache
    root.mkdir(exist_ok=True)
    for i in range(n):
        (root / f"notes{i}.txt").write_text("mine")
    (root / "empty-dir").mkdir()  # a place kept, with no file in it
    rc, out = _clear(capsys)
    assert rc == 0 and f"kept untouched: {n} file{'s' if n > 1 else ''}" in out
    listed = out.split("symbolic links never followed), in ", 1)[1].splitlines()[0]
    assert listed.count(str(root)) == min(n + 1, 5)
    assert listed.endswith(f" and {n + 1 - 5} more") if n + 1 > 5 else "more" not in listed


def test_clear_recognises_older_formats_by_magic(cache, capsys):
    root, _ = cache
    key = "12" * 32
    header = json.dumps({"format": 2, "arch": ARCH}).encode()
    (root / key).mkdir(parents=True)
    (root / key / f"{ARCH}.bin").write_bytes(b"TRTKC\x00" + len(header).to_bytes(4, "little") + header)  # format 2
    (root / f"{key}.bin").write_bytes(b"TRTKC\x00" + len(header).to_bytes(4, "little") + header)  # format 1
    (root / f"{key}.bin.zz99zz99.tmp").write_bytes(b"x")
    rc, out = _clear(capsys)
    assert rc == 0 and list(root.iterdir()) == []
    assert "2 cache entries, 1 temporary file, 1 emptied directory" in out
    assert "kept untouched: nothing" in out


def test_clear_a_directory_of_foreign_files_only(tmp_path):
    """The issue's reproduction, through the command line: nothing of the package's there."""
    d = tmp_path / "mine"
    d.mkdir()
    (d / "important.txt").write_text("keep\n")
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(d))
    env.pop("TRT_KERNELS_CACHE", None)
    r = subprocess.run([sys.executable, "-m", "trt_kernels", "cache", "clear"], capture_output=True, text=True,
                       env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert (d / "important.txt").read_text() == "keep\n"
    assert "0 cache entries" in r.stdout and "kept untouched: 1 file" in r.stdout


# ---------------- 2. the whole entry is checksummed ----------------


def test_no_single_bit_flip_is_trusted(cache):
    """Every bit of the first KiB (magic, framing, the codec's JSON header) and of 64 sampled
    bytes of PTX and CUBIN, flipped one at a time: the entry is rejected or reads as the original."""
    root, _ = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    blob = path.read_bytes()
    ident = comp.toolchain_id()

    def read():
        comp.forget()
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
    comp.forget()
    assert comp._lookup(good.key, ARCH, comp.toolchain_id()) is None


def test_a_bad_entry_is_recompiled_and_rewritten_once_with_one_warning(cache, caplog):
    root, calls = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0x10
    path.write_bytes(bytes(blob))
    comp.forget()
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
    from trt_kernels.sources import triton_compile as ts

    k = ts.TritonKernel(name="k", ptx=b".version 8.7\n.entry k()\n{ ret; }\n", cubin=b"\x7fELF" + os.urandom(300),
                        arch=ARCH, num_warps=4, num_ctas=1, shared=0, global_scratch_size=0, global_scratch_align=1,
                        profile_scratch_size=0, profile_scratch_align=1, launch_cooperative_grid=False,
                        launch_pdl=False, hash="ab" * 32, triton_version="3.6.0")
    path = tmp_path / "triton" / f"{k.hash}.bin"
    assert cache_store.write_entry(path, ts._MAGIC, ts._encode(k))
    blob = path.read_bytes()
    assert blob.startswith(b"TRTKT\x00")

    def read():
        return cache_store.read_entry(path, ts._MAGIC, lambda p: ts._decode(p, k.hash, path))

    good = read()
    assert good == ts.TritonKernel(**{**k.__dict__, "from_cache": True, "entry": str(path)})
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
    from trt_kernels.sources import triton_compile as ts

    caplog.set_level(logging.DEBUG, logger="trt_kernels")
    header = json.dumps({"format": 1, "hash": "ab" * 32, "ptx_len": 3, "cubin_len": 0}, sort_keys=True).encode()
    path = tmp_path / "triton" / f"{'ab' * 32}.bin"
    path.parent.mkdir()
    path.write_bytes(b"TRTKT\x00" + len(header).to_bytes(4, "little") + header + b"ptx")
    assert cache_store.read_entry(path, ts._MAGIC, lambda p: ts._decode(p, "ab" * 32, path)) is None
    assert _warnings(caplog) == []
    assert any(r.levelno == logging.INFO and "older trt-kernels format" in r.getMessage() for r in caplog.records)


# ---------------- 3. special files, things in the way, unwritable caches ----------------

CHILD = textwrap.dedent(r"""
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from kernels import SIGMOID
    from trt_kernels.sources import nvrtc as comp
    comp.nvrtc_version()  # loaded before the limit below
    with open("/proc/self/status") as f:
        vm = int([ln for ln in f if ln.startswith("VmSize:")][0].split()[1]) * 1024
    # reading /dev/zero into memory must not be possible: 2 GiB more than the process has now
    resource.setrlimit(resource.RLIMIT_AS, (vm + (2 << 30), resource.getrlimit(resource.RLIMIT_AS)[1]))
    t = time.perf_counter()
    prog = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    print("RESULT " + json.dumps({"from_cache": prog.from_cache, "seconds": time.perf_counter() - t}))
""")


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero") or
                    not os.path.exists("/proc/self/status"), reason="needs FIFOs, /dev/zero and /proc (Linux)")
@pytest.mark.parametrize("special", ["fifo", "dev_zero_link"])
def test_a_special_file_entry_neither_hangs_nor_exhausts_memory(cache, special):
    root, _ = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    path.unlink()
    if special == "fifo":
        os.mkfifo(path)
    else:
        path.symlink_to("/dev/zero")
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(root))
    env.pop("TRT_KERNELS_CACHE", None)
    try:
        r = subprocess.run([sys.executable, "-c", CHILD, str(TESTS)], capture_output=True, text=True, env=env,
                           timeout=90)
    except subprocess.TimeoutExpired:
        pytest.fail(f"a process declaring a kernel whose cache entry is a {special} hung")
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][len("RESULT "):])
    assert res["from_cache"] is False and res["seconds"] < 60
    assert re.search(r"is (a FIFO|a symbolic link \(to /dev/zero\)), not a regular file", r.stderr), r.stderr
    assert stat.S_ISREG(os.lstat(path).st_mode)  # replaced by a sound entry
    assert _compile().from_cache


def test_an_oversized_entry_is_not_read(cache):
    from trt_kernels import cache_store

    root, calls = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    with open(path, "r+b") as f:  # sparse: no disk, and no memory if it is never read
        f.truncate(cache_store.MAX_ENTRY_BYTES + 1)
    tracemalloc.start()
    try:
        assert not _compile().from_cache and len(calls) == 2
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < cache_store.MAX_ENTRY_BYTES // 4  # it was never read into memory
    assert _compile().from_cache


def test_an_empty_directory_where_an_entry_belongs_is_removed(cache, caplog):
    root, calls = cache
    good = _compile()
    path = root / good.key / f"{ARCH}.bin"
    path.unlink()
    path.mkdir()
    caplog.clear()
    assert not _compile().from_cache
    assert stat.S_ISREG(os.lstat(path).st_mode)
    warned = _warnings(caplog)
    assert len(warned) == 1 and "removed the empty directory" in warned[0] and str(path) in warned[0]
    assert _compile().from_cache and len(calls) == 2


def test_a_non_empty_directory_in_the_way_is_kept_and_said_once(cache, caplog):
    root, calls = cache
    good = _compile()
    for arch in ("sm_80", "sm_86", ARCH):
        path = root / good.key / f"{arch}.bin"
        if path.exists():
            path.unlink()
        path.mkdir()
        (path / "theirs.txt").write_text("not ours")
    caplog.clear()
    for arch in ("sm_80", "sm_86", ARCH):
        assert not _compile(arch=arch).from_cache
        assert (root / good.key / f"{arch}.bin" / "theirs.txt").read_text() == "not ours"
    warned = _warnings(caplog)
    assert len(warned) == 1, warned
    first = root / good.key / "sm_80.bin"
    assert "not empty" in warned[0] and f"Fix: remove the directory {first}, which trt-kernels did not" in warned[0]
    assert "TRT_KERNELS_CACHE_DIR" not in warned[0]  # (the cache is writable: nothing to do about it)


@pytest.mark.parametrize("what", ["file", "symlink"])
def test_a_file_or_link_where_a_key_directory_belongs_is_replaced(cache, tmp_path, caplog, what):
    root, calls = cache
    good = _compile()
    keydir = root / good.key
    for p in keydir.iterdir():
        p.unlink()
    keydir.rmdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    if what == "file":
        keydir.write_text("in the way")
    else:
        keydir.symlink_to(outside, target_is_directory=True)
    caplog.clear()
    assert not _compile().from_cache
    assert keydir.is_dir() and not keydir.is_symlink()
    assert stat.S_ISREG(os.lstat(keydir / f"{ARCH}.bin").st_mode)
    assert list(outside.iterdir()) == []  # nothing written through the link
    warned = _warnings(caplog)
    assert len(warned) == 1 and f"removed {keydir}" in warned[0], warned
    assert _compile().from_cache and len(calls) == 2


@pytest.mark.parametrize("how", ["under_a_file", "mkstemp_denied", "chmod"])
def test_an_unwritable_cache_is_said_once(cache, tmp_path, monkeypatch, caplog, how):
    root, calls = cache
    if how == "under_a_file":
        (tmp_path / "file").write_text("x")
        root = tmp_path / "file" / "cache"
        monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    elif how == "chmod":
        root.mkdir()
        root.chmod(0o555)
        if os.access(root, os.W_OK):
            root.chmod(0o755)
            pytest.skip("chmod does not make a directory read-only for this user (root)")
    denied = PermissionError(errno.EACCES, "Permission denied")
    with mock.patch("tempfile.mkstemp", side_effect=denied) if how == "mkstemp_denied" else mock.MagicMock():
        progs = [_compile(SIGMOID + f"\n// {i}") for i in range(3)]
    if how == "chmod":
        root.chmod(0o755)
    assert all(p.cubin and not p.from_cache for p in progs) and len(calls) == 3
    warned = _warnings(caplog)
    assert len(warned) == 1, warned
    assert str(root) in warned[0] and "TRT_KERNELS_CACHE_DIR" in warned[0] and "TRT_KERNELS_CACHE=0" in warned[0]
    later = [r for r in caplog.records if r.levelno == logging.DEBUG and "cannot write" in r.getMessage()]
    assert len(later) == 2


def test_stale_temporary_files_are_removed_when_writing_there(cache):
    root, _ = cache
    good = _compile()
    d = root / good.key
    day = 24 * 3600
    stale = d / "sm_80.bin.abcd1234.tmp"
    fresh = d / "sm_86.bin.efgh5678.tmp"  # maybe another process writing right now
    theirs = d / "notes.tmp"
    for p in (stale, fresh, theirs):
        p.write_bytes(b"partial")
    os.utime(stale, (time.time() - 2 * day,) * 2)
    os.utime(theirs, (time.time() - 2 * day,) * 2)
    _compile(arch="sm_80")  # writes into d
    assert not stale.exists()
    assert fresh.exists() and theirs.exists()


# ---------------- 10. the memo is bounded ----------------


def test_the_memo_keeps_the_most_recently_used_programs(cache, monkeypatch):
    _, calls = cache
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")  # a memo miss is an NVRTC compile

    def fake(source, names, opts, arch, version, key, label, toolchain_id=""):
        calls.append(source)
        return comp.CompiledProgram(ptx=b"", cubin=b"", lowered={n: n for n in names}, arch=arch,
                                    nvrtc_version=version, log="", key=key, from_cache=False, toolchain=toolchain_id)

    monkeypatch.setattr(comp, "_nvrtc_compile", fake)
    sources = [SIGMOID + f"\n// {i}" for i in range(1000)]
    first = comp.compile_program(sources[0], ["my_sigmoid"], arch=ARCH)
    for s in sources[1:]:
        comp.compile_program(s, ["my_sigmoid"], arch=ARCH)
        assert comp.compile_program(sources[0], ["my_sigmoid"], arch=ARCH) is first  # used all along: kept
    assert len(calls) == len(sources)
    assert len(comp._MEMO) < len(sources)
    from trt_kernels import cache_store

    assert len(comp._MEMO) == cache_store.MEMO_ENTRIES
    n = len(calls)
    for s in sources[-(cache_store.MEMO_ENTRIES - 1):]:  # the most recent: still in memory
        comp.compile_program(s, ["my_sigmoid"], arch=ARCH)
    assert len(calls) == n
    comp.compile_program(sources[1], ["my_sigmoid"], arch=ARCH)  # long unused: dropped, compiled again
    assert len(calls) == n + 1


def test_lru_memo():
    from trt_kernels import cache_store
    from trt_kernels.sources import triton_compile as ts

    m = cache_store.LRUMemo(3)
    for k in "abc":
        assert m.setdefault(k, k.upper()) == k.upper()
    assert m.get("a") == "A"  # a is now the most recent
    assert m.setdefault("a", "other") == "A"
    m.setdefault("d", "D")  # drops b, the least recently used
    assert [k for k, _ in m.items()] == ["c", "a", "d"] and m.get("b") is None and len(m) == 3
    assert isinstance(ts._MEMO, cache_store.LRUMemo) and ts._MEMO.maxsize == cache_store.MEMO_ENTRIES
