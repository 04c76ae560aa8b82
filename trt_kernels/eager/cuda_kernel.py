"""The op's eager CUDA kernel, from its :class:`~trt_kernels.recipe.LaunchRecipe`: :func:`make_cuda_impl`
(the function torch calls: look up, or build at the first call, the launcher for the inputs' dtype and ranks)
and :func:`launch_into` (one launch into given outputs on a given stream: TensorRT's JIT plugin impl and the
replay checks)."""

from __future__ import annotations

import math
import struct
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple

import torch

from trt_kernels.eager.dispatcher import build_dispatcher
from trt_kernels.errors import InputError, LaunchError
from trt_kernels.op import KernelOp


def make_cuda_impl(kop: KernelOp, shell=None, definition=None):
    """The eager CUDA kernel: look up (or build) the launcher for the inputs' dtype and ranks.

    Launchers are specialized functions from :mod:`trt_kernels.eager.fastpath`; building one checks
    the dtypes and ranks (clear errors), later calls only look it up.
    """
    if kop.varies:  # (each variant's kernel is this function's, so a variant reads its written sizes itself)
        return _varying_impl(kop, shell)
    if kop.sig.counts:
        return _written_impl(kop, shell)
    return _plain_impl(kop, shell, definition)


def _plain_impl(kop: KernelOp, shell=None, definition=None):
    """:func:`make_cuda_impl` of an op with one launch config: every output returned as allocated."""
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
                slot = definition.native if definition is not None else None
                on_spec = None
                if slot is not None and recipe.spec:  # the native kernel launches each key seen from then on
                    def on_spec(sp, key=key, recipe=recipe):
                        from trt_kernels.eager import native

                        native.add_variant(slot, kop, key, recipe, sp.kernel, sp)

                fn = build_launcher(kop, recipe, kernel, on_spec=on_spec)
                entries[key] = fn
                if slot is not None and not recipe.spec:  # the native kernel launches this key from now on
                    from trt_kernels.eager import native

                    kernel.handle(dev)
                    native.add_variant(slot, kop, key, recipe, kernel)
        return fn

    impl = build_dispatcher(kop, entries, new_entry, shell=shell)
    impl.__name__ = f"{kop.name}_cuda"
    return impl


def _written_impl(kop: KernelOp, shell=None):
    """The eager CUDA kernel of an op whose kernel writes sizes (:class:`~trt_kernels.spec.Written`): the op's
    launch (every output allocated at its bound, each count a 0-D tensor), then each count read back (the first
    read synchronises the stream) and checked against its bound, and the outputs returned at their
    actual sizes: the first ``numel`` elements of each buffer, the kernel having written it densely in the
    shape it reports (as TensorRT reads a data-dependent output)."""
    from trt_kernels.eager.dispatcher import retarget

    impl = written_sizes(kop, _plain_impl(kop))
    if shell is not None:
        retarget(shell, {"eager": impl}, f"<trt_kernels written sizes {kop.op_name}>")
        return shell
    return impl


def written_sizes(kop: KernelOp, inner):
    """The op's results from ``inner`` (its launch, returning every output as allocated: each at its bound, each
    count a 0-D tensor): each output at the size its count holds. See :func:`_written_impl`."""
    sig = kop.sig
    returned, counts = sig.returned, sig.counts
    # (output, written axis or -1, its count): an output written along its first axis is a slice of its buffer
    # (its first elements, contiguous); along a later one, the buffer's first elements viewed in the actual shape
    plan = [(i, sig.outputs[i].written, sig.outputs[i].count) for i in returned]
    bound_of = {c: next(i for i, _, cc in plan if cc == c) for c in counts}  # an output whose axis c sizes
    single = len(returned) == 1

    capturing = torch.cuda.is_current_stream_capturing if torch.version.cuda is not None else lambda: False

    def impl(*args):
        if capturing():
            raise LaunchError(f"{kop.op_name}: its kernel decides output sizes (ttk.Written), which eager reads back "
                              "after the launch, a synchronisation a CUDA graph capture cannot hold. Fix: call it "
                              "outside the captured region, or capture the ops before and after it")
        outs = inner(*args)
        got = {}
        for c, i in bound_of.items():
            bound = outs[i].shape[sig.outputs[i].written]
            n = int(outs[c].item()) if bound else 0  # (the synchronisation; a size bounded by 0 is 0: no read)
            if not 0 <= n <= bound:
                raise LaunchError(
                    f"{kop.op_name}: the kernel wrote {sig.outputs[c].name} = {n}, outside [0, {bound}] (the "
                    "declared ttk.Written max at these input sizes); a count above the bound means it wrote past its "
                    "output buffers. Fix: the kernel must write the count on every call (the buffer is not zeroed) "
                    "and never exceed max")
            got[c] = n
        res = []
        for i, axis, c in plan:
            out = outs[i]
            if axis == 0:
                out = out[:got[c]]
            elif axis > 0:
                shape = list(out.shape)
                shape[axis] = got[c]
                out = out.view(-1)[:math.prod(shape)].view(shape)
            res.append(out)
        return res[0] if single else tuple(res)

    impl.__name__ = f"{kop.name}_cuda"
    return impl


#: op name -> {autotune key: the tactic chosen (0-based)}: this process's choices (the disk keeps them too)
_CHOICES: Dict[str, Dict[Tuple, int]] = {}


def forget_tuning(op_name: Optional[str] = None) -> None:
    """Forget this process's autotune choices (of ``op_name``, or of every op): the next call per key reads the
    choice from the disk cache, or times the configs again where there is none."""
    for name, chosen in list(_CHOICES.items()):
        if op_name is None or name == op_name:
            chosen.clear()


def _varying_impl(kop: KernelOp, shell=None):
    """The eager CUDA kernel of an op whose calls compute their launch config: each call's config selects a
    variant (compiled once, cached like any kernel), launched by that variant's own eager kernel; where
    ``@triton.autotune`` gives several, the first call per autotune key picks one (:func:`_choose`) and keeps it
    (in memory, and on disk). Without ``@triton.autotune`` the first config launches (``tactics=`` are TensorRT's)."""
    from trt_kernels.eager.dispatcher import retarget

    impls: Dict[int, Any] = {}  # id of a variant KernelOp -> its eager kernel
    chosen: Dict[Tuple, int] = {}  # autotune key -> tactic (0-based)
    _CHOICES[kop.op_name] = chosen
    lock, tuning_lock = threading.Lock(), threading.Lock()
    tuned = kop.source.tuning is not None  # (a varying source's protocol: call_configs, tune_key, tuning, ...)

    def launcher(v: KernelOp):
        f = impls.get(id(v))
        if f is None:
            with lock:
                f = impls.setdefault(id(v), make_cuda_impl(v))
        return f

    def impl(*args):
        full = kop.with_defaults(tuple(args))
        variants = kop.call_variants(full)
        if len(variants) == 1 or not tuned:
            return launcher(variants[0])(*full)
        key = kop.tune_key(full)
        best = chosen.get(key)
        if best is None:
            with tuning_lock:  # one tuning per key: a second thread waits for the choice
                best = chosen.get(key)
                if best is None:
                    best = chosen[key] = _choose(kop, variants, full, key, launcher)
        return launcher(variants[best])(*full)

    impl.__name__ = f"{kop.name}_cuda"
    if shell is not None:
        retarget(shell, {"eager": impl}, f"<trt_kernels per-call config {kop.op_name}>")
        return shell
    return impl


def _choose(kop: KernelOp, variants: Sequence[KernelOp], args: Tuple, key: Tuple, launcher, event=None) -> int:
    """The tactic (0-based) a ``@triton.autotune`` op launches for autotune ``key``, as Triton's ``Autotuner.run``
    picks it at the first call per key: the configs ``prune_configs_by`` leaves (one left: that one, untimed);
    else the choice recorded on disk for this kernel, key and GPU; else the fastest by :func:`_tune`, with the
    autotuner's hooks (``reset_to_zero``, ``restore_value``, its ``pre_hook``/``post_hook``) around each timed
    launch and its reset after timing, recorded on disk. ``launcher(variant)``: the variant's eager kernel."""
    kinds = kop.sig.arg_kinds
    tensors = [a for a, k in zip(args, kinds) if k == "tensor"]
    scalars = [a for a, k in zip(args, kinds) if k == "scalar"]
    call = kop.source.tuning_call(tensors, scalars, [v.source.configs[0] for v in variants])
    cands = list(call.candidates)
    if len(cands) == 1:
        return cands[0]
    device = tensors[0].device if tensors else torch.device("cuda", torch.cuda.current_device())
    record = tuning_record(kop, key, device, len(variants), cands)
    best = read_choice(record) if record is not None else None
    if best is not None:
        return best
    times = _tune([launcher(variants[i]) for i in cands], args, before=lambda j: call.before(cands[j]),
                  after=lambda j, exc: call.after(cands[j], exc), event=event)
    best = cands[min(range(len(times)), key=times.__getitem__)]
    call.reset_only(best)
    if record is not None:
        write_choice(record, best, times)
    return best


def _tune(launchers: Sequence[Any], args: Tuple, reps: int = 10, before=None, after=None, event=None) -> List[float]:
    """The time (ms) of each launcher at ``args``: the median of ``reps`` launches after one warm-up launch, each
    measured by CUDA events on the current stream (``event()`` makes one), as Triton's autotuner measures.
    ``before(i)`` and ``after(i, exception)`` run around every launch of launcher ``i`` (warm-up included, and
    ``after`` also when the launch raised), outside the timed span."""
    if event is None:
        def event():
            return torch.cuda.Event(enable_timing=True)
    times = []
    for i, f in enumerate(launchers):
        start, end = event(), event()
        samples = []
        for rep in range(reps + 1):
            if before is not None:
                before(i)
            try:
                if rep:
                    start.record()
                f(*args)
                if rep:
                    end.record()
            except BaseException as e:
                if after is not None:
                    after(i, e)
                raise
            if after is not None:
                after(i, None)
            if rep:
                end.synchronize()
                samples.append(start.elapsed_time(end))
        times.append(sorted(samples)[len(samples) // 2])
    return times


# ----- the autotune choice on disk (data, never code: an index, checked before it is used) -----

_RECORD_FORMAT = 1


def tuning_record(kop: KernelOp, key: Tuple, device: torch.device, n_configs: int, candidates: Sequence[int]
                  ) -> Optional[Tuple[str, Dict[str, Any]]]:
    """``(file name, identity)`` of the disk record of one tuning: what the record must say to be used (the op,
    its kernel source's key (source, configs, options, Triton version), the autotune key, the GPU's name and
    compute capability, the number of configs and those timed); None where the key holds something other than
    plain values (a record keyed by it could not be matched in another process)."""
    import hashlib
    import json

    if any(not isinstance(k, (bool, int, float, str, type(None))) for k in key):
        return None
    source = kop.source
    ident = {"format": _RECORD_FORMAT, "op": kop.op_name, "source": source.key(),
             "configs_text": hashlib.sha256(source.config_text().encode()).hexdigest(), "key": list(key),
             "device": _device_label(device), "configs": int(n_configs), "candidates": [int(c) for c in candidates]}
    text = json.dumps(ident, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest() + ".bin", json.loads(text)


def _device_label(device: torch.device) -> str:
    if device.type != "cuda":
        return str(device)
    idx = device.index if device.index is not None else torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(idx)
    return f"{torch.cuda.get_device_name(idx)} sm_{major}{minor}"


def read_choice(record: Tuple[str, Dict[str, Any]]) -> Optional[int]:
    """The tactic a disk record holds for ``record`` (:func:`tuning_record`), from your cache, else the shared
    read-only one; None where there is none, or the one there does not say exactly ``record``'s identity or
    holds a choice outside the configs timed (then the configs are timed again and the record rewritten)."""
    from trt_kernels import cache_store

    name, ident = record
    for root, owner in cache_store.read_roots():
        got = cache_store.read_entry(root / "autotune" / name, cache_store.AUTOTUNE_MAGIC,
                                     lambda payload: _decode_choice(payload, ident), root=(root, owner))
        if got is not None:
            return got
    return None


def _decode_choice(payload: bytes, ident: Dict[str, Any]) -> int:
    from trt_kernels import cache_store

    header, _ = cache_store.unpack_payload(payload)
    for k, v in ident.items():
        if header.get(k) != v:
            raise ValueError(f"an autotune record for another {k} ({header.get(k)!r}, not {v!r})")
    choice = header.get("choice")
    if type(choice) is not int or choice not in ident["candidates"] or not 0 <= choice < ident["configs"]:
        raise ValueError(f"an autotune record whose choice {choice!r} is not one of the configs timed "
                         f"{ident['candidates']}")
    return choice


def write_choice(record: Tuple[str, Dict[str, Any]], choice: int, times: Sequence[float]) -> None:
    """Record ``choice`` for ``record`` in your cache (atomically; nothing where the cache is off)."""
    from trt_kernels import cache_store

    root = cache_store.cache_root()
    if root is None:
        return
    name, ident = record
    header = dict(ident, choice=int(choice), times_ms=[float(t) for t in times])
    cache_store.write_entry(root / "autotune" / name, cache_store.AUTOTUNE_MAGIC, cache_store.pack_payload(header))


def launch_into(kop: KernelOp, args: Sequence[Any], outs: Sequence[torch.Tensor], stream: int, tactic: int = 1,
                key: Optional[int] = None) -> None:
    """Launch the kernel of ``tactic`` on ``stream`` writing into the given ``outs`` (TensorRT's JIT
    plugin impl and the replay checks).

    ``args`` are the op's arguments in schema order (tensors contiguous, on one device). Override-path
    ops run their ``eager_fn`` on that stream and copy its results into ``outs``. A kernel whose
    compiler appended scratch-buffer pointers (Triton) gets buffers allocated here on ``stream``.
    ``key``: the specialization to launch (:mod:`trt_kernels.recipe`; the replays pass the one TensorRT's
    AOT launch was compiled for); default: the launch's own, from its values.
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
        if any(o.numel() for o, p in zip(outs, plan.outputs) if not p.bounds):
            raise unwritten_error(kop.op_name, grid)
        counts = [o for o, p in zip(outs, plan.outputs) if p.bounds]
        if counts:  # every output the sizes bound is empty: each size is 0, written here since no kernel runs
            with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
                for c in counts:
                    c.zero_()
        return
    arch = kop.device_arch(dev)
    recipe = kop.recipe(kdt, ranks, tactic, arch)
    values = recipe.values(tensors, scalars, sizes.extras, outs)
    if key is None:
        try:  # the code for this launch's specialization key (0 where the source has one code)
            key = recipe.key(values)
        except (TypeError, ValueError) as exc:
            raise scalar_error(kop, args, exc) from None
    image = kop.specialized_image(kdt, tactic, arch, key)
    pack = kop.param_pack(recipe, image.folded)
    buf, addr, _keep = pack.buffer()
    try:
        pack.struct.pack_into(buf, 0, *[v for i, v in enumerate(values) if i not in image.folded])
    except (struct.error, OverflowError, TypeError, IndexError) as exc:
        raise scalar_error(kop, args, exc) from None
    scratch = []
    if recipe.needs_scratch:
        with torch.cuda.stream(torch.cuda.ExternalStream(stream, device=tensors[0].device)):
            scratch = scratch_buffers(recipe.scratch, grid[0] * grid[1] * grid[2], tensors[0].device)
        pack.set_hidden(buf, [p for _, p in scratch])
    kernel = kop.loaded_kernel(kdt, dev, tactic, key)
    smem = max(sizes.shared_mem, image.shared_mem)
    (err,) = driver().cuLaunchKernel(kernel.function(dev), *grid, *plan.block, smem, stream, addr, 0)
    if scratch:
        pack.set_hidden(buf, [])
    if err:
        relaunch(kop, kernel, err, dev, grid, plan.block, smem, addr, stream)
