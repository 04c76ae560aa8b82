"""``trt-kernels doctor``: is this installation usable, and if not, what to do.

:func:`gather` collects facts (versions, GPU, driver, NVRTC, a probe compile and, with a GPU,
whether the driver loads the probe's PTX and CUBIN); :func:`assess` turns facts into checks
(``ok`` / ``note`` / ``warn`` / ``error``, each with a fix). The exit status is 1 when a check
is an ``error``: something eager use needs is missing (torch, cuda-bindings, NVRTC, CUDA
headers) or the driver refuses the PTX NVRTC writes. A missing TensorRT is a note. Which GPU
generations the TensorRT AOT plugins' PTX loads on is one line (:func:`aot_facts`); a
``TRT_KERNELS_MIN_ARCH`` that is no arch, that NVRTC or this GPU cannot take, or that an op declared
in this process refuses (its ``min_arch`` is above it) is a warning with its fix.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

SCHEMA = "trt-kernels.doctor/1"
STATUSES = ("ok", "note", "warn", "error")

PROBE_SOURCE = r"""
#include <cuda_fp16.h>
extern "C" __global__ void trt_kernels_doctor_probe(const __half* x, int n, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(x[i]) * 2.0f;
}
"""
PROBE_NAME = "trt_kernels_doctor_probe"


def _dist_version(name: str) -> Optional[str]:
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _err(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}".strip()


def gather() -> Dict[str, Any]:
    """Facts about this machine; never raises (a fact that cannot be had is None or an error string)."""
    f: Dict[str, Any] = {"python": sys.version.split()[0]}
    from trt_kernels import __version__

    f["trt_kernels"] = __version__
    try:
        import torch

        from trt_kernels.sources.nvrtc import normalize_arch

        f["torch"] = torch.__version__
        f["torch_cuda"] = torch.version.cuda
        f["cuda_available"] = bool(torch.cuda.is_available())
        gpus = []
        if f["cuda_available"]:
            for i in range(torch.cuda.device_count()):
                cap = torch.cuda.get_device_capability(i)
                gpus.append({"index": i, "name": torch.cuda.get_device_name(i), "arch": normalize_arch(cap)})
        f["gpus"] = gpus
    except Exception as e:  # noqa: BLE001
        f["torch"] = None
        f["torch_error"] = _err(e)
        f["cuda_available"] = False
        f["gpus"] = []
    f["dists"] = {n: _dist_version(n) for n in (
        "cuda-python", "cuda-bindings", "cuda-core", "cuda-pathfinder", "nvidia-cuda-nvrtc", "nvidia-cuda-runtime",
        "tensorrt", "tensorrt-cu13", "tensorrt-cu12", "tensorrt-cu13-bindings", "tensorrt-cu12-bindings",
        "torch-tensorrt")}
    try:
        import cuda.bindings  # noqa: F401

        f["cuda_bindings_import"] = None
    except Exception as e:  # noqa: BLE001
        f["cuda_bindings_import"] = _err(e)
    from trt_kernels.eager.driver import driver_version

    f["driver"] = list(driver_version()) if f["cuda_bindings_import"] is None and driver_version() else None
    # NVRTC
    f["nvrtc"] = f["nvrtc_error"] = None
    f["nvrtc_archs"] = None
    if f["cuda_bindings_import"] is None:
        try:
            from trt_kernels.sources.nvrtc import nvrtc_supported_archs, nvrtc_version

            f["nvrtc"] = list(nvrtc_version())
            try:
                f["nvrtc_archs"] = list(nvrtc_supported_archs())
            except Exception:  # noqa: BLE001 - the archs are a detail; NVRTC itself loaded
                pass
        except Exception as e:  # noqa: BLE001
            f["nvrtc_error"] = _err(e)
    # headers
    from trt_kernels.sources.nvrtc import default_arch, include_dirs

    f["include_dirs"] = []
    pip_dir = None
    try:
        from cuda import pathfinder

        pip_dir = pathfinder.find_nvidia_header_directory("cudart")
    except Exception:  # noqa: BLE001
        pass
    for d in include_dirs():
        src = "pip nvidia-cuda-runtime, found by cuda.pathfinder" if pip_dir and os.path.samefile(d, pip_dir) \
            else "the CUDA toolkit: $CUDA_HOME, $CUDA_PATH or /usr/local/cuda"
        f["include_dirs"].append({"path": d, "from": src,
                                  "cuda_fp16.h": os.path.isfile(os.path.join(d, "cuda_fp16.h"))})
    # probe compile, then (with a GPU) load its PTX and CUBIN
    from trt_kernels.registry import CHECK_ARCH

    f["arch_error"] = None
    try:
        arch = default_arch() or CHECK_ARCH
    except ValueError as e:  # TRT_KERNELS_ARCH is no arch: said by its own check, the probe uses the default
        f["arch_error"], arch = str(e), CHECK_ARCH
    f["probe_arch"] = arch
    f["probe"] = f["ptx_isa"] = f["ptx_load"] = f["cubin_load"] = None
    if f["nvrtc"] is not None:
        try:
            from trt_kernels.sources.nvrtc import compile_program

            prog = compile_program(PROBE_SOURCE, [PROBE_NAME], arch=arch, label="trt-kernels doctor probe")
            f["probe"] = "ok (from the cache)" if prog.from_cache else "ok"
            f["ptx_isa"] = list(prog.ptx_isa) if prog.ptx_isa else None
            if f["cuda_available"]:
                from trt_kernels.eager.driver import LoadedKernel

                sym = prog.lowered[PROBE_NAME]
                for key, image in (("ptx_load", prog.ptx + b"\x00"), ("cubin_load", prog.cubin)):
                    try:
                        LoadedKernel(image, sym, f"doctor probe {key[:-5].upper()}").function(0)
                        f[key] = "ok"
                    except Exception as e:  # noqa: BLE001
                        f[key] = _err(e)
        except Exception as e:  # noqa: BLE001
            f["probe"] = _err(e)
    # Triton: the toolchain of triton_kernel_op (optional); its probe compiles the selftest's kernel
    f["triton"] = f["triton_probe"] = None
    if importlib.util.find_spec("triton") is not None:
        try:
            from trt_kernels.cli import seed_triton
            from trt_kernels.sources.triton_compile import compile_triton, fp_fusion_option, triton_version

            f["triton"] = triton_version()
            k = compile_triton(seed_triton.ttk_selftest_scale, {"x_ptr": "*fp32", "alpha": "fp32", "n": "i32",
                                                                 "y_ptr": "*fp32", "BLOCK": "constexpr"},
                               {"BLOCK": 256}, arch=arch, options=fp_fusion_option({"num_warps": 4}),
                               label="trt-kernels doctor probe")
            f["triton_probe"] = "ok (from the cache)" if k.from_cache else "ok"
        except Exception as e:  # noqa: BLE001
            f["triton_probe"] = _err(e)
    # TensorRT
    try:
        from trt_kernels.plugins import init
        from trt_kernels.status import trt_state

        init()  # imports tensorrt / torch_tensorrt where installed, as declaring an op would
        f["tensorrt_side"] = dict(trt_state())
    except Exception as e:  # noqa: BLE001
        f["tensorrt_side"] = {"available": "no", "reason": _err(e)}
    trt = sys.modules.get("tensorrt")
    f["tensorrt_module"] = getattr(trt, "__version__", None) if trt is not None else None
    ttrt = sys.modules.get("torch_tensorrt")
    f["torch_tensorrt_module"] = getattr(ttrt, "__version__", None) if ttrt is not None else None
    try:
        from trt_kernels.testing import emulation_unavailable_reason, unavailable_reason

        f["emulation"] = emulation_unavailable_reason()
        f["standin"] = unavailable_reason()
    except Exception as e:  # noqa: BLE001
        f["emulation"] = f["standin"] = _err(e)
    f["aot_ptx"] = aot_facts()
    f["eager_launcher"] = launcher_facts(f["driver"] is not None)
    f["native_kernel"] = native_facts()
    # cache
    from trt_kernels.cache_store import cache_dir

    d = cache_dir()
    f["cache_dir"] = str(d) if d is not None else None
    n = size = 0
    if d is not None and d.is_dir():
        for p in d.rglob("*"):
            if p.is_file():
                n += 1
                size += p.stat().st_size
    f["cache_files"], f["cache_bytes"] = n, size
    from trt_kernels.cache_store import trust

    f["cache_trust"] = trust()
    return f


def aot_facts() -> Dict[str, Any]:
    """The arch TensorRT's AOT plugins embed PTX for here and the GPUs that loads on: ``TRT_KERNELS_MIN_ARCH``
    where set, else the compile arch (:meth:`KernelOp.aot_target`'s rule, for an engine of no hardware
    compatibility level); with the variable set, each op declared in this process that refuses it (its
    ``min_arch`` is above it). Compiles nothing."""
    from trt_kernels.sources import archs
    from trt_kernels.sources.nvrtc import compile_arch

    out: Dict[str, Any] = {"env": os.environ.get(archs.MIN_ARCH_ENV) or None, "error": None, "target": None,
                           "from": None, "loads_on": None, "hardware_compatible": None, "refused_by": []}
    try:
        floor = archs.env_min_arch()
    except ValueError as e:
        out["error"] = str(e)
        return out
    try:
        arch, origin = (floor, archs.MIN_ARCH_ENV) if floor else compile_arch()
    except ValueError:  # TRT_KERNELS_ARCH is no arch: its own check says so
        return out
    out.update(target=arch, loads_on=archs.loads_on(arch),
               hardware_compatible=archs.covers(arch, archs.LEVEL_FLOOR["AMPERE_PLUS"]),
               **{"from": origin if floor else f"the compile arch ({origin})"})
    if floor:
        from trt_kernels import registry
        from trt_kernels.errors import ArchError

        for kop in registry.all_ops():
            try:
                kop.aot_target()
            except ArchError as e:
                out["refused_by"].append({"op": kop.op_name, "error": str(e)})
            except Exception:  # noqa: BLE001 - a build problem of the op is for inspect to report, not doctor
                pass
    return out


def native_facts() -> Dict[str, Any]:
    """Whether ops get the native eager kernel here (built now or loaded from the cache), and why (not)."""
    from trt_kernels.eager import native

    try:
        if not native.enabled():
            return dict(native.describe(), path=None)
        nat = native.prepare()
        return {"native": "yes" if nat.module is not None else "no", "reason": nat.reason, "path": nat.path}
    except Exception as e:  # noqa: BLE001
        return {"native": "no", "reason": _err(e), "path": None}


def launcher_facts(have_driver: bool) -> Dict[str, Any]:
    """The eager launcher this machine gets: the compiled one (built now or found in the cache, and
    with a driver, bound to its cuLaunchKernel) or cuda.bindings', with the reason."""
    from trt_kernels.cache_store import cache_root
    from trt_kernels.eager import compiled_launcher

    try:
        lau = compiled_launcher.load(cache_root())
        out: Dict[str, Any] = {"launcher": lau.kind, "reason": lau.reason, "path": lau.path, "bound": False}
        if lau.kind == "compiled" and have_driver:
            bound = compiled_launcher.bind(lau)
            out.update(launcher=bound.kind, reason=bound.reason if bound.kind != "compiled" else lau.reason,
                       bound=bound.kind == "compiled")
    except Exception as e:  # noqa: BLE001
        out = {"launcher": "python", "reason": _err(e), "path": None, "bound": False}
    if compiled_launcher.preference() != "auto":
        out["chosen"] = compiled_launcher.preference()
    return out


def _ver(v) -> str:
    return ".".join(map(str, v)) if v else "?"


def assess(f: Dict[str, Any]) -> List[Dict[str, str]]:
    """Checks from facts: ``{"check", "status", "detail", "fix"}`` each."""
    from trt_kernels.sources.archs import arch_key
    from trt_kernels.sources.ptxcheck import ptx_loadable_note

    out: List[Dict[str, str]] = []

    def add(check, status, detail, fix=""):
        out.append({"check": check, "status": status, "detail": detail, "fix": fix})

    d = f.get("dists", {})
    add("trt-kernels", "ok", f"{f.get('trt_kernels')} on Python {f.get('python')}")
    if not f.get("torch"):
        add("torch", "error", f"torch does not import ({f.get('torch_error', 'not installed')})",
            "pip install torch (a CUDA build on GPU machines)")
    else:
        cuda = f.get("torch_cuda")
        add("torch", "ok" if cuda else "note",
            f"{f['torch']}, " + (f"built for CUDA {cuda}" if cuda else
                                 "CPU-only build (compiling works, launching needs a CUDA build)"))
    gpus = f.get("gpus") or []
    if gpus:
        add("GPU", "ok", "; ".join(f"cuda:{g['index']} {g['name']} ({g['arch']})" for g in gpus))
    else:
        add("GPU", "warn", "no CUDA GPU visible: eager launches and the GPU tiers cannot run here; compiling can "
            "(give the arch: --arch / TRT_KERNELS_ARCH)", "run on a machine with an NVIDIA GPU and driver")
    drv = f.get("driver")
    add("CUDA driver", "ok" if drv else ("warn" if not gpus else "error"),
        f"supports CUDA {_ver(drv)}" if drv else "no CUDA driver found (libcuda)",
        "" if drv else "install the NVIDIA driver")
    if f.get("cuda_bindings_import"):
        add("cuda-bindings", "error", f"does not import: {f['cuda_bindings_import']}",
            "pip install 'cuda-python>=13.3,<14'")
    else:
        dists = ("cuda-bindings", "cuda-core", "cuda-pathfinder", "cuda-python")
        add("cuda-bindings", "ok", ", ".join(f"{n} {d.get(n) or 'not installed'}" for n in dists))
    nv = f.get("nvrtc")
    if nv is None:
        add("NVRTC", "error", f"cannot be loaded ({f.get('nvrtc_error') or 'cuda-bindings missing'})",
            "pip install 'nvidia-cuda-nvrtc>=13.0,<14'")
    else:
        nv_archs = f.get("nvrtc_archs")
        add("NVRTC", "ok", f"{_ver(nv)} (pip nvidia-cuda-nvrtc {d.get('nvidia-cuda-nvrtc')}); writes PTX ISA "
            f"{_ver(f.get('ptx_isa'))}" + (f"; archs {', '.join(f'sm_{a}' for a in nv_archs)}" if nv_archs else ""))
        for g in gpus:
            if nv_archs and arch_key(g["arch"])[0] not in nv_archs:
                add(f"NVRTC arch {g['arch']}", "error",
                    f"NVRTC {_ver(nv)} cannot compile for {g['name']} ({g['arch']})",
                    "install an nvidia-cuda-nvrtc that supports it")
    dirs = f.get("include_dirs") or []
    if any(x["cuda_fp16.h"] for x in dirs):
        add("CUDA headers", "ok", "; ".join(f"{x['path']} ({x['from']})" for x in dirs))
    else:
        add("CUDA headers", "error", "cuda_fp16.h not found (" + (", ".join(x["path"] for x in dirs) or "no include "
                                                                   "directory") + ")",
            "pip install 'nvidia-cuda-runtime>=13.0,<14', or set CUDA_HOME to a CUDA toolkit")
    probe = f.get("probe")
    if probe is not None:
        parch, nv_archs = f.get("probe_arch"), f.get("nvrtc_archs")
        unsupported = bool(parch and nv_archs and arch_key(parch)[0] not in nv_archs)
        add("probe compile", "ok" if probe.startswith("ok") else "error",
            f"{PROBE_NAME} (cuda_fp16.h) for {parch}: {probe}",
            "" if probe.startswith("ok") else
            f"compile for an arch NVRTC {_ver(nv)} has (TRT_KERNELS_ARCH=sm_90), or install an nvidia-cuda-nvrtc that "
            f"supports {parch}" if unsupported else "see the NVRTC message; check the CUDA headers above")
    # PTX from this NVRTC on this driver
    note = ptx_loadable_note(tuple(nv), tuple(drv)) if nv and drv else None
    ptx_fix = (f"pip install 'nvidia-cuda-nvrtc=={drv[0]}.{drv[1]}.*' (an NVRTC no newer than the driver), or update "
               "the driver; eager launches use CUBIN and keep working" if drv else "update the driver")
    pl = f.get("ptx_load")
    if pl is not None and pl != "ok":
        add("driver loads NVRTC's PTX", "error", f"the driver refused the probe's PTX: {pl}"
            + (f" ({note.split('. Fix: ')[0]})" if note else ""), ptx_fix)
    elif note:
        add("driver loads NVRTC's PTX", "error", note.split(". Fix: ")[0], ptx_fix)
    elif pl == "ok":
        add("driver loads NVRTC's PTX", "ok", f"PTX ISA {_ver(f.get('ptx_isa'))} from NVRTC {_ver(nv)} loads on the "
            f"driver (CUDA {_ver(drv)})")
    elif nv:
        add("driver loads NVRTC's PTX", "note", f"not checked: no driver here; the GPU machine's driver must "
            f"support CUDA {_ver(nv)} or newer for TensorRT plugins (which take PTX)")
    cl = f.get("cubin_load")
    if cl is not None:
        add("driver loads the CUBIN", "ok" if cl == "ok" else "error",
            "eager launches load CUBIN: " + cl, "" if cl == "ok" else "update the driver, or install an "
            "nvidia-cuda-nvrtc of the driver's major version")
    tp = f.get("triton_probe")
    if f.get("triton") is None and tp is None:
        add("Triton", "note", "not installed: triton_kernel_op is unavailable (CUDA C++ and PTX ops do not need it)",
            "pip install 'trt-kernels[triton]'")
    else:
        ok = str(tp).startswith("ok")
        add("Triton", "ok" if ok else "error",
            f"triton {f.get('triton')}; probe compile for {f.get('probe_arch')}: {tp}",
            "" if ok else "see Triton's message; pip install 'trt-kernels[triton]' installs a Triton 3.x")
    # TensorRT
    side = f.get("tensorrt_side") or {}
    trt_v = f.get("tensorrt_module") or d.get("tensorrt") or d.get("tensorrt-cu13") or d.get("tensorrt-cu12")
    ttrt_v = f.get("torch_tensorrt_module") or d.get("torch-tensorrt")
    from trt_kernels.plugins import pairing_problem, pairings_text

    torch_mm = ".".join(str(f.get("torch", "")).split("+")[0].split(".")[:2])
    pairs = f"it pins the TensorRT it was built for; {pairings_text()}"
    pair_fix = f"pip install 'torch-tensorrt=={torch_mm}.*' ({pairs})"
    if side.get("available") == "yes":
        problem = pairing_problem(str(trt_v or ""), str(ttrt_v or ""))
        add("TensorRT", "warn" if problem else "ok", f"tensorrt {trt_v}, torch_tensorrt {ttrt_v}: QDP plugins usable"
            + (f" [{side['backend']}]" if side.get("backend") else "")
            + (f"; note: {side['notes']}" if side.get("notes") else ""), pair_fix if problem else "")
    else:
        bind = d.get("tensorrt-cu13-bindings") or d.get("tensorrt-cu12-bindings")
        add("TensorRT", "note", f"tensorrt {trt_v or 'not installed'}"
            + (f" (bindings wheel {bind} without the native libraries)" if bind and not trt_v else "")
            + f", torch_tensorrt {ttrt_v or 'not installed'}: "
            f"ops stay eager-only; {side.get('reason') or side.get('available')}",
            f"pip install 'trt-kernels[tensorrt]' 'torch-tensorrt=={torch_mm}.*' (torch-tensorrt: {pairs})")
    st = f.get("standin")
    add("AOT/JIT replay tier", "ok" if st is None and gpus else "note",
        "can run (NVIDIA's tensorrt.plugin over the emulator)" if st is None and gpus else
        ("needs a CUDA GPU" if st is None else st),
        "" if st is None else "pip install -e '.[test]' (the tensorrt-cu13-bindings wheel)")
    em = f.get("emulation")
    add("emulated Torch-TensorRT tier", "ok" if em is None else "note",
        "can run (trt_kernels.testing.emulate_tensorrt)" if em is None else em)
    _assess_aot(f, add)
    el = f.get("eager_launcher") or {}
    if el.get("launcher") == "compiled":
        add("eager launcher", "ok", "compiled: " + el.get("reason", "")
            + ("" if el.get("bound") else "; bound to the driver's cuLaunchKernel at the first eager launch"))
    elif el:
        add("eager launcher", "note", "cuda.bindings' cuLaunchKernel (more host time per call than the compiled "
            f"launcher): {el.get('reason')}. Fix: install a C compiler (gcc) and Python's headers (python3-dev), "
            "or set CC", "install a C compiler (gcc) and Python's headers (python3-dev), or set CC")
    nk = f.get("native_kernel") or {}
    if nk.get("native") == "yes":
        add("native eager kernel", "ok", "torch calls ops' CUDA kernels without entering Python where it can: "
            + nk.get("reason", ""))
    elif nk:
        cpu_torch = nk.get("reason", "").startswith("this torch") and "no CUDA" in nk.get("reason", "")
        add("native eager kernel", "note", f"ops' CUDA kernels are Python functions: {nk.get('reason')}",
            "" if cpu_torch else "install a C++ compiler (g++) and Python's headers (python3-dev), or set CXX")
    cdir = f.get("cache_dir")
    add("compile cache", "ok", f"{cdir}: {f.get('cache_files', 0)} files, {f.get('cache_bytes', 0) / 1024:.1f} KiB"
        if cdir else "disabled (TRT_KERNELS_CACHE=0)")
    tr = f.get("cache_trust") or {}
    if tr.get("trusted") is False:
        where = (f"a private directory of its own, removed when it exits (this one's: {tr['using']})"
                 if tr.get("using") else "memory only (no private directory could be made)")
        add("cache trust", "warn", f"not private to you: {tr.get('problem')}; nothing in it is read or loaded, each "
            f"process compiles into {where} instead", tr.get("fix") or "")
    elif tr.get("trusted"):
        add("cache trust", "ok", "only you (and root) can write it: its entries are read and its modules loaded")
    if tr.get("shared"):
        sp = tr.get("shared_problem")
        add("shared cache", "warn" if sp else "ok", f"{tr['shared']}, read-only (TRT_KERNELS_SHARED_CACHE_DIR): "
            + (f"not trusted: {sp}" if sp else "NVRTC and Triton entries read after your own cache misses"),
            "make it writable by its owner only (chmod -R go-w), or unset TRT_KERNELS_SHARED_CACHE_DIR" if sp else "")
    return out


def _assess_aot(f: Dict[str, Any], add) -> None:
    """The "AOT plugin PTX" line (which GPU generations the TensorRT AOT plugins load on) and, where
    ``TRT_KERNELS_MIN_ARCH`` is set and not met, warnings with their fixes."""
    from trt_kernels.sources import archs

    if f.get("arch_error"):
        add("TRT_KERNELS_ARCH", "warn", f"TRT_KERNELS_ARCH={os.environ.get('TRT_KERNELS_ARCH')}: "
            f"{f['arch_error'].split(': ', 1)[-1]}; declaring and compiling ops fail while it is set",
            "TRT_KERNELS_ARCH=sm_90 (the arch to compile for), or unset it to use the visible GPU's")
    a = f.get("aot_ptx")
    if not a or (a.get("target") is None and not a.get("error")):
        return
    env, floor = archs.MIN_ARCH_ENV, archs.LEVEL_FLOOR["AMPERE_PLUS"]
    if a.get("error"):
        msg, _, fix = a["error"].partition(". Fix: ")
        add("AOT plugin PTX", "warn", f"{msg}: every TensorRT build of an AOT plugin fails while it is set", fix)
        return
    target = a["target"]
    nv_archs = f.get("nvrtc_archs")
    if nv_archs and archs.arch_key(target)[0] not in nv_archs:  # (said here, not as an "ok" line beside a warning)
        var = env if a["env"] else "TRT_KERNELS_ARCH" if "TRT_KERNELS_ARCH" in a["from"] else None
        setting = f"{var}={a['env'] or os.environ.get('TRT_KERNELS_ARCH')}" if var else a["from"]
        builds = "no AOT plugin builds" if a["env"] else "neither the ops nor their AOT plugins build"
        fix = f"{var}={floor if a['env'] else 'sm_90'}, or " if var else ""
        add("AOT plugin PTX", "warn", f"{setting}: NVRTC {_ver(f.get('nvrtc'))} cannot compile for {target}, so "
            f"{builds}", f"{fix}install an nvidia-cuda-nvrtc that supports {target}")
        return
    if a["env"]:
        detail = (f"{target} ({env}): AOT plugins load on {a['loads_on']}; "
                  + ("hardware-compatible engines (AMPERE_PLUS) may hold them" if a["hardware_compatible"] else
                     f"engines built with hardware_compatible=True embed {floor} PTX instead"))
    else:
        detail = (f"{target}, {a['from']}: AOT plugins load on {a['loads_on']}; engines built with "
                  f"hardware_compatible=True embed {floor} PTX (compute capability {floor[3]}.{floor[4]} and newer), "
                  f"and {env}={floor} makes every build do so")
    add("AOT plugin PTX", "ok", detail)
    if not a["env"]:
        return
    for g in f.get("gpus") or []:
        if archs.below(g["arch"], target):
            add(f"{env} vs cuda:{g['index']}", "warn",
                f"{env}={a['env']} is above cuda:{g['index']} {g['name']} ({g['arch']}): engines built here embed PTX "
                "this GPU cannot load", f"{env}={floor} (or no higher than {g['arch']}), or unset it")
    for r in a.get("refused_by") or []:
        msg, _, fix = r["error"].partition(" Fix: ")
        add(f"AOT PTX of {r['op']}", "warn", msg.removeprefix(f"{r['op']}: "), fix)


def exit_status(checks: List[Dict[str, str]]) -> int:
    return 1 if any(c["status"] == "error" for c in checks) else 0


def format_checks(checks: List[Dict[str, str]]) -> str:
    w = max(len(c["check"]) for c in checks)
    lines = [f"{'check':<{w}}  {'status':<6}  detail"]
    for c in checks:
        lines.append(f"{c['check']:<{w}}  {c['status'].upper() if c['status'] == 'error' else c['status']:<6}  "
                     f"{c['detail']}")
    fixes = [c for c in checks if c["fix"] and c["status"] in ("error", "warn")]
    if fixes:
        lines.append("")
        lines.append("to fix:")
        for c in fixes:
            lines.append(f"  {c['check']}: {c['fix']}")
    lines.append("")
    lines.append("doctor: " + verdict(checks))
    return "\n".join(lines)


def verdict(checks: List[Dict[str, str]]) -> str:
    """One line that agrees with the table: the problems, or what this machine can do."""
    bad = [c["check"] for c in checks if c["status"] == "error"]
    if bad:
        return f"{len(bad)} problem{'s' if len(bad) != 1 else ''} ({', '.join(bad)})"
    gpu = next((c for c in checks if c["check"] == "GPU"), None)
    if gpu is not None and gpu["status"] != "ok":
        return ("compile-only machine: compiling, inspecting, fake impls and torch.export work here; eager "
                "launches and the GPU tiers need a CUDA GPU")
    return "nothing a user needs is missing"


def run(as_json: bool) -> int:
    from trt_kernels.cli.inspect import gather_or_report

    def facts_and_checks():
        facts = gather()
        return facts, assess(facts)

    got, failed = gather_or_report("doctor", facts_and_checks, as_json, SCHEMA, _err)
    if failed is not None:
        return failed
    facts, checks = got
    status = exit_status(checks)
    if as_json:
        print(json.dumps({"schema": SCHEMA, "facts": facts, "checks": checks, "verdict": verdict(checks),
                          "exit_status": status, "ok": status == 0}, indent=2))
    else:
        print(format_checks(checks))
    return status


__all__: Tuple[str, ...] = ("gather", "assess", "exit_status", "run")
