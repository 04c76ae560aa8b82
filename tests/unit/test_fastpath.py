"""The generated eager launcher, run on CPU tensors with a recording stand-in for cuLaunchKernel:
the packed parameter buffer must hold exactly the kernel ABI, in order."""

import ctypes
import struct

import pytest
import torch

import trt_kernels as ttk
from kernels import mixed_spec, row_sum_spec, sigmoid_spec, unique
from trt_kernels import recipe, registry
from trt_kernels.eager.fastpath import build_launcher


class StubKernel:
    def __init__(self):
        self.functions = {-1: "FUNC"}

    def function(self, dev):
        return self.functions[dev]


class Recorder:
    def __init__(self, pack):
        self.pack = pack
        self.calls = []

    def __call__(self, f, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        # read the parameters back through the void*[] array, as the driver would
        n = len(self.pack.codes)
        ptrs = (ctypes.c_void_p * n).from_address(addr)
        vals = []
        for code, p in zip(self.pack.codes, ptrs):
            size = struct.calcsize("=" + code)
            vals.append(struct.unpack("=" + code, ctypes.string_at(p, size))[0])
        self.calls.append(dict(f=f, grid=(gx, gy, gz), block=(bx, by, bz), smem=smem, stream=stream, vals=vals))
        return (0,)


def launcher_for(name, tensors):
    kop = registry.get(name)
    plan = kop.plan(tuple(t.dim() for t in tensors))
    holder = {}

    def launch(*a):
        return holder["rec"](*a)

    fn = build_launcher(kop, recipe.make(kop.sig, torch.float32, plan, None), StubKernel(), launch=launch,
                        stream=lambda dev: 77)
    holder["rec"] = Recorder(fn.pack)
    return fn, holder["rec"]


def test_abi_order_with_interleaved_scalars():
    name = unique()
    ttk.cuda_kernel_op(name, mixed_spec())
    a, b = torch.randn(3, 100), torch.randn(3, 100)
    fn, rec = launcher_for(name, [a, b])
    y = fn(a, 1.5, b, -7, True)
    assert y.shape == a.shape and y.dtype == torch.float32
    (call,) = rec.calls
    assert call["grid"] == (3, 1, 1) and call["block"] == (128, 1, 1) and call["stream"] == 77
    assert call["vals"] == [a.data_ptr(), b.data_ptr(), 1.5, -7, True, 300, y.data_ptr()]
    with pytest.raises(ttk.InputError, match=r"scalar 'k' = 4294967296 does not fit a 32-bit C int"):
        fn(a, 1.5, b, 2**32, True)


def test_empty_launches_nothing_and_shapes_are_right():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    x = torch.randn(0, 5)
    fn, rec = launcher_for(name, [x])
    y = fn(x)
    assert y.shape == (0, 5) and rec.calls == []


def test_reduction_output_allocation_and_grid():
    name = unique()
    ttk.cuda_kernel_op(name, row_sum_spec())
    x = torch.randn(4, 6, 9)
    fn, rec = launcher_for(name, [x])
    y = fn(x)
    assert y.shape == (4, 6)
    assert rec.calls[0]["grid"] == (24, 1, 1) and rec.calls[0]["vals"][1] == 9


def test_noncontiguous_input_is_copied_before_launch():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    x = torch.randn(8, 6).t()
    fn, rec = launcher_for(name, [x])
    fn(x)
    assert rec.calls[0]["vals"][0] != x.data_ptr()  # a contiguous copy was passed


def test_oversized_extra_raises_before_allocating():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    x = torch.zeros(1).expand(2**31)
    fn, rec = launcher_for(name, [x])
    with pytest.raises(ttk.InputError, match=r"extras\[0\] \(Numel\('x'\)\) = 2147483648 does not fit"):
        fn(x)
    assert rec.calls == []


def test_generated_source_reads_each_size_once():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    fn, _ = launcher_for(name, [torch.randn(4)])
    assert fn.source.count("a0.numel()") == 1


def test_empty_grid_with_a_nonempty_output_is_refused():
    name = unique()
    src = 'extern "C" __global__ void k3(const float* x, int n, float* y) {}'
    ttk.cuda_kernel_op(name, sigmoid_spec(kernel_source=src, kernel_name="k3",
                                          geometry=ttk.Custom(grid=(ttk.DimSize("x", 0),), block=(32,))))
    x = torch.randn(0, 5)
    fn, rec = launcher_for(name, [x])
    assert fn(x).shape == (0, 5)  # empty output: fine
    x = torch.randn(3, 5)
    fn2, rec2 = launcher_for(name, [x])
    assert fn2(x).shape == (3, 5) and rec2.calls[0]["grid"] == (3, 1, 1)
    src2 = 'extern "C" __global__ void k4(const float* x, int n, float* y) {}'
    name2 = unique()
    ttk.cuda_kernel_op(name2, sigmoid_spec(kernel_source=src2, kernel_name="k4",
                                           geometry=ttk.Custom(grid=(ttk.DimSize("x", 0) - 3,), block=(32,))))
    fn3, rec3 = launcher_for(name2, [x])
    with pytest.raises(ttk.InputError, match=r"the grid \(0, 1, 1\) is empty but an output is not"):
        fn3(x)
    assert rec3.calls == []


def dispatcher_for(name):
    """The op's registered-function shape (build_dispatcher) over recording launchers."""
    from trt_kernels.eager.dispatcher import build_dispatcher

    kop = registry.get(name)
    entries, standalone_calls = {}, []
    holder = {}

    def launch(*a):
        return holder["rec"](*a)

    def new_entry(key, args):
        ts = [a for a, k in zip(args, kop.sig.arg_kinds) if k == "tensor"]
        plan = kop.plan(tuple(t.dim() for t in ts))
        kdt = kop.dtypes[0]  # the recorder reads the parameters back by their codes, the same at every dtype
        fn = build_launcher(kop, recipe.make(kop.sig, kdt, plan, None), StubKernel(), launch=launch,
                            stream=lambda dev: 77)
        holder.setdefault("rec", Recorder(fn.pack))

        def counted(*a):
            standalone_calls.append(key)
            return fn(*a)

        counted.rebuild = fn.rebuild
        entries[key] = counted
        return counted

    return build_dispatcher(kop, entries, new_entry), holder, standalone_calls


def test_registered_function_inlines_the_launcher_after_the_first_call():
    name = unique()
    ttk.cuda_kernel_op(name, mixed_spec())
    dispatch, holder, standalone = dispatcher_for(name)
    same_object = dispatch
    g = dispatch.generation  # every global name of this declaration's code starts with it
    assert f"{g}_key0_0" not in dispatch.source
    a, b = torch.randn(3, 100), torch.randn(3, 100)
    y1 = dispatch(a, 1.5, b, -7, True)
    assert standalone == [(torch.float32, torch.float32, 2, 2)]  # built and run through the lookup once
    assert (f"if a0.dtype is {g}_key0_0 and a2.dtype is {g}_key0_1 and a0.dim() == 2 and a2.dim() == 2:"
            in dispatch.source)
    y2 = dispatch(a, 2.5, b, 3, False)
    assert len(standalone) == 1  # the inlined body ran: no second frame
    assert dispatch is same_object
    rec = holder["rec"]
    assert [c["vals"] for c in rec.calls] == [[a.data_ptr(), b.data_ptr(), 1.5, -7, True, 300, y1.data_ptr()],
                                             [a.data_ptr(), b.data_ptr(), 2.5, 3, False, 300, y2.data_ptr()]]
    # the checks are in the inlined body too
    with pytest.raises(ttk.InputError, match=r"scalar 'k' = 4294967296 does not fit a 32-bit C int"):
        dispatch(a, 1.5, b, 2**32, True)
    with pytest.raises(ttk.InputError, match="has no backward, and an input requires grad"):
        dispatch(a.requires_grad_(), 1.5, b, 1, True)
    assert len(standalone) == 1


def test_other_keys_still_dispatch_and_at_most_max_inlined_are_inlined():
    from trt_kernels.eager.dispatcher import MAX_INLINED

    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    dispatch, holder, standalone = dispatcher_for(name)
    shapes = [(5,), (2, 5), (2, 2, 5), (1, 2, 2, 5), (1, 1, 2, 2, 5), (1, 1, 1, 2, 2, 5)]
    for shape in shapes * 2:
        x = torch.randn(*shape)
        y = dispatch(x)
        assert y.shape == x.shape
        assert holder["rec"].calls[-1]["vals"] == [x.data_ptr(), x.numel(), y.data_ptr()]
    assert dispatch.source.count("if a0.dtype is") == MAX_INLINED
    # keys beyond the inlined ones keep running their standalone launcher
    assert [k[1] for k in standalone] == [1, 2, 3, 4, 5, 6, 5, 6]


def test_inlined_body_refuses_oversized_inputs():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    dispatch, holder, _ = dispatcher_for(name)
    dispatch(torch.zeros(4))
    x = torch.zeros(1).expand(2**31)
    with pytest.raises(ttk.InputError, match=r"extras\[0\] \(Numel\('x'\)\) = 2147483648 does not fit"):
        dispatch(x)
    assert len(holder["rec"].calls) == 1


def test_generated_code_is_compiled_once_per_shape_and_named_per_generation():
    """Dispatchers of the same shape share one compiled template; each copy reads its own generation's
    globals (nested code objects too), and reports its own file name in tracebacks."""
    import types

    from trt_kernels.eager import dispatcher as fastpath

    src = ("def dispatch(a0, a1=None):\n"
           "    return [{g}_scale * v for v in a0] + [{g}_offset + a0[0]]\n")
    before = fastpath._template_code.cache_info().misses
    codes = [fastpath._dispatch_code(src.format(g=g), f"<label {g}>", g) for g in ("_g900", "_g901")]
    assert fastpath._template_code.cache_info().misses - before == 1
    # (defaults are the installer's to set, as _install does)
    f0 = types.FunctionType(codes[0], {"_g900_scale": 2, "_g900_offset": 100}, None, (None,))
    f1 = types.FunctionType(codes[1], {"_g901_scale": 3, "_g901_offset": 1000, "_g900_scale": None}, None, (None,))
    assert f0([1, 2]) == [2, 4, 101] and f1([1, 2]) == [3, 6, 1001]
    assert codes[0].co_filename == "<label _g900>" and codes[1].co_filename == "<label _g901>"
    assert all(not n.startswith(fastpath._TEMPLATE_PREFIX) for c in codes for n in c.co_names)
    shells = [fastpath.new_shell("ns::a"), fastpath.new_shell("ns::b")]
    assert shells[0] is not shells[1] and shells[0].__globals__ is not shells[1].__globals__
    assert shells[1].__code__.co_filename == "<trt_kernels dispatcher ns::b>"
    with pytest.raises(RuntimeError, match="not yet declared"):
        shells[0](1)
