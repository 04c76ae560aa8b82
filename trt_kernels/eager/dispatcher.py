"""The function torch calls as an op's CUDA kernel: one per op name, whose code is swapped in place.

Declaring an op installs a lookup written as a function in this module (so declaring compiles
nothing): key = the tensor inputs' dtypes and ranks, ``entries[key]`` the launcher that
:mod:`trt_kernels.eager.fastpath` generates at the first call with that key. The first call also
rewrites the function with that launcher's body inlined behind a guard on the key, compiled
from our own templates and integers only. :mod:`trt_kernels.eager.fastpath` (and with it the CUDA
launch modules) is imported at the first launch, not at a declaration.
"""

from __future__ import annotations

import functools
import itertools
import threading
import types
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

MAX_INLINED = 4  # (dtype, ranks) launchers written into the registered function itself
KEPT_GENERATIONS = 16  # replaced declarations whose names a still-running call may look up
_GENERATIONS = itertools.count()


_TEMPLATE_PREFIX = "_gT_"  # stands for a generation's prefix ("_g12_") in a cached code template


@functools.lru_cache(maxsize=64)
def _template_code(template: str) -> types.CodeType:
    """The compiled code of ``dispatch`` in ``template`` (compiled once per process and shape of source)."""
    module = compile(template, "<trt_kernels dispatcher>", "exec")
    return next(c for c in module.co_consts if isinstance(c, types.CodeType) and c.co_name == "dispatch")


def _renamed(code: types.CodeType, prefix: str, label: str) -> types.CodeType:
    names = tuple(prefix + n[len(_TEMPLATE_PREFIX):] if n.startswith(_TEMPLATE_PREFIX) else n for n in code.co_names)
    consts = tuple(_renamed(c, prefix, label) if isinstance(c, types.CodeType) else c for c in code.co_consts)
    return code.replace(co_names=names, co_consts=consts, co_filename=label)


def _dispatch_code(src: str, label: str, g: str) -> types.CodeType:
    """The code of the function ``dispatch`` that ``src`` defines, whose globals are named ``{g}_...``.

    Ops of the same arity write the same source at their first call but for the generation prefix, so
    the source is compiled once with a placeholder prefix and each op gets a copy of that code with its
    own names (``CodeType.replace``): compiling cost ~0.1 ms per op."""
    prefix = g + "_"
    return _renamed(_template_code(src.replace(prefix, _TEMPLATE_PREFIX)), prefix, label)


# Code that is the same for every op is written here as functions (compiled with this module, so
# installing one compiles nothing at a declaration); their ``_gT_`` names become a generation's names
# (see _renamed). The names are not defined in this module.


def _tpl_not_declared(*args, **kwargs):
    raise RuntimeError("not yet declared")


def _tpl_lookup(*args):
    if len(args) < _gT_nargs:  # noqa: F821  torch leaves out trailing arguments equal to their defaults
        args += _gT_defaults[len(args) - _gT_first_default:]  # noqa: F821
    key = _gT_key(args)  # noqa: F821
    fn = _gT_get(key)  # noqa: F821
    if fn is None:
        fn = _gT_new(key, args)  # noqa: F821
        _gT_specialize(key, fn)  # noqa: F821
    return fn(*args)


def _tpl_eager(*args, **kwargs):
    return _gT_eager(*args, **kwargs)  # noqa: F821


def _tpl_checked_eager(*args, **kwargs):
    _gT_check(args)  # noqa: F821
    return _gT_eager(*args, **kwargs)  # noqa: F821


def _tpl_raise(*args, **kwargs):
    raise _gT_error(_gT_why)  # noqa: F821


def _template(fn: Callable[..., Any], g: str, label: str) -> types.CodeType:
    """``fn``'s code (one of the ``_tpl_`` functions) reading generation ``g``'s names, named ``dispatch``."""
    return _renamed(fn.__code__, g + "_", label).replace(co_name="dispatch", co_qualname="dispatch")


def new_shell(op_name: str) -> Callable[..., Any]:
    """A function to register with torch once per op name, whose code :func:`build_dispatcher`,
    :func:`retarget` and :func:`release_dispatcher` replace: torch's dispatch tables are never
    touched again while calls may be in flight (torch does not synchronize them with calls)."""
    code = _template(_tpl_not_declared, "_g", f"<trt_kernels dispatcher {op_name}>")
    return types.FunctionType(code, {"__builtins__": __builtins__}, "dispatch")


def _install(shell: Callable[..., Any], code: types.CodeType, ns: Dict[str, Any], g: str,
             defaults: Tuple[Any, ...]) -> None:
    """Make ``shell`` run ``code`` (whose names of generation ``g`` are in ``ns``): the names are added
    to its globals first, then its code (and defaults) are swapped, then the names of the generations
    it replaced point at ``_GONE``, so a call racing the swap runs either the new code with its names
    or the old code until it looks a name up, which then raises UnregisteredOpError."""
    glb = shell.__globals__
    live = shell.__dict__.get("generation")  # the generation whose code runs until the swap
    glb.update(ns)
    shell.__code__ = code
    shell.__defaults__ = defaults or None
    # A call may still be running a replaced generation's code (it lets go of the GIL in the launch):
    # its names stay, pointing at _GONE (no longer at the declaration), so such a call finishes or
    # fails with this package's error; only generations KEPT_GENERATIONS back are dropped.
    kept = shell.__dict__.setdefault("generations", [])
    if live is not None and live != g and live not in kept:
        kept.append(live)
    dropped = kept[:-KEPT_GENERATIONS]
    del kept[:-KEPT_GENERATIONS]
    for name in [n for n in glb if n.startswith("_g") and not n.startswith(g + "_")]:
        if any(name.startswith(d + "_") for d in dropped):
            del glb[name]
        elif glb[name] is not _GONE:
            glb[name] = _GONE
    shell.generation = g


class _Gone:
    """What the names of a replaced declaration's code point to: any use raises UnregisteredOpError."""

    def _fail(self, *args, **kwargs):
        from trt_kernels.errors import UnregisteredOpError

        raise UnregisteredOpError("this op was re-declared or unregistered while the call was running. "
                                  "Fix: call it again")

    __call__ = _fail

    def __getattr__(self, name):
        self._fail()


_GONE = _Gone()


def build_dispatcher(kop, entries: Dict, new_entry: Callable, *, inline: bool = True,
                     shell: Optional[Callable[..., Any]] = None) -> Callable[..., Any]:
    """The function registered as the op's CUDA kernel (``shell``, a :func:`new_shell`, made to run
    this declaration; a new one when not given).

    It starts as a lookup: key = the tensor inputs' dtypes and ranks, ``entries[key]`` is the
    launcher (built by ``new_entry`` on first use). Once a launcher is built, the function's
    code is regenerated with that launcher's body *inlined* behind a guard on the key (up to
    :data:`MAX_INLINED` keys), so the common call runs one Python frame: the guard, the checks,
    the allocation and the launch, with no key tuple, dictionary lookup or second call. The
    function object registered with torch stays the same; only its ``__code__`` changes, and
    any key without an inlined body still takes the lookup (one more frame). Launchers from :func:`build_launcher`
    carry ``rebuild(prefix)``, which writes their body again under the prefix used here.
    """
    kinds = kop.sig.arg_kinds
    tpos = list(kop.sig.tensor_pos)
    params = ", ".join(f"a{i}" for i in range(len(kinds)))
    g = f"_g{next(_GENERATIONS)}"  # every global of this declaration's code starts with it
    # torch leaves out trailing arguments equal to their schema defaults: they default here too
    first_default = len(kinds) - len(kop.defaults)
    signature = ", ".join(f"a{i}" if i < first_default else f"a{i}={g}_default{i}" for i in range(len(kinds)))
    defaults = tuple(kop.defaults)
    ns: Dict[str, Any] = {f"{g}_get": entries.get, f"{g}_nargs": len(kinds), f"{g}_defaults": defaults,
                          f"{g}_first_default": first_default, f"{g}_key": _key_reader(tpos)}
    for i, value in enumerate(defaults):
        ns[f"{g}_default{first_default + i}"] = value
    inlined: List[Tuple] = []
    lock = threading.Lock()
    label = f"<trt_kernels dispatcher {kop.op_name}>"
    if shell is None:
        shell = new_shell(kop.op_name)
    # the lookup, as its own function over the shell's globals: what the shell runs until the first
    # call, and where the code with inlined launchers sends any other key
    ns[f"{g}_lookup"] = types.FunctionType(_template(_tpl_lookup, g, label), shell.__globals__, "dispatch")

    def new(key, args):
        return new_entry(key, args)

    def source() -> str:
        lines = [f"def dispatch({signature}):"]
        for i, (k, parts) in enumerate(inlined):
            dts, dims = k[: len(tpos)], k[len(tpos):]
            guard = [f"a{p}.dtype is {g}_key{i}_{j}" for j, p in enumerate(tpos)]
            guard += [f"a{p}.dim() == {int(d)}" for p, d in zip(tpos, dims)]
            for j, dt in enumerate(dts):
                ns[f"{g}_key{i}_{j}"] = dt
            lines.append(f"    if {' and '.join(guard)}:")
            lines += ["    " + ln for ln in parts.body]
        return "\n".join(lines + [f"    return {g}_lookup({params})"]) + "\n"

    def specialize(key, fn):
        rebuild = getattr(fn, "rebuild", None)
        if not inline or rebuild is None or shell.__dict__.get("generation") != g:  # re-declared since
            return
        with lock:
            if len(inlined) >= MAX_INLINED or any(k == key for k, _ in inlined):
                return
            parts = rebuild(f"{g}_k{len(inlined)}_")
            ns.update(parts.ns)
            inlined.append((tuple(key), parts))
            src = source()
            # same function object: torch keeps it; our templates and ints only
            _install(shell, _dispatch_code(src, label, g), ns, g, defaults)
            shell.source = src

    ns[f"{g}_new"] = new
    ns[f"{g}_specialize"] = specialize
    _forget_declaration(shell)
    # until the first call the lookup is this module's template: declaring compiles nothing
    _install(shell, ns[f"{g}_lookup"].__code__, ns, g, ())
    shell.source = ""  # no generated source yet
    shell.inlined = inlined
    shell.launchers = entries
    return shell


def _key_reader(tpos: Sequence[int]) -> Callable[[Tuple[Any, ...]], Tuple[Any, ...]]:
    """The dispatch key of a call's arguments, as the generated lookup computes it: the tensor inputs'
    dtypes, then their ranks."""
    if len(tpos) == 1:
        p = tpos[0]
        return lambda args: (args[p].dtype, args[p].dim())
    return lambda args: tuple([args[p].dtype for p in tpos] + [args[p].dim() for p in tpos])


def retarget(shell: Callable[..., Any], names: Dict[str, Any], label: str) -> None:
    """Make ``shell`` call ``names["eager"]`` (an op whose CUDA kernel is its ``eager_fn``), after
    ``names["check"](args)`` where given; or raise ``names["error"](names["why"])`` (the unregistered
    state)."""
    g = f"_g{next(_GENERATIONS)}"
    ns = {f"{g}_{k}": v for k, v in names.items()}
    tpl = _tpl_raise if "error" in names else _tpl_checked_eager if "check" in names else _tpl_eager
    _forget_declaration(shell)
    _install(shell, _template(tpl, g, label), ns, g, ())


def _forget_declaration(shell: Callable[..., Any]) -> None:
    """Drop what the shell's attributes hold of the declaration it ran (its generations stay)."""
    for k in [k for k in shell.__dict__ if k not in ("generation", "generations")]:
        del shell.__dict__[k]


def release_dispatcher(shell: Callable[..., Any], why: str, error: type) -> None:
    """Point ``shell`` at an error (its op was unregistered): torch keeps calling the function it was
    given, so the declaration's launchers, record and loaded kernels are let go of here instead."""
    launchers = shell.__dict__.get("launchers")
    if isinstance(launchers, dict):
        launchers.clear()
    retarget(shell, {"error": error, "why": why}, "<trt_kernels unregistered op>")
