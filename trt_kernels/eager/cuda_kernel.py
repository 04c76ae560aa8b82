"""The op's eager CUDA kernel, from its :class:`~trt_kernels.recipe.LaunchRecipe`: :func:`make_cuda_impl`
(the function torch calls: look up, or build at the first call, the launcher for the inputs' dtype and ranks)
and :func:`launch_into` (one launch into given outputs on a given stream: TensorRT's JIT plugin impl and the
replay checks)."""

from __future__ import annotations

import struct
import threading
from typing import Any, Dict, Sequence, Tuple

import torch

from trt_kernels.eager.dispatcher import build_dispatcher
from trt_kernels.errors import InputError
from trt_kernels.op import KernelOp


def make_cuda_impl(kop: KernelOp, shell=None, definition=None):
    """The eager CUDA kernel: look up (or build) the launcher for the inputs' dtype and ranks.

    Launchers are specialized functions from :mod:`trt_kernels.eager.fastpath`; building one checks
    the dtypes and ranks (clear errors), later calls only look it up.
    """
    if kop.varies:
        return _varying_impl(kop, shell)
    tpos = kop.sig.tensor_pos
    entries: Dict[Tuple, Any] = {}
    lock = threading.Lock()

    def new_entry(key, args):
        from trt_kernels.library.arguments import check_tensor_args  # (a first launch per key only)

        ts = [args[i] for i in tpos]
        for t in ts:
            if not isinstance(t, torch.Tensor):
                break
            if t.device.type != "cuda":
                raise InputError(f"{kop.op_name}: inputs are on different devices "
                                 f"({', '.join(str(t.device) for t in ts)}). "
                                 "Fix: move them to one CUDA device")
        kdt = check_tensor_args(kop, ts)
        dev = ts[0].get_device()
        recipe = kop.recipe(kdt, tuple(t.dim() for t in ts), 1, kop.device_arch(dev))
        with lock:
            fn = entries.get(key)
            if fn is None:
                from trt_kernels.eager.fastpath import (
                    build_launcher,  # (with the CUDA launch modules) at the first launch
                )

                kernel = kop.loaded_kernel(kdt, dev)
                fn = build_launcher(kop, recipe, kernel)
                entries[key] = fn
                slot = definition.native if definition is not None else None
                if slot is not None:  # the native kernel launches this key from now on
                    from trt_kernels.eager import native

                    kernel.handle(dev)
                    native.add_variant(slot, kop, key, recipe, kernel)
        return fn

    impl = build_dispatcher(kop, entries, new_entry, shell=shell)
    impl.__name__ = f"{kop.name}_cuda"
    return impl


def _varying_impl(kop: KernelOp, shell=None):
    """The eager CUDA kernel of an op whose calls compute their launch config: each call's config selects a
    variant (compiled once, cached like any kernel), launched by that variant's own eager kernel; where
    ``@triton.autotune`` gives several, the first call per autotune key times them and keeps the fastest."""
    from trt_kernels.eager.dispatcher import retarget

    impls: Dict[int, Any] = {}  # id of a variant KernelOp -> its eager kernel
    chosen: Dict[Tuple, int] = {}  # autotune key -> tactic (0-based)
    lock = threading.Lock()

    def launcher(v: KernelOp):
        f = impls.get(id(v))
        if f is None:
            with lock:
                f = impls.setdefault(id(v), make_cuda_impl(v))
        return f

    def impl(*args):
        full = kop.with_defaults(tuple(args))
        variants = kop.call_variants(full)
        if len(variants) == 1:
            return launcher(variants[0])(*full)
        key = kop.tune_key(full)
        best = chosen.get(key)
        if best is None:
            best = chosen.setdefault(key, _tune([launcher(v) for v in variants], full))
        return launcher(variants[best])(*full)

    impl.__name__ = f"{kop.name}_cuda"
    if shell is not None:
        retarget(shell, {"eager": impl}, f"<trt_kernels per-call config {kop.op_name}>")
        return shell
    return impl


def _tune(launchers: Sequence[Any], args: Tuple, reps: int = 10) -> int:
    """The index of the fastest launcher at ``args`` (CUDA events on the current stream, after a warm-up
    launch each: Triton's autotuner's measure, the median of ``reps`` launches)."""
    times = []
    for f in launchers:
        f(*args)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(reps):
            start.record()
            f(*args)
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end))
        times.append(sorted(samples)[len(samples) // 2])
    return min(range(len(times)), key=times.__getitem__)


def launch_into(kop: KernelOp, args: Sequence[Any], outs: Sequence[torch.Tensor], stream: int, tactic: int = 1) -> None:
    """Launch the kernel of ``tactic`` on ``stream`` writing into the given ``outs`` (TensorRT's JIT
    plugin impl and the replay checks).

    ``args`` are the op's arguments in schema order (tensors contiguous, on one device). Override-path
    ops run their ``eager_fn`` on that stream and copy its results into ``outs``. A kernel whose
    compiler appended scratch-buffer pointers (Triton) gets buffers allocated here on ``stream``.
    """
    from trt_kernels.library.arguments import check_scalar_args, check_tensor_args, make_size_check

    kinds = kop.sig.arg_kinds
    args = kop.with_defaults(tuple(args))
    if kop.varies:  # the variant this call computes (TensorRT's tactic picks among the autotuner's configs)
        variants = kop.call_variants(args)
        kop, tactic = variants[min(max(int(tactic or 1), 1), len(variants)) - 1], 1
    tensors = [a for a, k in zip(args, kinds) if k == "tensor"]
    dev = tensors[0].get_device()
    if kop.eager_fn is not None:
        make_size_check(kop)(args)
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
            res = kop.eager_fn(*args)
            for o, r in zip(outs, res if isinstance(res, (tuple, list)) else (res,)):
                o.copy_(r)
        return
    kdt = check_tensor_args(kop, tensors)
    scalars = check_scalar_args(kop, args)
    tactic = min(max(int(tactic or 1), 1), kop.tactics)
    ranks = tuple(t.dim() for t in tensors)
    plan = kop.plan(ranks, tactic)
    from trt_kernels.eager.driver import driver
    from trt_kernels.eager.fastpath import relaunch, scalar_error, scratch_buffers, unwritten_error
    from trt_kernels.plan import concrete

    # the sizes first: a size check or an out-of-range size raises before anything is built or loaded
    sizes = concrete(plan, [tuple(t.shape) for t in tensors], kop.sig.tensor_names, scalars,
                     [d.name for d in kop.sig.scalar_decls])
    grid = list(sizes.grid)
    if not all(grid):
        if any(o.numel() for o in outs):
            raise unwritten_error(kop.op_name, grid)
        return
    recipe = kop.recipe(kdt, ranks, tactic, kop.device_arch(dev))
    image = recipe.image
    pack = kop.param_pack(recipe)
    buf, addr, _keep = pack.buffer()
    try:
        pack.struct.pack_into(buf, 0, *recipe.values(tensors, scalars, sizes.extras, outs))
    except (struct.error, OverflowError, TypeError, IndexError) as exc:
        raise scalar_error(kop, args, exc) from None
    scratch = []
    if recipe.needs_scratch:
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
            scratch = scratch_buffers(recipe.scratch, grid[0] * grid[1] * grid[2], tensors[0].device)
        pack.set_hidden(buf, [p for _, p in scratch])
    kernel = kop.loaded_kernel(kdt, dev, tactic)
    smem = max(sizes.shared_mem, image.shared_mem)
    (err,) = driver().cuLaunchKernel(kernel.function(dev), *grid, *plan.block, smem, stream, addr, 0)
    if scratch:
        pack.set_hidden(buf, [])
    if err:
        relaunch(kop, kernel, err, dev, grid, plan.block, smem, addr, stream)
