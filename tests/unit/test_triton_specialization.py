"""Triton's launch-time specialization, CPU tier: the key of a call (trt_kernels.recipe) against Triton's own
launcher, the code compiled per key (vector loads where the facts allow them, a folded parameter where an int is
1), TensorRT's AOT key, and the native kernel's key bits against the Python launcher's (on CPU tensors)."""

import ctypes
import re
import struct
import types

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]'); "
                             "the Triton tests need it")

import triton.language as tl  # noqa: E402

import triton_kernels as tk  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from kernels import mixed_spec, unique  # noqa: E402
from trt_kernels import recipe, registry  # noqa: E402
from trt_kernels.eager import native  # noqa: E402
from trt_kernels.eager.fastpath import build_launcher, key_source  # noqa: E402
from trt_kernels.recipe import ALIGNED, ONE, spec_facts, spec_key  # noqa: E402

ARCH = "sm_90"


@triton.jit
def scale_int32_kernel(x_ptr, alpha, n: tl.int32, y_ptr, BLOCK: tl.constexpr):
    """scale_shift_kernel with its size annotated as an int: Triton never makes such a parameter a constant."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + 1.0, mask=m)


def _declare_scale(kernel):
    name = unique("tri_spec")
    ttk.triton_kernel_op(
        name, kernel, inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),), constexprs={"BLOCK": 256},
        dtypes=[torch.float32], arch_override=ARCH)
    return registry.get(name)


@pytest.fixture(scope="module")
def kernels():
    """Declarations whose kernels specialize differently: plain, do_not_specialize, do_not_specialize_on_alignment,
    an int annotation, and RMSNorm (two pointers in, a float, a size, a pointer out)."""
    rms = unique("tri_spec")
    tk.declare_rmsnorm(rms, arch=ARCH)
    plain = tk.scale_shift_kernel
    return {
        "plain": _declare_scale(plain),
        "dns": _declare_scale(triton.jit(do_not_specialize=["n"])(plain.fn)),
        "dnsa": _declare_scale(triton.jit(do_not_specialize_on_alignment=["x_ptr", "n"])(plain.fn)),
        "int32": _declare_scale(scale_int32_kernel),
        "rms": registry.get(rms),
    }


def _tritons_binder(fn):
    """Triton's own launch-time binder of ``fn`` for sm_90 (what ``kernel[grid](...)`` runs), or a skip where this
    Triton's internals differ (the binder is internal API)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import make_backend
    from triton.runtime import jit

    make = getattr(jit, "create_function_from_signature", None)
    if make is None or not hasattr(fn, "_pack_args"):
        pytest.skip(f"Triton {triton.__version__} builds its binder otherwise; compared on Triton 3.6 and 3.9")
    backend = make_backend(GPUTarget("cuda", 90, 32))
    return backend, make(fn.signature, fn.params, backend)


def _normalized(fn, signature, constexprs, attrs):
    """Triton's compile arguments in one form: constexprs by parameter index, attributes without empty lists."""
    names = [p.name for p in fn.params]
    consts = {(names.index(k),) if isinstance(k, str) else tuple(k): v for k, v in constexprs.items()}
    return dict(signature), consts, {tuple(k): v for k, v in attrs.items() if v}


_INTS = st.sampled_from([0, 1, 2, 15, 16, 17, 32, 48, 1000, 4096, 2**31 - 16, 2**31 - 1, -1, -16, -17])


@settings(max_examples=60, deadline=None)
@given(which=st.sampled_from(["plain", "dns", "dnsa", "int32", "rms"]), offsets=st.lists(st.integers(0, 7), min_size=3,
       max_size=3), ints=st.lists(_INTS, min_size=1, max_size=1))
def test_the_key_gives_what_tritons_own_launcher_compiles(kernels, which, offsets, ints):
    """For random pointer offsets and ints, the signature, constexprs and tt.divisibility attributes we hand
    triton.compile for the call's key are those Triton's own launcher derives from the same arguments."""
    kop = kernels[which]
    src = kop.source
    backend, binder = _tritons_binder(src.fn)
    base = torch.randn(64)
    t = [base[o:o + 8] for o in offsets]  # float32 views: 16-byte aligned only at offsets 0 and 4
    n = ints[0]
    if which == "rms":
        args, consts, values = (t[0], t[1], 1e-6, n, t[2]), {"BLOCK_D": 1024}, None
    else:
        args, consts = (t[0], 0.5, n, t[2]), {"BLOCK": 256}
    values = [a.data_ptr() if isinstance(a, torch.Tensor) else a for a in args]
    bound, specialization, options = binder(*args, **consts)
    want = _normalized(src.fn, *src.fn._pack_args(backend, consts, bound, specialization, options)[1:4])
    spec = src.specialization(torch.float32)
    aligned, ones = spec_facts(spec, spec_key(spec, values))
    signature, constexprs, attrs, _ = src.triton_args(torch.float32, 1, aligned, ones)
    assert _normalized(src.fn, signature, constexprs, attrs) == want


@settings(max_examples=200, deadline=None)
@given(flags=st.lists(st.sampled_from([ALIGNED, ONE, ALIGNED | ONE]), min_size=1, max_size=12),
       data=st.data())
def test_the_generated_key_source_is_spec_key(flags, data):
    """The Python launcher's written-out key is recipe.spec_key, bit for bit, and spec_facts reads it back."""
    spec = tuple((i, f) for i, f in enumerate(flags))
    values = data.draw(st.lists(st.one_of(st.integers(-2**63, 2**64 - 1), st.sampled_from([0, 1, 16, -16, 32])),
                                min_size=len(flags), max_size=len(flags)))
    names = [f"v{i}" for i in range(len(values))]
    got = eval(key_source(spec, names), {}, dict(zip(names, values)))  # noqa: S307 - our own template
    key = spec_key(spec, values)
    assert int(got) == key
    aligned, ones = spec_facts(spec, key)
    assert aligned == {i for i, v in enumerate(values) if flags[i] & ALIGNED and v % 16 == 0}
    assert ones == {i for i, v in enumerate(values) if flags[i] & ONE and v == 1}


def _entry_params(ptx: bytes, name: str) -> int:
    m = re.search(rb"\.entry\s+" + re.escape(name.encode()) + rb"\s*\((.*?)\)", ptx, re.S)
    return m.group(1).count(b".param")


def test_the_code_follows_the_facts(kernels):
    """RMSNorm: vector loads only with aligned pointers and a size divisible by 16; a size of 1 leaves the
    .entry (the launch passes one value fewer) and has no AOT PTX; TensorRT's PTX assumes aligned pointers,
    and a static size divisible by 16."""
    kop = kernels["rms"]
    spec = kop.source.specialization(torch.float32)
    assert spec == ((0, ALIGNED), (1, ALIGNED), (3, ALIGNED | ONE), (4, ALIGNED))  # x, w, D, y (not eps)
    base = kop.image(torch.float32, 1, ARCH)

    def image(x, w, d, y):
        return kop.specialized_image(torch.float32, 1, ARCH, spec_key(spec, [x, w, 0.5, d, y]))

    v4 = rb"ld\.global\.v4"
    assert not re.search(v4, base.ptx)
    assert image(4, 8, 4097, 20) is base  # nothing holds: key 0, the unspecialized code
    fast = image(16, 32, 4096, 48)
    assert re.search(v4, fast.ptx) and fast.folded == () and fast.aot_ptx is not None
    n_fast = len(re.findall(v4, fast.ptx))
    assert len(re.findall(v4, image(20, 32, 4096, 48).ptx)) < n_fast  # x misaligned: its loads are scalar
    assert not re.search(v4, image(20, 36, 4096, 52).ptx)  # no pointer aligned
    assert not re.search(v4, image(16, 32, 4100, 48).ptx)  # D not a multiple of 16
    one = image(16, 32, 1, 48)
    assert one.folded == (3,) and one.aot_ptx is None
    assert _entry_params(one.ptx, one.symbol) == _entry_params(base.ptx, base.symbol) - 1
    r = kop.recipe(torch.float32, (2, 1), 1, ARCH)
    assert r.aot_key() == spec_key(spec, [16, 16, 0.5, 3, 16])  # pointers only
    _, dynamic = kop.aot_kernel(torch.float32, 1, ARCH)
    _, static = kop.aot_kernel(torch.float32, 1, ARCH, r.aot_key([1e-6], [4096]))
    assert not re.search(v4, dynamic) and re.search(v4, static)
    assert _entry_params(static, base.symbol) == len(r.params)  # TensorRT's layout: every declared parameter
    assert r.aot_key([1e-6], [1]) == r.aot_key()  # a size of 1 is never folded for TensorRT


@triton.jit
def scale_widened_kernel(x_ptr, alpha, n, y_ptr, BLOCK: tl.constexpr):
    """Widens its size with ``n.to(tl.int64)``: made the constant 1 (Triton's rule for n == 1), n is a Python int
    there and the compile fails, under Triton's own launcher too."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n.to(tl.int64)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * alpha + 1.0, mask=m)


def test_a_kernel_that_cannot_take_a_constant_1_gets_code_without_it():
    from trt_kernels.errors import CompileError

    kop = _declare_scale(scale_widened_kernel)
    spec = kop.source.specialization(torch.float32)
    key = spec_key(spec, [16, 0.5, 1, 32])  # aligned pointers, n == 1
    aligned, ones = spec_facts(spec, key)
    assert ones == {2}
    with pytest.raises(CompileError, match="has no attribute 'to'"):
        kop.source.specialized(torch.float32, 1, ARCH, aligned, ones)
    img = kop.specialized_image(torch.float32, 1, ARCH, key)  # the call does not fail: n stays a parameter
    assert img.folded == () and img is not kop.image(torch.float32, 1, ARCH)
    assert img.ptx == kop.specialized_image(torch.float32, 1, ARCH, spec_key(spec, [16, 0.5, 3, 32])).ptx


def test_a_source_without_specialization_computes_no_key():
    name = unique("tri_spec")
    ttk.cuda_kernel_op(name, mixed_spec())
    kop = registry.get(name)
    r = kop.recipe(torch.float32, (2, 2), 1, ARCH)
    assert r.spec == () and r.key([1, 2, 3, 4, 5, 6, 7]) == 0


def test_threads_calling_at_new_keys_get_one_code_per_key(monkeypatch):
    """Eight threads call the Python launcher at once with views at four alignments and two sizes (keys not seen
    yet): each key's code is compiled and recorded once (one Specialized, one on_spec), and every launch runs the
    code of its own call's key (CPU tensors; the kernel loads and cuLaunchKernel are recorded)."""
    import random
    import threading

    kop = _declare_scale(tk.scale_shift_kernel)
    monkeypatch.setattr(kop, "device_arch", lambda dev: ARCH)  # CPU tensors: the test's own op, no GPU to ask

    def loaded(dtype, device, tactic=1, key=0):
        return types.SimpleNamespace(function=lambda dev: ("code", key), handle=lambda dev: key, handles={})

    monkeypatch.setattr(kop, "loaded_kernel", loaded)
    r = kop.recipe(torch.float32, (1,), 1, ARCH)
    launched, made = [], []

    def record(f, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        launched.append(f)
        return (0,)

    base_kernel = types.SimpleNamespace(functions={}, handles={}, function=None, handle=None)  # (unused: r has a spec)
    fn = build_launcher(kop, r, base_kernel, launch=record, stream=lambda dev: 0, claunch=None, on_spec=made.append)
    base = torch.randn(4200)
    calls = [base[o:o + n] for o in (0, 1, 4, 6) for n in (1000, 1024)]
    want = {}
    for x in calls:
        want[x.data_ptr(), x.numel()] = spec_key(r.spec, [x.data_ptr(), 0.5, x.numel(), 16])  # outputs: aligned
    errors = []

    def work(seed):
        try:
            order = calls[:]
            random.Random(seed).shuffle(order)
            for x in order:
                fn(x, 0.5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    keys = set(want.values())
    assert len(keys) > 2 and set(fn.specs) == keys
    assert sorted(sp.key for sp in made) == sorted(keys)  # each key told once
    assert len(launched) == 8 * len(calls) and {f[1] for f in launched} == keys


# ---------------- the native kernel's key (CPU tensors, recorded launches) ----------------


class _Code:
    """What the Python launcher and the native kernel launch for one key: a stand-in kernel whose handle is
    ``BASE + key``."""

    BASE = 0x7000

    def __init__(self, kop, r, key):
        ones = spec_facts(r.spec, key)[1]
        self.key = key
        self.kept = tuple(i for i in range(len(r.params)) if i not in ones)
        self.codes = "".join("x" if i in ones else p.code for i, p in enumerate(r.params)).encode()
        self.pack = kop.param_pack(r, tuple(sorted(ones)))
        self.smem = 0
        self.handles = {0: self.BASE + key}
        self.kernel = types.SimpleNamespace(function=lambda dev, k=key: self.BASE + k, handle=lambda dev: 0,
                                            handles=self.handles)


def test_the_native_kernel_launches_the_code_of_each_calls_key(kernels):
    """A recipe with a spec over pointers, an int scalar and a size (the mixed kernel: a, alpha, b, k, flag, n,
    y): for calls at every alignment and with ints 1, 16 and others, the native kernel launches the code of the
    key the Python launcher computes, with the same values but those the key folds."""
    nat = native._prepare(need_cuda=False)
    if nat.module is None:
        pytest.skip(f"the native kernel cannot be built here: {nat.reason}")
    mod = nat.module
    name = unique("tri_spec")
    ttk.cuda_kernel_op(name, mixed_spec())
    kop = registry.get(name)
    params = kop.sig.params(torch.float32)
    spec = tuple((i, ALIGNED | (ONE if p.kind == "int" else 0)) for i, p in enumerate(params)
                 if p.kind in ("ptr", "int"))
    r = recipe.make(kop.sig, torch.float32, kop.plan((1, 1)), None, (), spec=spec)
    codes = {k: _Code(kop, r, k) for k in range(1 << recipe.spec_bits(spec))}
    calls = []

    def record(f, gx, gy, gz, bx, by, bz, smem, stream, addr, extra):
        c = codes[f - _Code.BASE]
        ptrs = (ctypes.c_void_p * len(c.pack.codes)).from_address(addr)
        calls.append((f - _Code.BASE, [struct.unpack("=" + k, ctypes.string_at(p, struct.calcsize("=" + k)))[0]
                                       for k, p in zip(c.pack.codes, ptrs)]))
        return (0,)

    py = build_launcher(kop, r, types.SimpleNamespace(functions={}, handles={}, function=None, handle=None),
                        launch=record, stream=lambda dev: 0)
    py.specs.update(codes)
    ns = f"ttk_spec_{unique('n').split('::')[-1]}"
    lib = torch.library.Library(ns, "DEF")
    lib.define(f"op{kop.schema}")
    slot = mod.register(ns, "op", "CPU", 0, py, native._kinds(kop))
    mod.reset(slot, 1, True)
    dt = mod.dtype_code(native._torch_lib("torch_cpu"), "float32")
    for k, c in codes.items():
        enc = native.encode(r, mod, folded=tuple(i for i in range(len(params)) if i not in c.kept))
        mod.add_variant(slot, [dt, dt], [1, 1], enc["code"], enc["extras"], enc["grid"], enc["smem"], enc["block"],
                        enc["outs"], enc["params"], mod.record_entry(), c.handles, enc["spec"], k, 0)
    op = getattr(getattr(torch.ops, ns), "op")
    try:
        base = torch.randn(4096)
        for ao, bo, n, k in [(0, 0, 16, 1), (1, 0, 16, 16), (0, 3, 1, 7), (4, 4, 33, -16), (2, 6, 64, 0), (0, 0, 1, 1)]:
            a, b = base[ao:ao + n], base[1024 + bo:1024 + bo + n]
            mod.recorded(0)
            before = mod.launches(slot)
            y = op(a, 1.5, b, k, True)
            raw = mod.recorded(0)
            assert mod.launches(slot) == before + 1  # launched natively
            key_native = raw[0] - _Code.BASE
            values = [a.data_ptr() if p.role == "input" and p.index == 0 else b.data_ptr() if p.role == "input"
                      else y.data_ptr() if p.role == "output" else 1.5 if p.kind == "float" else k
                      if p.kind == "int" and p.role == "scalar" else True if p.kind == "bool" else n for p in params]
            assert key_native == spec_key(spec, values)
            calls.clear()
            py(a, 1.5, b, k, True)  # the Python launcher on the same arguments: the same key
            assert calls[-1][0] == key_native
            c = codes[key_native]
            native_vals = [struct.unpack("=" + code, struct.pack("=Q", v)[:struct.calcsize("=" + code)])[0]
                           for code, v in zip(c.pack.codes, raw[9:])]
            want = [v for i, v in enumerate(values) if i in c.kept]
            out_pos = [j for j, i in enumerate(c.kept) if params[i].role == "output"]
            assert [v for j, v in enumerate(native_vals) if j not in out_pos] == \
                   [v for j, v in enumerate(calls[-1][1]) if j not in out_pos] == \
                   [v if not isinstance(v, float) else struct.unpack("=f", struct.pack("=f", v))[0]
                    for j, v in enumerate(want) if j not in out_pos]
    finally:
        mod.release(slot)
        lib._destroy()
