"""``trt-kernels``: environment report, op status, cache maintenance, inspect, compile, doctor, selftest."""

from __future__ import annotations

import argparse
import os
import re
import sys


def _info() -> int:
    import torch

    from trt_kernels import __version__
    from trt_kernels.cache_store import cache_dir
    from trt_kernels.eager.driver import driver_version
    from trt_kernels.sources.nvrtc import compile_arch, include_dirs, nvrtc_version

    try:
        import cuda.bindings as cb

        bindings = cb.__version__
    except Exception as e:  # noqa: BLE001
        bindings = f"missing ({e})"
    try:
        nvrtc = ".".join(map(str, nvrtc_version()))
    except Exception as e:  # noqa: BLE001
        nvrtc = f"unavailable ({e})"
    drv = driver_version()
    print(f"trt-kernels   {__version__}")
    print(f"python        {sys.version.split()[0]}")
    print(f"torch         {torch.__version__}")
    print(f"cuda-bindings {bindings}")
    print(f"NVRTC         {nvrtc}")
    from trt_kernels.sources.toolchain import identity

    print(f"NVRTC file    {identity() or 'not found on disk (the cache is keyed by the loaded library)'}")
    print(f"CUDA driver   {'.'.join(map(str, drv)) if drv else 'none'}")
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none visible"
    print(f"GPU           {gpu}")
    arch, origin = compile_arch()
    print(f"compile arch  {arch} ({origin})")
    print(f"headers       {', '.join(include_dirs()) or 'not found'}")
    print(f"cache         {cache_dir() or 'disabled (TRT_KERNELS_CACHE=0)'}")
    if drv and nvrtc[0].isdigit():
        from trt_kernels.sources.ptxcheck import ptx_loadable_note

        note = ptx_loadable_note(nvrtc_version(), drv)
        if note:
            print(f"note          {note}")
    return 0


STATUS_SCHEMA = "trt-kernels.status/1"


def _status(paths, as_json: bool = False) -> int:
    from trt_kernels.cli.inspect import FALLBACK_ARCH, TargetError, load_target, report_error
    from trt_kernels.sources.nvrtc import env_arch, unsupported_arch

    arch = env_arch()  # (the declarations compile for it: an arch NVRTC lacks is said as such, not as theirs)
    problem = unsupported_arch(arch) if arch is not None and paths else None
    if problem is not None:
        return report_error(f"TRT_KERNELS_ARCH={os.environ['TRT_KERNELS_ARCH']}: {problem}. Fix: TRT_KERNELS_ARCH="
                            f"{FALLBACK_ARCH}, or unset it to use the visible GPU's", as_json, STATUS_SCHEMA)
    for p in paths:
        try:  # declarations compile as a plain import would: status reports what they built
            load_target(p, run_name="trt_kernels_status", defer_compile=False)
        except TargetError as e:
            return report_error(str(e), as_json, STATUS_SCHEMA)
    if as_json:
        import json

        from trt_kernels.cache_store import trust
        from trt_kernels.sources.nvrtc import compile_arch
        from trt_kernels.status import status, trt_state

        trt = trt_state()
        arch, origin = compile_arch()
        print(json.dumps({"schema": STATUS_SCHEMA, "ok": True, "tensorrt": trt, "compile_arch": arch,
                          "compile_arch_from": origin, "cache": trust(), "ops": status(trt)}, indent=2))
        return 0
    from trt_kernels.status import format_status

    print(format_status())
    return 0


def _size(n: int) -> str:
    return f"{n} bytes" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.1f} MiB"


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _cache(action: str) -> int:
    from trt_kernels.cache_store import cache_dir, clear

    d = cache_dir()
    if d is None:
        print("cache disabled (TRT_KERNELS_CACHE=0)")
        return 0
    if action == "path":
        print(d)
        return 0
    if not d.is_dir():
        print(f"nothing to clear: {d} {'is not a directory' if d.exists() else 'does not exist'}")
        return 0
    r = clear(d)  # only what trt-kernels wrote, recognised by name and magic; the rest stays
    print(f"removed from {d}: {_count(r.entries, 'cache entry', 'cache entries')}, "
          f"{_count(r.temporaries, 'temporary file', 'temporary files')}, "
          f"{_count(r.directories, 'emptied directory', 'emptied directories')} ({_size(r.removed_bytes)})")
    if r.kept_places:
        more = f" and {_count(r.kept_places - len(r.kept_examples), 'more', 'more')}" \
            if r.kept_places > len(r.kept_examples) else ""
        print(f"kept untouched: {_count(r.kept, 'file', 'files')} ({_size(r.kept_bytes)}) that trt-kernels did not "
              f"write (foreign files are never removed, symbolic links never followed), in "
              f"{', '.join(r.kept_examples)}{more}")
        if r.foreign:
            print(f"of those, {_count(r.foreign, 'file is', 'files are')} named like cache entries but owned by "
                  "another user: check who wrote them (`ls -ln`) before removing them yourself")
    else:
        print("kept untouched: nothing (there were no files but trt-kernels' own)")
    for err in r.errors:
        print(f"could not remove {err}", file=sys.stderr)
    return 1 if r.errors else 0


def _add_commands(sub) -> None:
    """inspect, compile, doctor, selftest: each lives in its own module, imported when run."""
    ins = sub.add_parser("inspect", help="what the package derived for each op a module declares (no GPU needed)")
    ins.add_argument("target", metavar="MODULE_OR_FILE", help="a module name or a .py file that declares ops")
    ins.add_argument("--op", action="append", default=[], metavar="NS::NAME", help="only this op (repeatable)")
    ins.add_argument("--arch", help="compile for this arch to read the PTX (default: the GPU, TRT_KERNELS_ARCH, sm_90)")
    ins.add_argument("--rank", action="append", default=[], metavar="NAME=N",
                     help="rank of a tensor input for the launch plan (default: InputDecl(ndim=) or 2)")
    ins.add_argument("--min-arch", metavar="SM", help="the lowest arch the AOT plugins' PTX must load on, as "
                     "TRT_KERNELS_MIN_ARCH sets it for builds (sm_80: every GPU from Ampere on)")
    ins.add_argument("--json", action="store_true", help="machine-readable output")
    ins.set_defaults(run=lambda a: _command("inspect").run(a.target, a.op, a.arch, a.rank, a.json, a.min_arch))

    co = sub.add_parser("compile", help="fill the disk cache ahead of time (container builds)")
    co.add_argument("target", metavar="MODULE_OR_FILE", help="a module name or a .py file that declares ops")
    co.add_argument("--arch", action="append", default=[], help="an arch to compile for (repeatable), e.g. sm_90")
    co.add_argument("--op", action="append", default=[], metavar="NS::NAME", help="only this op (repeatable)")
    co.add_argument("--min-arch", metavar="SM", help="also compile each op's AOT plugin PTX for this lowest arch "
                    "(sm_80: the PTX loads on every GPU from Ampere on; builds use it with TRT_KERNELS_MIN_ARCH)")
    co.add_argument("--json", action="store_true", help="machine-readable output")
    co.set_defaults(run=lambda a: _command("compile").run(a.target, a.arch, a.op, a.json, a.min_arch))

    do = sub.add_parser("doctor", help="check the installation: torch, CUDA, NVRTC vs driver, headers, TensorRT")
    do.add_argument("--json", action="store_true", help="machine-readable output")
    do.set_defaults(run=lambda a: _command("doctor").run(a.json))

    se = sub.add_parser("selftest", help="the seed's seven cases and one per other kernel source (ptx_op, Triton), on "
                        "every tier this machine has")
    se.add_argument("--json", action="store_true", help="machine-readable output")
    se.set_defaults(run=lambda a: _command("selftest").run(a.json))


def _plain(text: str) -> str:
    """Docstring markup (``x``, :func:`x`) as plain text, for --help."""
    return re.sub(r":\w+:`~?([^`]*)`", r"\1", text).replace("``", "")


def _version_line() -> str:
    """``trt-kernels 0.1.0 (torch ..., cuda-bindings ..., Python ...)``: read from the installed packages'
    metadata, importing neither torch nor cuda-bindings."""
    from importlib import metadata

    from trt_kernels import __version__

    def dist(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "not installed"

    return (f"trt-kernels {__version__} (torch {dist('torch')}, cuda-bindings {dist('cuda-bindings')}, "
            f"Python {sys.version.split()[0]})")


class _Version(argparse.Action):
    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version_line())
        parser.exit()


def _arch_env_problem():
    """What is wrong with ``TRT_KERNELS_ARCH`` (the message with its fix), or None: every command that compiles or
    says the compile arch reads it, so it is checked once, before any of them runs."""
    from trt_kernels.sources.nvrtc import env_arch

    try:
        env_arch()
    except ValueError as e:
        return str(e)
    return None


def _command(name: str):
    """The module of a larger subcommand, imported when it runs (``trt-kernels status`` stays quick)."""
    if name == "inspect":
        from trt_kernels.cli import inspect as module
    elif name == "compile":
        from trt_kernels.cli import compile as module
    elif name == "doctor":
        from trt_kernels.cli import doctor as module
    else:
        from trt_kernels.cli import selftest as module
    return module


class _UsageError(Exception):
    """A usage mistake, from the parser to :func:`main`, which says it as every other failure."""


class _Parser(argparse.ArgumentParser):
    """Usage mistakes as every other failure of the command: one ``error: ... Fix: ...`` line on stderr, one
    JSON document on stdout under ``--json``, and exit status 1 (argparse's own is the usage and status 2)."""

    def error(self, message: str):
        raise _UsageError(f"{self.prog}: {message}. Fix: see `{self.prog} --help`")


def _usage_error(message: str, argv) -> int:
    """Say a usage mistake: one line, and under ``--json`` of a command that has it, its one document (only then is
    anything imported: a mistyped command answers as quickly as ``--help``)."""
    cmd = next((a for a in argv if not a.startswith("-")), None)
    if "--json" not in argv or cmd not in ("status", "inspect", "compile", "doctor", "selftest"):
        print(f"error: {message}", file=sys.stderr)
        return 1
    from trt_kernels.cli.inspect import report_error

    return report_error(message, True, STATUS_SCHEMA if cmd == "status" else _command(cmd).SCHEMA)


class _Subcommands:
    """``add_subparsers()``'s result, whose parsers also show their one-line help as the description."""

    def __init__(self, sub):
        self._sub = sub

    def add_parser(self, name: str, help: str, **kw):  # noqa: A002 - argparse's name
        return self._sub.add_parser(name, help=_plain(help), description=_plain(kw.pop("description", help)), **kw)

    def names(self):
        return list(self._sub.choices)


def main(argv=None) -> int:
    parser = _Parser(prog="trt-kernels", description=_plain(__doc__))
    parser.add_argument("--version", action=_Version, help="print the version (and torch's, cuda-bindings') and exit")
    sub = _Subcommands(parser.add_subparsers(dest="cmd", required=True))
    sub.add_parser("info", help="versions, GPU, compile arch, header and cache locations")
    st = sub.add_parser("status", help="import modules or run .py files that declare ops, then report each op")
    st.add_argument("paths", nargs="*", metavar="MODULE_OR_FILE", help="module names or .py files")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    ca = sub.add_parser("cache", help="show or clear the compile cache")
    ca.add_argument("action", choices=["path", "clear"])
    _add_commands(sub)
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = parser.parse_args(argv)
    except _UsageError as e:
        message = str(e)
        if all(a.startswith("-") for a in argv):  # no command (argparse would name `cmd`, unknown options or not)
            unknown = " ".join(argv)
            message = (f"{parser.prog}: {f'unrecognized arguments: {unknown}' if unknown else 'no command given'} "
                       f"(the commands: {', '.join(sub.names())}). Fix: see `{parser.prog} --help`")
        return _usage_error(message, argv)
    if args.cmd in ("info", "status", "inspect", "compile", "selftest"):  # (doctor reports it as one of its checks)
        problem = _arch_env_problem()
        if problem is not None:
            from trt_kernels.cli.inspect import report_error

            if args.cmd == "info":  # (no --json)
                return report_error(problem, False, "")
            schema = STATUS_SCHEMA if args.cmd == "status" else _command(args.cmd).SCHEMA
            return report_error(problem, args.json, schema)
    if getattr(args, "run", None) is not None:
        return args.run(args)
    if args.cmd == "info":
        return _info()
    if args.cmd == "status":
        return _status(args.paths, args.json)
    return _cache(args.action)
