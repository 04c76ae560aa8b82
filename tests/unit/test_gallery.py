"""The kernel gallery (examples/gallery), CPU tier: every kernel, written as published kernels are, is declared
without editing its text. Each one compiles for sm_90 (NVRTC or Triton, no GPU), passes the parameter check,
is declared from its file byte for byte, keeps its own parameter order, has a torch reference that runs on CPU
tensors and agrees with the op's fake impl on output shapes and dtypes, and becomes a TensorRT plugin through
NVIDIA's tensorrt.plugin layer (stand-in): AOT, whose launch is the eager plan's, except where a call computes its
own launch config (BLOCK_SIZE from the row width, an @triton.heuristics value), which TensorRT runs as a JIT
plugin. The Triton kernels that compute their config per call or are autotuned are checked for the variant each
size selects and for what the AOT plugin offers, and their math runs under Triton's interpreter on CPU. The GPU
tier (tests/gpu/test_gallery_gpu.py) launches them."""

import inspect
import json
import os
import pathlib
import re

import pytest
import torch

import trt_kernels as ttk
from kernels import unique
from support import ROOT, early, early_jobs, job, load_example, run_cli
from trt_kernels import registry
from trt_kernels.expr import SizesEvaluator, evaluate
from trt_kernels.sources.abi import ptx_params
from trt_kernels.sources.cuda_params import kernel_param_names
from trt_kernels.testing import _standin as standin

ARCH = "sm_90"
GALLERY_DIR = ROOT / "examples" / "gallery"


gallery = load_example("gallery/declare")
TRITON_MISSING = gallery.triton_missing()


def _param(kernel):
    marks = [pytest.mark.skipif(TRITON_MISSING is not None, reason=f"Triton kernel: {TRITON_MISSING}")] \
        if kernel.triton else []
    return pytest.param(kernel, id=kernel.name, marks=marks)


KERNELS = [_param(k) for k in gallery.GALLERY.values()]
CUDA = [_param(k) for k in gallery.CUDA_KERNELS]
TRITON = [_param(k) for k in gallery.TRITON_KERNELS]
WITH_DTYPES = [pytest.param(p.values[0], d, id=f"{p.id}-{str(d)[6:]}", marks=p.marks)
               for p in KERNELS for d in p.values[0].dtypes]

_DECLARED = {}


def declared(kernel):
    """(op, KernelOp) of ``kernel`` declared under a fresh name for sm_90, once per session."""
    if kernel.name not in _DECLARED:
        name = unique("ttk_gallery")
        op = kernel.declare(name=name, arch=ARCH)
        _DECLARED[kernel.name] = (op, registry.get(name))
    return _DECLARED[kernel.name]


# what each kernel's own parameter list is, role by role (written from the kernel files, not computed)
EXPECTED_ROLES = {
    "layernorm_forward": "output output output input input input extra extra",
    "vector_add": "extra input input output",
    "matmul_tiled": "input input output extra extra extra",
    "softmax_warp": "output input extra extra",
    "block_sum": "input output extra",
    "haxpy_half2": "extra scalar input input output",
    "transpose_strided": "output input extra extra extra extra extra",
    "row_l2norm": "input output extra extra",
    "rowmax": "input output output extra extra",
    "fused_bias_gelu": "output input input extra extra",
    "softmax_rows": "output input extra extra extra extra",
    "softmax_fused": "output input extra extra extra",
    "matmul_bias": "input input output input " + " ".join(["extra"] * 9),
    "swiglu": "input input output extra",
}

# kernels whose calls compute their launch config (a constexpr from the sizes, a heuristic): TensorRT runs
# them as a JIT plugin, the reason naming what is computed (written from the declarations, not computed)
JIT_PLUGIN = {
    "softmax_fused": "per call: BLOCK_SIZE = next_power_of_2(DimSize('input', -1)), num_warps from the constexprs",
    "swiglu": "per call: EVEN_N by @triton.heuristics",
}
AOT_WITH_DTYPES = [p for p in WITH_DTYPES if p.values[0].name not in JIT_PLUGIN]
JIT_WITH_DTYPES = [p for p in WITH_DTYPES if p.values[0].name in JIT_PLUGIN]
needs_triton = pytest.mark.skipif(TRITON_MISSING is not None, reason=f"Triton kernel: {TRITON_MISSING}")


def test_the_gallery_lists_every_kernel_file_once():
    files = sorted(p.name for p in (GALLERY_DIR / "kernels").iterdir() if p.suffix in (".cu", ".py"))
    assert sorted(k.file for k in [*gallery.GALLERY.values(), *gallery.IN_PLACE.values(),
                                   *gallery.DATA_DEPENDENT.values()]) == files
    assert len(gallery.CUDA_KERNELS) >= 9 and len(gallery.TRITON_KERNELS) >= 5
    assert set(EXPECTED_ROLES) == set(gallery.GALLERY) and set(JIT_PLUGIN) <= set(gallery.GALLERY)


@pytest.mark.parametrize("kernel", KERNELS)
def test_declares_and_compiles_for_sm90_passing_the_parameter_check(kernel):
    op, kop = declared(kernel)
    assert op is not None and kop.sig.kernel_dtypes
    binary = kop.binary(ARCH)  # compiles (NVRTC or Triton) and checks the PTX .entry against the declaration
    for dtype in kop.sig.kernel_dtypes:
        image = binary.kernel(dtype)
        assert image.image[:4] == b"\x7fELF" and b".target sm_90" in image.ptx
        found = ptx_params(image.ptx, image.symbol)
        assert found is not None and len(found) - binary.n_hidden == len(kop.sig.params(dtype))
    if kernel.name in JIT_PLUGIN:  # a call computes its config: TensorRT launches the variant each call selects
        assert kop.varies and not kop.aot.aot and JIT_PLUGIN[kernel.name] in kop.aot.why, kop.aot.why
    else:
        assert kop.aot.aot, kop.aot.why  # TensorRT gets the PTX: no JIT-only fallback


@pytest.mark.parametrize("kernel", CUDA)
def test_cuda_source_is_the_file_byte_for_byte(kernel):
    on_disk = kernel.path.read_bytes()
    assert gallery.kernel_text(kernel.file).encode("utf-8") == on_disk
    spec = kernel.spec(ARCH)
    assert spec.kernel_source.encode("utf-8") == on_disk and spec.kernel_name == kernel.kernel_name
    # what NVRTC compiled is the file, with at most the dtype headers trt_kernels puts before it
    _, kop = declared(kernel)
    text = kop.source.text
    assert text.endswith(spec.kernel_source)
    prefix = text[: len(text) - len(spec.kernel_source)]
    assert all(re.fullmatch(r"#include <cuda_(fp16|bf16)\.h>|#line 1", ln) for ln in prefix.splitlines()), prefix


@pytest.mark.parametrize("kernel", TRITON)
def test_triton_kernel_is_the_files_function_unedited(kernel):
    _, kop = declared(kernel)
    fn = kop.source.fn
    assert pathlib.Path(inspect.getsourcefile(fn.fn)).resolve() == kernel.path.resolve()
    text = kernel.path.read_bytes().decode("utf-8")
    assert fn.src in text and fn.__name__ == kernel.kernel_name
    assert "@triton.jit\n" + fn.src.splitlines()[0] in text  # decorated as published, no wrapper


@needs_triton
def test_autotune_and_heuristics_decorators_are_declared_as_written():
    # what the file defines is the decorated object; the declaration reads the configs, key and heuristics off it
    _, mm = declared(gallery.GALLERY["matmul_bias"])
    tuned = gallery.triton_kernel("matmul_bias_autotune.py", "matmul_bias_kernel")
    assert type(tuned).__name__ == "Autotuner" and tuned.fn is mm.source.fn and list(tuned.keys) == ["M", "N", "K"]
    assert [(dict(c.constexprs), c.num_warps, c.num_stages) for c in mm.source.configs] == [
        (c.kwargs, c.num_warps, c.num_stages) for c in tuned.configs]
    assert mm.source.rule.tune_key == ("M", "N", "K") and not mm.source.rule.heuristics
    _, sw = declared(gallery.GALLERY["swiglu"])
    heuristic = gallery.triton_kernel("swiglu_heuristics.py", "swiglu_kernel")
    assert type(heuristic).__name__ == "Heuristics" and heuristic.fn is sw.source.fn
    assert list(sw.source.rule.heuristics) == ["EVEN_N"] and sw.source.rule.tune_key is None
    text = (gallery.KERNELS / "swiglu_heuristics.py").read_text()
    assert '@triton.heuristics({"EVEN_N": lambda args: args["n_elements"] % args["BLOCK_SIZE"] == 0})\n@triton.jit\n' \
        in text
    _, sm = declared(gallery.GALLERY["softmax_fused"])
    plain = gallery.triton_kernel("softmax_fused.py", "softmax_kernel")
    assert plain is sm.source.fn and set(sm.source.rule.sized) == {"BLOCK_SIZE"}


def _kernel_param_names(kernel, kop):
    if kernel.triton:
        return [p.name for p in kop.source.fn.params if not p.is_constexpr]
    return kernel_param_names(kernel.path.read_text(), kernel.kernel_name)


def _declared_name(sig, p):
    if p.role == "input":
        return sig.tensor_decls[p.index].name
    if p.role == "scalar":
        return sig.scalar_decls[p.index].name
    if p.role == "extra":
        return sig.extra_names[p.index]
    return sig.outputs[p.index].name


@pytest.mark.parametrize("kernel", KERNELS)
def test_parameter_roles_follow_the_kernels_own_order(kernel):
    _, kop = declared(kernel)
    names = _kernel_param_names(kernel, kop)
    assert names is not None, "the kernel's parameter names could not be read from its file"
    for dtype in kop.sig.kernel_dtypes:
        params = kop.sig.params(dtype)
        assert " ".join(p.role for p in params) == EXPECTED_ROLES[kernel.name]
        declared_names = [_declared_name(kop.sig, p) for p in params]
        assert len(declared_names) == len(names)
        for kname, dname in zip(names, declared_names):
            assert kname in (dname, dname + "_ptr"), (names, declared_names)


def test_size_arg_c_types_reach_the_parameter_list():
    _, add = declared(gallery.GALLERY["vector_add"])
    assert add.sig.params(torch.float32)[0].code == "Q"  # size_t n
    assert add.sig.params(torch.float32)[0].label.startswith("unsigned long long n")
    _, tr = declared(gallery.GALLERY["transpose_strided"])
    assert [p.code for p in tr.sig.params(torch.float32)] == ["Q", "Q", "i", "i", "q", "q", "q"]
    _, hx = declared(gallery.GALLERY["haxpy_half2"])
    assert [p.label.split(" /*")[0] for p in hx.sig.params(hx.sig.kernel_dtypes[0])] == [
        "int n", "float alpha", "const __half* x", "const __half* y", "__half* out"]


def test_a_stride_declared_as_int_is_refused_naming_the_parameter():
    spec = gallery.transpose_spec(ARCH)
    extras = list(spec.extras)
    extras[2] = ttk.SizeArg("src_stride_row", ttk.DimSize("src", 1))  # C int, the kernel has long long
    bad = ttk.KernelSpec(kernel_source=spec.kernel_source, kernel_name=spec.kernel_name, inputs=spec.inputs,
                         outputs=spec.outputs, extras=extras, geometry=spec.geometry, arch_override=ARCH)
    with pytest.raises(ttk.KernelABIError) as info:
        ttk.cuda_kernel_op(unique("ttk_gallery"), bad)
    msg = str(info.value)
    assert "parameter 4: the kernel has u64; the declaration gives int src_stride_row" in msg
    assert "ctype='long long'" in msg


def _meta(args):
    return [a.to("meta") if isinstance(a, torch.Tensor) else a for a in args]


def _tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


@pytest.mark.parametrize("kernel, dtype", WITH_DTYPES)
def test_reference_runs_on_cpu_and_agrees_with_the_fake_impl(kernel, dtype):
    op, _ = declared(kernel)
    kw = {"dtype": dtype} if len(kernel.dtypes) > 1 else {}
    for size, edge in [(5, {})] + list(kernel.edges):
        args = kernel.inputs("cpu", size, **edge, **kw)
        tensors = [a for a in args if isinstance(a, torch.Tensor)]
        assert all(t.device.type == "cpu" for t in tensors)
        assert all(t.dtype == dtype for t in tensors) or kernel.name == "haxpy_half2"
        if all(t.numel() for t in tensors):  # fresh random, never zeros
            assert all(bool((t != 0).any()) for t in tensors)
        want = _tuple(kernel.reference(*args))
        got = _tuple(op(*_meta(args)))  # the fake impl: shapes and dtypes only
        assert [(tuple(t.shape), t.dtype) for t in got] == [(tuple(t.shape), t.dtype) for t in want], (size, edge)
        assert all(w.device.type == "cpu" for w in want)
        for w in want:
            if w.dtype.is_floating_point and w.numel():
                assert torch.isfinite(w).all()


# ----- the TensorRT side on CPU: NVIDIA's tensorrt.plugin layer over the stand-in -----

_TRT_TYPE = {torch.float32: "FP32", torch.float16: "FP16", torch.bfloat16: "BF16"}
_TRT_OUT = {torch.float32: "FLOAT", torch.float16: "HALF", torch.bfloat16: "BF16", torch.int64: "INT64"}


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", ARCH)
    yield from standin.standin_fixture()


@pytest.mark.parametrize("kernel, dtype", AOT_WITH_DTYPES)
def test_aot_plugin_launches_what_the_eager_plan_says(env, kernel, dtype):
    from trt_kernels.plugins.qdp import float_bits, register_plugin

    _, kop = declared(kernel)
    kw = {"dtype": dtype} if len(kernel.dtypes) > 1 else {}
    args = kernel.inputs("cpu", 37, **kw)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    scalars = {d.name: a for d, a in zip(kop.sig.inputs, args) if not isinstance(a, torch.Tensor)}
    shapes = [tuple(t.shape) for t in tensors]
    register_plugin(kop, env.trt, env.trtp)
    res = env.build(kop.op_name, inputs=[(_TRT_TYPE[t.dtype], s) for t, s in zip(tensors, shapes)], attrs=scalars)
    assert res.is_aot and res.problems() == []
    want = _tuple(kernel.reference(*args))
    assert res.output_shapes == [tuple(w.shape) for w in want]
    assert [d.name for d in res.output_dtypes] == [_TRT_OUT[w.dtype] for w in want]
    # the launch TensorRT gets is the eager plan evaluated at these shapes
    plan = kop.plan(tuple(len(s) for s in shapes), 1)
    ev = SizesEvaluator(shapes)
    assert res.grid == tuple(evaluate(e, ev) for e in plan.grid) and res.block == tuple(plan.block)
    assert res.launch_values["shared_mem"] == evaluate(plan.shared_mem, ev)
    extras = [evaluate(e, ev) for e in plan.extras]
    # scalars (as float bits) and extras, in the order the kernel lists them
    kdt = kop.sig.kernel_dtypes[kernel.dtypes.index(dtype)]
    values = {("scalar", i): float_bits(v) for i, v in enumerate(scalars.values())}
    values.update({("extra", i): v for i, v in enumerate(extras)})
    in_kernel_order = [values[p.role, p.index] for p in kop.sig.params(kdt) if p.role in ("scalar", "extra")]
    assert res.extra_arg_values == in_kernel_order
    symbol, ptx = kop.aot_kernel(kdt, 1, ARCH)
    assert res.kernel_name in (symbol, symbol.encode()) and res.ptx == ptx
    # TensorRT's layout: (input pointers, 32-bit scalars and extras, output pointers)
    found = ptx_params(ptx, symbol)
    n_in, n_out, n_args = len(tensors), len(want), len(scalars) + len(extras)
    assert [t for t, _ in found[:n_in]] == ["u64"] * n_in and [t for t, _ in found[n_in + n_args:]] == ["u64"] * n_out
    assert [size for _, size in found[n_in:n_in + n_args]] == [4] * n_args


def test_softmax_shared_memory_follows_the_row_length(env):
    from trt_kernels.plugins.qdp import register_plugin

    _, kop = declared(gallery.GALLERY["softmax_warp"])
    register_plugin(kop, env.trt, env.trtp)
    res = env.build(kop.op_name, inputs=[("FP32", (3, 1000))])
    assert res.launch_values["shared_mem"] == (1000 + 256 // 32) * 4
    assert res.launch_at([(3, 10)])["shared_mem"] == (10 + 8) * 4  # a dynamic row length: the same expression


# ----- launch configs computed per call, and the autotuner's configs as TensorRT tactics -----

# row width -> (BLOCK_SIZE, num_warps), written out: the smallest power of two >= the width; 8 warps from a
# block of 2048, 16 from 4096
SOFTMAX_VARIANTS = {1: (1, 4), 2: (2, 4), 3: (4, 4), 127: (128, 4), 128: (128, 4), 129: (256, 4),
                    1023: (1024, 4), 1024: (1024, 4), 1025: (2048, 8), 1500: (2048, 8), 2047: (2048, 8),
                    2048: (2048, 8), 2049: (4096, 16), 4095: (4096, 16), 4096: (4096, 16), 4097: (8192, 16),
                    5000: (8192, 16), 8193: (16384, 16)}


def _variant(kop, *args):
    (v,) = kop.call_variants(args)
    return v


@needs_triton
def test_fused_softmax_sizes_its_block_and_warps_from_the_row_width():
    _, kop = declared(gallery.GALLERY["softmax_fused"])
    assert kop.sig.tactics == 1 and kop.source.rule.per_call
    variants = {}
    for cols, (block, warps) in SOFTMAX_VARIANTS.items():
        v = _variant(kop, torch.empty(3, cols, dtype=torch.float16))
        (cfg,) = v.source.configs
        assert cfg.constexprs == {"BLOCK_SIZE": block} and cfg.num_warps == warps, (cols, cfg)
        assert block >= cols and (block == 1 or block // 2 < cols)  # the whole row in one block, no larger
        assert v.sig.launches[0].block == (warps * 32,) and not v.varies
        # one variant per value: other rows and another dtype launch the same one
        assert v is _variant(kop, torch.empty(11, cols, dtype=torch.bfloat16))
        variants[block] = v
    assert len(set(map(id, variants.values()))) == len(variants) == 10
    for cols in (1, 1500, 5000, 8193):  # the variants compile, each with its own block of threads
        block, warps = SOFTMAX_VARIANTS[cols]
        image = variants[block].image(torch.float16, 1, ARCH)
        assert image.aot_ptx and f".reqntid {warps * 32}".encode() in image.ptx
        assert variants[block].aot.aot  # one variant alone fits TensorRT's AOT launch; the op's calls select it


@needs_triton
def test_heuristic_is_computed_from_the_sizes_at_each_call():
    _, kop = declared(gallery.GALLERY["swiglu"])
    block = gallery.SWIGLU_BLOCK_SIZE
    seen = {}
    for shape in [(1,), (block,), (2, block // 2), (3, 171), (7, 1024), (5, 1023), (0,), (4, 0)]:
        x = torch.empty(shape)
        v = _variant(kop, x, x)
        even = x.numel() % block == 0
        assert v.source.configs[0].constexprs == {"BLOCK_SIZE": block, "EVEN_N": even}, shape
        seen.setdefault(even, v)
        assert seen[even] is v
    # EVEN_N compiles the loads and stores without masks: no predicated global access in its PTX
    ptx = {even: v.image(torch.float32, 1, ARCH).ptx.decode() for even, v in seen.items()}
    assert re.search(r"ld\.global", ptx[True]) and not re.search(r"@%p\d+ (ld|st)\.global", ptx[True])
    assert re.search(r"@%p\d+ ld\.global", ptx[False]) and re.search(r"@%p\d+ st\.global", ptx[False])


MATMUL_BIG_TACTIC = 4  # the autotuner's fourth config: 128x128 tiles of A and B, 128 deep


@needs_triton
def test_autotuned_matmul_leaves_the_config_over_48_kb_out_of_the_aot_plugin():
    _, kop = declared(gallery.GALLERY["matmul_bias"])
    assert kop.sig.tactics == 5 and kop.varies and not kop.source.rule.per_call
    smem = {}
    for dtype in gallery.MATMUL_BIAS_TYPES:
        for t in range(1, 6):
            image = kop.image(dtype, t, ARCH)
            smem[t] = image.shared_mem
            if t == MATMUL_BIG_TACTIC:
                assert image.shared_mem > 48 * 1024 and image.aot_ptx is None
                assert "dynamic shared memory (> 48 KB)" in image.aot_reason
            else:
                assert image.shared_mem <= 48 * 1024 and image.aot_ptx, (dtype, t, image.shared_mem)
    decision = kop.aot
    assert decision.aot and decision.tactics == (1, 2, 3, 5)
    assert f"left out of the plugin's tactics: tactic 4 needs {smem[4]} bytes of dynamic shared memory" in decision.why
    # every call may launch any of the five configs, unchanged by the sizes; the autotuner keys on M, N, K
    args = gallery.matmul_bias_inputs("cpu", 37, n=45, k=29)
    variants = kop.call_variants(args)
    assert [v.source.configs[0] for v in variants] == list(kop.source.configs)
    assert variants == kop.call_variants(gallery.matmul_bias_inputs("cpu", 300, dtype=torch.bfloat16))
    assert kop.tune_key(args) == (37, 45, 29, "torch.float16", "torch.float16", "torch.float16")
    # each config's launch: its own grid of tiles, num_warps * 32 threads
    shapes = [tuple(a.shape) for a in args]
    for t, cfg in enumerate(kop.source.configs, start=1):
        plan = kop.plan((2, 2, 1), t)
        c = cfg.constexprs
        tiles = -(-37 // c["BLOCK_M"]) * -(-45 // c["BLOCK_N"])
        assert tuple(evaluate(e, SizesEvaluator(shapes)) for e in plan.grid) == (tiles, 1, 1)
        assert tuple(plan.block) == (cfg.num_warps * 32, 1, 1)


@needs_triton
@pytest.mark.parametrize("dtype", gallery.MATMUL_BIAS_TYPES, ids=lambda d: str(d)[6:])
def test_autotuned_matmul_plugin_offers_the_configs_that_fit(env, dtype):
    from trt_kernels.plugins.qdp import register_plugin

    _, kop = declared(gallery.GALLERY["matmul_bias"])
    args = gallery.matmul_bias_inputs("cpu", 37, dtype=dtype)
    shapes = [tuple(a.shape) for a in args]
    register_plugin(kop, env.trt, env.trtp)
    inputs = [(_TRT_TYPE[dtype], s) for s in shapes]
    assert env.build(kop.op_name, inputs=inputs).tactics == [1, 2, 3, 5]
    for t in (1, 2, 3, 5):
        res = env.build(kop.op_name, inputs=inputs, tactic=t)
        assert res.is_aot and res.tactic == t and res.problems() == []
        plan = kop.plan((2, 2, 1), t)
        assert res.grid == tuple(evaluate(e, SizesEvaluator(shapes)) for e in plan.grid)
        assert res.block == tuple(plan.block)
        assert res.launch_values["shared_mem"] == kop.image(dtype, t, ARCH).shared_mem
        assert res.ptx == kop.aot_kernel(dtype, t, ARCH)[1]
        assert res.extra_arg_values == [37, 96, 80, 80, 1, 96, 1, 96, 1]  # M, N, K and the row-major strides
    with pytest.raises(Exception, match="tactic 4 is not among valid tactics"):
        env.build(kop.op_name, inputs=inputs, tactic=MATMUL_BIG_TACTIC)


@pytest.mark.parametrize("kernel, dtype", JIT_WITH_DTYPES)
def test_per_call_config_ops_get_a_jit_plugin(env, kernel, dtype):
    from trt_kernels.plugins.qdp import register_plugin

    _, kop = declared(kernel)
    args = kernel.inputs("cpu", 37, dtype=dtype)
    inputs = [(_TRT_TYPE[a.dtype], tuple(a.shape)) for a in args]
    register_plugin(kop, env.trt, env.trtp)
    with pytest.raises(ValueError, match="AOT implementation requested, but not defined"):
        env.build(kop.op_name, inputs=inputs, aot=True)
    res = env.build(kop.op_name, inputs=inputs, aot=False)
    assert not res.is_aot and res.tactics == [1]
    want = _tuple(kernel.reference(*args))
    assert res.output_shapes == [tuple(w.shape) for w in want]
    assert [d.name for d in res.output_dtypes] == [_TRT_OUT[w.dtype] for w in want]


# the three kernels run under Triton's interpreter (TRITON_INTERPRET=1: numpy on CPU tensors), launched with the
# values the declarations compute; the interpreter's tl.dot on bfloat16 operands is wrong (Triton 3.9), so the
# matmul runs in float16 only
INTERPRETED = r"""
import importlib.util, json, sys
import torch
settings = json.loads(sys.argv[2])
spec = importlib.util.spec_from_file_location("_ttk_gallery_interpreted", sys.argv[1])
gallery = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gallery)
torch.manual_seed(0)


def close(name, got, want):
    atol, rtol = gallery.GALLERY[name].tol[want.dtype]
    return bool(torch.allclose(got.double(), want.double(), atol=atol, rtol=rtol))


out = {"softmax": [], "matmul": [], "swiglu": []}
softmax = gallery.triton_kernel("softmax_fused.py", "softmax_kernel")
for cols, block in settings["softmax"]:
    for dtype in gallery.HALF_TYPES:
        (x,) = gallery.softmax_fused_inputs("cpu", 3, cols=cols, dtype=dtype)
        want = gallery.softmax_fused_reference(x)
        for b in sorted({block, 1024}):  # the declaration's block, and a fixed one
            y = torch.full_like(x, float("nan"))
            softmax[(3,)](y, x, cols, cols, cols, BLOCK_SIZE=b)
            out["softmax"].append([cols, str(dtype), b, close("softmax_fused", y, want)])
matmul = gallery.triton_kernel("matmul_bias_autotune.py", "matmul_bias_kernel")
for m, n, k in settings["matmul"]:
    a, b, bias = gallery.matmul_bias_inputs("cpu", m, n=n, k=k, dtype=torch.float16)
    want = gallery.matmul_bias_reference(a, b, bias)
    for t, cfg in enumerate(settings["configs"], start=1):
        c = torch.full((m, n), float("nan"), dtype=torch.float16)
        grid = (-(-m // cfg["BLOCK_M"]) * -(-n // cfg["BLOCK_N"]),)
        matmul.fn[grid](a, b, c, bias, m, n, k, k, 1, n, 1, n, 1, **cfg)
        out["matmul"].append([m, n, k, t, close("matmul_bias", c, want)])
swiglu = gallery.triton_kernel("swiglu_heuristics.py", "swiglu_kernel")
for rows, cols in settings["swiglu"]:
    for dtype in gallery.HALF_TYPES:
        gate, up = gallery.swiglu_inputs("cpu", rows, cols=cols, dtype=dtype)
        y = torch.full_like(gate, float("nan"))
        n = gate.numel()
        swiglu[(-(-n // gallery.SWIGLU_BLOCK_SIZE),)](gate, up, y, n, BLOCK_SIZE=gallery.SWIGLU_BLOCK_SIZE)
        out["swiglu"].append([rows, cols, str(dtype), close("swiglu", y, gallery.swiglu_reference(gate, up))])
print(json.dumps(out))
"""


def _interpreter_settings():
    """What the interpreter child runs: the softmax widths with the block each declares, the matmul's sizes and
    configs, the swiglu's sizes."""
    _, sm = declared(gallery.GALLERY["softmax_fused"])
    widths = [1, 3, 129, 1024, 1500, 5000]
    blocks = [[c, _variant(sm, torch.empty(1, c)).source.configs[0].constexprs["BLOCK_SIZE"]] for c in widths]
    _, mm = declared(gallery.GALLERY["matmul_bias"])
    return {"softmax": blocks, "matmul": [[1, 1, 1], [31, 33, 17], [65, 127, 129], [3, 20, 0]],
            "configs": [dict(c.constexprs) for c in mm.source.configs], "swiglu": [[1, 1], [1, 512], [3, 171]]}


def _script(tmp_path_factory):
    """declare.py run as a script where no GPU is visible, not started yet."""
    if torch.cuda.is_available():
        return {}
    return {"script": job([GALLERY_DIR / "declare.py"], env=dict(os.environ, TRT_KERNELS_ARCH=ARCH), cwd=ROOT)}


early("gallery", __file__, "children", _script)  # queued at the session's start (tests/support.py)


@pytest.fixture(scope="module")
def children(tmp_path_factory):
    """This file's fresh processes: declare.py run as a script (queued at the session's start, or started
    here), and the kernels' math under Triton's interpreter (which TRITON_INTERPRET turns on when triton is
    imported: a process of its own), started here."""
    jobs = {k: j.start() for k, j in early_jobs("gallery", tmp_path_factory).items()}
    if TRITON_MISSING is None:
        jobs["interpreted"] = job(["-c", INTERPRETED, GALLERY_DIR / "declare.py", json.dumps(_interpreter_settings())],
                                  env=dict(os.environ, TRITON_INTERPRET="1"), cwd=ROOT).start()
    return jobs


@needs_triton
def test_the_kernels_math_under_tritons_interpreter(children):
    r = children["interpreted"].result(timeout=900)
    assert r.returncode == 0, r.stderr[-4000:]
    out = json.loads(r.stdout.splitlines()[-1])
    for cols, dtype, block, ok in out["softmax"]:
        # the block the declaration computes gives every row right; a fixed 1024 block silently drops the
        # columns past it on wider rows
        assert ok == (block >= cols), (cols, dtype, block, ok)
    assert {(c, b) for c, _, b, _ in out["softmax"]} >= {(1500, 1024), (5000, 1024), (1500, 2048), (5000, 8192)}
    assert len(out["matmul"]) == 4 * 5 and all(ok for *_, ok in out["matmul"]), out["matmul"]
    assert len(out["swiglu"]) == 3 * 3 and all(ok for *_, ok in out["swiglu"]), out["swiglu"]


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what the script says where no GPU is visible")
def test_the_script_declares_every_kernel_then_says_it_needs_a_gpu(children):
    r = children["script"].result(timeout=900)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-4000:]
    assert "examples/gallery/declare.py: not run: it launches its kernels on a CUDA GPU" in r.stderr
    n = len(gallery.GALLERY) + len(gallery.IN_PLACE) + len(gallery.DATA_DEPENDENT) - (
        len(gallery.TRITON_KERNELS) if TRITON_MISSING else 0)
    assert f"declared {n} gallery ops" in r.stdout, r.stdout


def test_the_command_line_sees_every_gallery_op():
    """``trt-kernels status examples/gallery/ops.py`` (run in this process: tests/support.py, run_cli)."""
    r = run_cli(["status", GALLERY_DIR / "ops.py"], env=dict(os.environ, TRT_KERNELS_ARCH=ARCH), cwd=ROOT)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    listed = re.findall(r"^gallery::(\w+)\(", r.stdout, flags=re.M)
    assert listed == [k.name for k in gallery.GALLERY.values() if not (k.triton and TRITON_MISSING)] + list(
        gallery.IN_PLACE) + list(gallery.DATA_DEPENDENT), r.stdout


def declared_names(sig):
    """The declared name each of the kernel's parameters takes its value from, in the kernel's order."""
    name = {"input": lambda q: sig.tensor_names[q.index], "scalar": lambda q: sig.scalar_decls[q.index].name,
            "extra": lambda q: sig.extra_names[q.index], "output": lambda q: sig.outputs[q.index].name}
    return [name[q.role](q) for q in sig.params(torch.float32)]


# ---------------- kernels that write their inputs in place ----------------

IN_PLACE = [pytest.param(k, id=k.name) for k in gallery.IN_PLACE.values()]


@pytest.mark.parametrize("kernel", IN_PLACE)
def test_an_in_place_kernel_declares_as_written(kernel):
    name = unique("gallery_inplace")
    op = kernel.declare(name=name, arch="sm_90")
    kop = registry.lookup(name)
    assert kop.source.text.endswith(gallery.kernel_text(kernel.file))  # the file, unedited
    schema = str(op.default._schema)
    assert schema.endswith("-> ()") and schema.count("!)") == len(kernel.written)
    assert [kop.sig.tensor_pos[t] for t in kop.sig.mutated] == list(kernel.written)
    assert kernel_param_names(gallery.kernel_text(kernel.file), kernel.kernel_name) == declared_names(
        kop.sig)  # matched by name, in the kernel's order
    assert kop.tensorrt.plugin == "" or "in place" in kop.tensorrt.plugin


@pytest.mark.parametrize("kernel", IN_PLACE)
def test_an_in_place_reference_runs_on_cpu_and_export_traces_the_op(kernel):
    op = kernel.declare(name=unique("gallery_inplace"), arch="sm_90")
    args = kernel.inputs("cpu", 9)
    want = kernel.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    assert len(want) == len(kernel.written)
    assert all(w.shape == args[i].shape for w, i in zip(want, kernel.written))

    class Step(torch.nn.Module):
        def forward(self, *tensors):
            it = iter(tensors)
            op(*[next(it) if isinstance(a, torch.Tensor) else a for a in args])
            return tensors[kernel.written[0]] + 0

    ep = torch.export.export(Step(), tuple(a for a in args if isinstance(a, torch.Tensor)))
    assert op.default._schema.name.split("::")[1] in str(ep.graph)


# ---------------- kernels that decide their output sizes (ttk.Written) ----------------

DATA_DEPENDENT = [pytest.param(k, id=k.name) for k in gallery.DATA_DEPENDENT.values()]


@pytest.mark.parametrize("kernel", DATA_DEPENDENT)
def test_a_data_dependent_kernel_declares_as_written(kernel):
    name = unique("gallery_written")
    op = kernel.declare(name=name, arch="sm_90")
    kop = registry.lookup(name)
    assert kop.source.text.endswith(gallery.kernel_text(kernel.file))  # the file, unedited
    sig = kop.sig
    assert len(sig.counts) == 1  # returned: the reference's outputs, not the count
    assert len(op.default._schema.returns) == len(gallery._first(kernel.reference(*kernel.inputs("cpu", 5))))
    assert kernel_param_names(gallery.kernel_text(kernel.file), kernel.kernel_name) == declared_names(
        sig)  # the count too, matched by name, in the kernel's order
    kop.image(torch.float32)  # NVRTC compiles it for sm_90 here
    assert kop.aot.aot, kop.aot.why  # one kernel writing its own count: an AOT plugin


@pytest.mark.parametrize("kernel", DATA_DEPENDENT)
def test_a_data_dependent_reference_runs_on_cpu_and_export_bounds_its_size(kernel):
    from trt_kernels.plan import concrete

    name = unique("gallery_written")
    op = kernel.declare(name=name, arch="sm_90")
    sig = registry.lookup(name).sig
    for size, kw in [(37, {}), *kernel.edges]:  # the declared shapes hold the reference's, the size within its max
        args = kernel.inputs("cpu", size, **kw)
        ts = [a for a in args if isinstance(a, torch.Tensor)]
        bound = concrete(registry.lookup(name).plan(tuple(t.dim() for t in ts)), [tuple(t.shape) for t in ts],
                         sig.tensor_names, [a for a in args if not isinstance(a, torch.Tensor)],
                         [d.name for d in sig.scalar_decls]).outputs
        for i, w in zip(sig.returned, gallery._first(kernel.reference(*args))):
            axis = sig.outputs[i].written
            assert w.dim() == len(bound[i]) and w.shape[axis] <= bound[i][axis]
            assert [d for j, d in enumerate(w.shape) if j != axis] == [d for j, d in enumerate(bound[i]) if j != axis]
    args = kernel.inputs("cpu", 37)
    mod = gallery.one_op_module(op, args)
    tensors = tuple(a for a in args if isinstance(a, torch.Tensor))
    ep = torch.export.export(mod, tensors, dynamic_shapes=tuple({0: torch.export.Dim("n")} for _ in tensors))
    sizes = [r for s, r in ep.range_constraints.items() if str(s).startswith("u")]
    assert len(sizes) == 1 and sizes[0].lower == 0  # one unbacked size, its bound checked at run time
    assert "_assert_scalar" in ep.graph_module.code
