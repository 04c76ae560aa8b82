"""``trt-kernels inspect``: everything the package derived for each op a module declares.

Schema, the kernel ABI as a C signature, the kernel's parameters as the PTX has them (and
whether they agree), the launch plan written over the inputs' names, dtypes and tactics, the
cache entry, what the TensorRT side makes of the op, and the PTX its AOT plugin would embed (the
arch :meth:`~trt_kernels.op.KernelOp.aot_target` picks, the ``.target`` of that PTX and the GPUs it
loads on). Needs no GPU: the PTX is compiled for ``--arch`` (else the visible GPU, else
``TRT_KERNELS_ARCH``, else sm_90 for reading only).
"""

from __future__ import annotations

import contextlib
import json
import os
import runpy
import sys
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from trt_kernels.errors import CompileError, KernelABIError
from trt_kernels.registry import CHECK_ARCH

SCHEMA = "trt-kernels.inspect/1"
FALLBACK_ARCH = CHECK_ARCH


class TargetError(Exception):
    """The user's module or file could not be loaded; the message says why."""


def _traceback_fix(target: str, is_file: bool) -> str:
    how = f"python {target}" if is_file else f"python -c 'import {target}'"
    return f"Fix: correct the declaration (`{how}` shows the full traceback)"


@contextlib.contextmanager
def _script_dir_first(path: str):
    """While it runs, the file's folder first on ``sys.path``, as ``python path`` has it (so its sibling
    modules import); ``sys.path`` is restored after."""
    saved = list(sys.path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        yield
    finally:
        sys.path[:] = saved


def load_target(target: str, run_name: str = "trt_kernels_inspect", defer_compile: bool = True):
    """Import a module name or run a ``.py`` file; return the KernelOps it declared (in order).

    Anything that goes wrong (no such file or module, a declaration raising SpecError, the module
    calling sys.exit) is a :class:`TargetError` naming ``target`` and the fix. ``defer_compile``:
    compile nothing while declaring (inspect and compile build each op themselves, for the archs
    asked, and report its errors); ``status`` compiles as a plain import would.
    """
    from trt_kernels import registry

    before = {id(k) for k in registry.all_ops()}
    is_file = target.endswith(".py") or os.sep in target or "/" in target or target in (os.curdir, os.pardir)
    try:
        with registry.deferred_compile() if defer_compile else contextlib.nullcontext():
            if is_file:
                if os.path.isdir(target):
                    raise TargetError(f"{target}: is a directory. Fix: pass the .py file in it that declares the ops, "
                                      "or an importable module name")
                if not os.path.isfile(target):
                    raise TargetError(f"{target}: no such file. Fix: pass a .py file or an importable module name")
                with _script_dir_first(target):
                    runpy.run_path(target, run_name=run_name)
            else:
                __import__(target)
    except TargetError:
        raise
    except SystemExit as e:
        raise TargetError(f"{target}: the module called sys.exit({e.code}) while being imported. Fix: guard "
                          "its script part with `if __name__ == \"__main__\":`") from None
    except ModuleNotFoundError as e:
        if not is_file and e.name and target.split(".")[0] == e.name.split(".")[0]:
            raise TargetError(f"{target}: no module named {e.name!r}. Fix: pass a .py path or put the module on "
                              "PYTHONPATH") from None
        fix = f"Fix: install {e.name!r}, which it imports" if e.name else _traceback_fix(target, is_file)
        raise TargetError(f"{target}: importing it failed: {type(e).__name__}: {e}. {fix}") from None
    except Exception as e:  # noqa: BLE001 - show the user's declaration error as it is
        text = f"{type(e).__name__}: {e}".rstrip()
        fix = "" if "Fix:" in text else f"{'' if text.endswith('.') else '.'} {_traceback_fix(target, is_file)}"
        raise TargetError(f"{target}: importing it failed: {text}{fix}") from None
    return [k for k in registry.all_ops() if id(k) not in before]


def pick_ops(target: str, kops, names: Sequence[str]):
    """The ops of ``kops`` named by ``--op`` (each given once or more; all where none is), in declaration order;
    TargetError naming one that ``target`` does not declare."""
    if not names:
        return kops
    declared = {k.op_name for k in kops}
    for n in names:
        if n not in declared:
            raise TargetError(f"{target} declares no op {n!r} (it declares: {', '.join(sorted(declared)) or 'none'}). "
                              f"Fix: --op NS::NAME, one of those (`trt-kernels inspect {target}` lists them)")
    return [k for k in kops if k.op_name in set(names)]


def report_error(message: str, as_json: bool, schema: str, **fields: Any) -> int:
    """One ``error: ...`` line on stderr and, under ``--json``, one document on stdout; exit status 1."""
    print(f"error: {message}", file=sys.stderr)
    if as_json:
        print(json.dumps({"schema": schema, **fields, "ok": False, "error": message}, indent=2))
    return 1


def gather_or_report(command: str, gather: Callable[[], Any], as_json: bool, schema: str,
                     describe: Callable[[BaseException], str]) -> Tuple[Any, Optional[int]]:
    """``(gather(), None)``; where ``gather`` raises (a bug of ``command``), ``(None, exit status)`` after the
    error is reported under ``--json`` (its one document still printed), and the exception re-raised without."""
    try:
        return gather(), None
    except Exception as e:  # noqa: BLE001 - a bug here; --json still gets its one document
        if not as_json:
            raise
        return None, report_error(f"{command} could not finish: {describe(e)}. Fix: run `trt-kernels {command}` "
                                  "without --json to see the traceback", True, schema, exit_status=1)


def pick_arch(arch: Optional[str]) -> Tuple[str, Optional[str]]:
    """(arch to compile for, a note when it is the default): the one rule, :func:`compile_arch`."""
    from trt_kernels.sources.nvrtc import DEFAULT_ORIGIN, compile_arch

    chosen, origin = compile_arch(arch)
    if origin == DEFAULT_ORIGIN:
        return chosen, f"compiled for {chosen}, {origin} (pass --arch to choose)"
    return chosen, None


def arch_origin(given: bool) -> str:
    """Where the arch came from, for messages: ``--arch``, ``TRT_KERNELS_ARCH``, the visible GPU or the
    default (:func:`compile_arch`)."""
    if given:
        return "--arch"
    from trt_kernels.sources.nvrtc import compile_arch

    return compile_arch()[1]


def arch_problem(origin: str, arch: str, problem: str, example: str = FALLBACK_ARCH) -> str:
    """``--arch sm_50: <problem>. Fix: --arch sm_90`` (or the same said of TRT_KERNELS_ARCH)."""
    if problem.startswith("arch ") and ": " in problem:  # normalize_arch's "arch 'x': expected ..."
        problem = problem.split(": ", 1)[1]
    if origin == "TRT_KERNELS_ARCH":
        where = f"TRT_KERNELS_ARCH={os.environ.get('TRT_KERNELS_ARCH')}"
        fix = f"TRT_KERNELS_ARCH={example}, or pass --arch {example}"
    else:
        where = f"{origin} {arch}"
        fix = f"{origin if origin.startswith('--') else '--arch'} {example}"  # --arch, --min-arch
    return f"{where}: {problem}. Fix: {fix}"


# ---------------- the arch the AOT plugins' PTX targets (issue 35) ----------------


def parse_min_arch(value: Optional[str], check_env: bool = True) -> Optional[str]:
    """``--min-arch``, normalized (None where not given); a :class:`TargetError` in :func:`arch_problem`'s words
    where it is no arch, or one below sm_75 (NVRTC 13's lowest). With ``check_env``, also checks
    ``TRT_KERNELS_MIN_ARCH``, which every AOT build reads, where ``--min-arch`` is not given."""
    from trt_kernels.sources import archs

    floor = archs.LEVEL_FLOOR["AMPERE_PLUS"]
    if not value:
        if not check_env:
            return None
        try:
            archs.env_min_arch()
        except ValueError as e:
            raise TargetError(str(e)) from None
        return None
    try:
        arch = archs.normalize_arch(value)
    except (ValueError, TypeError) as e:
        raise TargetError(arch_problem("--min-arch", value, str(e), floor)) from None
    problem = archs.floor_problem(arch)
    if problem:
        raise TargetError(arch_problem("--min-arch", value, problem, floor))
    return arch


def floor_said(min_arch: Optional[str]) -> Optional[str]:
    """Where the AOT floor of this run comes from, for headers: ``--min-arch sm_80 (as TRT_KERNELS_MIN_ARCH=sm_80
    would)``, ``TRT_KERNELS_MIN_ARCH=sm_80``, or None where there is none."""
    from trt_kernels.sources import archs

    if min_arch:
        return f"--min-arch {min_arch} (as {archs.MIN_ARCH_ENV}={min_arch} would)"
    env = archs.env_min_arch()
    return f"{archs.MIN_ARCH_ENV}={env}" if env else None


def floor_origin(min_arch: Optional[str]) -> Optional[str]:
    """``--min-arch``, ``TRT_KERNELS_MIN_ARCH`` or None: what sets the AOT floor of this run, for ``--json``."""
    from trt_kernels.sources import archs

    return "--min-arch" if min_arch else archs.MIN_ARCH_ENV if archs.env_min_arch() else None


def compile_arch_origin(kop, arch: str, arch_from: str) -> Tuple[str, str]:
    """``(arch, origin)``: the compile arch of this command for ``kop``, which :meth:`KernelOp.aot_target` falls
    back to (no floor, no declared ``min_arch``): the arch given (``arch``, from ``arch_from``), or the
    declaration's ``arch_override`` where the command was given none."""
    if arch_from != "--arch" and kop.source.arch_override:
        return kop.source.arch_override, "the compile arch (the declaration's arch_override)"
    return arch, f"the compile arch ({arch_from})"


def aot_ptx(kop, arch: str, arch_from: str, binary, min_arch: Optional[str] = None
            ) -> Tuple[Dict[str, Any], List[str]]:
    """The PTX the op's TensorRT AOT plugin would embed: the arch :meth:`KernelOp.aot_target` picks and where that
    came from, the ``.target`` of the PTX compiled for it (tactic 1, the first dtype; a ``ptx_op``'s own), the GPUs
    it loads on and whether it may be in a hardware-compatible engine; and the op's errors (a floor its declared
    ``min_arch`` refuses, a compile for the lower arch that fails), each with its fix. ``binary``: the build for
    ``arch`` the report made already (None where it failed); ``min_arch``: the command's ``--min-arch``, taken as
    ``TRT_KERNELS_MIN_ARCH``'s value and named as where the arch came from."""
    from trt_kernels.errors import ArchError
    from trt_kernels.sources import archs

    aot = kop.aot_of(binary).aot
    out: Dict[str, Any] = {"aot": aot, "target_arch": None, "from": None, "ptx_target": None,
                           "loads_on": None, "loads_on_cards": None, "in_hardware_compatible_engines": None,
                           "hardware_compatible": None, "min_arch": kop.source.min_arch, "note": None, "error": None}
    if not aot:
        out["note"] = "none: the op's TensorRT plugin has no AOT impl (JIT, above), so no PTX is embedded"
        return out, []
    try:
        target, origin = kop.aot_target(compile_arch=compile_arch_origin(kop, arch, arch_from), min_arch_env=min_arch)
    except (ArchError, CompileError, KernelABIError, ValueError) as e:  # a ptx_op's build may fail here too
        out["error"] = str(e)
        return out, [str(e)]
    if min_arch and origin == archs.MIN_ARCH_ENV:
        origin = f"--min-arch (as {archs.MIN_ARCH_ENV})"
    out.update(target_arch=target, **{"from": origin})
    b = binary
    if kop.source.needs_arch and (target != arch or b is None):
        if target == arch:  # the build for the report's arch failed: the ERROR above says why
            out["note"] = f"not compiled for {target} (see the error)"
            return out, []
        try:
            b = kop.binary(target)
        except (CompileError, KernelABIError) as e:
            out["error"] = str(e)
            return out, [str(e)]
    if b is None:
        out["note"] = "not built (see the error)"
        return out, []
    image = b.kernel(kop.dtypes[0], 1)
    if image.aot_ptx is None:
        out["note"] = f"no AOT PTX for {target or 'its build'}: {image.aot_reason or b.aot_reason}"
        return out, []
    got = archs.ptx_target(image.aot_ptx)
    out["ptx_target"] = got
    if got is not None:
        out.update(loads_on=archs.loads_on(got), loads_on_cards=archs.loads_on(got, cards=True),
                   hardware_compatible=archs.covers(got, archs.LEVEL_FLOOR["AMPERE_PLUS"]),
                   in_hardware_compatible_engines=archs.in_hardware_compatible_engines(got))
    return out, []


def check_arch(arch: str, origin: str, kops) -> None:
    """TargetError when the compiler of an op in ``kops`` cannot build for ``arch`` (NVRTC for
    ``cuda_kernel_op``: the message names the archs it can). Each source answers for itself
    (:meth:`KernelSource.unsupported_arch`); one that cannot tell without compiling says nothing."""
    problems: Dict[str, List[str]] = {}
    fallback_ok = True
    for k in kops:
        if not k.source.needs_arch:
            continue
        problem = k.source.unsupported_arch(arch)
        if problem is not None:
            problems.setdefault(problem, []).append(k.op_name)
            fallback_ok = fallback_ok and k.source.unsupported_arch(FALLBACK_ARCH) is None
    if not problems:
        return
    problem, users = next(iter(problems.items()))
    who = users[0] + (f" and {len(users) - 1} more" if len(users) > 1 else "")
    raise TargetError(arch_problem(origin, arch, f"{problem}; {who} {'needs' if len(users) == 1 else 'need'} it",
                                   FALLBACK_ARCH if fallback_ok else "<one of those>"))


# ---------------- expressions over the inputs' names ----------------


def fmt_expr(e, names: Sequence[str]) -> str:
    """A plan expression with ``in0.shape[1]`` written as ``x.shape[1]``."""
    from trt_kernels.plan import render

    return render(e, names)


def parse_ranks(items: Sequence[str]) -> Dict[str, int]:
    out = {}
    for it in items or ():
        name, _, r = it.partition("=")
        if not name or not r.strip().isdigit():
            raise TargetError(f"--rank {it!r}: expected NAME=N. Fix: e.g. --rank x=3")
        out[name.strip()] = int(r)
    return out


def check_ranks(ranks: Dict[str, int], kops, scope: str) -> None:
    """A --rank name must be a tensor input of at least one selected op."""
    names = list(dict.fromkeys(n for k in kops for n in k.sig.tensor_names))
    unknown = [n for n in ranks if n not in names]
    if unknown:
        said = ", ".join(repr(n) for n in unknown)
        known = ", ".join(repr(n) for n in names) or "none"
        raise TargetError(f"--rank names {said}, which {'is' if len(unknown) == 1 else 'are'} not a tensor input "
                          f"of {scope} (its tensor inputs: {known}). Fix: --rank NAME=N with NAME one of those")


# ---------------- one op ----------------


def _tactics(kop) -> List[Dict[str, Any]]:
    return ([{"id": i + 1, "block": list(g.block) + [1] * (3 - len(g.block)),
              "note": "eager uses this" if i == 0 else ""} for i, g in enumerate(kop.sig.launches)]
            or [{"id": 1, "block": None, "note": "launched by eager_fn / aot_fn"}])


def _plan(kop, ranks_given: Dict[str, int], arch: Optional[str]) -> Dict[str, Any]:
    from trt_kernels import dtypes as _dt
    from trt_kernels.errors import InputError

    sig = kop.sig
    names = list(sig.tensor_names)
    if not sig.has_outputs or not sig.has_geometry:
        parts = []
        parts.append("outputs from meta_fn" if not sig.has_outputs else "outputs from the spec")
        parts.append("eager launch by eager_fn" if kop.eager_fn is not None else "eager launch from the plan")
        if kop.aot_fn is not None:
            parts.append("TensorRT launch by aot_fn")
        return {"derived": False, "note": "override path: " + ", ".join(parts)}
    ranks, assumed = [], []
    for d in sig.tensor_decls:
        r = ranks_given.get(d.name, d.ndim)
        if r is None:
            r = 2
            assumed.append(d.name)
        ranks.append(r)
    try:
        p = kop.plan(tuple(ranks), 1, arch)
    except (InputError, CompileError, KernelABIError) as e:
        return {"derived": True, "ranks": dict(zip(names, ranks)), "ranks_assumed": assumed, "error": str(e)}
    f = lambda e: fmt_expr(e, names)  # noqa: E731
    outputs = []
    for o, decl in zip(p.outputs, sig.outputs):
        if o.dtype is not None:
            dt = _dt.short(o.dtype)
        else:
            src = sig.tensor_decls[o.dtype_src]
            dt = (_dt.short(src.dtype) if src.dtype is not None and not isinstance(src.dtype, str)
                  else f"dtype of {src.name}")
        shape = [f(e) for e in o.shape]
        entry = {"name": decl.name, "shape": shape, "dtype": dt}
        if o.written >= 0:  # the axis holds the bound; the kernel writes the size to the count output
            shape[o.written] = f"{sig.outputs[o.count].name} <= {shape[o.written]}"
        if o.bounds:
            entry["written"] = {"max": f(o.bounds[0]), "opt": f(o.bounds[1])}
        outputs.append(entry)
    def arg(q) -> str:  # one kernel parameter's value, in the kernel's order (Signature.params)
        if q.role == "input":
            return f"{names[q.index]}.data_ptr()"
        if q.role == "scalar":
            d = sig.scalar_decls[q.index]
            return d.name if q.element is None else f"{d.name}[{q.element}]"
        if q.role == "extra":
            return f(p.extras[q.index])
        return f"{sig.outputs[q.index].name}.data_ptr()"

    args = [arg(q) for q in sig.params(sig.kernel_dtypes[0])]
    return {
        "derived": True, "ranks": dict(zip(names, ranks)), "ranks_assumed": assumed,
        "grid": [f(e) for e in p.grid], "block": list(p.block), "shared_mem": f(p.shared_mem),
        "outputs": outputs, "arguments": args,
    }


def _abi(kop, arch: str):
    """(per-dtype ABI rows, the build's cache facts, errors, the build or None)."""
    from trt_kernels import dtypes as _dt
    from trt_kernels.sources import abi as _abi

    errors: List[str] = []
    binary = None
    try:
        binary = kop.binary(arch)
    except (CompileError, KernelABIError) as e:
        errors.append(str(e))
        try:  # build without the ABI check, to show what the PTX does take
            binary = kop.source.build(arch if kop.source.needs_arch else None, check_abi=False)
        except Exception:  # noqa: BLE001 - the error is reported already
            binary = None
    rows = []
    for d in kop.dtypes:
        name_expr = kop.source.name_expression(d)
        image = binary.kernel(d, 1) if binary is not None else None
        row: Dict[str, Any] = {"dtype": _dt.label(d, kop.sig.type_params), "kernel_name": name_expr,
                               "symbol": image.symbol if image is not None else None}
        expected = kop.sig.params(d) if kop.sig.has_outputs else None
        row["c_signature"] = (f"__global__ void {name_expr.split('<')[0]}({', '.join(p.label for p in expected)})"
                              if expected is not None else None)
        row["expected"] = ([{"param": p.label, "kind": p.kind, "bytes": p.size} for p in expected]
                           if expected is not None else None)
        found = _abi.ptx_params(image.ptx, image.symbol) if image is not None else None
        row["ptx_params"] = [{"type": t, "bytes": b} for t, b in found] if found is not None else None
        # pointers the compiler appends after the declared parameters (Triton's scratch buffers)
        row["hidden_params"] = len(image.scratch) if image is not None else 0
        if found is not None and expected is not None:
            declared = found[:len(found) - row["hidden_params"]]
            row["param_ok"] = _abi.param_ok(declared, expected)
            row["matches"] = len(declared) == len(expected) and all(row["param_ok"])
        else:
            row["param_ok"] = None
            row["matches"] = None
        rows.append(row)
    cache = None
    if binary is not None and binary.entries:
        entries = [{"path": e, "bytes": os.path.getsize(e) if os.path.isfile(e) else None} for e in binary.entries]
        isas = sorted({k.ptx_isa for k in binary.kernels.values() if k.ptx_isa})
        cache = {"path": entries[0]["path"], "bytes": sum(e["bytes"] or 0 for e in entries) or None, "entries": entries,
                 "state": ("read from the disk cache" if binary.from_cache else
                           f"compiled by {binary.toolchain.split()[0]} in this process"),
                 "arch": binary.arch, "toolchain": binary.toolchain,
                 "ptx_isa": ", ".join(f"{a}.{b}" for a, b in isas) or None, **binary.details}
    return rows, cache, errors, binary


def _tensorrt(kop, trt_state: Dict[str, str], binary) -> Dict[str, Any]:
    from trt_kernels.eager.driver import driver_version

    made = kop.aot_of(binary)
    available = trt_state.get("available") == "yes"
    out = {"plugin": made.mode, "why": made.why,
           "registered": kop.tensorrt.plugin or None if available else None,
           "converter": kop.tensorrt.converter or "not registered" if available else
           f"not registered: {trt_state.get('reason') or 'TensorRT side not initialised'}",
           "side": trt_state.get("available", "no"), "side_reason": trt_state.get("reason") or None}
    if trt_state.get("backend"):
        out["backend"] = trt_state["backend"]
    out["ptx_driver_note"] = kop.source.ptx_note(binary, driver_version()) if binary is not None else None
    return out


def _specializes(kop) -> List[Dict[str, Any]]:
    """The kernel parameters whose code depends on a call's values (Triton's launch-time specialization,
    :mod:`trt_kernels.recipe`), each with what a call may tell the compiler; empty: one code for every call."""
    from trt_kernels.recipe import ALIGNED, ONE

    kdt = kop.dtypes[0]
    params = kop.sig.params(kdt)
    out = []
    for pos, flags in kop.source.specialization(kdt):
        p = params[pos]
        facts = (["16-byte aligned" if p.kind == "ptr" else "a multiple of 16"] if flags & ALIGNED else []) + (
            ["1 (a constant of the code)"] if flags & ONE else [])
        out.append({"position": pos, "param": p.label, "facts": facts})
    return out


def describe(kop, arch: str, ranks: Dict[str, int], trt_state: Dict[str, str],
             arch_from: str = "--arch", min_arch: Optional[str] = None) -> Dict[str, Any]:
    from trt_kernels import dtypes as _dt

    abi_rows, cache, errors, binary = _abi(kop, arch)
    aot, aot_errors = aot_ptx(kop, arch, arch_from, binary, min_arch)
    d: Dict[str, Any] = {
        "op": kop.op_name,
        "schema": kop.schema,
        "declared_by": kop.source.entry_point,
        "source": kop.source.describe(),
        "overrides": [n for n in kop.overrides if n != "setup_context"],
        "arch": arch if kop.source.needs_arch else None,
        "abi": abi_rows,
        # run() checked each --rank name is a tensor input of some selected op; this op takes its own
        "plan": _plan(kop, {k: v for k, v in ranks.items() if k in kop.sig.tensor_names},
                      arch if kop.source.needs_arch else None),
        "dtypes": [_dt.label(t, kop.sig.type_params) for t in kop.dtypes],
        "checks": [c.label for c in kop.sig.checks],  # size relations between inputs, as declared
        "tactics": _tactics(kop),
        "specializes": _specializes(kop),
        "cache": cache,
        "tensorrt": _tensorrt(kop, trt_state, binary),
        "aot_ptx": aot,
        "errors": errors + aot_errors,
    }
    return d


# ---------------- text ----------------


def _kib(n: Optional[int]) -> str:
    if n is None:
        return "?"
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB"


def format_op(d: Dict[str, Any]) -> str:
    L = []
    add = L.append
    add(f"{d['op']}{d['schema']}")
    how = d["declared_by"] + (f" with {', '.join(d['overrides'])}" if d["overrides"] else "")
    add(f"  declared      {how}")
    add(f"  source        {d['source']}")
    for row in d["abi"]:
        add(f"  kernel        {row['kernel_name']} [{row['dtype']}] -> symbol {row['symbol'] or '(not compiled)'}"
            + (f" for {d['arch']}" if d["arch"] else ""))
        if row["c_signature"]:
            add(f"  expects       {row['c_signature']}")
        else:
            add("  expects       (not declared: override path, the spec has no outputs)")
        exp, got = row["expected"] or [], row["ptx_params"]
        if got is None and not exp:
            continue
        verdict = {True: "agree", False: "DISAGREE", None: "not compared"}[row["matches"]]
        hidden = (f" ({row['hidden_params']} appended by the compiler, after the declared ones)"
                  if row["hidden_params"] else "")
        add(f"  PTX params    {len(got) if got is not None else '?'} in the .entry{hidden}; spec and PTX {verdict}")
        n = max(len(exp), len(got or []))
        w = max([len(p["param"]) for p in exp] + [10])
        for i in range(n):
            e = exp[i] if i < len(exp) else None
            g = got[i] if got is not None and i < len(got) else None
            n_declared = len(got or ()) - row["hidden_params"]
            hidden = g is not None and i >= n_declared and row["hidden_params"]
            missing = "(not declared)" if not exp else "(hidden pointer)" if hidden else "(missing)"
            es = f"{e['param']:<{w}} {e['kind']:>5} {e['bytes']}B" if e else f"{missing:<{w + 9}}"
            gs = f".{g['type']:<6} {g['bytes']}B" if g else "(nothing)"
            if row["param_ok"] is None:
                ok = ""
            elif hidden:
                ok = "appended by the compiler"
            else:
                ok = "ok" if i < len(row["param_ok"]) and row["param_ok"][i] else "<-- differs"
            add(f"    {i:2d}  {es:<{w + 10}}  {gs:<12} {ok}".rstrip())
    p = d["plan"]
    if not p.get("derived"):
        add(f"  launch        {p['note']}")
    elif p.get("error"):
        add(f"  launch        at ranks {p['ranks']}: {p['error']}")
    else:
        r = ", ".join(f"{k}={v}" for k, v in p["ranks"].items())
        note = f" (assumed for {', '.join(p['ranks_assumed'])}; --rank NAME=N or InputDecl(ndim=) sets it)" \
            if p["ranks_assumed"] else ""
        add(f"  launch plan   at ranks {r}{note}")
        add(f"    grid        ({', '.join(p['grid'])})")
        add(f"    block       ({', '.join(map(str, p['block']))})")
        add(f"    shared mem  {p['shared_mem']} bytes")
        for o in p["outputs"]:
            if "written" in o:  # a size the kernel writes: a 0-D count, not returned
                add(f"    count       {o['name']}: {o['dtype']} the kernel writes, in [0, {o['written']['max']}] (not "
                    f"returned; TensorRT: a size tensor tuned for {o['written']['opt']})")
                continue
            add(f"    output      {o['name']}: ({', '.join(o['shape'])}{',' if len(o['shape']) == 1 else ''}) "
                f"{o['dtype']}")
        add(f"    arguments   ({', '.join(p['arguments'])})")
    add(f"  dtypes        {', '.join(d['dtypes'])}")
    if d["checks"]:
        add(f"  checks        {'; '.join(d['checks'])}")
    tac = "; ".join(f"{t['id']}: block ({', '.join(map(str, t['block']))})" if t["block"] else f"{t['id']}: {t['note']}"
                    for t in d["tactics"])
    add(f"  tactics       {tac}")
    if d["specializes"]:
        facts = "; ".join(f"{r['param']}: {' or '.join(r['facts'])}" for r in d["specializes"])
        add(f"  specializes   per call, as Triton's launcher (code compiled for each call's facts): {facts}")
    c = d["cache"]
    if c is None:
        add("  cache         no entry (nothing compiled, or the cache is disabled)")
    else:
        more = f" and {len(c['entries']) - 1} more" if len(c["entries"]) > 1 else ""
        add(f"  cache         {c['path']}{more} ({_kib(c['bytes'])}), {c['state']}")
        add(f"                {c['toolchain']}, PTX ISA {c['ptx_isa']}"
            + (f", PTX {_kib(c['ptx_bytes'])}, CUBIN {_kib(c['cubin_bytes'])}" if "cubin_bytes" in c else ""))
    t = d["tensorrt"]
    add(f"  TensorRT      plugin {t['plugin']}: {t['why']}")
    if t["registered"]:
        add(f"                registered: {t['registered']}" + (f" [{t['backend']}]" if t.get("backend") else ""))
    add(f"                converter: {t['converter']}")
    if t["ptx_driver_note"]:
        add(f"                note: {t['ptx_driver_note']}")
    add(f"                AOT plugin PTX: {_aot_text(d['aot_ptx'])}".replace("\n", "\n                  "))
    for e in d["errors"]:
        add("  ERROR         " + e.replace("\n", "\n                "))
    return "\n".join(L)


def _aot_text(a: Dict[str, Any]) -> str:
    """The "AOT plugin PTX" lines of one op (continuation lines after ``\\n``)."""
    own = f" (declared min_arch {a['min_arch']})" if a["min_arch"] and "min_arch" not in (a["from"] or "") else ""
    if a["from"] is None:
        return (f"refused{own}: the ERROR below says why, and the fix" if a["error"] else (a["note"] or "none") + own)
    target = a["target_arch"]
    if target is None:  # a ptx_op: its PTX as given
        allows = "" if a["from"].startswith("the PTX's own") else f", which {a['from']} allows"
        lines = [f"the PTX as given{allows}{own}"]
    else:
        lines = [f"{target}, from {a['from']}{own}"]
    if a["error"]:
        return lines[0] + f": {target} does not build (the ERROR below says why, and the fix)"
    if a["note"]:
        lines.append(a["note"])
    if a["ptx_target"]:
        lines[0] += f"; the PTX's .target: {a['ptx_target']}"
        lines.append(f"loads on {a['loads_on_cards']}")
        lines.append(f"hardware-compatible engines (AMPERE_PLUS, hardware_compatible=True): "
                     f"{a['in_hardware_compatible_engines']}")
    return "\n".join(lines)


def run(target: str, op: Sequence[str], arch: Optional[str], ranks: Sequence[str], as_json: bool,
        min_arch: Optional[str] = None) -> int:
    try:
        min_arch = parse_min_arch(min_arch)
    except TargetError as e:
        return report_error(str(e), as_json, SCHEMA, target=target)
    from trt_kernels import status
    from trt_kernels.sources.archs import env_min_arch

    try:
        rank_map = parse_ranks(ranks)
        try:
            arch_used, arch_note = pick_arch(arch)
        except ValueError as e:
            raise TargetError(arch_problem(arch_origin(bool(arch)), arch or "", str(e))) from None
        floor = floor_said(min_arch)
        kops = pick_ops(target, load_target(target), op)
        check_ranks(rank_map, kops, ", ".join(op) if op else f"any op {target} declares")
        check_arch(arch_used, arch_origin(bool(arch)), kops)
        if min_arch is not None:
            check_arch(min_arch, "--min-arch", kops)
        trt_state = status.trt_state()
        ops = [describe(k, arch_used, rank_map, trt_state, arch_origin(bool(arch)), min_arch) for k in kops]
    except TargetError as e:
        return report_error(str(e), as_json, SCHEMA, target=target)
    bad = [d for d in ops if d["errors"] or any(r["matches"] is False for r in d["abi"])]
    failed = bool(bad)
    if as_json:
        doc = {"schema": SCHEMA, "target": target, "arch": arch_used, "arch_note": arch_note,
               "min_arch": min_arch or env_min_arch(), "min_arch_from": floor_origin(min_arch),
               "tensorrt_side": {k: v for k, v in trt_state.items()}, "ops": ops, "ok": not failed}
        if bad:  # (as every failed document: one message; each op's own are in ops[].errors / ops[].abi)
            first = bad[0]["errors"][0] if bad[0]["errors"] else "its kernel's parameters differ from the spec's"
            doc["error"] = (f"{len(bad)} of {len(ops)} op{'s' if len(ops) != 1 else ''} failed, first "
                            f"{bad[0]['op']}: {first}")
        print(json.dumps(doc, indent=2))
    else:
        side = trt_state.get("available")
        print(f"{target}: {len(ops)} op{'s' if len(ops) != 1 else ''}; compiled for {arch_used}"
              + (f" ({arch_note})" if arch_note else "")
              + f"; TensorRT side: {'available' if side == 'yes' else 'not available'}"
              + (f" ({trt_state['reason']})" if trt_state.get("reason") else "")
              + (f" [{trt_state['backend']}]" if trt_state.get("backend") else "")
              + (f"; AOT plugin PTX floor: {floor}" if floor else ""))
        if not ops:
            print("no ops declared (declare them with trt_kernels.cuda_kernel_op / ptx_op at import time)")
        for d in ops:
            print()
            print(format_op(d))
    return 1 if failed else 0
