"""A cache another user can write never runs their code (issue 28).

Each case plants something where the package would find it (a framed, checksummed entry with other
PTX; a shared object whose constructor writes a marker file) in a cache that fails the trust rule
(a world-writable root, a directory or file owned by another uid, a symbolic link), and shows that
the planted thing is neither read nor loaded, that the call still succeeds from a private build, and
that the warning names the path, the owner and the fix. The same plant in a cache that passes the
rule is read (the control), so each test would fail without the check. Owners are changed with
``os.chown``, which needs root: those tests skip with the reason elsewhere.
"""

import errno
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import trt_kernels as ttk
from kernels import SIGMOID, sigmoid_spec
from support import counting_compile_cache
from trt_kernels import cache_store, cache_trust, cli, registry
from trt_kernels.eager import compiled_launcher, native
from trt_kernels.sources import nvrtc as comp

ARCH = "sm_90"
OTHER = 54321  # a uid no test process runs as
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="os.chown to another uid needs root")
needs_cc = pytest.mark.skipif(compiled_launcher.find_compiler()[0] is None, reason="no C compiler")

PLANTED_C = rb"""
#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void planted(void) {
  const char *p = getenv("TTK_PLANTED_MARKER");
  if (p) { FILE *f = fopen(p, "w"); if (f) { fputs("the planted module ran", f); fclose(f); } }
}
"""


@pytest.fixture
def cache(tmp_path, monkeypatch, caplog):
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    counting_compile_cache(root, monkeypatch)
    monkeypatch.delenv(cache_trust.SHARED_ENV, raising=False)
    caplog.set_level(logging.DEBUG, logger="trt_kernels")
    cache_trust.forget()
    yield root
    cache_trust.forget()
    comp.forget()


def _compile(source=SIGMOID):
    comp.forget()  # as a fresh process sees the cache
    return comp.compile_program(source, ["my_sigmoid"], arch=ARCH)


def _warnings(caplog):
    return [r.getMessage() for r in caplog.records if r.name == "trt_kernels" and r.levelno >= logging.WARNING]


def _plant_entry(path: Path, marker: bytes = b"// planted by another user\n"):
    """Rewrite the entry at ``path`` with other PTX, framed and checksummed as the package frames it."""
    payload = cache_store.unframe(path.read_bytes(), comp._MAGIC)
    header, (ptx, cubin) = cache_store.unpack_payload(payload, "ptx", "cubin")
    path.write_bytes(cache_store.frame(comp._MAGIC, cache_store.pack_payload(header, ptx=marker + ptx, cubin=cubin)))


def _private_dir():
    d = cache_trust.private_dir()
    assert d is not None and stat.S_IMODE(os.stat(d).st_mode) == 0o700 and os.stat(d).st_uid == os.geteuid()
    return d


# ---------------- entries ----------------


def test_a_planted_entry_is_read_where_the_cache_is_private_the_control(cache):
    path = cache / _compile().key / f"{ARCH}.bin"
    _plant_entry(path)
    prog = _compile()
    assert prog.from_cache and b"planted by another user" in prog.ptx  # a writer the rule trusts: you


@needs_root
def test_an_entry_owned_by_another_user_is_not_trusted(cache, caplog):
    good = _compile()
    path = cache / good.key / f"{ARCH}.bin"
    _plant_entry(path)
    os.chown(path, OTHER, OTHER)
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx and prog.ptx == good.ptx
    said = [w for w in _warnings(caplog) if "not trusting the cache entry" in w]
    assert len(said) == 1 and str(path) in said[0] and f"uid {OTHER}" in said[0] and "Fix: remove" in said[0]
    assert os.stat(path).st_uid == OTHER  # another user's file is neither read nor written over
    _compile()
    assert len([w for w in _warnings(caplog) if "not trusting the cache entry" in w]) == 1  # said once


def test_a_group_writable_entry_is_not_trusted(cache, caplog):
    path = cache / _compile().key / f"{ARCH}.bin"
    _plant_entry(path)
    os.chmod(path, 0o664)
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx
    assert any("writable by its group" in w and "chmod go-w" in w for w in _warnings(caplog))


@needs_root
def test_an_entry_in_a_directory_owned_by_another_user_is_not_trusted(cache, caplog):
    good = _compile()
    keydir = cache / good.key
    _plant_entry(keydir / f"{ARCH}.bin")
    os.chown(keydir, OTHER, OTHER)
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx
    assert any(str(keydir) in w and f"uid {OTHER}" in w for w in _warnings(caplog))


def test_a_symlinked_entry_is_not_followed(cache, tmp_path, caplog):
    good = _compile()
    path = cache / good.key / f"{ARCH}.bin"
    elsewhere = tmp_path / "elsewhere.bin"
    shutil.copy(path, elsewhere)
    _plant_entry(elsewhere)
    path.unlink()
    path.symlink_to(elsewhere)
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx
    assert any("symbolic link" in w for w in _warnings(caplog))


def test_a_world_writable_root_is_not_read_and_the_process_compiles_privately(cache, caplog):
    good = _compile()
    _plant_entry(cache / good.key / f"{ARCH}.bin")
    os.chmod(cache, 0o777)
    cache_trust.forget()
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx
    private = _private_dir()
    assert cache_store.cache_root() == private
    assert (private / good.key / f"{ARCH}.bin").is_file()  # the private build is cached for this process
    assert _compile().from_cache  # ... and read from there
    said = [w for w in _warnings(caplog) if "is not private to you" in w]
    assert len(said) == 1 and str(cache) in said[0] and str(private) in said[0]
    assert "all users" in said[0] and "Fix: chmod go-w" in said[0]


@needs_root
def test_a_root_owned_by_another_user_is_not_read(cache, caplog):
    good = _compile()
    _plant_entry(cache / good.key / f"{ARCH}.bin")
    os.chown(cache, OTHER, OTHER)
    cache_trust.forget()
    prog = _compile()
    assert not prog.from_cache and b"planted" not in prog.ptx
    said = [w for w in _warnings(caplog) if "is not private to you" in w]
    assert said and f"uid {OTHER}" in said[0] and "TRT_KERNELS_CACHE_DIR" in said[0]


def test_an_ancestor_writable_by_others_counts_unless_sticky(tmp_path):
    top = tmp_path / "top"
    root = top / "cache"
    root.mkdir(parents=True, mode=0o700)
    os.chmod(top, 0o777)
    cache_trust.forget()
    prob = cache_trust.dir_problem(root, root)
    assert prob is not None and prob.path == str(top) and "without the sticky bit" in prob.why
    os.chmod(top, 0o1777)  # as /tmp: others cannot rename or replace what is yours there
    cache_trust.forget()
    assert cache_trust.dir_problem(root, root) is None


def test_a_symlinked_root_is_judged_by_where_it_leads(tmp_path):
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    cache_trust.forget()
    assert cache_trust.dir_problem(link, link) is None
    os.chmod(real, 0o777)
    assert cache_trust.dir_problem(link, link) is None  # a root's verdict is made once per process
    cache_trust.forget()
    prob = cache_trust.dir_problem(link, link)
    assert prob is not None and prob.path == str(real)


def test_what_the_package_creates_is_private(cache):
    os.rmdir(cache)
    prog = _compile()
    path = cache / prog.key / f"{ARCH}.bin"
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


# ---------------- shared objects ----------------


def _planted_so(path: Path, tmp_path: Path) -> Path:
    cc = compiled_launcher.find_compiler()[0]
    src = tmp_path / "planted.c"
    src.write_bytes(PLANTED_C)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    subprocess.run(cc + ["-shared", "-fPIC", str(src), "-o", str(path)], check=True, capture_output=True)
    return path


@needs_cc
def test_a_planted_module_would_run_where_it_is_trusted_the_control(cache, tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    monkeypatch.setenv("TTK_PLANTED_MARKER", str(marker))
    _planted_so(compiled_launcher.module_path(cache), tmp_path)
    compiled_launcher.load(cache)  # your own file in your own cache: loaded (its code ran)
    assert marker.exists()


@needs_root
@needs_cc
def test_a_launcher_planted_by_another_user_is_never_loaded(cache, tmp_path, monkeypatch, caplog):
    marker = tmp_path / "marker"
    monkeypatch.setenv("TTK_PLANTED_MARKER", str(marker))
    path = _planted_so(compiled_launcher.module_path(cache), tmp_path)
    os.chown(path, OTHER, OTHER)
    lau = compiled_launcher.load(cache)
    assert not marker.exists(), "the planted shared object was loaded"
    private = _private_dir()
    assert lau.kind == "compiled" and lau.path == str(private / "launcher" / path.name)
    assert callable(lau.launch) and os.stat(path).st_uid == OTHER  # the planted file is left for the user to see
    said = [w for w in _warnings(caplog) if "not loading the cached compiled launcher" in w]
    assert len(said) == 1 and str(path) in said[0] and f"uid {OTHER}" in said[0] and "Fix:" in said[0]
    monkeypatch.setattr(compiled_launcher, "_prepared", None)  # what `status` says before this process's first launch
    assert "private directory (the cached one is not trusted" in compiled_launcher.describe()["reason"]


@needs_cc
def test_a_launcher_in_a_world_writable_cache_is_never_loaded(cache, tmp_path, monkeypatch, caplog):
    marker = tmp_path / "marker"
    monkeypatch.setenv("TTK_PLANTED_MARKER", str(marker))
    _planted_so(compiled_launcher.module_path(cache), tmp_path)
    os.chmod(cache, 0o777)
    cache_trust.forget()
    lau = compiled_launcher.load(cache_store.cache_root())
    assert not marker.exists(), "the planted shared object was loaded"
    assert lau.kind == "compiled" and lau.path.startswith(str(_private_dir()))


@needs_root
@pytest.mark.skipif(native.find_compiler()[0] is None, reason="no C++ compiler")
def test_a_native_kernel_planted_by_another_user_is_never_loaded(cache, tmp_path, monkeypatch, caplog):
    marker = tmp_path / "marker"
    monkeypatch.setenv("TTK_PLANTED_MARKER", str(marker))
    path = _planted_so(native.module_path(cache), tmp_path)
    os.chown(path, OTHER, OTHER)
    mod, how, where = native.load(cache)
    assert not marker.exists(), "the planted shared object was loaded"
    assert mod is not None and where == str(_private_dir() / "launcher" / path.name), how
    assert callable(mod.add_variant)
    said = [w for w in _warnings(caplog) if "not loading the cached native kernel" in w]
    assert len(said) == 1 and str(path) in said[0] and f"uid {OTHER}" in said[0]


# ---------------- the shared read-only cache ----------------


@pytest.fixture
def shared(cache, tmp_path, monkeypatch):
    """A team's cache filled by its owner: every entry of one compile, readable by all, written by none."""
    team = tmp_path / "team"
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(team))
    prog = _compile()
    for p in [team, *team.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(cache))
    monkeypatch.setenv(cache_trust.SHARED_ENV, str(team))
    cache_trust.forget()
    return team, prog


def test_a_shared_cache_is_read_after_your_own_and_never_written(shared, cache):
    team, prog = shared
    before = sorted(p.name for p in team.rglob("*"))
    got = _compile()
    assert got.from_cache and got.ptx == prog.ptx
    assert not any(cache.iterdir())  # read from the team's cache: nothing compiled, nothing written
    _compile(SIGMOID + "\n// another program")
    assert sorted(p.name for p in team.rglob("*")) == before  # a miss is compiled into your own cache
    assert any(cache.iterdir())


def test_a_build_names_the_entry_it_was_read_from(shared, cache, monkeypatch):
    """What ``inspect`` / ``compile`` report as a build's cache entries is the file the build came from: the
    team's entry for a build read from the shared cache, your own for one compiled here, none for a build
    the cache could not keep."""
    team, prog = shared
    monkeypatch.setenv("TRT_KERNELS_ARCH", ARCH)
    op = "ttk_test_entries::shared_sigmoid"
    try:
        kop = _declare(op, "// team")
        assert not kop.binary().from_cache
        ours = list(cache.rglob("*.bin"))
        assert [str(p) for p in ours] == list(kop.binary().entries)  # compiled here: your own entry
        for p in ours:  # move it into the team's cache, readable by all, written by none
            dest = team / p.relative_to(cache)
            dest.parent.mkdir(mode=0o755)
            shutil.move(p, dest)
            os.chmod(dest, 0o644)
        comp.forget()
        kop = _declare(op, "// team")
        b = kop.binary()
        assert b.from_cache and list(b.entries) == [str(team / ours[0].relative_to(cache))]
        assert not list(cache.rglob("*.bin"))  # read from the team's file, which is the one named

        comp.forget()
        with mock.patch("tempfile.mkstemp", side_effect=OSError(errno.ENOSPC, "No space left on device")):
            kop = _declare(op, "// not kept")
        assert not kop.binary().from_cache and kop.binary().entries == ()  # nothing kept, nothing named
    finally:
        ttk.unregister(op)


def _declare(op, comment):
    ttk.cuda_kernel_op(op, sigmoid_spec(kernel_source=f"{SIGMOID.strip()}\n{comment}"))
    return registry.get(op)


def test_a_corrupt_shared_entry_is_said_as_not_rewritten(shared, cache, caplog):
    team, prog = shared
    entry = next(team.rglob("*.bin"))
    blob = entry.read_bytes()
    entry.write_bytes(blob[:-1] + bytes([blob[-1] ^ 1]))
    got = _compile()
    assert not got.from_cache and got.entry.startswith(str(cache)) and entry.read_bytes() != blob
    (said,) = [w for w in _warnings(caplog) if str(entry) in w]
    assert "corrupt" in said and "compiling it into your own cache instead" in said and "rewriting" not in said


@needs_root
def test_a_shared_cache_others_can_write_names_its_owner_and_the_variable(shared, caplog):
    """The fix for a problem of the shared cache is its owner's to make, or to stop reading it: your own cache's
    fixes (TRT_KERNELS_CACHE_DIR) do not apply."""
    team, _ = shared
    for p in [team, *team.rglob("*")]:
        os.chown(p, OTHER, OTHER)
    os.chmod(team, 0o777)
    cache_trust.forget()
    assert not _compile().from_cache
    (said,) = [w for w in _warnings(caplog) if "not trusting" in w]
    fix = said.split("Fix: ", 1)[1]
    assert f"the shared cache's owner (uid {OTHER}" in fix and f"chmod go-w {team}" in fix
    assert f"unset {cache_trust.SHARED_ENV}" in fix and "TRT_KERNELS_CACHE_DIR" not in fix


@needs_root
def test_a_shared_cache_trusts_its_owner_and_no_other_writer(shared, caplog):
    team, prog = shared
    for p in [team, *team.rglob("*")]:
        os.chown(p, OTHER, OTHER)
    cache_trust.forget()
    assert _compile().from_cache  # its owner's entries: trusted, since you named the directory
    entry = next(team.rglob("*.bin"))
    os.chmod(entry, 0o666)
    assert not _compile().from_cache
    assert any("writable by its group and all users" in w for w in _warnings(caplog))


@needs_cc
def test_a_shared_cache_never_serves_a_shared_object(shared, cache, tmp_path, monkeypatch):
    team, _ = shared
    marker = tmp_path / "marker"
    monkeypatch.setenv("TTK_PLANTED_MARKER", str(marker))
    _planted_so(compiled_launcher.module_path(team), tmp_path)  # as if the team's cache held the launcher
    lau = compiled_launcher.load(cache_store.cache_root())
    assert not marker.exists() and lau.kind == "compiled" and lau.path.startswith(str(cache))


# ---------------- cache clear, doctor, status ----------------


@needs_root
def test_cache_clear_keeps_entries_owned_by_another_user(cache, capsys):
    a = _compile()
    b = _compile(SIGMOID + "\n// b")
    theirs = cache / b.key / f"{ARCH}.bin"
    os.chown(theirs, OTHER, OTHER)
    assert cli.main(["cache", "clear"]) == 0
    out = capsys.readouterr().out
    assert not (cache / a.key).exists() and theirs.exists()
    assert "owned by another user" in out and "removed from" in out


def test_status_and_doctor_show_an_untrusted_cache(cache, capsys):
    os.chmod(cache, 0o777)
    cache_trust.forget()
    from trt_kernels.cli import doctor
    from trt_kernels.status import format_status

    text = format_status()
    mine = cache_trust.private_dir()
    assert f"compile cache: {cache} NOT TRUSTED" in text and "Fix: chmod go-w" in text
    # the private directory is this process's, gone at its exit (a `trt-kernels status` run's path is gone after it)
    assert f"this process compiles into its private directory {mine}, removed when it exits." in text
    checks = doctor.assess(dict(doctor.gather(), cache_trust=cache_store.trust()))
    row = next(c for c in checks if c["check"] == "cache trust")
    assert row["status"] == "warn" and str(cache) in row["detail"] and row["fix"] == f"chmod go-w {cache}"
    assert f"a private directory of its own, removed when it exits (this one's: {mine}) instead" in row["detail"]
    no_dir = dict(cache_store.trust(), using=None)
    row = next(c for c in doctor.assess({"cache_trust": no_dir}) if c["check"] == "cache trust")
    assert "compiles into memory only (no private directory could be made) instead" in row["detail"]
    os.chmod(cache, 0o700)
    cache_trust.forget()
    assert "(private to you)" in format_status()


def test_a_child_process_warns_once_and_succeeds(cache):
    os.chmod(cache, 0o777)
    code = ("from trt_kernels.sources import nvrtc as c; from kernels import SIGMOID\n"
            "for _ in range(3): c.forget(); p = c.compile_program(SIGMOID, ['my_sigmoid'], arch='sm_90')\n"
            "print('OK', len(p.ptx))")
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(cache), PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0 and r.stdout.startswith("OK"), r.stderr[-2000:]
    assert r.stderr.count("is not private to you") == 1
    assert not list(Path(cache).iterdir())  # nothing was written into the untrusted cache
    private = re.search(r"compiles into (\S+) instead", r.stderr).group(1)
    assert "trt_kernels-private-" in private and not os.path.exists(private)  # removed at exit


# ---------------- the rule, against a model of it ----------------


_MODES = st.sampled_from([0o700, 0o755, 0o775, 0o777, 0o1777, 0o750, 0o770])


@needs_root
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(top_mode=_MODES, root_mode=_MODES, key_mode=_MODES, file_mode=st.sampled_from([0o600, 0o644, 0o664, 0o666]),
       owners=st.tuples(*[st.sampled_from([0, OTHER]) for _ in range(4)]))
def test_the_rule_matches_its_statement(tmp_path_factory, top_mode, root_mode, key_mode, file_mode, owners):
    """Every combination of modes and owners on (a directory above the root, the root, a key directory,
    an entry) against the rule as docs/cache.md states it."""
    base = tmp_path_factory.mktemp("rule")
    top, root = base / "top", base / "top" / "root"
    keydir, entry = root / ("ab" * 32), root / ("ab" * 32) / "sm_90.bin"
    keydir.mkdir(parents=True)
    entry.write_bytes(b"x")
    for p, m, o in zip((top, root, keydir, entry), (top_mode, root_mode, key_mode, file_mode), owners):
        os.chmod(p, m)
        os.chown(p, o, o)
    cache_trust.forget()
    writable = stat.S_IWGRP | stat.S_IWOTH
    me = os.geteuid()
    expect_ok = (owners[0] in (me, 0) and (not top_mode & writable or top_mode & stat.S_ISVTX)
                 and all(o in (me, 0) and not m & writable for o, m in zip(owners[1:3], (root_mode, key_mode)))
                 and owners[3] == me and not file_mode & writable)
    got = cache_trust.path_problem(entry, root)
    assert (got is None) == bool(expect_ok), (got, oct(top_mode), oct(root_mode), oct(key_mode), oct(file_mode), owners)
