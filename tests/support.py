"""Helpers the tests import (``from support import ...``), from every folder under tests/: tests/ is on
``sys.path`` because pytest imports tests/conftest.py in its default (prepend) import mode.

They are not in conftest.py because each tier folder has its own conftest.py, and pytest imports
each of those as the module ``conftest`` too: ``from conftest import ...`` would get whichever was
imported last. Shared fixtures stay in tests/conftest.py; shared kernels and specs are in
kernels.py, Triton ones in triton_kernels.py, the emulated tier's helpers in emulated.py."""

import importlib.util
import os
import pathlib
import re
import shlex
import sys

ROOT = pathlib.Path(__file__).resolve().parents[1]


def counting_compile_cache(root, monkeypatch):
    """Point the compile cache at ``root`` (enabled, empty memo) and count NVRTC compiles: returns the
    list that receives the source of every compile from now on."""
    from trt_kernels.sources import nvrtc as comp

    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(root))
    monkeypatch.delenv("TRT_KERNELS_CACHE", raising=False)
    comp.forget()
    calls = []
    real = comp._nvrtc_compile

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(comp, "_nvrtc_compile", counting)
    return calls


def load_example(name: str):
    """Import examples/<name>.py once (``name`` may be a path below examples/, e.g. ``gallery/declare``)."""
    mod_name = "_ttk_example_" + name.replace("/", "_")
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, ROOT / "examples" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = mod
    spec.loader.exec_module(mod)
    return mod


def mark_items_under(folder, items, *marks):
    """Add ``marks`` to every collected test whose file is under ``folder``. A tier folder's conftest.py
    calls this from its ``pytest_collection_modifyitems`` (tryfirst, so that tests/conftest.py's hook, which
    turns ``gpu`` into a skip without CUDA and runs ``trt_emulated`` last, and ``-m`` see the marks): that
    is how the folder sets its marker once. (``pytestmark`` in a conftest.py marks nothing.)"""
    folder = pathlib.Path(folder).resolve()
    for item in items:
        if pathlib.Path(item.path).resolve().is_relative_to(folder):
            for mark in marks:
                item.add_marker(mark)


# ---------------- running commands: in this process, or fresh processes side by side ----------------


def clear_compile_memos():
    """Empty the process's memos of compiled programs (NVRTC's and Triton's), as a fresh process starts:
    the next declaration reads the disk cache or compiles, and says which."""
    from trt_kernels.sources import nvrtc

    nvrtc.forget()
    triton_compile = sys.modules.get("trt_kernels.sources.triton_compile")
    if triton_compile is not None:
        triton_compile.forget()


def run_cli(args, env=None, cwd=None):
    """``trt-kernels ARGS`` run in this process: ``trt_kernels.cli.main(args)`` (the console script's function),
    its stdout and stderr captured, as a ``subprocess.CompletedProcess``. For the run, ``os.environ`` is ``env``
    (default: as it is), the working directory ``cwd``, and the compile memos are empty (as in a fresh process);
    the environment, the working directory and ``sys.path`` are restored after. What a fresh process would
    print on stderr is captured there too: the package's log records of WARNING and above (Python's last-resort
    handler prints them in a process without logging set up) and, as exit status 1, the traceback of an
    exception that escapes ``main``. The ops the command declares stay registered (give files their own
    namespaces). Use a fresh process where that is what a test checks (what a process loads, a cold import)."""
    import contextlib
    import io
    import logging
    import subprocess
    import traceback

    from trt_kernels import cli

    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), list(sys.path)
    handler = logging.StreamHandler(err)
    handler.setLevel(logging.WARNING)
    log = logging.getLogger("trt_kernels")
    try:
        if env is not None:
            os.environ.clear()
            os.environ.update(env)
        if cwd is not None:
            os.chdir(cwd)
        clear_compile_memos()
        log.addHandler(handler)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = cli.main([str(a) for a in args])
            except SystemExit as e:  # argparse (--help, --version, usage errors), or a command's own exit
                if e.code is None or isinstance(e.code, int):
                    rc = e.code or 0
                else:
                    print(e.code, file=sys.stderr)
                    rc = 1
            except Exception:  # noqa: BLE001 - what the process would print, and its status
                traceback.print_exc()
                rc = 1
    finally:
        log.removeHandler(handler)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
        sys.path[:] = saved_path
    return subprocess.CompletedProcess(["trt-kernels", *map(str, args)], rc, out.getvalue(), err.getvalue())


class Job:
    """A fresh process (``argv``, Popen's keyword arguments), started by :meth:`start` (or by :data:`POOL`, or
    by :meth:`result` if nothing started it yet), its stdout and stderr kept in files (a pipe nobody reads would
    stop it) and read back by :meth:`result`, which waits for it: start several, do other work while they run."""

    def __init__(self, argv, **popen):
        # the environment and the folder of now, not of whenever it starts (a test may have changed them then)
        popen.setdefault("env", dict(os.environ))
        popen.setdefault("cwd", os.getcwd())
        self.argv, self.popen_kw = [str(a) for a in argv], popen
        self.popen = None
        self._done = None

    def start(self):
        import subprocess
        import tempfile

        if self.popen is None:
            self._files = tempfile.TemporaryFile(), tempfile.TemporaryFile()
            self.popen = subprocess.Popen(self.argv, stdout=self._files[0], stderr=self._files[1], **self.popen_kw)
        return self

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def result(self, timeout=600):
        """The finished process, as a ``subprocess.CompletedProcess`` (text); ``timeout``: seconds from now."""
        import subprocess

        if self._done is None:
            self.start()
            try:
                code = self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                raise
            out = []
            for f in self._files:
                f.seek(0)
                out.append(f.read().decode("utf-8", "replace"))
                f.close()
            self._done = subprocess.CompletedProcess(self.argv, code, *out)
        return self._done

    def kill(self):
        if self.running():
            self.popen.kill()
            self.popen.wait()


def job(args, **popen):
    """A fresh ``python ARGS`` (this interpreter), not started yet: a :class:`Job`."""
    return Job([sys.executable, *args], **popen)


def start(args, **popen):
    """A fresh ``python ARGS`` (this interpreter), started now: a :class:`Job`; :func:`finish` waits for it."""
    return job(args, **popen).start()


def finish(jobs, timeout=600):
    """``{name: CompletedProcess}`` of the Jobs ``{name: Job}`` started together (they run side by side: on a
    machine of a few cores, most of a fresh process's time is importing torch, on one core)."""
    return {name: j.result(timeout) for name, j in jobs.items()}


class Pool:
    """Jobs queued to run in the background, at most ``slots`` at a time (each one mostly a single core's work:
    with the test process beside them they keep a machine of a few cores busy without crowding it);
    :meth:`pump` (tests/conftest.py calls it after each test) starts the next as one ends. A queued job that a
    test asks for first (:meth:`Job.result`) starts then."""

    def __init__(self, slots):
        self.slots = slots
        self.queued, self.started = [], []

    def submit(self, *jobs):
        self.queued.extend(j for j in jobs if j.popen is None and j not in self.queued)
        self.pump()

    def pump(self):
        self.queued = [j for j in self.queued if j.popen is None]
        busy = sum(j.running() for j in self.started)
        while self.queued and busy < self.slots:
            self.started.append(self.queued.pop(0).start())
            busy += 1

    def stop(self):
        """At the session's end: nothing more starts, and what still runs (no test asked for it) is killed."""
        self.queued = []
        for j in self.started:
            j.kill()


# TTK_TEST_SLOTS=0: nothing runs in the background (each file starts its processes when its first test needs one)
POOL = Pool(slots=int(os.environ.get("TTK_TEST_SLOTS", "2")))

# ---------------- early jobs: the slow fresh processes a test file needs, started at the session's start ------
#
# A test file (or a tier's conftest.py) registers, at import, a function that makes its independent fresh
# processes as Jobs not started yet; where this session runs a test of it that uses ``fixture``,
# tests/conftest.py queues them on POOL before the first test: they run while the tests before that file run
# here, in this process. The file's fixture takes the same Jobs (:func:`early_jobs`), made then if no one did.

_EARLY = {}
_EARLY_JOBS = {}


def early(name, where, fixture, make):
    """Register ``make(tmp_path_factory) -> {key: Job}`` as ``name``, for the tests under ``where`` (a file or
    a folder) that use the fixture named ``fixture``."""
    _EARLY.setdefault(name, (pathlib.Path(where).resolve(), fixture, make))


def early_jobs(name, tmp_path_factory):
    """``name``'s Jobs (made the first time they are asked for)."""
    if name not in _EARLY_JOBS:
        _EARLY_JOBS[name] = _EARLY[name][2](tmp_path_factory)
    return _EARLY_JOBS[name]


def start_early(items, tmp_path_factory):
    """Queue the early jobs of the selected tests ``items`` on POOL (tests/conftest.py, before the first test)."""
    if POOL.slots <= 0:
        return
    for name, (where, fixture, _) in _EARLY.items():
        if any(fixture in item.fixturenames and pathlib.Path(item.path).resolve().is_relative_to(where)
               for item in items):
            POOL.submit(*early_jobs(name, tmp_path_factory).values())


PLAIN = re.compile(r"[^\s$`|&;<>()*?~!{}\[\]\\'\"=]+")  # a word a shell passes on as it is


def plain_words(command):
    """The words of a shell command line whose words the shell passes on unchanged (no variable, quote,
    redirection, pipe, glob or assignment; a trailing ``# comment`` dropped); None for any other line."""
    words = shlex.split(command, comments=True)
    return words if words and all(PLAIN.fullmatch(w) for w in words) else None


_SHARED = []


def shared_runs(tmp_path_factory):
    """The session's one :class:`SharedRuns` (tests/conftest.py's ``shared_runs`` fixture returns it)."""
    if not _SHARED:
        _SHARED.append(SharedRuns(tmp_path_factory.mktemp("shared-runs")))
    return _SHARED[0]


class SharedRuns:
    """Commands that tests of several files check, each run once per session and its result shared
    (tests/conftest.py's ``shared_runs`` fixture): ``trt-kernels`` commands in this process (:func:`run_cli`),
    shell commands in fresh processes (:meth:`shell_job`). Both run in one scratch folder laid out like the
    repository root (``examples/`` and ``benchmarks/`` linked), with the caller's environment less its
    ``TRT_KERNELS_*`` variables, a cache of their own, and this interpreter's folder first on ``PATH`` (so
    ``python`` and ``trt-kernels`` are the ones under test)."""

    def __init__(self, root):
        self.root = root
        for name in ("examples", "benchmarks"):
            (root / name).symlink_to(ROOT / name)
        self.cache = root / "cache"
        self._env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_KERNELS_")}
        self._env["TRT_KERNELS_CACHE_DIR"] = str(self.cache)
        self._env["PATH"] = os.pathsep.join([os.path.dirname(sys.executable), self._env.get("PATH", "")])
        self._cli = {}
        self._shell = {}

    def env(self):
        return dict(self._env)

    def cli(self, *args):
        """``trt-kernels ARGS`` (run in this process the first time it is asked for)."""
        key = tuple(map(str, args))
        if key not in self._cli:
            self._cli[key] = run_cli(key, env=self.env(), cwd=self.root)
        return self._cli[key]

    def shell_job(self, command):
        """The Job (not started yet, if it is new) that runs this plain command line (:func:`plain_words`) by
        bash in a fresh process."""
        words = plain_words(command)
        assert words is not None, f"{command!r}: not a plain command line"
        key = shlex.join(words)
        if key not in self._shell:
            self._shell[key] = Job(["bash", "-c", key], cwd=self.root, env=self.env())
        return self._shell[key]

    def shell(self, *commands, timeout=600):
        """``{command: CompletedProcess}`` of these plain command lines, those not started yet started together."""
        jobs = [self.shell_job(c).start() for c in commands]
        return {c: j.result(timeout) for c, j in zip(commands, jobs)}


# ---------------- this session's collection ----------------

_COLLECTED = {}


def record_collection(session, config, items):
    """Called by tests/conftest.py's ``pytest_collection_modifyitems`` (before ``-m`` and ``-k`` deselect any):
    keeps each collected test's markers, and whether this collection was the whole of testpaths."""
    _COLLECTED["whole"] = _collected_all(session, config)
    _COLLECTED["markers"] = [{m.name for m in item.iter_markers()} for item in items]


def _collected_all(session, config) -> bool:
    """Whether this session collected every test of testpaths (what a bare ``python -m pytest`` collects):
    its paths are the testpaths, nothing was ignored or skipped over, and no file failed to collect."""
    root = pathlib.Path(str(config.rootpath)).resolve()
    wanted = {(root / p).resolve() for p in config.getini("testpaths")}
    given = {pathlib.Path(a).resolve() for a in config.args}
    narrowed = any(config.getoption(o, None) for o in ("ignore", "ignore_glob", "lf", "failedfirst", "stepwise",
                                                        "continue_on_collection_errors", "deselect"))
    return given == wanted and not narrowed and session.testsfailed == 0


def collected_markers():
    """Each test's markers (a set per test) from this session's own collection, where it collected all of
    testpaths; else None."""
    return _COLLECTED["markers"] if _COLLECTED.get("whole") else None
