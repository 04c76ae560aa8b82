"""``trt-kernels compile``: fill the disk cache ahead of time, for the archs given.

For container builds: run it where the image is built (no GPU needed), ship the cache
directory (``TRT_KERNELS_CACHE_DIR``), and a process on the GPU machine that declares the same
ops reads every program from the cache instead of running NVRTC. Compiling goes through
:meth:`KernelOp.program` (:func:`trt_kernels.sources.nvrtc.compile_program`), the path every launch
takes, so the entries are the ones a launch looks up.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Sequence

SCHEMA = "trt-kernels.compile/1"


def _bar(done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:40]:<40}")
    sys.stderr.flush()


def compile_ops(kops, archs: Sequence[str], progress: bool = False) -> List[Dict[str, Any]]:
    """Compile every op for every arch; one row per (op, arch)."""
    from trt_kernels.errors import CompileError, KernelABIError
    from trt_kernels.sources.nvrtc import normalize_arch

    jobs = [(k, normalize_arch(a)) for k in kops for a in archs]
    rows = []
    for i, (kop, arch) in enumerate(jobs):
        if progress:
            _bar(i, len(jobs), f"{kop.op_name} {arch}")
        row: Dict[str, Any] = {"op": kop.op_name, "arch": arch}
        if not kop.source.needs_arch:
            row.update(result="skipped", detail=f"declared with {kop.source.entry_point}: one build serves every arch, "
                                                "nothing to compile", ms=None)
            rows.append(row)
            continue
        at_import = arch in kop.builds()
        t0 = time.perf_counter()
        try:
            b = kop.binary(arch)
        except (CompileError, KernelABIError) as e:
            row.update(result="failed", detail=str(e), ms=(time.perf_counter() - t0) * 1e3)
            rows.append(row)
            continue
        ms = (time.perf_counter() - t0) * 1e3
        tool = b.toolchain.split()[0]
        how = "read from the cache" if b.from_cache else f"compiled by {tool}"
        entries = [{"path": e, "bytes": os.path.getsize(e)} for e in b.entries if os.path.isfile(e)]
        row.update(result=("at import: " + how) if at_import else how, ms=None if at_import else ms,
                   compiled=not b.from_cache, nvrtc=not b.from_cache and tool == "NVRTC", toolchain=b.toolchain,
                   entry=entries[0]["path"] if entries else None, entries=entries,
                   bytes=sum(e["bytes"] for e in entries) if entries else None, kernels=len(b.kernels))
        rows.append(row)
    if progress:
        _bar(len(jobs), len(jobs), "done")
        sys.stderr.write("\n")
    return rows


def _normalizes(arch) -> bool:
    from trt_kernels.sources.nvrtc import normalize_arch

    try:
        normalize_arch(arch)
    except ValueError:
        return False
    return True


def run(target: str, archs: Sequence[str], op: Optional[str], as_json: bool) -> int:
    from trt_kernels.cache_store import cache_dir
    from trt_kernels.cli.inspect import TargetError, arch_origin, arch_problem, check_arch, load_target, report_error
    from trt_kernels.sources.nvrtc import compile_arch, normalize_arch

    given = bool(archs)
    try:
        cdir = cache_dir()
        if cdir is None:
            raise TargetError("the disk cache is disabled (TRT_KERNELS_CACHE=0), so compiling ahead of time keeps "
                              "nothing. Fix: unset TRT_KERNELS_CACHE (and set TRT_KERNELS_CACHE_DIR to the folder to "
                              "ship)")
        from trt_kernels.cache_store import trust

        tr = trust()
        if tr["trusted"] is False:
            raise TargetError(f"the cache {cdir} is not private to you ({tr['problem']}), so no process would read "
                              f"what is compiled into it. Fix: {tr['fix']}")
        try:
            archs = [normalize_arch(a) for a in archs] or [compile_arch()[0]]
        except ValueError as e:
            bad = next((a for a in archs if not _normalizes(a)), "")
            raise TargetError(arch_problem(arch_origin(given), bad, str(e))) from None
        archs = list(dict.fromkeys(archs))
        origin = "--arch" if given else compile_arch()[1]
        t0 = time.perf_counter()
        kops = load_target(target)
        import_s = time.perf_counter() - t0
        if op is not None:
            names = ", ".join(k.op_name for k in kops) or "none"
            kops = [k for k in kops if k.op_name == op]
            if not kops:
                raise TargetError(f"{target} declares no op {op!r} (it declares: {names}). Fix: check the name "
                                  f"(trt-kernels inspect {target})")
        for a in archs:
            check_arch(a, arch_origin(given), kops)
    except TargetError as e:
        return report_error(str(e), as_json, SCHEMA, target=target)
    progress = (not as_json) and sys.stderr.isatty() and len(kops) * len(archs) >= 4
    t1 = time.perf_counter()
    rows = compile_ops(kops, archs, progress=progress)
    total_s = time.perf_counter() - t1
    failed = [r for r in rows if r["result"] == "failed"]
    compiled = sum(1 for r in rows if r.get("compiled"))
    cached = sum(1 for r in rows if r.get("compiled") is False)
    written = sum(r.get("bytes") or 0 for r in rows if r.get("compiled") and r.get("bytes"))
    tools = sorted({r["toolchain"].split()[0] for r in rows if r.get("compiled")})
    by_tool = {t: sum(1 for r in rows if r.get("compiled") and r["toolchain"].startswith(t + " ")) for t in tools}
    if as_json:
        print(json.dumps({"schema": SCHEMA, "target": target, "archs": archs, "arch_from": origin,
                          "cache_dir": str(cdir),
                          "import_seconds": import_s, "compile_seconds": total_s, "rows": rows,
                          "compiles": compiled, "nvrtc_compiles": by_tool.get("NVRTC", 0),
                          "triton_compiles": by_tool.get("Triton", 0), "cache_hits": cached, "failed": len(failed),
                          "ok": not failed},
                         indent=2))
        return 1 if failed else 0
    print(f"{target}: {len(kops)} op{'s' if len(kops) != 1 else ''} x {len(archs)} arch"
          f"{'s' if len(archs) != 1 else ''} ({', '.join(archs)}, from {origin}) into {cdir}")
    w = max([len(r["op"]) for r in rows] + [2])
    print(f"  {'op':<{w}}  {'arch':<7} {'ms':>8}  {'result':<32} entry")
    for r in rows:
        ms = f"{r['ms']:.1f}" if r.get("ms") is not None else "-"
        more = f" and {len(r['entries']) - 1} more" if len(r.get("entries") or ()) > 1 else ""
        entry = (f"{r['entry']}{more} ({r['bytes']} B)" if r.get("entry")
                 else (r.get("detail", "") if r["result"] != "failed" else ""))
        print(f"  {r['op']:<{w}}  {r['arch']:<7} {ms:>8}  {r['result']:<32} {entry}")
        if r["result"] == "failed":
            print("    " + r["detail"].replace("\n", "\n    "))
    how = (f" by {tools[0]}" if len(tools) == 1
           else f" ({', '.join(f'{t} {n}' for t, n in by_tool.items())})" if tools else "")
    print(f"total: {len(rows)} programs, {compiled} compiled{how} ({written} bytes written), {cached} already "
          f"cached, {len(failed)} failed; {total_s * 1e3:.0f} ms compiling (+{import_s * 1e3:.0f} ms importing "
          f"{target})")
    if not failed:
        print(f"a process that declares these ops for {' or '.join(archs)} (that GPU, or TRT_KERNELS_ARCH) with "
              f"TRT_KERNELS_CACHE_DIR={cdir} now reads them from this cache; nothing is compiled there")
    return 1 if failed else 0
