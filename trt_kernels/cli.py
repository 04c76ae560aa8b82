"""``trt-kernels``: environment report, op status, cache maintenance."""

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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="trt-kernels", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="versions, GPU, compile arch, header and cache locations")
    st = sub.add_parser("status", help="import modules or run .py files that declare ops, then report each op")
    st.add_argument("paths", nargs="*", help="module names or .py files")
    ca = sub.add_parser("cache", help="show or clear the compile cache")
    ca.add_argument("action", choices=["path", "clear"])
    args = parser.parse_args(argv)
    if args.cmd == "info":
        return _info()
    if args.cmd == "status":
        return _status(args.paths)
    return _cache(args.action)


if __name__ == "__main__":
    raise SystemExit(main())
