"""``trt-kernels``: environment report, op status, cache maintenance, inspect, compile, doctor, selftest."""

from __future__ import annotations

import argparse
import runpy
import shutil
import sys


def _info() -> int:
    import torch

    from . import __version__
    from .compile import cache_dir, default_arch, include_dirs, nvrtc_version
    from .launch import driver_version

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
    from .toolchain import identity

    print(f"NVRTC file    {identity() or 'not found on disk (the cache is keyed by the loaded library)'}")
    print(f"CUDA driver   {'.'.join(map(str, drv)) if drv else 'none'}")
    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none visible"
    print(f"GPU           {gpu}")
    print(f"compile arch  {default_arch() or 'none (set TRT_KERNELS_ARCH, e.g. sm_90)'}")
    print(f"headers       {', '.join(include_dirs()) or 'not found'}")
    print(f"cache         {cache_dir() or 'disabled (TRT_KERNELS_CACHE=0)'}")
    if drv and nvrtc[0].isdigit():
        from .ptxcheck import ptx_loadable_note

        note = ptx_loadable_note(nvrtc_version(), drv)
        if note:
            print(f"note          {note}")
    return 0


def _status(paths) -> int:
    from .status import format_status

    for p in paths:
        if p.endswith(".py"):
            runpy.run_path(p, run_name="trt_kernels_status")
        else:
            __import__(p)
    print(format_status())
    return 0


def _cache(action: str) -> int:
    from .compile import cache_dir

    d = cache_dir()
    if d is None:
        print("cache disabled (TRT_KERNELS_CACHE=0)")
        return 0
    if action == "path":
        print(d)
    elif action == "clear":
        n = len(list(d.glob("*/*.bin"))) if d.exists() else 0
        shutil.rmtree(d, ignore_errors=True)
        print(f"removed {n} entries from {d}")
    return 0


def _add_commands(sub) -> None:
    """inspect, compile, doctor, selftest: each lives in its own module, imported when run."""
    ins = sub.add_parser("inspect", help="what the package derived for each op a module declares (no GPU needed)")
    ins.add_argument("target", metavar="MODULE_OR_FILE", help="a module name or a .py file that declares ops")
    ins.add_argument("--op", metavar="NS::NAME", help="only this op")
    ins.add_argument("--arch", help="compile for this arch to read the PTX (default: the GPU, TRT_KERNELS_ARCH, sm_90)")
    ins.add_argument("--rank", action="append", default=[], metavar="NAME=N",
                     help="rank of a tensor input for the launch plan (default: InputDecl(ndim=) or 2)")
    ins.add_argument("--json", action="store_true", help="machine-readable output")
    ins.set_defaults(run=lambda a: _lazy("_cli_inspect").run(a.target, a.op, a.arch, a.rank, a.json))

    co = sub.add_parser("compile", help="fill the disk cache ahead of time (container builds)")
    co.add_argument("target", metavar="MODULE_OR_FILE", help="a module name or a .py file that declares ops")
    co.add_argument("--arch", action="append", default=[], help="an arch to compile for (repeatable), e.g. sm_90")
    co.add_argument("--op", metavar="NS::NAME", help="only this op")
    co.add_argument("--json", action="store_true", help="machine-readable output")
    co.set_defaults(run=lambda a: _lazy("_cli_compile").run(a.target, a.arch, a.op, a.json))

    do = sub.add_parser("doctor", help="check the installation: torch, CUDA, NVRTC vs driver, headers, TensorRT")
    do.add_argument("--json", action="store_true", help="machine-readable output")
    do.set_defaults(run=lambda a: _lazy("_cli_doctor").run(a.json))

    se = sub.add_parser("selftest", help="the seed's seven cases on every tier this machine has")
    se.add_argument("--json", action="store_true", help="machine-readable output")
    se.set_defaults(run=lambda a: _lazy("_cli_selftest").run(a.json))


def _lazy(name: str):
    import importlib

    return importlib.import_module(f"{__package__ or 'trt_kernels'}.{name}")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="trt-kernels", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, GPU, compile arch, header and cache locations")
    st = sub.add_parser("status", help="import modules or run .py files that declare ops, then report each op")
    st.add_argument("paths", nargs="*", help="module names or .py files")
    ca = sub.add_parser("cache", help="show or clear the compile cache")
    ca.add_argument("action", choices=["path", "clear"])
    _add_commands(sub)
    args = parser.parse_args(argv)
    if getattr(args, "run", None) is not None:
        return args.run(args)
    if args.cmd == "info":
        return _info()
    if args.cmd == "status":
        return _status(args.paths)
    return _cache(args.action)


if __name__ == "__main__":
    raise SystemExit(main())
