"""The op's torch definition and its lifecycle: define, point at a declaration, unregister, forget.

Ops are defined with a ``torch.library.Library`` fragment (one per op) rather
than ``torch.library.custom_op``: on the H100 the same launch body costs
9.7 us per call as a Library op and 18.6 us under ``custom_op`` (see
docs/design.md), and the overhead goal is 1.5x ``torch.sigmoid``. The fake impl is
registered with ``torch.library.register_fake``, so ``torch.compile`` and
``torch.export`` trace through the op.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

import torch

from trt_kernels.eager.cuda_kernel import make_cuda_impl
from trt_kernels.eager.dispatcher import new_shell, release_dispatcher, retarget
from trt_kernels.errors import SpecError, UnregisteredOpError
from trt_kernels.op import KernelOp

# torch's dispatcher does not synchronize its tables with calls in flight (registering or removing
# a kernel while another thread calls the op can crash the process), so each op name is registered
# with torch once: a definition and one set of kernels (fake, CUDA, CPU, autograd when declared)
# whose Python functions stay the same objects. A declaration points them at itself; a
# re-declaration with the same schema points them at the new one, and unregistering points them
# at UnregisteredOpError, all without touching torch's tables. A call racing either runs the old or
# the new declaration, or gets this package's error; an OpOverload kept from before keeps working.
# torch's tables change again only when the schema changes (the name is then defined anew) or
# autograd comes or goes (the autograd kernel, in a fragment of its own, is registered or removed); a
# call racing that is not protected. Nothing registered holds a declaration that was replaced or
# unregistered, so its record is freed.


class _Definition:
    """One op name's registration with torch: its library fragments, the Python CUDA kernel (the shell), and
    the boxes the registered functions call through."""

    __slots__ = ("op_name", "schema", "lib", "shell", "autograd_lib", "boxes", "why", "native")

    def __init__(self, op_name: str, schema: str, lib: Any, shell: Any) -> None:
        self.op_name, self.schema = op_name, schema
        self.lib = lib  # the fragment with the definition and its fake, CUDA and CPU kernels
        self.shell = shell  # the Python CUDA kernel (dispatcher.new_shell)
        self.autograd_lib: Any = None  # the fragment with the autograd kernel, where the declaration has a backward
        self.boxes: Dict[str, List[Any]] = {}  # role -> [current function or None]
        self.why = ""  # what a call gets while no declaration is current
        self.native: Optional[int] = None  # the native kernel's slot, where torch calls it in place of the shell

    def boxed(self, role: str) -> Callable[..., Any]:
        """The function registered for ``role``: it calls whatever the box holds now."""
        box = self.boxes.setdefault(role, [None])

        def kernel(*args, **kwargs):
            f = box[0]
            if f is None:
                raise UnregisteredOpError(self.why)
            return f(*args, **kwargs)

        kernel.__name__ = kernel.__qualname__ = f"{self.op_name.replace('::', '_')}_{role}"
        return kernel


_DEFS: Dict[str, _Definition] = {}


def _foreign(op_name: str) -> bool:
    """Whether torch has an op of that name that this package did not define."""
    if op_name in _DEFS:
        return False
    ns, name = op_name.split("::")
    try:
        return hasattr(getattr(torch.ops, ns), name)
    except Exception:  # noqa: BLE001 - an unusable namespace holds no op
        return False


def _register_kernels(d: _Definition, kop: KernelOp) -> None:
    """The definition's fake, CUDA and CPU kernels, in its fragment. The CUDA kernel is the native one where
    it can be had (:mod:`trt_kernels.eager.native`, with the shell behind it), else the shell. Raises
    what torch raises (the caller then removes the definition)."""
    name, lib = kop.name, d.lib
    # torch records where a fake impl was registered, for its messages, by inspecting the frame
    # _stacklevel above its own. For a frame in a file `inspect` has not mapped yet (this one, in a
    # fresh process) `inspect.getmodule` walks every loaded module: ~2 ms on the CPU machine, a fifth
    # of a warm start's seven declarations. _stacklevel=0 names torch.library's own frame instead (its
    # file was mapped while torch was imported), so torch's messages cite a line of torch/library.py
    # rather than this one as where the fake impl was registered.
    torch.library.register_fake(d.op_name, d.boxed("fake"), lib=lib, _stacklevel=0)
    d.native = _native_register(kop, d.shell)
    if d.native is None:
        lib.impl(name, d.shell, "CUDA")
    lib.impl(name, d.boxed("cpu"), "CPU")


def _register_autograd(d: _Definition, kop: KernelOp) -> None:
    """The autograd kernel, in a fragment of its own (removed when a re-declaration drops the backward)."""
    lib = torch.library.Library(kop.namespace, "FRAGMENT")
    try:
        torch.library.register_autograd(d.op_name, d.boxed("backward"), setup_context=d.boxed("setup_context"),
                                        lib=lib)
    except Exception:
        lib._destroy()
        raise
    d.autograd_lib = lib


def _drop_autograd(d: _Definition) -> None:
    if d.autograd_lib is not None:
        d.autograd_lib._destroy()
        d.autograd_lib = None


def native_slot(op_name: str):
    """The native kernel's slot of an op this package defined (:mod:`trt_kernels.eager.native`), or None
    where torch calls its Python kernel."""
    d = _DEFS.get(op_name)
    return d.native if d is not None else None


def _native_register(kop: KernelOp, shell) -> Optional[int]:
    """The native kernel's slot for ``kop``'s new definition, or None (register ``shell``). A torch
    without CUDA launches nothing: trt_kernels.eager.native is not even imported then."""
    if torch.version.cuda is None:
        return None
    from trt_kernels.eager import native

    return native.register(kop, shell)


def _drop_native(d: _Definition) -> None:
    if d.native is not None:
        from trt_kernels.eager import native

        native.release(d.native)
        d.native = None


def _fake(kop: KernelOp) -> Callable[..., Any]:
    from trt_kernels.library import fake

    return fake.make_fake_impl(kop) if kop.meta_fn is None else fake.checked_meta_fn(kop)


def _cpu(kop: KernelOp) -> Callable[..., Any]:
    from trt_kernels.library import fake

    return fake.make_cpu_impl(kop)


def _at_first_call(d: _Definition, role: str, build: Callable[[KernelOp], Callable[..., Any]], kop: KernelOp):
    """The kernel of ``role``, built by ``build(kop)`` at its first call (and put in the role's box in place of
    this stand-in): a warm start that declares and launches never imports the fake and CPU kernels' module."""

    def first_call(*args, **kwargs):
        fn = build(kop)
        box = d.boxes.get(role)
        if box is not None and box[0] is first_call:
            box[0] = fn
        return fn(*args, **kwargs)

    return first_call


def _point(d: _Definition, kop: KernelOp) -> None:
    """Make the definition's kernels run ``kop``."""
    d.why = f"{kop.op_name} has no current declaration"
    if kop.eager_fn is not None:
        names = {"eager": kop.eager_fn}
        if kop.sig.checks:  # eager_fn replaces the derived launch, which checks the sizes
            from trt_kernels.library.arguments import make_size_check

            names["check"] = make_size_check(kop)
        retarget(d.shell, names, f"<trt_kernels eager_fn {kop.op_name}>")
    else:
        make_cuda_impl(kop, shell=d.shell, definition=d)
    kop.cuda_impl = d.shell
    fake = kop.meta_fn if kop.meta_fn is not None and not kop.sig.checks else _at_first_call(d, "fake", _fake, kop)
    roles = {"fake": fake, "cpu": _at_first_call(d, "cpu", _cpu, kop)}
    if kop.backward is not None:  # (imported here: an op without a backward, most of them, never needs it)
        from trt_kernels.library.autograd import make_backward, make_setup_context

        roles.update(backward=make_backward(kop), setup_context=make_setup_context(kop))
    for role, box in d.boxes.items():
        box[0] = roles.get(role)
    for role, fn in roles.items():
        d.boxes.setdefault(role, [fn])


def register(kop: KernelOp) -> None:
    """Give ``kop`` its torch op: define it (or keep the definition and kernels of an earlier
    declaration with the same schema, pointing them at ``kop``)."""
    op = kop.op_name
    d = _DEFS.get(op)
    if d is not None and d.schema != kop.schema:  # another signature: the name is defined anew
        forget(op)
        d = None
    new = d is None
    if new:
        if _foreign(op):
            raise SpecError(f"{op}: torch already has an op of that name that trt_kernels did not register. "
                            "Fix: choose another name")
        lib = torch.library.Library(kop.namespace, "FRAGMENT")
        try:
            lib.define(f"{kop.name}{kop.schema}")
        except RuntimeError as e:
            lib._destroy()
            raise SpecError(f"{op}: torch refused the definition {kop.name}{kop.schema} ({str(e).splitlines()[0]}). "
                            "Fix: choose another name") from None
        d = _DEFS[op] = _Definition(op, kop.schema, lib, new_shell(op))
    elif (d.autograd_lib is not None) != (kop.backward is not None):  # autograd goes (or comes, below)
        _drop_autograd(d)
    _point(d, kop)
    if new:
        _register_kernels(d, kop)
    if kop.backward is not None and d.autograd_lib is None:
        _register_autograd(d, kop)
    if d.native is not None:  # its launches become native as this declaration's launchers are built
        from trt_kernels.eager import native

        native.reset(d.native, kop)
    kop.library = d.lib


def unregister(kop: KernelOp) -> None:
    """Point the op's kernels at :class:`UnregisteredOpError` until the name is declared again; what
    they held of ``kop`` is let go of."""
    d = _DEFS.get(kop.op_name)
    kop.library = None
    kop.cuda_impl = None
    if d is None:
        return
    d.why = f"{kop.op_name} was unregistered (trt_kernels.unregister). Fix: declare it again before calling it"
    for box in d.boxes.values():
        box[0] = None
    if d.native is not None:
        from trt_kernels.eager import native

        native.reset(d.native, None)
    release_dispatcher(d.shell, d.why, UnregisteredOpError)


def forget(op_name: str) -> None:
    """Remove ``op_name`` from torch (a first declaration that failed, or a schema that changed)."""
    d = _DEFS.pop(op_name, None)
    if d is not None:
        d.why = f"{op_name} was defined anew"
        for box in d.boxes.values():
            box[0] = None
        release_dispatcher(d.shell, d.why, UnregisteredOpError)
        _drop_native(d)
        _drop_autograd(d)
        d.lib._destroy()
