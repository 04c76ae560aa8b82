"""The stub shared object trt_kernels.plugins.rtx_lib writes to make a bare library name resolve in this process
(TensorRT-RTX's parser opens ``libtensorrt_rtx.so``, its wheel ships ``libtensorrt_rtx.so.1``). Checked here with
the C math library: a stub named ``libttk_alias_<random>.so`` depending on libm's absolute path, loaded, makes
that bare name resolve, and symbols looked up through it come from the one libm in the process."""

import ctypes
import os
import platform
import struct
import uuid

import pytest

from trt_kernels.plugins.rtx_lib import stub_object

pytestmark = pytest.mark.skipif(platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"),
                                reason="the stub is an ELF64 object for Linux on x86-64 / AArch64")


def _loaded(fragment: str) -> str:
    """The absolute path of a library already mapped in this process whose file name contains ``fragment``."""
    with open("/proc/self/maps") as f:
        paths = {ln.split()[-1] for ln in f.read().splitlines() if "/" in ln}
    found = sorted(p for p in paths if fragment in os.path.basename(p))
    assert found, fragment
    return os.path.realpath(found[0])


def _dynamic(blob: bytes) -> dict:
    """``{tag: value}`` of the object's dynamic section (read through its program headers)."""
    phoff, phentsize, phnum = struct.unpack_from("<Q", blob, 32)[0], *struct.unpack_from("<HH", blob, 54)
    for k in range(phnum):
        p_type, _, p_offset, _, _, p_filesz = struct.unpack_from("<IIQQQQ", blob, phoff + k * phentsize)
        if p_type == 2:  # PT_DYNAMIC
            entries = [struct.unpack_from("<qQ", blob, p_offset + 16 * i) for i in range(p_filesz // 16)]
            return {tag: val for tag, val in entries}
    raise AssertionError("no PT_DYNAMIC")


def test_the_stub_names_its_soname_and_dependency():
    blob = stub_object("libexample.so", "/opt/lib/libexample.so.3", machine="x86_64")
    assert blob[:4] == b"\x7fELF" and struct.unpack_from("<HH", blob, 16) == (3, 62)  # ET_DYN, x86-64
    dyn = _dynamic(blob)
    strtab = dyn[5]

    def string(off):
        return blob[strtab + off:blob.index(b"\0", strtab + off)].decode()

    assert string(dyn[14]) == "libexample.so" and string(dyn[1]) == "/opt/lib/libexample.so.3"
    assert len(blob) < 1024
    with pytest.raises(OSError, match="no stub shared object for machine 'sparc'"):
        stub_object("a.so", "/b.so", machine="sparc")


def test_a_loaded_stub_makes_the_bare_name_resolve_to_the_one_library(tmp_path):
    libm = ctypes.CDLL("libm.so.6")
    path = _loaded("libm")
    name = f"libttk_alias_{uuid.uuid4().hex[:8]}.so"
    with pytest.raises(OSError):
        ctypes.CDLL(name)
    stub = tmp_path / "stub.so"
    stub.write_bytes(stub_object(name, path))
    keep = ctypes.CDLL(str(stub))
    alias = ctypes.CDLL(name)  # answered by the loaded stub: its soname
    for lib in (alias, libm):
        lib.cbrt.restype, lib.cbrt.argtypes = ctypes.c_double, [ctypes.c_double]
    assert alias.cbrt(27.0) == libm.cbrt(27.0) and abs(alias.cbrt(27.0) - 3.0) < 1e-12
    # the same function of the same library: no second copy of libm was loaded
    assert ctypes.cast(alias.cbrt, ctypes.c_void_p).value == ctypes.cast(libm.cbrt, ctypes.c_void_p).value
    assert keep is not None


def test_cache_clear_removes_the_stub_it_wrote_and_keeps_the_rest(tmp_path, monkeypatch, capsys):
    from trt_kernels import cache_store, cli

    root = tmp_path / "cache"
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    data = stub_object("libexample.so", "/opt/lib/libexample.so.3")
    stub = cache_store.rtx_stub(root, data)
    stub.parent.mkdir(parents=True)
    stub.write_bytes(data)
    (stub.parent / f"{stub.name}.k2j4.tmp").write_bytes(data[:10])  # a write in progress, left behind
    theirs = stub.parent / "notes.txt"
    theirs.write_text("not ours")
    assert cli.main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert not stub.exists() and sorted(p.name for p in stub.parent.iterdir()) == ["notes.txt"]
    assert "1 cache entry, 1 temporary file" in out and "kept untouched: 1 file" in out
    theirs.unlink()
    stub.write_bytes(data)
    assert cli.main(["cache", "clear"]) == 0 and not stub.parent.exists()  # emptied: removed
