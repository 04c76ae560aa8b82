"""AOT replay: launch exactly what an op's TensorRT ``aot_impl`` describes, and compare with eager.

For machines with a GPU but without TensorRT. The op's plugin is registered with NVIDIA's
own ``tensorrt.plugin`` layer (over the emulated native module, :func:`trt_kernels.testing.standin`),
and one plugin layer is built for the given inputs as an engine build drives it: descriptor,
autotune, tactic, ``aot_impl``. What comes back (kernel name, PTX, launch parameters, extra
arguments) is evaluated at the inputs' sizes and launched by the emulator's engine runtime:
the PTX loaded with ``cuModuleLoadData`` (the driver's JIT, as TensorRT loads it), arguments
in TensorRT's layout ``(input pointers..., extra arguments as 32-bit ints..., output
pointers...)``, into NaN-poisoned outputs. The outputs are compared with the eager op, bit for bit (for a tactic
other than the first, with the eager launcher run at that tactic, since eager ops use the
first: a reduction with another block size sums in another order).

Needs the ``tensorrt-cu13-bindings`` wheel's pure-Python plugin package (installed, or
``TRT_STANDIN_BINDINGS`` pointing at the wheel) and a CUDA GPU. Usage::

    from trt_kernels.testing import aot_replay
    r = aot_replay("kern_ex::sigmoid", torch.randn(4, 128, device="cuda"))
    assert r.bitwise_equal, r

:func:`jit_replay` does the same for the JIT plugin (``trtp.impl``, run through NVIDIA's
``enqueue``). For an op that writes inputs in place the plugin's outputs are its fresh outputs then each
written input's new value (a JIT plugin: see :attr:`KernelOp.aot`), compared with the eager op run on
copies of the inputs; the replay also checks the plugin left its inputs as they were (TensorRT's plugin
inputs are read-only). For an op whose kernel writes output sizes (``ttk.Written``) the plugin's last outputs are
its size tensors: the replay's buffers hold the bounds, and the outputs compared are each at the size its count
holds.
"""

from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Tuple

import torch

from trt_kernels import registry
from trt_kernels.plugins.qdp import register_plugin
from trt_kernels.plugins.shapes import torch_dtype
from trt_kernels.signature import scalar_value
from trt_kernels.sources.archs import ptx_target

from ._standin import standin

_TRT_NAMES = {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16", torch.int32: "INT32",
              torch.int8: "INT8", torch.bool: "BOOL", torch.int64: "INT64", torch.uint8: "UINT8"}


@dataclass
class ReplayResult:
    op_name: str
    tactic: int
    kernel_name: str
    grid: Tuple[int, int, int]
    block: Tuple[int, int, int]
    shared_mem: int
    extra_args: List[int]
    outputs: List[torch.Tensor] = field(repr=False)
    eager: List[torch.Tensor] = field(repr=False)
    launched: bool = True
    ptx_target: Optional[str] = None  # the ``.target`` of the PTX the AOT impl embedded (``sm_80``); None for JIT

    @property
    def bitwise_equal(self) -> bool:
        return len(self.outputs) == len(self.eager) and all(
            a.shape == b.shape and a.dtype == b.dtype and torch.equal(_bits(a), _bits(b))
            for a, b in zip(self.outputs, self.eager)
        )

    def max_abs_diff(self) -> float:
        diffs = [(a.double() - b.double()).abs().max().item() for a, b in zip(self.outputs, self.eager) if a.numel()]
        return max(diffs, default=0.0)


def _bits(t: torch.Tensor) -> torch.Tensor:
    """Reinterpret as integers of the same width, so NaNs compare by their bits."""
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    return t.contiguous().view(view) if t.dtype != torch.bool else t


def _op_name(op) -> str:
    if isinstance(op, str):
        return op
    schema = getattr(op, "_schema", None)  # an OpOverload
    return schema.name if schema is not None else op._qualified_op_name  # an OpOverloadPacket


def _arguments(op, args):
    """The op's record, its contiguous tensor inputs, its scalar attributes and TensorRT's input list."""
    kop = registry.get(_op_name(op))
    if kop.sig.checks:  # the engine does not check sizes at run time: refuse mismatched inputs as eager does
        from trt_kernels.library.arguments import make_size_check

        make_size_check(kop)(args)
    # TensorRT's plugin inputs are 256-byte aligned (setTensorAddress requires it of the engine's tensors, and
    # TensorRT allocates the others so), which the AOT PTX may assume: a view that is not gets copied, as the
    # data would be in an engine
    tensors = [_aligned(a.contiguous()) for a, k in zip(args, kop.sig.arg_kinds) if k == "tensor"]
    attrs = {d.name: scalar_value(kop.op_name, d, a) for d, a, k in zip(kop.sig.inputs, kop.with_defaults(tuple(args)),
                                                                       kop.sig.arg_kinds) if k == "scalar"}
    return kop, tensors, attrs, [(_TRT_NAMES[t.dtype], tuple(t.shape)) for t in tensors]


def _aligned(t: torch.Tensor) -> torch.Tensor:
    """``t``, or a copy of it at a 256-byte aligned address."""
    return t if t.data_ptr() % 256 == 0 else t.clone()


def _aot_key(kop, tensors, attrs, tactic: int) -> Optional[int]:
    """The specialization key of the code the AOT impl embedded for these inputs (:meth:`KernelOp.aot_code`; the
    replay's sizes reach the plugin as symbols, so only the pointers and the scalars are known); None for a source
    with one code."""
    from trt_kernels.library.arguments import check_tensor_args

    kdt = check_tensor_args(kop, tensors)
    tactic = max(int(tactic or 1), 1)
    arch = kop.device_arch(tensors[0].get_device())
    recipe = kop.recipe(kdt, tuple(t.dim() for t in tensors), tactic, arch)
    if not recipe.spec:
        return None
    return kop.aot_code(kdt, tactic, arch, recipe.aot_key([attrs[d.name] for d in kop.sig.scalar_decls]))[0]


def _poisoned(shape, dtype, device):
    """An output buffer the kernel must overwrite: NaN for floats, -1 for ints, True for bools."""
    fill = float("nan") if dtype.is_floating_point else (True if dtype == torch.bool else -1)
    return torch.full(shape, fill, dtype=dtype, device=device)


def _written(kop, outs: List[torch.Tensor]) -> List[torch.Tensor]:
    """The plugin's outputs as the op returns them: for an op whose kernel writes sizes (``ttk.Written``), each data
    output at the size its count (a size tensor, among the plugin's last outputs) holds, read as eager and TensorRT
    read it (the buffer's first elements, row-major), the size tensors left out; a count outside ``[0, bound]`` (a
    never-written one reads -1, the poison) raises, as in eager."""
    if not kop.sig.counts:
        return outs
    from trt_kernels.eager.cuda_kernel import written_sizes

    res = written_sizes(kop, lambda: outs)()
    return list(res) if isinstance(res, tuple) else [res]


def aot_replay(op, *args, tactic: Optional[int] = None, arch: Optional[str] = None,
               on_standin: Optional[Callable[[Any], None]] = None) -> ReplayResult:
    """Replay ``op``'s AOT plugin at the shapes of ``args`` (its torch arguments, CUDA tensors);
    returns the replayed and the eager outputs. ``arch``: the arch the AOT PTX targets (default: the op's rule,
    :meth:`KernelOp.aot_target`): PTX for a lower arch than the GPU's is JIT-compiled by the driver, as on a
    GPU of a newer generation than the engine's minimum. ``on_standin(env)`` runs inside the stand-in
    context first (e.g. to hand an ``aot_fn`` the stand-in ``tensorrt.plugin`` module)."""
    kop, tensors, attrs, trt_inputs = _arguments(op, args)
    if not kop.aot.aot:
        raise ValueError(f"{kop.op_name} has no AOT plugin ({kop.aot.why}); jit_replay replays its JIT plugin")
    with standin() as env:
        if on_standin is not None:
            on_standin(env)
        register_plugin(kop, env.trt, env.trtp, arch)
        res = env.build(kop.op_name, inputs=trt_inputs, attrs=attrs, aot=True, tactic=tactic)
        out_dtypes = [torch_dtype(env.trt, d) for d in res.output_dtypes]
    lv = res.launch_values
    grid = (lv["grid_x"], lv["grid_y"], lv["grid_z"])
    block = (lv["block_x"], lv["block_y"], lv["block_z"])
    kname = res.kernel_name.decode() if isinstance(res.kernel_name, bytes) else res.kernel_name
    dev = tensors[0].device
    outs = [_poisoned(s, d, dev) for s, d in zip(res.output_shapes, out_dtypes)]
    # as the emulated engine: a layer whose inputs and outputs are all empty is not launched; any other
    # launch is checked as CUDA would (a zero grid dimension with data to write is an error, not a skip)
    launched = any(t.numel() for t in tensors) or any(o.numel() for o in outs)
    if launched:
        with torch.cuda.device(dev):
            engine = env.native._engine
            kernel = env.native._cuda.Kernel(res.ptx, kname)
            engine.run_aot(kernel, {k: v._to_json() for k, v in res.launch.items()},
                           [e._to_json() for _, e in res.extra_args], res.bindings, [t.data_ptr() for t in tensors],
                           [o.data_ptr() for o in outs], torch.cuda.current_stream(dev).cuda_stream, kop.op_name)
    torch.cuda.synchronize(dev)
    key = _aot_key(kop, tensors, attrs, res.tactic) if kop.eager_fn is None else None
    if (res.tactic in (0, 1) and key is None) or kop.eager_fn is not None:
        eager = kop.overload(*args)  # the op as users call it (eager uses tactic 1)
        eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    else:  # the eager launcher at the same tactic and specialization: CUBIN and int-evaluated plan, same block
        from trt_kernels.eager.cuda_kernel import launch_into

        eager = [torch.empty_like(o) for o in outs]
        it = iter(tensors)  # the aligned tensors the AOT launch read
        eager_args = [next(it) if k == "tensor" else a for a, k in zip(kop.with_defaults(tuple(args)),
                                                                        kop.sig.arg_kinds)]
        launch_into(kop, eager_args, eager, torch.cuda.current_stream(dev).cuda_stream, tactic=res.tactic, key=key)
        torch.cuda.synchronize(dev)
        eager = _written(kop, eager)
    torch.cuda.synchronize(dev)
    outs = _written(kop, outs)
    return ReplayResult(op_name=kop.op_name, tactic=res.tactic, kernel_name=kname, grid=grid, block=block,
                        shared_mem=lv["shared_mem"], extra_args=res.extra_arg_values, outputs=outs, eager=eager,
                        launched=launched, ptx_target=ptx_target(res.ptx))


def jit_replay(op, *args, on_standin: Optional[Callable[[Any], None]] = None) -> ReplayResult:
    """Replay ``op``'s JIT plugin (``trtp.impl``) as TensorRT runs it: the plugin is built with
    ``aot=False`` and its ``enqueue`` is called with device pointers and the current stream, into
    NaN-poisoned outputs; compared with the eager op bit for bit."""
    kop, tensors, attrs, trt_inputs = _arguments(op, args)
    dev = tensors[0].device
    with standin() as env:
        if on_standin is not None:
            on_standin(env)
        register_plugin(kop, env.trt, env.trtp)
        res = env.build(kop.op_name, inputs=trt_inputs, attrs=attrs, aot=False)
        outs = [_poisoned(s, torch_dtype(env.trt, d), dev) for s, d in zip(res.output_shapes, res.output_dtypes)]
        before = [t.clone() for t in tensors]
        res.enqueue([t.data_ptr() for t in tensors], [o.data_ptr() for o in outs],
                    torch.cuda.current_stream(dev).cuda_stream)
    torch.cuda.synchronize(dev)
    outs = _written(kop, outs)
    for name, t, b in zip(kop.sig.tensor_names, tensors, before):
        if not torch.equal(_bits(t), _bits(b)):
            raise RuntimeError(f"{kop.op_name}: the JIT plugin wrote its input {name!r}, which TensorRT passes "
                               "read-only")
    if kop.sig.mutated:  # eager on copies: its fresh outputs, then the written inputs' new values
        copies = {i: a.clone() for i, a in enumerate(args) if isinstance(a, torch.Tensor)}
        eager = kop.overload(*[copies.get(i, a) for i, a in enumerate(args)])
        eager = [] if eager is None else list(eager) if isinstance(eager, (tuple, list)) else [eager]
        written = [i for i, k in enumerate(kop.sig.arg_kinds) if k == "tensor"]
        eager += [copies[written[t]] for t in kop.sig.mutated]
    else:
        eager = kop.overload(*args)
        eager = list(eager) if isinstance(eager, (tuple, list)) else [eager]
    torch.cuda.synchronize(dev)
    return ReplayResult(op_name=kop.op_name, tactic=res.tactic, kernel_name="(trtp.impl)", grid=(0, 0, 0),
                        block=(0, 0, 0), shared_mem=0, extra_args=[], outputs=outs, eager=eager)
