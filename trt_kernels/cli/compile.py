"""``trt-kernels compile``: fill the disk cache ahead of time, for the archs given.

For container builds: run it where the image is built (no GPU needed), ship the cache
directory (``TRT_KERNELS_CACHE_DIR``), and a process on the GPU machine that declares the same
ops reads every program from the cache instead of running NVRTC. Compiling goes through
:meth:`KernelOp.program` (:func:`trt_kernels.sources.nvrtc.compile_program`), the path every launch
takes, so the entries are the ones a launch looks up.

``--min-arch sm_80`` also compiles each op for the arch its TensorRT AOT plugin's PTX targets under that floor
(:meth:`KernelOp.aot_target`, as ``TRT_KERNELS_MIN_ARCH=sm_80`` has it at build time): rows marked ``AOT PTX (min
arch)``, so a build with that variable reads the PTX from the cache. An op whose declared ``min_arch`` is above the
floor, or whose code does not compile for it (a newer arch's feature), is a failed row saying the fix.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

SCHEMA = "trt-kernels.compile/1"


def _bar(done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // total
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label[:40]:<40}")
    sys.stderr.flush()


ARCH_ROLE = "--arch"
AOT_ROLE = "AOT PTX (min arch)"


def _aot_job(kop, min_arch: str):
    """``(arch, None)``: the arch ``kop``'s AOT PTX targets under the floor ``min_arch`` (the one rule,
    :meth:`KernelOp.aot_target`, as with ``TRT_KERNELS_MIN_ARCH`` set to it; None for a ``ptx_op``, whose PTX is as
    given); ``(None, row)`` where there is nothing to compile: a refusal (the failed row) or a ``ptx_op``'s own
    PTX (a skipped row naming its ``.target``)."""
    from trt_kernels.errors import ArchError, CompileError, KernelABIError
    from trt_kernels.sources import archs

    row: Dict[str, Any] = {"op": kop.op_name, "arch": min_arch, "role": AOT_ROLE, "aot_ptx": True, "ms": None}
    jit = dict(result="skipped", detail="its TensorRT plugin has no AOT impl (JIT; trt-kernels inspect says why): no "
               "PTX is embedded, nothing to compile")
    if not kop.aot.aot:
        row.update(jit)
        return None, row
    try:
        target, _ = kop.aot_target(min_arch_env=min_arch)
        # (decided again for the floor's builds: what fits TensorRT's launch, a Triton config's shared memory, is
        # known from a build)
        aot = kop.aot_at(target).aot if target is not None else True
    except (ArchError, CompileError, KernelABIError) as e:
        row.update(result="failed", detail=str(e))
        return None, row
    if not aot:
        row.update(jit)
        return None, row
    if target is not None:
        return target, None
    ptx = next(iter(kop.binary().kernels.values())).aot_ptx
    own = archs.ptx_target(ptx) if ptx is not None else None
    row.update(arch=own or "?", result="skipped", ptx_target=own,
               detail=(f"declared with {kop.source.entry_point}: its PTX as given targets {own} (loads on "
                       f"{archs.loads_on(own)}), nothing to compile" if own else
                       f"declared with {kop.source.entry_point}: its PTX as given, nothing to compile"))
    return None, row


def compile_ops(kops, archs: Sequence[str], progress: bool = False,
                min_arch: Optional[str] = None, overridable: bool = False) -> List[Dict[str, Any]]:
    """Compile every op for every arch; one row per (op, arch), its ``role`` ``--arch``; with ``min_arch``, one
    more per op for the arch its AOT PTX targets under that floor (``role`` ``AOT PTX (min arch)``; where that arch
    is one of ``archs`` already, that row's role says both). ``overridable``: ``archs`` is the default compile arch
    (no ``--arch``), which an op's ``arch_override`` replaces, as it does where the op is declared."""
    from trt_kernels.cache_store import cache_root
    from trt_kernels.errors import CompileError, KernelABIError
    from trt_kernels.sources import archs as _archs
    from trt_kernels.sources.nvrtc import normalize_arch

    archs = [normalize_arch(a) for a in archs]
    jobs: List[Any] = []  # (kop, arch, role) or a finished row
    for k in kops:
        own = getattr(k.source, "arch_override", None) if overridable else None
        roles = {a: ARCH_ROLE for a in ([normalize_arch(own)] if own else archs)}
        done = None
        if min_arch is not None:
            target, done = _aot_job(k, min_arch)
            if target is not None:
                roles[target] = f"{ARCH_ROLE}, {AOT_ROLE}" if target in roles else AOT_ROLE
        jobs.extend((k, a, role) for a, role in roles.items())
        if done is not None:
            jobs.append(done)
    rows = []
    for i, job in enumerate(jobs):
        if isinstance(job, dict):
            rows.append(job)
            continue
        kop, arch, role = job
        if progress:
            _bar(i, len(jobs), f"{kop.op_name} {arch}")
        row: Dict[str, Any] = {"op": kop.op_name, "arch": arch, "role": role, "aot_ptx": AOT_ROLE in role}
        if not kop.source.needs_arch:
            row.update(result="skipped", detail=f"declared with {kop.source.entry_point}: one build serves every arch, "
                                                "nothing to compile", ms=None)
            rows.append(row)
            continue
        own = kop.source.min_arch
        if own is not None and _archs.below(arch, own):
            row.update(result="skipped", ms=None, detail=f"declared with min_arch={own!r}: it refuses {arch} GPUs "
                       f"(ArchError at launch), nothing to compile for them (lower min_arch if the kernel has a path "
                       f"for {arch})")
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
        kept, copied = _kept(b)
        how = ("copied from the shared cache" if copied else "read from the cache") if b.from_cache \
            else f"compiled by {tool}"
        entries = [{"path": e, "bytes": os.path.getsize(e)} for e in kept or () if os.path.isfile(e)]
        row.update(result=("at import: " + how) if at_import else how, ms=None if at_import else ms,
                   compiled=not b.from_cache, copied=copied, nvrtc=not b.from_cache and tool == "NVRTC",
                   toolchain=b.toolchain, entry=entries[0]["path"] if entries else None, entries=entries,
                   bytes=sum(e["bytes"] for e in entries) if entries else None, kernels=len(b.kernels))
        if kept is None:  # (a build from the cache that is not kept came from the shared one)
            root, got = cache_root(), "read from the shared cache" if b.from_cache else how
            row.update(result="failed", detail=f"{got}, but not written into {root}, so the cache to ship lacks it "
                       "(the warning above says why). Fix: make it a writable directory only you can write "
                       "(`trt-kernels doctor` checks it), or set TRT_KERNELS_CACHE_DIR to one")
        if row["aot_ptx"]:  # the .target of the PTX TensorRT's AOT plugin embeds (tactic 1, the first dtype)
            ptx = b.kernel(kop.dtypes[0], 1).aot_ptx
            row["ptx_target"] = _archs.ptx_target(ptx) if ptx is not None else None
            if ptx is None:
                row["detail"] = f"no AOT PTX: {b.aot_reason}"
        rows.append(row)
    if progress:
        _bar(len(jobs), len(jobs), "done")
        sys.stderr.write("\n")
    return rows


def _kept(b) -> Tuple[Optional[List[str]], bool]:
    """``(the entries of build b in the cache being filled, whether one was copied there from the shared cache)``;
    ``(None, ...)`` where that cache keeps nothing of it (a compile it could not write, a shared entry it could
    not copy)."""
    from trt_kernels.cache_store import adopt

    kept, copied = [], False
    for e in b.entries:
        mine = adopt(Path(e))
        if mine is None:
            return None, copied
        copied = copied or str(mine) != e
        kept.append(str(mine))
    return (kept if kept else None), copied


def _normalizes(arch) -> bool:
    from trt_kernels.sources.nvrtc import normalize_arch

    try:
        normalize_arch(arch)
    except ValueError:
        return False
    return True


def run(target: str, archs: Sequence[str], op: Sequence[str], as_json: bool, min_arch: Optional[str] = None) -> int:
    from trt_kernels.cache_store import cache_dir
    from trt_kernels.cli.inspect import (
        TargetError,
        arch_origin,
        arch_problem,
        check_arch,
        load_target,
        parse_min_arch,
        pick_ops,
        report_error,
    )
    from trt_kernels.sources import archs as _archs
    from trt_kernels.sources.nvrtc import compile_arch, normalize_arch

    given = bool(archs)
    try:
        min_arch = parse_min_arch(min_arch, check_env=False)
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
        kops = pick_ops(target, load_target(target), op)
        import_s = time.perf_counter() - t0
        for a in archs:
            check_arch(a, arch_origin(given), kops)
        if min_arch is not None:
            check_arch(min_arch, "--min-arch", kops)
    except TargetError as e:
        return report_error(str(e), as_json, SCHEMA, target=target)
    progress = (not as_json) and sys.stderr.isatty() and len(kops) * (len(archs) + bool(min_arch)) >= 4
    t1 = time.perf_counter()
    rows = compile_ops(kops, archs, progress=progress, min_arch=min_arch, overridable=not given)
    total_s = time.perf_counter() - t1
    failed = [r for r in rows if r["result"] == "failed"]
    compiled = sum(1 for r in rows if r.get("compiled"))
    copied = sum(1 for r in rows if r.get("copied") and r["result"] != "failed")
    cached = sum(1 for r in rows if r.get("compiled") is False and not r.get("copied"))
    written = sum(r.get("bytes") or 0 for r in rows if r.get("compiled") or r.get("copied"))
    tools = sorted({r["toolchain"].split()[0] for r in rows if r.get("compiled")})
    by_tool = {t: sum(1 for r in rows if r.get("compiled") and r["toolchain"].startswith(t + " ")) for t in tools}
    if as_json:
        doc = {"schema": SCHEMA, "target": target, "archs": archs, "arch_from": origin, "min_arch": min_arch,
               "cache_dir": str(cdir), "import_seconds": import_s, "compile_seconds": total_s, "rows": rows,
               "compiles": compiled, "nvrtc_compiles": by_tool.get("NVRTC", 0),
               "triton_compiles": by_tool.get("Triton", 0), "cache_hits": cached, "copied_from_shared": copied,
               "failed": len(failed), "ok": not failed}
        if failed:  # (as every failed document: one message; each row's own is rows[].detail)
            doc["error"] = (f"{len(failed)} of {len(rows)} programs failed, first {failed[0]['op']} for "
                            f"{failed[0]['arch']}: {failed[0]['detail']}")
        print(json.dumps(doc, indent=2))
        return 1 if failed else 0
    aot = f" + AOT plugin PTX for --min-arch {min_arch}" if min_arch else ""
    own = [k.op_name for k in kops if not given and getattr(k.source, "arch_override", None)]
    own_said = (f"; {', '.join(own)}: {'its' if len(own) == 1 else 'their'} arch_override" if own else "")
    print(f"{target}: {len(kops)} op{'s' if len(kops) != 1 else ''} x {len(archs)} arch"
          f"{'s' if len(archs) != 1 else ''} ({', '.join(archs)}, from {origin}{own_said}){aot} into {cdir}")
    w = max([len(r["op"]) for r in rows] + [2])
    roles = max(len(r["role"]) for r in rows) if min_arch and rows else 0  # the "for" column, with --min-arch
    role_head = f"{'for':<{roles}}  " if roles else ""
    print(f"  {'op':<{w}}  {'arch':<7} {role_head}{'ms':>8}  {'result':<32} entry")
    for r in rows:
        ms = f"{r['ms']:.1f}" if r.get("ms") is not None else "-"
        more = f" and {len(r['entries']) - 1} more" if len(r.get("entries") or ()) > 1 else ""
        entry = (f"{r['entry']}{more} ({r['bytes']} B)" if r.get("entry")
                 else (r.get("detail", "") if r["result"] != "failed" else ""))
        if r.get("entry") and r.get("aot_ptx") and r.get("ptx_target"):
            entry += f", PTX .target {r['ptx_target']}"
        role = f"{r['role']:<{roles}}  " if roles else ""
        print(f"  {r['op']:<{w}}  {r['arch']:<7} {role}{ms:>8}  {r['result']:<32} {entry}")
        if r["result"] == "failed":
            print("    " + r["detail"].replace("\n", "\n    "))
    how = (f" by {tools[0]}" if len(tools) == 1
           else f" ({', '.join(f'{t} {n}' for t, n in by_tool.items())})" if tools else "")
    shared = f", {copied} copied from the shared cache" if copied else ""
    print(f"total: {len(rows)} programs, {compiled} compiled{how}{shared} ({written} bytes written), {cached} "
          f"already cached, {len(failed)} failed; {total_s * 1e3:.0f} ms compiling (+{import_s * 1e3:.0f} ms "
          f"importing {target})")
    if not failed:
        aside = " (the skipped rows aside)" if any(r["result"] == "skipped" for r in rows) else ""
        print(f"a process that declares these ops for {' or '.join(archs)} (that GPU, or TRT_KERNELS_ARCH"
              f"{'; arch_override wins' if own else ''}) with TRT_KERNELS_CACHE_DIR={cdir} now reads them from this "
              f"cache{aside}; nothing is compiled there")
        if min_arch and any(r.get("aot_ptx") and r["result"] not in ("skipped", "failed") for r in rows):
            print(f"TensorRT builds with {_archs.MIN_ARCH_ENV}={min_arch} (or ops declared with min_arch="
                  f"{min_arch!r}) embed this {min_arch} PTX from the cache: their AOT plugins load on "
                  f"{_archs.loads_on(min_arch)}; run them with {_archs.MIN_ARCH_ENV}={min_arch} and the same "
                  "TRT_KERNELS_CACHE_DIR")
    return 1 if failed else 0
