"""The native eager kernel (trt_kernels/eager/_cnative.cpp) on CPU tensors, against the Python launcher.

The module is built here as on a GPU machine, then registered as a test op's *CPU* kernel with a
recording stand-in for cuLaunchKernel. The Python launcher of the same (dtype, ranks) (also with a
recording launch) is the op's Python kernel behind it, as on the GPU. For every call, the native
kernel must either launch exactly what the Python launcher launches (same grid, block, shared
memory and parameters, an output of the same shape, dtype and strides), or hand the call to the
Python launcher, whose result or exception (type and message) the caller gets unchanged.
"""

import itertools
import struct

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import trt_kernels as ttk
from kernels import add_spec, mixed_spec, rmsnorm_mixed_spec, row_sum_spec, scale_spec, sigmoid_spec, unique
from trt_kernels import recipe, registry
from trt_kernels.eager import native
from trt_kernels.eager.fastpath import build_launcher

FUNC = 0x5EED


@pytest.fixture(scope="module")
def mod():
    nat = native._prepare(need_cuda=False)
    if nat.module is None:
        pytest.skip(f"the native kernel cannot be built here: {nat.reason}")
    return nat.module


class PyRecorder:
    """cuLaunchKernel for the Python launcher: reads its packed parameters back."""

    def __init__(self):
        self.calls = []
        self.pack = None

    def __call__(self, f, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        import ctypes

        n = len(self.pack.codes)
        ptrs = (ctypes.c_void_p * n).from_address(addr)
        vals = [struct.unpack("=" + c, ctypes.string_at(p, struct.calcsize("=" + c)))[0]
                for c, p in zip(self.pack.codes, ptrs)]
        self.calls.append(((gx, gy, gz), (bx, by, bz), smem, vals))
        return (0,)


class Stub:
    functions = {-1: "FUNC"}
    handles = {0: FUNC}

    def function(self, dev):
        return "FUNC"


_ns = itertools.count()


class NativeOp:
    """A torch op (own namespace) whose CPU kernel is the native one, with ``kop``'s Python launcher
    for ``ranks`` / ``dtype`` behind it."""

    def __init__(self, mod, spec, ranks, dtype=torch.float32, no_backward=True, scratch=()):
        self.name = unique()
        ttk.cuda_kernel_op(self.name, spec)
        kop = self.kop = registry.get(self.name)
        self.mod = mod
        plan = kop.plan(ranks)
        r = recipe.make(kop.sig, dtype, plan, None, scratch)
        in_dtypes = r.in_dtypes
        self.rec = PyRecorder()
        self.py = build_launcher(kop, r, Stub(), launch=self.rec, stream=lambda dev: 0)
        self.hidden = len(scratch)
        self.rec.pack = self.py.pack
        self.ns = f"ttk_native_{next(_ns)}"
        self.lib = torch.library.Library(self.ns, "DEF")
        self.lib.define(f"op{kop.schema}")
        self.slot = mod.register(self.ns, "op", "CPU", 0, self.py, native._kinds(kop))
        mod.reset(self.slot, len(plan.outputs), no_backward)
        enc = native.encode(r, mod)
        codes = [mod.dtype_code(native._torch_lib("torch_cpu"), str(dt).split(".")[1]) for dt in in_dtypes]
        tdt = [codes[i] for i in range(len(kop.sig.tensor_pos))]
        mod.add_variant(self.slot, tdt, list(ranks), enc["code"], enc["extras"], enc["grid"], enc["smem"],
                        enc["block"], enc["outs"], enc["params"], mod.record_entry(), {0: FUNC}, enc["spec"], 0, 0)
        self.codes = kop.sig.param_codes(dtype)
        self.op = getattr(getattr(torch.ops, self.ns), "op")
        self.launched = 0
        mod.recorded(0)

    def close(self):
        self.mod.release(self.slot)
        self.lib._destroy()

    def native_call(self):
        """The native kernel's last launch, decoded as the Python recorder decodes its own (or None)."""
        r = self.mod.recorded(0)
        if not r:
            return None
        func, gx, gy, gz, bx, by, bz, smem, _stream, *raw = r
        assert func == FUNC
        assert len(raw) == len(self.codes) + self.hidden
        assert raw[len(self.codes):] == [0] * self.hidden  # the appended scratch pointers: NULL
        vals = []
        for c, v in zip(self.codes, raw):
            b = struct.pack("=Q", v)[: struct.calcsize("=" + c)]
            vals.append(struct.unpack("=" + c, b)[0])
        return ((gx, gy, gz), (bx, by, bz), smem, vals)


def outcome(fn, *args):
    try:
        return "ok", fn(*args)
    except Exception as e:  # noqa: BLE001 - compared below
        return "raised", e


def compare(nop, args):
    """Call the op (native kernel) and the Python launcher on the same args; they must agree."""
    got_kind, got = outcome(nop.op, *args)
    nat = nop.native_call()
    py_calls_by_native = list(nop.rec.calls)
    nop.rec.calls.clear()
    want_kind, want = outcome(nop.py, *args)
    py = nop.rec.calls[-1] if nop.rec.calls else None
    nop.rec.calls.clear()
    assert got_kind == want_kind, (got, want)
    if got_kind == "raised":
        assert type(got) is type(want) and str(got) == str(want)
        assert nat is None
        return "raised"
    outs = got if isinstance(got, tuple) else (got,)
    refs = want if isinstance(want, tuple) else (want,)
    for o, r in zip(outs, refs):
        assert (o.shape, o.dtype, o.stride(), o.device) == (r.shape, r.dtype, r.stride(), r.device)
    if nat is None:  # handed to the Python launcher
        assert len(py_calls_by_native) == (1 if py is not None else 0)
        return "python"
    assert py_calls_by_native == []
    assert nop.mod.launches(nop.slot) == nop.launched + 1
    nop.launched += 1
    grid, block, smem, vals = nat
    assert (grid, block, smem) == py[:3]
    n_out = len(outs)
    assert vals[:-n_out] == py[3][:-n_out]  # inputs, scalars, extras (the outputs are other allocations)
    assert vals[-n_out:] == [o.data_ptr() for o in outs]
    return "native"


def test_native_launch_equals_python_launch_and_bails_otherwise(mod):
    nop = NativeOp(mod, sigmoid_spec(), (2,))
    try:
        x = torch.randn(3, 300)
        assert compare(nop, (x,)) == "native"
        assert compare(nop, (torch.randn(1, 1),)) == "native"
        assert compare(nop, (torch.randn(3, 257),)) == "native"
        assert compare(nop, (torch.randn(0, 5),)) == "python"  # empty grid: the Python launcher decides
        assert compare(nop, (torch.randn(8, 6).t(),)) == "python"  # not contiguous: copied in Python
        assert compare(nop, (torch.randn(4),)) == "python"  # another rank: no variant
        assert compare(nop, (torch.randn(2, 3, dtype=torch.float64),)) == "python"  # another dtype
    finally:
        nop.close()


def test_scalars_extras_and_out_of_range_values(mod):
    nop = NativeOp(mod, mixed_spec(), (2, 2))
    try:
        a, b = torch.randn(3, 100), torch.randn(3, 100)
        assert compare(nop, (a, 1.5, b, -7, True)) == "native"
        assert compare(nop, (a, -0.0, b, 2**31 - 1, False)) == "native"
        assert compare(nop, (a, float("inf"), b, -(2**31), True)) == "native"
        assert compare(nop, (a, 1.5, b, 2**32, True)) == "raised"  # does not fit int: Python's InputError
        assert compare(nop, (a, 1e39, b, 1, True)) == "raised"  # does not fit float
    finally:
        nop.close()


def test_size_checks_and_reductions(mod):
    nop = NativeOp(mod, add_spec(), (2, 2))
    try:
        assert compare(nop, (torch.randn(3, 5), torch.randn(3, 5))) == "native"
        assert compare(nop, (torch.randn(3, 5), torch.randn(5, 3))) == "raised"  # SameShape: Python's message
    finally:
        nop.close()
    nop = NativeOp(mod, row_sum_spec(), (3,))
    try:
        assert compare(nop, (torch.randn(4, 6, 9),)) == "native"
        assert compare(nop, (torch.randn(4, 0, 9),)) == "python"
    finally:
        nop.close()


def test_expressions_with_division_and_mixed_dtypes(mod):
    nop = NativeOp(mod, rmsnorm_mixed_spec(), (2, 1), dtype=(torch.float32, torch.float32))
    try:
        assert compare(nop, (torch.randn(6, 33), torch.randn(33), 1e-6)) == "native"
        assert compare(nop, (torch.randn(6, 0), torch.randn(0), 1e-6)) == "python"  # divides by max(0, 1)
    finally:
        nop.close()


def test_requires_grad_without_backward_goes_to_python(mod):
    nop = NativeOp(mod, scale_spec(), (1,))
    try:
        x = torch.randn(100, requires_grad=True)
        assert compare(nop, (x, 2.0)) == "raised"  # no backward: the Python launcher's refusal
        with torch.no_grad():
            assert compare(nop, (x, 2.0)) == "native"
        assert compare(nop, (x.detach(), 2.0)) == "native"
    finally:
        nop.close()


class Boom(Exception):
    pass


def test_python_kernel_exceptions_reach_the_caller_unchanged(mod):
    lib = torch.library.Library(f"ttk_native_{next(_ns)}", "DEF")
    lib.define("op(Tensor x, float a, int k, bool f) -> Tensor")
    seen = []

    def kernel(x, a, k, f):
        seen.append((x, a, k, f))
        if k < 0:
            raise Boom(f"bad k {k}")
        return x + a

    slot = mod.register(lib.ns, "op", "CPU", 0, kernel, bytes([0, 1, 2, 3]))
    try:
        op = getattr(torch.ops, lib.ns).op
        x = torch.randn(5)
        y = op(x, 2.5, 3, True)
        assert torch.equal(y, x + 2.5)
        assert seen[-1][0].data_ptr() == x.data_ptr() and seen[-1][1:] == (2.5, 3, True)
        with pytest.raises(Boom, match=r"^bad k -1$"):
            op(x, 1.0, -1, False)
        y = op(x, 1.0, 2, False)  # the failed call left nothing behind
        assert torch.equal(y, x + 1.0)
    finally:
        mod.release(slot)
    slot = mod.register(lib.ns, "op", "CPU", 0, _raise_input_error, bytes([0, 1, 2, 3]))
    try:
        with pytest.raises(ttk.InputError, match=r"^some_op: the message$"):
            op(torch.randn(3), 1.0, 1, False)
    finally:
        mod.release(slot)
        lib._destroy()


def _raise_input_error(*args):
    raise ttk.InputError("some_op: the message")


@settings(max_examples=60, deadline=None)
@given(rows=st.sampled_from([0, 1, 2, 3, 7]), cols=st.sampled_from([0, 1, 5, 255, 256, 257, 1000]),
       alpha=st.floats(allow_nan=False, width=64), k=st.integers(-(2**33), 2**33), flag=st.booleans(),
       transpose=st.booleans())
def test_fuzz_native_agrees_with_python(mod, rows, cols, alpha, k, flag, transpose):
    nop = _fuzz_op(mod)
    a = torch.randn(rows, cols)
    b = torch.randn(cols, rows).t() if transpose else torch.randn(rows, cols)
    compare(nop, (a, alpha, b, k, flag))


_FUZZ = {}


def _fuzz_op(mod):
    if "op" not in _FUZZ:
        _FUZZ["op"] = NativeOp(mod, mixed_spec(), (2, 2))
    return _FUZZ["op"]


# ---------------- size expressions: random trees, native bytecode vs the Python launcher ----------------

_KX = 'extern "C" __global__ void kx(const float* x, int k, int e0, int e1, float* y) {}'


def _leaves():
    return st.one_of(st.just(ttk.Numel("x")), st.just(ttk.DimSize("x", 0)), st.just(ttk.DimSize("x", -1)),
                     st.just(ttk.Scalar("k")), st.integers(-3, 300))


def _tree(children):
    ops = [lambda a, b: ttk.expr.lift(a) + b, lambda a, b: ttk.expr.lift(a) - b, lambda a, b: ttk.expr.lift(a) * b,
           lambda a, b: ttk.expr.lift(a) // b, ttk.cdiv, ttk.maximum, ttk.minimum]
    return st.tuples(st.sampled_from(ops), children, children).map(lambda t: t[0](t[1], t[2]))


_exprs = st.recursive(_leaves(), _tree, max_leaves=6).filter(lambda e: not isinstance(e, int))


@settings(max_examples=40, deadline=None)
@given(e0=_exprs, e1=_exprs, g=_exprs, rows=st.sampled_from([1, 2, 3, 5]), cols=st.sampled_from([0, 1, 7, 256, 300]),
       k=st.sampled_from([-(2**31) - 1, -5, 0, 1, 3, 2**31 - 1, 2**31]))
def test_fuzz_size_expressions(mod, e0, e1, g, rows, cols, k):
    try:
        spec = ttk.KernelSpec(kernel_source=_KX, kernel_name="kx",
                              inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int)],
                              outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[e0, e1],
                              geometry=ttk.Custom(grid=(g,), block=(32,)))
        nop = NativeOp(mod, spec, (2,))
    except ttk.SpecError:
        return  # a declaration the package refuses: nothing to compare
    try:
        _SEEN.append(compare(nop, (torch.randn(rows, cols), k)))
    finally:
        nop.close()


_SEEN = []


def test_without_a_cxx_compiler_ops_keep_the_python_kernel(monkeypatch, tmp_path):
    from trt_kernels.library import definition

    monkeypatch.setenv("CXX", str(tmp_path / "no-such-g++"))
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    got, why, path = native.load(tmp_path / "cache")
    assert got is None and path is None and "the C++ compiler $CXX=" in why and "was not found" in why
    nat = native._prepare(need_cuda=False)
    assert nat.module is None and "was not found" in nat.reason
    monkeypatch.setattr(native, "_prepared", nat)
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    assert native.register(registry.get(name), lambda *a: None) is None  # what a CUDA torch would be told
    assert definition.native_slot(name) is None
    assert torch._C._dispatch_has_kernel_for_dispatch_key(name, "CUDA")  # the Python kernel
    assert native.describe() == {"native": "no", "reason": nat.reason}


def test_fuzz_size_expressions_reached_every_outcome(mod):
    """The fuzz above compared native launches, hand-overs and errors, not only refused declarations."""
    if not _SEEN:
        pytest.skip("run with test_fuzz_size_expressions")
    assert {"native", "raised"} <= set(_SEEN), _SEEN


@pytest.mark.parametrize("c", [-3, -2, 2, 7])
def test_ceil_division_by_a_constant_is_written_as_the_python_launcher_writes_it(mod, c):
    """(n + c - 1) // c, not -(-n // c): the two differ for a negative constant."""
    spec = ttk.KernelSpec(kernel_source=_KX, kernel_name="kx", inputs=[ttk.InputDecl("x"), ttk.ScalarInput("k", int)],
                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                          extras=[ttk.cdiv(ttk.Numel("x"), c), ttk.cdiv(ttk.Scalar("k"), c)],
                          geometry=ttk.Custom(grid=(1,), block=(32,)))
    nop = NativeOp(mod, spec, (2,))
    try:
        for k in (-5, 0, 5):
            assert compare(nop, (torch.randn(1, 5), k)) == "native"
    finally:
        nop.close()


def test_pointers_the_compiler_appended_are_passed_as_null(mod):
    """A Triton kernel's scratch pointers (0 bytes here) are kernel parameters: the driver reads one
    pointer per parameter, so the native launch must pass them (NULL), as the Python launcher does."""
    nop = NativeOp(mod, sigmoid_spec(), (1,), scratch=((0, 1), (0, 1)))
    try:
        assert compare(nop, (torch.randn(300),)) == "native"
    finally:
        nop.close()


def test_with_the_cache_off_it_is_not_built():
    got, why, path = native.load(None)
    assert got is None and path is None and "TRT_KERNELS_CACHE=0" in why


def test_a_variant_the_module_refuses_leaves_the_key_to_python(mod, monkeypatch, caplog):
    """add_variant never turns into the call's failure: the Python launcher keeps the key, with a warning."""
    nop = NativeOp(mod, sigmoid_spec(), (1,))
    try:
        kop = nop.kop
        monkeypatch.setattr(native, "_prepared", native.Native(mod, "test"))
        monkeypatch.setitem(native._owner, nop.slot, __import__("weakref").ref(kop))
        monkeypatch.setattr(native, "_check_params", lambda kernel, params: None)
        monkeypatch.setattr(native, "_entry", 1)
        plan = kop.plan((1,))
        before = mod.variants(nop.slot)

        class K:
            handles = "not a dict"  # the module refuses it (TypeError)
            functions = {}

        with caplog.at_level("WARNING", logger="trt_kernels"):
            ok = native.add_variant(nop.slot, kop, (torch.float32, 1), recipe.make(kop.sig, torch.float32, plan, None),
                                    K())
        assert ok is False and mod.variants(nop.slot) == before
        assert "launches from Python: the native kernel refused it" in caplog.text
    finally:
        nop.close()
