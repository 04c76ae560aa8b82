"""Triton as a kernel source, CPU tier: declaration checks, PTX/CUBIN for sm_90 without a GPU, the
disk cache keyed by Triton's own hash, the ABI with Triton's hidden parameters, plans, fake/export,
and the TensorRT plugin through NVIDIA's tensorrt.plugin layer (stand-in)."""

import json
import os
import pathlib
import re
import subprocess
import sys
import textwrap

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]'); "
                             "the Triton tests need it")

import triton.language as tl  # noqa: E402

import triton_kernels as tk  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from kernels import unique  # noqa: E402
from trt_kernels import registry  # noqa: E402
from trt_kernels.expr import SizesEvaluator, evaluate  # noqa: E402
from trt_kernels.sources import abi  # noqa: E402
from trt_kernels.sources import triton_compile as ts  # noqa: E402
from trt_kernels.sources.ptx_entry import strip_hidden_params  # noqa: E402

ARCH = "sm_90"


def kop_of(name):
    return registry.get(name)


@pytest.fixture(scope="module")
def scale():
    name = unique("tri_cpu")
    tk.declare_scale(name, arch=ARCH)
    return kop_of(name)


def test_compiles_for_sm90_without_a_gpu(scale):
    prog = scale.binary(ARCH)
    assert len(prog.kernels) == 3 * 3  # dtypes x configs
    for (dt, t), k in prog.kernels.items():
        assert k.symbol == "scale_shift_kernel" and k.image[:4] == b"\x7fELF"
        assert b".entry scale_shift_kernel(" in k.ptx and b".target sm_90" in k.ptx
        assert f".reqntid {scale.source.configs[t - 1].num_warps * 32}".encode() in k.ptx and k.ptx_isa is not None
    assert prog.n_hidden == 2 and prog.aot_reason is None


def test_entry_has_hidden_params_and_aot_ptx_has_exactly_the_abi(scale):
    k = scale.binary(ARCH).kernel(torch.float16, 1)
    full = abi.ptx_params(k.ptx, k.symbol)
    assert [t for t, _ in full] == ["u64", "f32", "u32", "u64", "u64", "u64"]  # x, alpha, n, y, 2 hidden
    aot = abi.ptx_params(k.aot_ptx, k.symbol)
    assert aot == full[:4]
    assert b".reqntid 128" in k.aot_ptx
    # nothing but the parameter list changed
    a, b = k.ptx.decode(), k.aot_ptx.decode()
    assert a.split(")", 1)[1] == b.split(")", 1)[1]


def test_ptx_params_reads_pointer_qualifiers():
    ptx = b""".visible .entry k(
        .param .u64 .ptr .global .align 1 k_param_0,
        .param .align 2 .b8 k_param_1[2],
        .param .u8 k_param_2,
        .param .u64 .ptr .global .align 16 k_param_3
    )"""
    assert abi.ptx_params(ptx, "k") == [("u64", 8), ("b8[2]", 2), ("u8", 1), ("u64", 8)]


def test_cache_is_keyed_by_tritons_own_hash_and_survives_a_fresh_process(tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(tmp_path))
    sig = {"x_ptr": "*fp32", "alpha": "fp32", "n": "i32", "y_ptr": "*fp32", "BLOCK": "constexpr"}
    ts.forget()
    a = ts.compile_triton(tk.scale_shift_kernel, sig, {"BLOCK": 128}, arch=ARCH, options={"num_warps": 4}, label="t")
    assert not a.from_cache
    direct = triton.compile(triton.compiler.ASTSource(fn=tk.scale_shift_kernel, signature=sig,
                                                      constexprs={"BLOCK": 128}),
                            target=ts._target(ARCH), options={"num_warps": 4})
    assert a.hash == direct.hash  # Triton's own key
    files = list((tmp_path / "triton").glob("*.bin"))
    assert [f.name for f in files] == [f"{a.hash}.bin"] and a.entry == str(files[0])
    ts.forget()  # as a fresh process sees it
    b = ts.compile_triton(tk.scale_shift_kernel, sig, {"BLOCK": 128}, arch=ARCH, options={"num_warps": 4}, label="t")
    assert b.from_cache and (b.ptx, b.cubin, b.name, b.shared) == (a.ptx, a.cubin, a.name, a.shared)
    assert b.entry == str(files[0])
    # a corrupt entry is recompiled, never trusted
    files[0].write_bytes(files[0].read_bytes()[:-10])
    ts.forget()
    c = ts.compile_triton(tk.scale_shift_kernel, sig, {"BLOCK": 128}, arch=ARCH, options={"num_warps": 4}, label="t")
    assert not c.from_cache and c.ptx == a.ptx


def test_cache_off(tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "tritons-own"))
    ts.forget()
    sig = {"x_ptr": "*fp32", "alpha": "fp32", "n": "i32", "y_ptr": "*fp32", "BLOCK": "constexpr"}
    k = ts.compile_triton(tk.scale_shift_kernel, sig, {"BLOCK": 64}, arch=ARCH, options={"num_warps": 2}, label="t")
    assert not k.from_cache and k.entry is None  # no file of ours holds it
    # but triton.compile kept it in its own cache all the same, as docs/cache.md says ("Triton's own cache")
    assert [p.name for p in (tmp_path / "tritons-own").glob("*/*.cubin")] == ["scale_shift_kernel.cubin"]


def test_type_params_and_checks():
    """Two type parameters (x: T, w: W) compile one kernel per combination; the fake impl dispatches on the
    inputs' dtypes and checks w's length against x's last axis."""
    name = unique("tri_cpu")
    op = tk.declare_rmsnorm_mixed(name, arch=ARCH)
    kop = kop_of(name)
    prog = kop.binary(ARCH)
    assert sorted(prog.kernels, key=str) == sorted([(c, 1) for c in tk.MIXED], key=str)
    ptx = {c: prog.kernel(c).ptx for c in tk.MIXED}
    assert len(set(ptx.values())) == 3  # each combination its own code
    m = lambda *s, dtype=torch.float32: torch.empty(s, device="meta", dtype=dtype)  # noqa: E731
    assert op(m(3, 64, dtype=torch.bfloat16), m(64), 1e-6).dtype == torch.bfloat16
    with pytest.raises(ttk.InputError, match=r"input dtypes \(x: bfloat16, w: bfloat16\) are not a combination"):
        op(m(3, 64, dtype=torch.bfloat16), m(64, dtype=torch.bfloat16), 1e-6)
    with pytest.raises(ttk.InputError, match=r"x.shape\[-1\] = 64 and w.shape\[0\] = 63 must be equal"):
        op(m(3, 64, dtype=torch.float16), m(63), 1e-6)


def test_plan_per_tactic(scale):
    for t, (block, nw) in enumerate([(1024, 4), (256, 2), (4096, 8)], start=1):
        p = scale.plan((2,), t)
        ev = SizesEvaluator([(33, 47)])
        assert [evaluate(e, ev) for e in p.grid] == [-(-33 * 47 // block), 1, 1]
        assert p.block == (nw * 32, 1, 1) and p.tactic == t
        assert [evaluate(e, ev) for e in p.extras] == [33 * 47]
    assert scale.tactics == 3


def test_fake_and_export_with_dynamic_batch():
    name = unique("tri_cpu")
    op = tk.declare_rmsnorm(name, arch=ARCH)

    class M(torch.nn.Module):
        def forward(self, x, w):
            return op(x, w, 1e-6)

    x = torch.randn(8, 64, device="meta")
    w = torch.randn(64, device="meta")
    b = torch.export.Dim("b", min=1, max=1024)
    ep = torch.export.export(M(), (x, w), dynamic_shapes=({0: b}, None))
    assert any(name.replace("::", ".") in str(n.target) for n in ep.graph.nodes)
    y = op(torch.empty(5, 64, device="meta", dtype=torch.bfloat16),
           torch.empty(64, device="meta", dtype=torch.bfloat16), 1e-6)
    assert y.shape == (5, 64) and y.dtype == torch.bfloat16
    ap = tk.declare_add_mul(unique("tri_cpu"), arch=ARCH)
    s, p = ap(torch.empty(3, 7, device="meta"), torch.empty(3, 7, device="meta"))
    assert s.shape == p.shape == (3, 7)


def test_scratch_kernel_is_jit_only_with_the_reason():
    name = unique("tri_cpu")
    tk.declare_tma_copy(name, arch=ARCH)
    kop = kop_of(name)
    k = kop.source.compile_one(torch.float32, 1, ARCH)
    assert k.global_scratch_size > 0 and k.needs_scratch
    stripped, why = strip_hidden_params(k.ptx, k.name, 4)
    assert stripped is None and "hidden parameter" in why
    assert kop.image(torch.float32, 1, ARCH).needs_scratch and kop.image(torch.float32, 1, ARCH).aot_ptx is None
    assert kop.aot.mode == "JIT" and "scratch buffer" in kop.aot.why and "JIT" in kop.aot.why
    assert kop.eager_fn is None  # the derived launch allocates the buffer per call
    from trt_kernels.status import status

    row = [r for r in status() if r["op"] == name][0]
    assert "scratch" in row["source"] and "scratch" in row["eager"]


# ---------------- declaration errors ----------------


@triton.jit
def _wrong_order(n, a_ptr, b_ptr, BLOCK: tl.constexpr):
    pass


@triton.jit
def _outputs_first(y_ptr, x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def _two_constexprs(x_ptr, n, y_ptr, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
    pass


def _decl(fn, **kw):
    args = dict(inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                extras=[ttk.Numel("x")], grid=(ttk.cdiv(ttk.Numel("x"), 256),), constexprs={"BLOCK": 256},
                arch_override=ARCH)
    args.update(kw)
    name = unique("tri_err")
    ttk.triton_kernel_op(name, fn, **args)
    return name


def test_parameter_order_is_checked_against_the_signature():
    with pytest.raises(ttk.SpecError, match=r"parameter 0 is 'n' where the calling convention puts tensor input 'x'.*"
                                            r"\(x, <extras\[0\]"):
        _decl(_wrong_order)


def test_a_kernel_in_its_own_order_is_matched_by_name():
    name = _decl(_outputs_first, extras=[ttk.SizeArg("n", ttk.Numel("x"))])
    kop = kop_of(name)
    assert [(p.role, p.index) for p in kop.sig.params(torch.float32)] == [("output", 0), ("input", 0), ("extra", 0)]
    assert [t for t, _ in abi.ptx_params(kop.image(torch.float32, 1, ARCH).ptx, "_outputs_first")][:3] == [
        "u64", "u64", "u32"]
    # TensorRT's AOT PTX takes (x, n, y)
    symbol, ptx = kop.aot_kernel(torch.float32, 1, ARCH)
    entry = re.search(r"\.entry\s+" + symbol + r"\s*\(([^)]*)\)", ptx.decode()).group(1)
    assert re.findall(r"(_outputs_first_param_\d)", entry) == [
        "_outputs_first_param_1", "_outputs_first_param_2", "_outputs_first_param_0"]


def test_params_gives_the_order_where_names_differ():
    name = _decl(_wrong_order, params=["n", "x", "y"], extras=[ttk.SizeArg("n", ttk.Numel("x"))])
    assert [p.role for p in kop_of(name).sig.params(torch.float32)] == ["extra", "input", "output"]


def test_parameter_count_is_checked():
    with pytest.raises(ttk.SpecError,
                       match=r"has 3 non-constexpr parameters \(x_ptr, n, y_ptr\) but the declaration implies 4"):
        _decl(_two_constexprs, extras=[ttk.Numel("x"), ttk.Numel("x")], constexprs={"BLOCK": 1, "UNROLL": 1})


def test_missing_and_unknown_constexprs():
    with pytest.raises(ttk.SpecError, match=r"no value for the constexpr parameter\(s\) \['UNROLL'\]"):
        _decl(_two_constexprs)
    with pytest.raises(ttk.SpecError, match=r"\['BLOK'\] name no tl.constexpr parameter"):
        _decl(_two_constexprs, constexprs={"BLOCK": 1, "UNROLL": 2, "BLOK": 3})
    with pytest.raises(ttk.SpecError, match=r"tactics\[0\]\.constexprs: \['X'\]"):
        _decl(_two_constexprs, constexprs={"BLOCK": 1, "UNROLL": 2}, tactics=[ttk.TritonConfig({"X": 1})])


def test_grid_reading_an_unknown_constexpr():
    with pytest.raises(ttk.SpecError, match=r"grid\(meta\) read 'BLK'"):
        _decl(tk.scale_shift_kernel, inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
              grid=lambda m: (ttk.cdiv(ttk.Numel("x"), m["BLK"]),))


SCALE = dict(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)])


@pytest.mark.parametrize("kw, match", [
    # a grid that cannot take meta: Python's TypeError named neither the op nor the grid
    (dict(grid=lambda: (1,)), r"grid: <lambda>\(\) cannot be called as grid\(meta\), .* Fix: grid=lambda meta:"),
    (dict(grid=lambda meta, x: (1,)), r"grid: <lambda>\(meta, x\) cannot be called as grid\(meta\)"),
    (dict(num_warps=lambda: 4), r"num_warps: <lambda>\(\) cannot be called as num_warps\(meta\)"),
    # a float constexpr the grid divides by: expr's TypeError, now the op's
    (dict(constexprs={"BLOCK": 256.0}, grid=lambda m: (ttk.cdiv(ttk.Numel("x"), m["BLOCK"]),)),
     r"grid: constexprs: grid\(meta\) raised TypeError: expected an int .* got 256.0 \(meta: \{'BLOCK': 256.0, "),
    # a misspelled option, which triton.compile ignores silently
    (dict(compile_options={"ptx_versoin": 80}), r"compile_options: \['ptx_versoin'\] are no options of "
     r"triton.compile for NVIDIA GPUs \(Triton .* would ignore them silently\). Fix: write 'ptx_version' for"),
])
def test_grid_warps_and_options_mistakes_are_the_ops_errors(kw, match):
    with pytest.raises(ttk.SpecError, match=match):
        _decl(tk.scale_shift_kernel, **{**SCALE, **kw})


def test_known_compile_options_and_a_meta_grid_are_accepted():
    name = _decl(tk.scale_shift_kernel, **SCALE, compile_options={"ptx_version": 80, "maxnreg": 64},
                 grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),))
    assert kop_of(name).image(torch.float32, 1, ARCH).ptx_isa == (8, 0)


def test_a_per_call_num_warps_is_checked_when_a_call_computes_it():
    name = unique("tri_warps")
    tk.declare_row_softmax(name, arch_override=ARCH, num_warps=lambda meta: 6 if meta["BLOCK_SIZE"] > 1024 else 4)
    kop = kop_of(name)
    assert kop.call_variants((torch.empty(3, 100, dtype=torch.float16),))[0].source.configs[0].num_warps == 4
    with pytest.raises(ttk.SpecError, match=r"num_warps: the function given as num_warps= returned 6 for "
                                            r"\{'BLOCK_SIZE': 2048, .*Triton takes a power of two from 1 to 32"):
        kop.call_variants((torch.empty(3, 1500, dtype=torch.float16),))


def _tuned(*configs):
    return triton.autotune(configs=list(configs), key=["n"])(tk.scale_shift_kernel)


@pytest.mark.parametrize("kernel, kw, match", [
    (_tuned(triton.Config({"BLOCK": 256}, num_ctas=2)), {},
     r"@triton.autotune config 0 \(.*\) has num_ctas=2: thread block clusters are not supported"),
    (_tuned(triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 512}, maxnreg=64)), {},
     r"config 1 .* has maxnreg=64, which a config here does not carry .* compile_options=\{'maxnreg': 64\}"),
    # the configs as the author wrote them, not as tactics (there are no tactics=)
    (_tuned(triton.Config({"BLOCK": 256}), triton.Config({"BLOCK_SIZE": 512})), {},
     r"grid: @triton.autotune config 1: grid\(meta\) read 'BLOCK' .* Fix: give it in every @triton.autotune config"),
    # a constexprs= value the configs set too: Triton refuses it ("Conflicting meta-parameters"); it was overridden
    (_tuned(triton.Config({"BLOCK": 256})), dict(constexprs={"BLOCK": 64}),
     r"constexprs: \['BLOCK'\] also set by the @triton.autotune configs"),
])
def test_autotune_configs_are_taken_as_written_or_refused(kernel, kw, match):
    with pytest.raises(ttk.SpecError, match=match):
        _decl(kernel, **{**SCALE, "constexprs": {}, "grid": lambda m: (ttk.cdiv(ttk.Numel("x"), m["BLOCK"]),), **kw})


def test_not_a_jit_function_and_bad_warps():
    with pytest.raises(ttk.SpecError, match="expected a @triton.jit function"):
        _decl(lambda x: x)
    auto = triton.autotune(configs=[triton.Config({"BLOCK": 128})], key=["n"])(_outputs_first)
    with pytest.raises(ttk.SpecError, match=r"tactics: given with @triton.autotune, whose configs are the tactics"):
        _decl(auto, tactics=[ttk.TritonConfig({"BLOCK": 64})])
    with pytest.raises(ttk.SpecError, match="num_warps=3"):
        _decl(tk.scale_shift_kernel, num_warps=3)


def test_int_scalar_is_a_32bit_parameter():
    @triton.jit
    def k(x_ptr, alpha, n, y_ptr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * alpha, mask=offs < n)

    name = unique("tri_err")
    ttk.triton_kernel_op(name, k, inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", int)],
                         outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                         grid=(ttk.cdiv(ttk.Numel("x"), 256),), constexprs={"BLOCK": 256}, arch_override=ARCH)
    ptx = kop_of(name).image(torch.float32, 1, ARCH).aot_ptx
    assert [t for t, _ in abi.ptx_params(ptx, "k")] == ["u64", "u32", "u32", "u64"]


# ---------------- TensorRT plugin through NVIDIA's tensorrt.plugin layer ----------------


@pytest.fixture
def env(monkeypatch):
    from trt_kernels.testing import _standin as standin

    reason = standin.unavailable_reason()
    if reason is not None:
        pytest.skip(f"NVIDIA tensorrt.plugin sources unavailable: {reason}")
    monkeypatch.setenv("TRT_KERNELS_ARCH", ARCH)
    yield from standin.standin_fixture()


def _build(env, kop, shapes, dtype="FP32", attrs=None, **kw):
    from trt_kernels.plugins.qdp import register_plugin

    if not hasattr(getattr(env.trtp.op, kop.namespace, None), kop.name):
        register_plugin(kop, env.trt, env.trtp)
    return env.build(kop.op_name, inputs=[(dtype, s) for s in shapes], attrs=attrs or {}, **kw)


@pytest.mark.parametrize("tactic", [1, 2, 3])
@pytest.mark.parametrize("dtype", ["FP32", "FP16", "BF16"])
def test_aot_impl_embeds_the_stripped_ptx_of_the_tactic(env, scale, tactic, dtype):
    from trt_kernels.plugins.qdp import float_bits

    res = _build(env, scale, [(33, 47)], dtype=dtype, attrs={"alpha": -1.5}, aot=True, tactic=tactic)
    tdt = {"FP32": torch.float32, "FP16": torch.float16, "BF16": torch.bfloat16}[dtype]
    assert res.is_aot and res.tactic == tactic
    name = res.kernel_name.decode() if isinstance(res.kernel_name, bytes) else res.kernel_name
    assert name == "scale_shift_kernel"
    # the tactic's code compiled as TensorRT launches it: aligned pointers (its tensors are 256-byte aligned); the
    # size, 33 * 47, is no multiple of 16
    assert res.ptx == scale.aot_kernel(tdt, tactic, ARCH)[1]
    block = (1024, 256, 4096)[tactic - 1]
    assert (res.grid == (-(-33 * 47 // block), 1, 1)
            and res.block == (scale.source.configs[tactic - 1].num_warps * 32, 1, 1))
    assert res.extra_arg_values == [float_bits(-1.5), 33 * 47]
    assert res.tactics == [1, 2, 3]


def test_two_output_and_rmsnorm_plugins(env):
    ap = kop_of(unique_decl(tk.declare_add_mul))
    res = _build(env, ap, [(5, 9), (5, 9)], aot=True)
    assert res.is_aot and res.output_shapes == [(5, 9), (5, 9)] and res.extra_arg_values == [45]
    rn = kop_of(unique_decl(tk.declare_rmsnorm))
    res = _build(env, rn, [(6, 300), (300,)], dtype="FP16", attrs={"eps": 1e-5}, aot=True)
    assert res.is_aot and res.grid == (6, 1, 1) and res.block == (128, 1, 1)


def test_scratch_kernel_registers_jit_only(env):
    from trt_kernels.plugins.qdp import register_plugin

    kop = kop_of(unique_decl(tk.declare_tma_copy))
    info = register_plugin(kop, env.trt, env.trtp)
    assert info.aot is False and "scratch buffer" in info.plugin


def unique_decl(declare):
    name = unique("tri_cpu")
    declare(name, arch=ARCH)
    return name


# ---------------- without triton ----------------


def test_without_triton_the_cuda_path_works_and_the_error_names_the_extra():
    code = textwrap.dedent("""
        import sys
        sys.modules["triton"] = None  # as if triton were not installed
        import trt_kernels as ttk
        from kernels import sigmoid_spec
        ttk.cuda_kernel_op("nt::sig", sigmoid_spec(arch_override="sm_90"))
        try:
            ttk.triton_kernel_op("nt::t", object(), inputs=[ttk.InputDecl("x")], outputs=[], grid=(1,))
        except ImportError as e:
            print("ERR", e)
    """)
    tests = os.path.dirname(os.path.dirname(__file__))  # tests/, where kernels.py is
    env = dict(os.environ, PYTHONPATH=tests + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "ERR triton_kernel_op needs Triton" in r.stdout and "pip install 'trt-kernels[triton]'" in r.stdout


# ---------------- Triton's FP-fusion default ----------------


def test_declaring_a_triton_op_raises_no_fp_fusion_warning(tmp_path):
    """Triton 3.9 warns on every compile that leaves FP fusion to TRITON_DEFAULT_FP_FUSION; the package
    sets it explicitly, so a declaration compiles without the warning (run with warnings as errors, with
    fresh Triton and trt_kernels caches, so Triton really compiles)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRITON_")}
    env.update(TRT_KERNELS_CACHE_DIR=str(tmp_path / "ttk"), TRITON_CACHE_DIR=str(tmp_path / "triton"),
               PYTHONPATH=os.pathsep.join([str(pathlib.Path(__file__).resolve().parents[1]),
                                           env.get("PYTHONPATH", "")]))
    code = ("import triton_kernels as tk\ntk.declare_scale('fp_fusion_chk::s', arch='sm_90', tactics=False)\n"
            "print('ok')\n")
    r = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code], capture_output=True, text=True,
                       env=env, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]


def test_fp_fusion_option_respects_the_user_and_the_environment(monkeypatch):
    monkeypatch.delenv("TRITON_DEFAULT_FP_FUSION", raising=False)
    assert ts.fp_fusion_option({"num_warps": 4}) == {"num_warps": 4, "enable_fp_fusion": True}
    assert ts.fp_fusion_option({"enable_fp_fusion": False})["enable_fp_fusion"] is False
    monkeypatch.setenv("TRITON_DEFAULT_FP_FUSION", "0")
    assert ts.fp_fusion_option({})["enable_fp_fusion"] is False


@triton.jit
def _tiled_matmul(a_ptr, b_ptr, M, N, K, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K),
                    other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N),
                    other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_a_tactic_over_48_kb_is_left_out_of_the_aot_plugin_not_the_whole_plugin():
    M, N, K = ttk.DimSize("a", 0), ttk.DimSize("b", 1), ttk.DimSize("a", 1)
    name = unique("tri_smem")
    ttk.triton_kernel_op(
        name, _tiled_matmul, inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
        outputs=[ttk.OutputDecl("c", shape=(M, N))],
        extras=[ttk.SizeArg("M", M), ttk.SizeArg("N", N), ttk.SizeArg("K", K)],
        grid=lambda meta: (ttk.cdiv(M, meta["BM"]), ttk.cdiv(N, meta["BN"])),
        constexprs={"BM": 32, "BN": 32, "BK": 32}, num_stages=2,
        tactics=[ttk.TritonConfig({"BM": 128, "BN": 128, "BK": 64}, num_warps=8, num_stages=4)], arch_override=ARCH)
    kop = kop_of(name)
    assert kop.image(torch.float32, 2, ARCH).shared_mem > 48 * 1024 >= kop.image(torch.float32, 1, ARCH).shared_mem
    decision = kop.aot
    assert decision.aot and decision.tactics == (1,)
    assert "left out of the plugin's tactics: tactic 2 needs" in decision.why


BIG_TILE_OPS = """
import torch
import triton
import triton.language as tl
import trt_kernels as ttk


@triton.jit
def tile_mm(a_ptr, b_ptr, M, N, K, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K))
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N))
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))


M, N, K = ttk.DimSize("a", 0), ttk.DimSize("b", 1), ttk.DimSize("a", 1)
ttk.triton_kernel_op("NS::big_only", tile_mm, inputs=[ttk.InputDecl("a", ndim=2), ttk.InputDecl("b", ndim=2)],
                     outputs=[ttk.OutputDecl("c", shape=(M, N))], extras=[M, N, K], dtypes=[torch.float16],
                     grid=lambda meta: (ttk.cdiv(M, meta["BM"]), ttk.cdiv(N, meta["BN"])),
                     constexprs={"BM": 256, "BN": 128, "BK": 64}, num_warps=8, num_stages=5)
"""


def test_reports_decide_aot_for_the_arch_they_compiled_for(tmp_path, monkeypatch, capsys):
    # `inspect --arch sm_90` without TRT_KERNELS_ARCH said AOT for a config over 48 KB, as if no build told otherwise
    from trt_kernels import cli
    from trt_kernels.status import format_status

    monkeypatch.delenv("TRT_KERNELS_ARCH", raising=False)
    ns = unique("tri_bigtile").split("::")[0]
    path = tmp_path / "big_tile_ops.py"
    path.write_text(BIG_TILE_OPS.replace("NS::", f"{ns}::"))
    assert cli.main(["inspect", str(path), "--arch", ARCH, "--json"]) == 0
    op = json.loads(capsys.readouterr().out)["ops"][0]
    assert op["tensorrt"]["plugin"] == "JIT", op["tensorrt"]
    assert op["tensorrt"]["why"].startswith("AOT unavailable: tactic 1 needs 65536 bytes")
    assert op["aot_ptx"]["aot"] is False
    kop = kop_of(f"{ns}::big_only")
    assert not kop.aot_at(ARCH).aot and kop.aot_at(None).aot  # (no arch known: assumed to fit)
    status = format_status()
    assert f"{ns}::big_only" in status and "AOT unavailable: tactic 1 needs 65536 bytes" in status


def test_constexprs_and_num_warps_from_sizes_make_a_variant_per_value():
    name = unique("tri_var")
    tk.declare_row_softmax(name, arch_override=ARCH)
    kop = kop_of(name)
    assert kop.varies and not kop.aot.aot and "BLOCK_SIZE = next_power_of_2(DimSize('x', -1))" in kop.aot.why
    for cols, block, warps in [(1, 1, 4), (1500, 2048, 8), (5000, 8192, 16)]:
        (v,) = kop.call_variants((torch.empty(3, cols, dtype=torch.float16),))
        assert v.source.configs[0].constexprs == {"BLOCK_SIZE": block}
        assert v.sig.launches[0].block == (warps * 32,) and not v.varies
        assert v is kop.call_variants((torch.empty(7, cols, dtype=torch.float16),))[0]  # one per value
    assert v.image(torch.float16, 1, ARCH).aot_ptx  # the variant compiles


def test_next_power_of_2_is_refused_outside_constexprs():
    with pytest.raises(ttk.SpecError, match=r"uses next_power_of_2, which only a launch-time constexpr may use"):
        tk.declare_row_softmax(unique("tri_var"), grid=(ttk.next_power_of_2(ttk.DimSize("x", 0)),),
                               arch_override=ARCH)


def test_autotune_and_heuristics_are_accepted_as_written():
    name = unique("tri_tuned")
    tk.declare_tuned_axpb(name, arch_override=ARCH)
    kop = kop_of(name)
    assert kop.sig.tactics == 4 and [c.constexprs["BLOCK"] for c in kop.source.configs] == [128, 256, 512, 1024]
    x = torch.empty(1024)
    variants = kop.call_variants((x, 2.0, 1.0))
    assert [v.source.configs[0].constexprs["EVEN"] for v in variants] == [True, True, True, True]
    odd = kop.call_variants((torch.empty(1000), 2.0, 1.0))
    assert [v.source.configs[0].constexprs["EVEN"] for v in odd] == [False, False, False, False]
    assert kop.tune_key((x, 2.0, 1.0)) == (1024, "torch.float32")
    assert not kop.aot.aot and "heuristics" in kop.aot.why  # a heuristic is computed per call


def test_autotune_without_per_call_values_keeps_the_aot_plugin():
    name = unique("tri_tuned")
    tuned = triton.autotune(configs=tk.tuned_axpb_kernel.configs, key=["n"])(tk.tuned_axpb_kernel.fn.fn)
    tk.declare_tuned_axpb(name, kernel=tuned, constexprs={"EVEN": False}, arch_override=ARCH)
    kop = kop_of(name)
    assert kop.varies and kop.aot.aot and kop.aot.tactics == () and kop.sig.tactics == 4


def test_autotune_reset_to_zero_of_an_output_is_refused():
    # reset_to_zero / restore_value are honoured (tests/unit/test_triton_autotune_hooks.py) on inputs declared
    # mutated=True; an output starts uninitialized at every launch, so a kernel that needs it zeroed is refused
    tuned = triton.autotune(configs=tk.tuned_axpb_kernel.configs, key=["n"], reset_to_zero=["out_ptr"])(
        tk.tuned_axpb_kernel.fn.fn)
    with pytest.raises(ttk.SpecError, match=r"reset_to_zero names 'out_ptr', a declared output.*"
                                            r"InputDecl\(\.\.\., mutated=True\)"):
        tk.declare_tuned_axpb(unique("tri_tuned"), kernel=tuned, constexprs={"EVEN": False}, arch_override=ARCH)


def test_a_size_constexpr_of_0_compiles_as_1():
    name = unique("tri_var")
    tk.declare_row_softmax(name, arch_override=ARCH)
    (v,) = kop_of(name).call_variants((torch.empty(3, 0, dtype=torch.float16),))
    assert v.source.configs[0].constexprs == {"BLOCK_SIZE": 1}
    assert v.image(torch.float16, 1, ARCH).aot_ptx


def test_a_64_bit_size_arg_is_a_64_bit_triton_parameter():
    name = _decl(_outputs_first, extras=[ttk.SizeArg("n", ttk.Numel("x"), "int64_t")])
    kop = kop_of(name)
    assert [t for t, _ in abi.ptx_params(kop.image(torch.float32, 1, ARCH).ptx, "_outputs_first")][:3] == [
        "u64", "u64", "u64"]
    assert kop.source.signatures[torch.float32]["n"] == "i64"
