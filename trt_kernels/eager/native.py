"""The native eager kernel: an op's CUDA kernel that torch's dispatcher calls without entering Python.

``trt_kernels/eager/_cnative.cpp`` is a small C++ extension registered through torch's stable C ABI
(``aoti_torch_library_impl``) as the op's CUDA kernel in place of the Python function
(:mod:`trt_kernels.eager.dispatcher`). For each (input dtypes, ranks) the Python launcher has been
built for, it gets the same launch as data (:func:`add_variant`: the size expressions as a small
bytecode, the checks, the outputs to allocate and the kernel's parameters) and launches a call
itself when every check passes; any other call, including every call that raises, goes to the
Python function, whose exception torch gets unchanged. So each call either launches exactly what
the Python launcher would, or is the Python launcher's.

Built at an op's first declaration in a process whose torch has CUDA, with the system C++
compiler (``$CXX``, sysconfig's ``CXX``, ``g++``, ``clang++``, ``c++``) against Python's headers
and the pybind11 headers torch ships, and kept in the disk cache next to the compiled launcher::

    <cache>/launcher/<key: 64 hex><EXT_SUFFIX>    key = SHA-256(source, Python ABI, platform, torch version)

A later process loads it without a compiler. Where it cannot be had (no C++ compiler, a torch
without CUDA or without the stable ABI functions, ``TRT_KERNELS_NATIVE=0``, the cache refused),
ops are registered with the Python function as before and ``trt-kernels doctor`` / ``status``
say why (:func:`describe`). Kernels whose launch it does not model (a scalar tuple input,
scratch buffers, an ``eager_fn``, launchers built with :func:`trt_kernels.eager.compiled_launcher.using`)
always take the Python function.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple

from trt_kernels._record import Frozen, plain_record
from trt_kernels.eager import build

_LOG = logging.getLogger("trt_kernels")

SOURCE = Path(__file__).with_name("_cnative.cpp")
MODULE = "_cnative"
ABI = 2  # the C++ file's TRTK_NATIVE_ABI
ENV = "TRT_KERNELS_NATIVE"
CACHE_OFF = ("not built: the disk cache is off (TRT_KERNELS_CACHE=0), and building it costs a few seconds in every "
             "process")

# the C++ file's enums
KIND = {"tensor": 0, float: 1, int: 2, bool: 3}
(OP_CONST, OP_NUMEL, OP_DIM, OP_SCALAR, OP_ADD, OP_SUB, OP_MUL, OP_FLOORDIV, OP_CDIV, OP_MAX, OP_MIN, OP_STORE,
 OP_CHECK_EQ, OP_CHECK_SHAPE) = range(1, 15)
_BINOPS = {"add": OP_ADD, "sub": OP_SUB, "mul": OP_MUL, "floordiv": OP_FLOORDIV, "cdiv": OP_CDIV, "max": OP_MAX,
           "min": OP_MIN}
SRC_TENSOR, SRC_SCALAR, SRC_REG, SRC_OUTPUT, SRC_NULL = range(5)


@plain_record
class Native(Frozen):
    """The outcome of preparing the native kernel: ``module`` (None where it cannot be used) and why."""

    module: Any
    reason: str
    path: Optional[str] = None

    def __init__(self, module: Any, reason: str, path: Optional[str] = None) -> None:
        self.__dict__.update(module=module, reason=reason, path=path)


_LOCK = threading.RLock()
_prepared: Optional[Native] = None
_enabled = True
_owner: Dict[int, Any] = {}  # slot -> weak reference to the declaration whose launches it may take
_entry: Optional[int] = None


# ---------------- choosing ----------------


def enabled() -> bool:
    """Whether ops declared from now on get the native kernel (where it can be had)."""
    return _enabled and os.environ.get(ENV, "1").strip().lower() not in ("0", "false", "no", "off")


@contextlib.contextmanager
def disabled() -> Iterator[None]:
    """``with native.disabled(): ...``: ops *defined* in the block are registered with the Python
    kernel only (an op's kernel is chosen when its name is first defined). Benchmarks and tests
    use it to compare the two."""
    global _enabled
    with _LOCK:
        prev, _enabled = _enabled, False
    try:
        yield
    finally:
        with _LOCK:
            _enabled = prev


def eligible(kop) -> Optional[str]:
    """None if ``kop``'s signature can be served natively, else why not."""
    from trt_kernels.signature import scalar_len, scalar_type

    if kop.eager_fn is not None:
        return "it has an eager_fn"
    if not kop.sig.tensor_pos or len(kop.sig.arg_kinds) > 64 or len(kop.sig.tensor_pos) > 16:
        return "its inputs"
    for d in kop.sig.scalar_decls:
        if scalar_len(d) is not None or scalar_type(d) not in (float, int, bool):
            return f"scalar input {d.name!r} is a tuple or not float / int / bool"
    if not kop.sig.has_outputs or not kop.sig.has_geometry:
        return "it declares no outputs or no geometry"
    if kop.varies:
        return "a call computes its launch config (constexprs from sizes, heuristics or an autotuner)"
    if kop.sig.mutated or not kop.sig.outputs:
        return "it writes an input in place"
    if kop.sig.counts:
        return "its kernel writes output sizes (ttk.Written), read back and applied in Python"
    return None


def _kinds(kop) -> bytes:
    from trt_kernels.signature import scalar_type

    it = iter(kop.sig.scalar_decls)
    return bytes(KIND["tensor"] if k == "tensor" else KIND[scalar_type(next(it))] for k in kop.sig.arg_kinds)


# ---------------- per op ----------------


def register(kop, shell) -> Optional[int]:
    """Register the native kernel as ``kop``'s CUDA kernel (its Python kernel ``shell`` behind it):
    the slot, or None where it cannot (then the caller registers ``shell``)."""
    if not enabled() or eligible(kop) is not None:
        return None
    nat = prepare()
    if nat.module is None:
        return None
    try:
        with _LOCK:
            return int(nat.module.register(kop.namespace, kop.name, "CUDA", 1, shell, _kinds(kop)))
    except (RuntimeError, ValueError) as e:
        _LOG.warning("trt_kernels: %s gets the Python kernel: %s", kop.op_name, e)
        return None


def reset(slot: int, kop) -> None:
    """The declaration ``kop`` (or None: unregistered) is what the slot's op runs now: no native
    launch until its own launchers are built."""
    mod = _prepared.module
    with _LOCK:
        _owner[slot] = weakref.ref(kop) if kop is not None else None
        no_backward = kop is None or kop.backward is None
        mod.reset(slot, len(kop.sig.outputs) if kop is not None else 0, no_backward)


def release(slot: int) -> None:
    """The op's kernels are removed from torch: its native registration too."""
    with _LOCK:
        _owner.pop(slot, None)
        _prepared.module.release(slot)


class _Unsupported(Exception):
    pass


def _dtype_code(dt, mod=None) -> int:
    name = str(dt).rsplit(".", 1)[-1]
    code = (mod or _prepared.module).dtype_code(_torch_lib("torch_cpu"), name)
    if code is None:
        raise _Unsupported(f"dtype {dt}")
    return int(code)


def _emit(e, out: List[int]) -> None:
    from trt_kernels.expr import BinOp, Const, Dim, NumelOf, ScalarOf

    if isinstance(e, Const):
        out += [OP_CONST, int(e.value)]
    elif isinstance(e, NumelOf):
        out += [OP_NUMEL, int(e.tensor)]
    elif isinstance(e, Dim):
        out += [OP_DIM, int(e.tensor), int(e.axis)]
    elif isinstance(e, ScalarOf):
        if e.index is not None:
            raise _Unsupported("a size read from a tuple input")
        out += [OP_SCALAR, int(e.scalar)]
    elif isinstance(e, BinOp) and e.op in _BINOPS:
        _emit(e.lhs, out)
        _emit(e.rhs, out)
        out.append(_BINOPS[e.op])
    else:
        raise _Unsupported(f"expression {e!r}")


def encode(recipe, mod=None, folded: Tuple[int, ...] = ()) -> Dict[str, Any]:
    """The native form of ``recipe`` (one (dtype, ranks) launch, which :func:`trt_kernels.eager.fastpath.launcher_parts`
    writes as Python): registers, bytecode, outputs and parameters (but those ``folded`` into the code of a
    specialization), then a NULL pointer for each one the compiler appended (scratch buffers of 0 bytes), and
    where the specialization key's values come from (``spec``). Raises _Unsupported."""
    plan = recipe.eager  # (a ceiling division by a constant is an add and a floor division there, as in Python)
    code: List[int] = []
    for c in plan.checks:
        if c.kind == "shape":
            for t in c.tensors[1:]:
                code += [OP_CHECK_SHAPE, int(c.tensors[0]), int(t)]
        else:
            for a, b in c.pairs:
                _emit(a, code)
                _emit(b, code)
                code.append(OP_CHECK_EQ)
    regs = 0

    def store(e) -> int:
        nonlocal regs
        _emit(e, code)
        code.extend((OP_STORE, regs))
        regs += 1
        return regs - 1

    extras = [store(e) for e in plan.extras]
    grid = [store(e) for e in plan.grid]
    smem = store(plan.shared_mem)
    outs = []
    for i, o in enumerate(plan.outputs):
        dims = [] if o.like is not None else [store(e) for e in o.shape]
        outs.append((-1 if o.like is None else int(o.like), _dtype_code(recipe.out_dtypes[i], mod), tuple(dims)))
    if regs > 256 or len(code) > 4096:
        raise _Unsupported("too many sizes")
    params = [(p.code, *_source(p, extras)) for i, p in enumerate(recipe.params) if i not in folded]
    params += [("Q", SRC_NULL, 0)] * len(recipe.scratch)
    if len(params) > 64:
        raise _Unsupported("more than 64 parameters")
    from trt_kernels.recipe import spec_bits

    if spec_bits(recipe.spec) > 64:
        raise _Unsupported("a specialization key of more than 64 bits")
    spec = [(*_source(recipe.params[pos], extras), flags) for pos, flags in recipe.spec]
    return {"code": code, "extras": extras, "grid": grid, "smem": smem, "block": tuple(plan.block), "outs": outs,
            "params": params, "spec": spec}


def _source(p, extras: List[int]) -> Tuple[int, int]:
    """Where the native kernel takes a parameter's value (:class:`~trt_kernels.signature.Param`'s roles)."""
    if p.role == "input":
        return SRC_TENSOR, int(p.index)
    if p.role == "scalar" and p.element is None:
        return SRC_SCALAR, int(p.index)
    if p.role == "extra":
        return SRC_REG, extras[p.index]
    if p.role == "output":
        return SRC_OUTPUT, int(p.index)
    raise _Unsupported(f"a parameter of role {p.role!r}" + (" (a tuple's element)" if p.element is not None else ""))


def add_variant(slot: int, kop, key, recipe, kernel, spec=None) -> bool:
    """Let the slot launch calls with ``key`` (the dispatcher's: input dtypes, then ranks) natively:
    what the Python launcher of ``recipe`` for that key does. ``spec``: for a recipe that specializes, the
    :class:`~trt_kernels.eager.fastpath.Specialized` code of one specialization key (``kernel`` is then its
    kernel): the slot launches the calls with that key. False (the Python launcher keeps them)
    where the launch is not one it models, or ``kop`` is no longer the op's declaration."""
    from trt_kernels.eager import compiled_launcher

    if recipe.needs_scratch or compiled_launcher.preference() != "auto" or bool(recipe.spec) != (spec is not None):
        return False
    with _LOCK:
        ref = _owner.get(slot)
        if ref is None or ref() is not kop:
            return False
        try:
            folded = tuple(i for i in range(len(recipe.params)) if i not in spec.kept) if spec is not None else ()
            enc = encode(recipe, folded=folded)
            nt = len(kop.sig.tensor_pos)
            dtypes = [_dtype_code(dt) for dt in key[:nt]]
            _check_params(kernel, enc["params"])
            _prepared.module.add_variant(slot, dtypes, list(key[nt:]), enc["code"], enc["extras"], enc["grid"],
                                         enc["smem"], enc["block"], enc["outs"], enc["params"], _driver_entry(),
                                         kernel.handles, enc["spec"], spec.key if spec is not None else 0,
                                         spec.smem if spec is not None else 0)
        except _Unsupported as e:
            _LOG.debug("trt_kernels: %s %s launches from Python: %s", kop.op_name, key, e)
            return False
        except Exception as e:  # noqa: BLE001 - never the call's failure: the Python launcher keeps the key
            _LOG.warning("trt_kernels: %s %s launches from Python: the native kernel refused it (%s: %s)",
                         kop.op_name, key, type(e).__name__, e)
            return False
    return True


def _check_params(kernel, params) -> None:
    """The driver reads one value per kernel parameter from the array it is given: where the loaded
    function's parameters (``cuFuncGetParamInfo``, where the driver has it) are not the sizes the
    launch packs, the native kernel does not launch it (raises _Unsupported)."""
    import struct

    from trt_kernels.eager.driver import driver

    cu = driver()
    get = getattr(cu, "cuFuncGetParamInfo", None)
    funcs = list(kernel.functions.values())
    if get is None or not funcs:
        return
    sizes = []
    for i in range(len(params) + 1):
        res = get(funcs[0], i)
        if int(res[0]) != 0:
            break
        sizes.append(int(res[2]))
    want = [struct.calcsize("=" + c) for c, _, _ in params]
    if sizes != want:
        raise _Unsupported(f"the kernel's parameters are {sizes} bytes, the launch packs {want}")


def variants(slot: int) -> int:
    """How many (dtype, ranks) keys the slot launches natively."""
    return int(_prepared.module.variants(slot))


def launches(slot: int) -> int:
    """How many calls the slot has launched natively (not handed to the Python kernel)."""
    return int(_prepared.module.launches(slot))


def _driver_entry() -> int:
    global _entry
    if _entry is None:
        from trt_kernels.eager.compiled_launcher import driver_entry

        _entry = driver_entry()
    return _entry


# ---------------- preparing (once per process) ----------------


def _torch_lib(name: str) -> str:
    import torch

    return os.path.join(os.path.dirname(torch.__file__), "lib", f"lib{name}.so")


def prepare() -> Native:
    """Build or load the native kernel module and resolve torch's functions, once per process (never
    raises: a failure is ``Native(None, why)``, logged once)."""
    global _prepared
    nat = _prepared
    if nat is not None:
        return nat
    with _LOCK:
        if _prepared is None:
            nat = _prepare()
            if nat.module is None and not nat.reason.startswith("this torch"):  # (a CPU torch launches nothing)
                _LOG.warning("trt_kernels: ops are registered with the Python eager kernel, not the native one: %s "
                             "(said once; `trt-kernels doctor` shows it)", nat.reason)
            _prepared = nat
        return _prepared


def _prepare(need_cuda: bool = True) -> Native:
    """``need_cuda=False`` (tests on a machine without CUDA): the module, with torch's CPU functions only."""
    import torch

    if sys.platform != "linux":
        return Native(None, f"native kernels are built on Linux only (this is {sys.platform})")
    if need_cuda and torch.version.cuda is None:
        return Native(None, f"this torch ({torch.__version__}) has no CUDA")
    aoti = getattr(torch._C, "_aoti", None)
    steal = getattr(aoti, "alloc_tensor_by_stealing_from_void_ptr", None)
    alloc = getattr(aoti, "unsafe_alloc_void_ptr_from_tensor", None)
    if steal is None or alloc is None:
        return Native(None, f"this torch ({torch.__version__}) lacks torch._C._aoti's tensor handle functions")
    from trt_kernels.cache_store import cache_root

    mod, reason, path = load(cache_root())
    if mod is None:
        return Native(None, reason)
    missing = mod.init(_torch_lib("c10"), _torch_lib("torch_cpu"), _torch_lib("torch_cuda"), steal, alloc)
    if missing is not None:
        return Native(None, f"torch's stable C ABI function {missing} was not found")
    if need_cuda and not mod.has_cuda():
        return Native(None, "torch's aoti_torch_get_current_cuda_stream was not found in libtorch_cuda")
    return Native(mod, reason, path)


def describe() -> Dict[str, str]:
    """``{"native": "yes" | "no", "reason": ...}`` for ``status`` / ``doctor``, without building anything."""
    if not enabled():
        return {"native": "no", "reason": f"turned off ({ENV}=0 or native.disabled())"}
    nat = _prepared
    if nat is not None:
        return {"native": "yes" if nat.module is not None else "no", "reason": nat.reason}
    import torch

    if torch.version.cuda is None:
        return {"native": "no", "reason": f"this torch ({torch.__version__}) has no CUDA"}
    from trt_kernels.cache_store import cache_root, problem

    root = cache_root()
    path = module_path(root) if root is not None else None
    untrusted = problem(path) if path is not None and path.is_file() else None
    if path is not None and path.is_file() and untrusted is None:
        return {"native": "yes", "reason": f"in the cache ({path}); loaded at the first declaration"}
    if root is None:
        return {"native": "no", "reason": CACHE_OFF}
    cxx, origin = find_compiler()
    if cxx is None:
        return {"native": "no", "reason": origin}
    return {"native": "yes", "reason": f"built with {origin} at the first declaration"
            + (f" into a private directory (the cached one is not trusted: {untrusted})" if untrusted else "")}


# ---------------- building and loading ----------------


def cache_key(source: Optional[bytes] = None) -> str:
    import torch

    h = hashlib.sha256()
    h.update(b"trt_kernels native kernel\0")
    h.update(source if source is not None else SOURCE.read_bytes())
    for part in build.abi_tag() + (torch.__version__, str(torch.version.git_version), str(_cxx11_abi())):
        h.update(b"\0" + part.encode())
    return h.hexdigest()


def module_path(root: Path, source: Optional[bytes] = None) -> Path:
    return root / "launcher" / f"{cache_key(source)}{build.abi_tag()[1]}"


def _cxx11_abi() -> int:
    import torch

    return int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))


def find_compiler() -> Tuple[Optional[List[str]], str]:
    """``(argv of the C++ compiler, where it came from)`` or ``(None, why)``: ``$CXX`` (only it, when
    set), then sysconfig's ``CXX``, then g++, clang++, c++."""
    return build.find_compiler("CXX", ("g++", "clang++", "c++"), "C++")


def compile_module(out: Path, source: bytes) -> Tuple[bool, str]:
    """Compile ``source`` into the shared object ``out``: ``(True, how)`` or ``(False, why)``."""
    import torch

    cxx, origin = find_compiler()
    if cxx is None:
        return False, origin
    includes, missing = build.python_includes()
    if missing:
        return False, missing
    torch_inc = os.path.join(os.path.dirname(torch.__file__), "include")
    if not os.path.isfile(os.path.join(torch_inc, "pybind11", "pybind11.h")):
        return False, f"torch's pybind11 headers are missing ({torch_inc}/pybind11)"
    flags = ["-shared", "-fPIC", "-O2", "-std=c++17", "-fvisibility=hidden", "-DPYBIND11_SIMPLE_GIL_MANAGEMENT",
             f"-D_GLIBCXX_USE_CXX11_ABI={_cxx11_abi()}", *[f"-I{d}" for d in includes], f"-I{torch_inc}"]
    return build.run_compiler(cxx, origin, "C++", source, "_cnative.cpp", flags, out)


def import_module(path: Path):
    """Load the native kernel module at ``path`` (not entered in ``sys.modules``)."""
    mod = build.import_extension(path, f"trt_kernels.{MODULE}")
    if getattr(mod, "ABI", None) != ABI or not callable(getattr(mod, "add_variant", None)):
        raise ImportError(f"{path} is not this trt-kernels' native kernel (ABI {getattr(mod, 'ABI', None)})")
    return mod


def load(root: Optional[Path]) -> Tuple[Any, str, Optional[str]]:
    """``(module, how, path)`` from the cache under ``root`` (built into it first where absent), or
    ``(None, why, None)``, also where ``root`` is None (the cache is off)."""
    try:
        source = SOURCE.read_bytes()
    except OSError as e:
        return None, f"the native kernel's source {SOURCE} cannot be read ({e})", None
    if root is None:  # a build per process would cost every process seconds: the Python kernel instead
        return None, CACHE_OFF, None
    path = module_path(root, source)
    mod, _, how, path = build.load_or_build(path, source, compile_module, import_module, "native kernel", _LOG)
    return mod, how, (str(path) if mod is not None else None)
