"""A gallery of kernels written the way published kernels are written, each declared with trt_kernels
without editing its text.

The kernels live in ``kernels/`` as their authors would publish them: CUDA C++ in ``*.cu`` (outputs
first, ``size_t`` counts first, 2-D grids over shared-memory tiles, dynamic shared memory, warp
shuffles, a template with a non-type parameter, ``half2`` intrinsics, 64-bit strides, cooperative
groups, ``<stdio.h>`` and ``INFINITY``) and Triton in ``*.py`` (outputs first, named sizes and row
strides; ``BLOCK_SIZE = next_power_of_2(n_cols)`` and ``num_warps`` chosen from it at launch, as Triton's
fused-softmax launcher does; ``@triton.autotune`` and ``@triton.heuristics`` over ``@triton.jit``, as
written). This module reads each file as it is on disk and declares it: the kernel's parameters are
matched to the declaration by name (a tensor ``x`` may be ``x_ptr``), sizes, strides and constants
are named extras (``ttk.SizeArg``) of the kernel's own C type, and the kernel's own parameter order
is kept. Nothing is rewritten: ``kernel_text(file)`` is the file's bytes, decoded.

For each kernel there is a ``declare_<name>(name=..., arch=None)`` returning the op, a
``<name>_reference(...)`` in plain torch (it runs on CPU tensors too) and a
``<name>_inputs(device, size, ...)`` making fresh random arguments in the op's call order; ``GALLERY``
lists them. Run ``python examples/gallery/declare.py`` on a CUDA GPU: it declares every op, runs each
against its reference and prints a table. Without a GPU it declares (NVRTC and Triton compile for
sm_90 without one), lists the declarations, says what it needs and exits 1.

Launch configs computed per call (``softmax_fused``'s BLOCK_SIZE and num_warps, ``swiglu``'s EVEN_N
heuristic) compile one variant per distinct value, and TensorRT runs those ops as JIT plugins (the AOT
plugin embeds one PTX per tactic). ``matmul_bias``'s autotuner configs are its TensorRT tactics (AOT); the
one needing more than 48 KB of shared memory is left out of the plugin, and eager may still pick it.

Kernels that write their inputs in place (``IN_PLACE``: an AdamW step over parameters and moments, a
KV-cache write through a slot mapping) declare those inputs ``mutated=True``: the op returns nothing and
writes the caller's tensors, under ``torch.compile`` too. Inside Torch-TensorRT engines each is a JIT plugin
that outputs the written inputs' new values (docs/tensorrt.md, "Ops that write inputs in place").
"""

from __future__ import annotations

import importlib.util
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Mapping, Optional, Sequence, Tuple

import torch

import trt_kernels as ttk

HERE = pathlib.Path(__file__).resolve().parent
KERNELS = HERE / "kernels"
NAMESPACE = "gallery"
HALF_TYPES = (torch.float32, torch.float16, torch.bfloat16)


def kernel_text(filename: str) -> str:
    """The kernel file's text exactly as on disk: its bytes decoded as UTF-8 (no newline translation)."""
    return (KERNELS / filename).read_bytes().decode("utf-8")


def triton_kernel(filename: str, function: str):
    """The ``@triton.jit`` function ``function`` of ``kernels/<filename>``, imported from that file (Triton
    reads the kernel's source from it). Needs triton."""
    path = KERNELS / filename
    mod_name = f"_ttk_gallery_{path.stem}"
    mod = sys.modules.get(mod_name)
    if mod is None or pathlib.Path(mod.__file__).resolve() != path:
        spec = importlib.util.spec_from_file_location(mod_name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[mod_name] = mod
        spec.loader.exec_module(mod)
    return getattr(mod, function)


def _op_name(name: Optional[str], default: str) -> str:
    return name if name is not None else f"{NAMESPACE}::{default}"


def _randn(*shape, device, dtype=torch.float32):
    return torch.randn(*shape, device=device, dtype=torch.float32).to(dtype)


# ---------------------------------------------------------------------------------------------------------
# (1) layer norm forward, outputs first: (out, mean, rstd, inp, weight, bias, N, C)
# ---------------------------------------------------------------------------------------------------------

LN_WARPS_PER_BLOCK = 4  # one warp per row


def layernorm_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    n, c = ttk.DimSize("inp", 0), ttk.DimSize("inp", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("layernorm_forward.cu"), kernel_name="layernorm_forward",
        inputs=[ttk.InputDecl("inp", ndim=2), ttk.InputDecl("weight", ndim=1), ttk.InputDecl("bias", ndim=1)],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("inp")),
                 ttk.OutputDecl("mean", shape=ttk.ReduceDims("inp", (-1,))),
                 ttk.OutputDecl("rstd", shape=ttk.ReduceDims("inp", (-1,)))],
        extras=[ttk.SizeArg("N", n), ttk.SizeArg("C", c)],
        geometry=ttk.Custom(grid=(ttk.cdiv(n, LN_WARPS_PER_BLOCK),), block=(32 * LN_WARPS_PER_BLOCK,)),
        checks=[ttk.SameDim(("inp", -1), ("weight", 0)), ttk.SameDim(("inp", -1), ("bias", 0))],
        arch_override=arch)


def declare_layernorm(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "layernorm_forward"), layernorm_spec(arch))


def layernorm_reference(inp, weight, bias):
    mean = inp.mean(-1)
    rstd = torch.rsqrt((inp - mean[:, None]).pow(2).mean(-1) + 1e-5)
    return (inp - mean[:, None]) * rstd[:, None] * weight + bias, mean, rstd


def layernorm_inputs(device, size, cols=77):
    return _randn(size, cols, device=device), _randn(cols, device=device), _randn(cols, device=device)


# ---------------------------------------------------------------------------------------------------------
# (2) vector add, size_t n first: (size_t n, const float *a, const float *b, float *c)
# ---------------------------------------------------------------------------------------------------------

def vector_add_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=kernel_text("vector_add.cu"), kernel_name="vector_add",
        inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
        outputs=[ttk.OutputDecl("c", shape=ttk.SameAs("a"))],
        extras=[ttk.SizeArg("n", ttk.Numel("a"), "size_t")],
        geometry=ttk.Elementwise(block=(256,)),
        checks=[ttk.SameShape("a", "b")], arch_override=arch)


def declare_vector_add(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "vector_add"), vector_add_spec(arch))


def vector_add_reference(a, b):
    return a + b


def vector_add_inputs(device, size):
    return _randn(size, device=device), _randn(size, device=device)


# ---------------------------------------------------------------------------------------------------------
# (3) tiled matmul on a 2-D grid: (const float* A, const float* B, float* C, int M, int N, int K)
# ---------------------------------------------------------------------------------------------------------

MATMUL_TILE = 16  # the kernel's TILE


def matmul_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    m, k, n = ttk.DimSize("A", 0), ttk.DimSize("A", 1), ttk.DimSize("B", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("matmul_tiled.cu"), kernel_name="matmul_tiled",
        inputs=[ttk.InputDecl("A", ndim=2), ttk.InputDecl("B", ndim=2)],
        outputs=[ttk.OutputDecl("C", shape=(m, n), dtype_from="A")],
        extras=[ttk.SizeArg("M", m), ttk.SizeArg("N", n), ttk.SizeArg("K", k)],
        geometry=ttk.Custom(grid=(ttk.cdiv(n, MATMUL_TILE), ttk.cdiv(m, MATMUL_TILE)),
                            block=(MATMUL_TILE, MATMUL_TILE)),
        checks=[ttk.SameDim(("A", 1), ("B", 0))], arch_override=arch)


def declare_matmul(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "matmul_tiled"), matmul_spec(arch))


def matmul_reference(A, B):
    return (A.double() @ B.double()).float()


def matmul_inputs(device, size, n=37, k=53):
    return _randn(size, k, device=device), _randn(k, n, device=device)


# ---------------------------------------------------------------------------------------------------------
# (4) softmax over rows, warp shuffles, the row staged in dynamic shared memory
# ---------------------------------------------------------------------------------------------------------

SOFTMAX_THREADS = 256


def softmax_warp_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    rows, cols = ttk.DimSize("inp", 0), ttk.DimSize("inp", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("softmax_warp.cu"), kernel_name="softmax_rows",
        inputs=[ttk.InputDecl("inp", ndim=2)],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("inp"))],
        extras=[ttk.SizeArg("rows", rows), ttk.SizeArg("cols", cols)],
        # extern __shared__ float smem[]: the row, then one float per warp
        geometry=ttk.Custom(grid=(rows,), block=(SOFTMAX_THREADS,),
                            shared_mem=(cols + SOFTMAX_THREADS // 32) * 4),
        arch_override=arch)


def declare_softmax_warp(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "softmax_warp"), softmax_warp_spec(arch))


def softmax_warp_reference(inp):
    return torch.softmax(inp, dim=-1)


def softmax_warp_inputs(device, size, cols=300):
    return (_randn(size, cols, device=device) * 3,)


# ---------------------------------------------------------------------------------------------------------
# (5) templated block reduction: template <typename T, int BLOCK> __global__ void block_sum(...)
# ---------------------------------------------------------------------------------------------------------

BLOCK_SUM_THREADS = 256  # the template's BLOCK, and the block size the op launches


def block_sum_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=kernel_text("block_sum.cu"), kernel_name=f"block_sum<T, {BLOCK_SUM_THREADS}>",
        dtypes=list(HALF_TYPES),
        inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("sums", shape=ttk.ReduceDims("x", (-1,)))],
        extras=[ttk.SizeArg("cols", ttk.DimSize("x", -1))],
        geometry=ttk.Reduction(reduce_dims=(-1,), block_size=BLOCK_SUM_THREADS),
        arch_override=arch)


def declare_block_sum(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "block_sum"), block_sum_spec(arch))


def block_sum_reference(x):
    return x.double().sum(-1).to(x.dtype)


def block_sum_inputs(device, size, cols=1000, dtype=torch.float32):
    return (_randn(size, cols, device=device, dtype=dtype),)


# ---------------------------------------------------------------------------------------------------------
# (6) half2 scaled add with <cuda_fp16.h>: (int n, float alpha, const __half* x, const __half* y, __half* out)
# ---------------------------------------------------------------------------------------------------------

def haxpy_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    n = ttk.Numel("x")
    return ttk.KernelSpec(
        kernel_source=kernel_text("haxpy_half2.cu"), kernel_name="haxpy_half2",
        inputs=[ttk.ScalarInput("alpha", float), ttk.InputDecl("x", dtype=torch.float16),
                ttk.InputDecl("y", dtype=torch.float16)],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("x"))],
        extras=[ttk.SizeArg("n", n)],
        geometry=ttk.Custom(grid=(ttk.cdiv(ttk.cdiv(n, 2), 256),), block=(256,)),  # one thread per pair
        checks=[ttk.SameShape("x", "y")], arch_override=arch)


def declare_haxpy(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "haxpy_half2"), haxpy_spec(arch))


def haxpy_reference(alpha, x, y):
    a = torch.tensor(alpha, dtype=torch.float16, device=x.device)
    return x * a + y  # half products and sums, each rounded to half


def haxpy_inputs(device, size):
    alpha = float(torch.empty(()).uniform_(0.25, 2.0)) * (1 if torch.rand(()) < 0.5 else -1)
    return alpha, _randn(size, device=device, dtype=torch.float16), _randn(size, device=device, dtype=torch.float16)


# ---------------------------------------------------------------------------------------------------------
# (7) tiled transpose with 64-bit strides: (..., long long src_stride_row, long long src_stride_col, ...)
# ---------------------------------------------------------------------------------------------------------

TRANSPOSE_TILE, TRANSPOSE_ROWS = 32, 8  # the kernel's TILE_DIM and BLOCK_ROWS


def transpose_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    rows, cols = ttk.DimSize("src", 0), ttk.DimSize("src", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("transpose_strided.cu"), kernel_name="transpose_strided",
        inputs=[ttk.InputDecl("src", ndim=2)],
        outputs=[ttk.OutputDecl("dst", shape=(cols, rows), dtype_from="src")],
        # the op hands the kernel a contiguous src (non-contiguous inputs are copied first)
        extras=[ttk.SizeArg("rows", rows), ttk.SizeArg("cols", cols),
                ttk.SizeArg("src_stride_row", cols, "long long"), ttk.SizeArg("src_stride_col", 1, "long long"),
                ttk.SizeArg("dst_stride_row", rows, "long long")],
        geometry=ttk.Custom(grid=(ttk.cdiv(cols, TRANSPOSE_TILE), ttk.cdiv(rows, TRANSPOSE_TILE)),
                            block=(TRANSPOSE_TILE, TRANSPOSE_ROWS)),
        arch_override=arch)


def declare_transpose(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "transpose_strided"), transpose_spec(arch))


def transpose_reference(src):
    return src.t().contiguous()


def transpose_inputs(device, size, cols=45):
    return (_randn(size, cols, device=device),)


# ---------------------------------------------------------------------------------------------------------
# (8) cooperative groups: one cg::tiled_partition<32> per row, cg::reduce
# ---------------------------------------------------------------------------------------------------------

L2NORM_TILES_PER_BLOCK = 4


def row_l2norm_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    rows, cols = ttk.DimSize("x", 0), ttk.DimSize("x", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("row_l2norm_cg.cu"), kernel_name="row_l2norm",
        inputs=[ttk.InputDecl("x", ndim=2)],
        outputs=[ttk.OutputDecl("norms", shape=ttk.ReduceDims("x", (-1,)))],
        extras=[ttk.SizeArg("rows", rows), ttk.SizeArg("cols", cols)],
        geometry=ttk.Custom(grid=(ttk.cdiv(rows, L2NORM_TILES_PER_BLOCK),), block=(32 * L2NORM_TILES_PER_BLOCK,)),
        arch_override=arch)


def declare_row_l2norm(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "row_l2norm"), row_l2norm_spec(arch))


def row_l2norm_reference(x):
    return torch.linalg.vector_norm(x.double(), dim=-1).float()


def row_l2norm_inputs(device, size, cols=100):
    return (_randn(size, cols, device=device),)


# ---------------------------------------------------------------------------------------------------------
# (9) <stdio.h> and INFINITY: row max and its first column (int64 indices)
# ---------------------------------------------------------------------------------------------------------

ROWMAX_THREADS = 128  # the kernel's ROWMAX_THREADS


def rowmax_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    rows, cols = ttk.DimSize("x", 0), ttk.DimSize("x", 1)
    return ttk.KernelSpec(
        kernel_source=kernel_text("rowmax_stdio.cu"), kernel_name="rowmax",
        inputs=[ttk.InputDecl("x", ndim=2)],
        outputs=[ttk.OutputDecl("values", shape=ttk.ReduceDims("x", (-1,))),
                 ttk.OutputDecl("indices", shape=ttk.ReduceDims("x", (-1,)), dtype=torch.int64)],
        extras=[ttk.SizeArg("n_rows", rows), ttk.SizeArg("n_cols", cols)],
        geometry=ttk.Custom(grid=(rows,), block=(ROWMAX_THREADS,)),
        arch_override=arch)


def declare_rowmax(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "rowmax"), rowmax_spec(arch))


def rowmax_reference(x):
    values, indices = torch.max(x, dim=-1)
    return values, indices


def rowmax_inputs(device, size, cols=333):
    return (_randn(size, cols, device=device),)


# ---------------------------------------------------------------------------------------------------------
# (10) Triton, outputs first with named sizes: fused_bias_gelu(out_ptr, x_ptr, b_ptr, n_rows, n_cols, BLOCK)
# ---------------------------------------------------------------------------------------------------------

GELU_BLOCK = 1024


def declare_fused_bias_gelu(name: Optional[str] = None, arch: Optional[str] = None):
    cols = ttk.DimSize("x", -1)
    rows = ttk.Numel("x") // ttk.maximum(cols, 1)
    return ttk.triton_kernel_op(
        _op_name(name, "fused_bias_gelu"), triton_kernel("fused_bias_gelu.py", "fused_bias_gelu"),
        inputs=[ttk.InputDecl("x"), ttk.InputDecl("b", ndim=1)],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("x"))],
        extras=[ttk.SizeArg("n_rows", rows), ttk.SizeArg("n_cols", cols)],
        grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),),
        constexprs={"BLOCK": GELU_BLOCK}, num_warps=4, dtypes=list(HALF_TYPES),
        checks=[ttk.SameDim(("x", -1), ("b", 0))], arch_override=arch)


def fused_bias_gelu_reference(x, b):
    return torch.nn.functional.gelu(x.float() + b.float()).to(x.dtype)


def fused_bias_gelu_inputs(device, size, cols=200, dtype=torch.float32):
    return _randn(size, cols, device=device, dtype=dtype), _randn(cols, device=device, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------
# (11) Triton row softmax with row strides:
#      softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE)
# ---------------------------------------------------------------------------------------------------------

SOFTMAX_BLOCK_SIZE = 1024


def declare_softmax_rows(name: Optional[str] = None, arch: Optional[str] = None):
    cols = ttk.DimSize("input", -1)
    rows = ttk.Numel("input") // ttk.maximum(cols, 1)
    return ttk.triton_kernel_op(
        _op_name(name, "softmax_rows"), triton_kernel("softmax_rows.py", "softmax_kernel"),
        inputs=[ttk.InputDecl("input")],
        outputs=[ttk.OutputDecl("output", shape=ttk.SameAs("input"))],
        # contiguous rows: each row stride is the row length
        extras=[ttk.SizeArg("input_row_stride", cols), ttk.SizeArg("output_row_stride", cols),
                ttk.SizeArg("n_rows", rows), ttk.SizeArg("n_cols", cols)],
        grid=(rows,), constexprs={"BLOCK_SIZE": SOFTMAX_BLOCK_SIZE}, num_warps=4, dtypes=list(HALF_TYPES),
        arch_override=arch)


def softmax_rows_reference(input):  # noqa: A002 - the op's argument is named as the kernel names it
    return torch.softmax(input.float(), dim=-1).to(input.dtype)


def softmax_rows_inputs(device, size, cols=1500, dtype=torch.float32):
    return ((_randn(size, cols, device=device) * 3).to(dtype),)


# ---------------------------------------------------------------------------------------------------------
# (12) Triton's fused-softmax style: the whole row in one block, BLOCK_SIZE and num_warps from the row width
#      softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols, BLOCK_SIZE)
# ---------------------------------------------------------------------------------------------------------


def softmax_fused_num_warps(meta):
    """num_warps from the block, as the launcher picks it: 4, 8 from 2048 columns, 16 from 4096."""
    return 16 if meta["BLOCK_SIZE"] >= 4096 else 8 if meta["BLOCK_SIZE"] >= 2048 else 4


def declare_softmax_fused(name: Optional[str] = None, arch: Optional[str] = None):
    cols = ttk.DimSize("input", -1)
    rows = ttk.Numel("input") // ttk.maximum(cols, 1)
    return ttk.triton_kernel_op(
        _op_name(name, "softmax_fused"), triton_kernel("softmax_fused.py", "softmax_kernel"),
        inputs=[ttk.InputDecl("input")],
        outputs=[ttk.OutputDecl("output", shape=ttk.SameAs("input"))],
        extras=[ttk.SizeArg("input_row_stride", cols), ttk.SizeArg("output_row_stride", cols),
                ttk.SizeArg("n_cols", cols)],
        # computed at each call from the row width: each distinct value compiles (once) its own variant
        grid=(rows,), constexprs={"BLOCK_SIZE": ttk.next_power_of_2(cols)}, num_warps=softmax_fused_num_warps,
        dtypes=list(HALF_TYPES), arch_override=arch)


def softmax_fused_reference(input):  # noqa: A002 - the op's argument is named as the kernel names it
    return torch.softmax(input.float(), dim=-1).to(input.dtype)


def softmax_fused_inputs(device, size, cols=1500, dtype=torch.float32):
    return ((_randn(size, cols, device=device) * 3).to(dtype),)


# ---------------------------------------------------------------------------------------------------------
# (13) @triton.autotune over @triton.jit, as written: matmul_bias_kernel(a_ptr, b_ptr, c_ptr, bias_ptr, M, N, K,
#      stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn, BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M)
# ---------------------------------------------------------------------------------------------------------

MATMUL_BIAS_TYPES = (torch.float16, torch.bfloat16)  # tl.dot on 16-bit inputs, float32 accumulators


def declare_matmul_bias(name: Optional[str] = None, arch: Optional[str] = None):
    m, k, n = ttk.DimSize("a", 0), ttk.DimSize("a", 1), ttk.DimSize("b", 1)
    return ttk.triton_kernel_op(
        _op_name(name, "matmul_bias"), triton_kernel("matmul_bias_autotune.py", "matmul_bias_kernel"),
        inputs=[ttk.InputDecl("a", ndim=2), ttk.InputDecl("b", ndim=2), ttk.InputDecl("bias", ndim=1)],
        outputs=[ttk.OutputDecl("c", shape=(m, n), dtype_from="a")],
        # contiguous (row-major) operands: a row's stride is its length, an element's 1
        extras=[ttk.SizeArg("M", m), ttk.SizeArg("N", n), ttk.SizeArg("K", k),
                ttk.SizeArg("stride_am", k), ttk.SizeArg("stride_ak", 1),
                ttk.SizeArg("stride_bk", n), ttk.SizeArg("stride_bn", 1),
                ttk.SizeArg("stride_cm", n), ttk.SizeArg("stride_cn", 1)],
        # the autotuner's configs are the tactics; each one's grid from its own tile shape
        grid=lambda meta: (ttk.cdiv(m, meta["BLOCK_M"]) * ttk.cdiv(n, meta["BLOCK_N"]),),
        dtypes=list(MATMUL_BIAS_TYPES),
        checks=[ttk.SameDim(("a", 1), ("b", 0)), ttk.SameDim(("b", 1), ("bias", 0))], arch_override=arch)


def matmul_bias_reference(a, b, bias):
    return (a.double() @ b.double() + bias.double()).to(a.dtype)


def matmul_bias_inputs(device, size, n=96, k=80, dtype=torch.float16):
    return (_randn(size, k, device=device, dtype=dtype), _randn(k, n, device=device, dtype=dtype),
            _randn(n, device=device, dtype=dtype))


# ---------------------------------------------------------------------------------------------------------
# (14) @triton.heuristics over @triton.jit, as written: swiglu_kernel(gate_ptr, up_ptr, out_ptr, n_elements,
#      BLOCK_SIZE, EVEN_N) with EVEN_N = n_elements % BLOCK_SIZE == 0 computed at each launch
# ---------------------------------------------------------------------------------------------------------

SWIGLU_BLOCK_SIZE = 512


def declare_swiglu(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.triton_kernel_op(
        _op_name(name, "swiglu"), triton_kernel("swiglu_heuristics.py", "swiglu_kernel"),
        inputs=[ttk.InputDecl("gate"), ttk.InputDecl("up")],
        outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("gate"))],
        extras=[ttk.SizeArg("n_elements", ttk.Numel("gate"))],
        grid=lambda meta: (ttk.cdiv(ttk.Numel("gate"), meta["BLOCK_SIZE"]),),
        constexprs={"BLOCK_SIZE": SWIGLU_BLOCK_SIZE}, num_warps=4, dtypes=list(HALF_TYPES),
        checks=[ttk.SameShape("gate", "up")], arch_override=arch)


def swiglu_reference(gate, up):
    g = gate.float()
    return (g * torch.sigmoid(g) * up.float()).to(gate.dtype)


def swiglu_inputs(device, size, cols=300, dtype=torch.float32):
    return _randn(size, cols, device=device, dtype=dtype), _randn(size, cols, device=device, dtype=dtype)


# ---------------------------------------------------------------------------------------------------------
# the gallery
# ---------------------------------------------------------------------------------------------------------

F32 = {torch.float32: (1e-5, 1e-5)}


@dataclass(frozen=True)
class Kernel:
    """One gallery kernel: its file, how it is declared, its torch reference and its inputs.

    ``edges``: ``(size, keyword arguments of inputs)`` cases at the sizes where kernels go wrong (1, a
    non-multiple of the block or tile, empty where the op allows it). ``tol``: ``(atol, rtol)`` against
    the reference per dtype. ``dtypes``: what ``inputs(..., dtype=)`` may ask for (templated kernels)."""

    name: str
    file: str
    kernel_name: str
    style: str
    declare: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Callable[..., tuple]
    tol: Mapping[torch.dtype, Tuple[float, float]] = field(default_factory=lambda: F32)
    edges: Sequence[Tuple[int, Dict[str, Any]]] = ()
    dtypes: Tuple[torch.dtype, ...] = (torch.float32,)
    spec: Optional[Callable[..., ttk.KernelSpec]] = None  # CUDA C++ kernels: the KernelSpec builder

    @property
    def triton(self) -> bool:
        return self.file.endswith(".py")

    @property
    def path(self) -> pathlib.Path:
        return KERNELS / self.file


GALLERY: Dict[str, Kernel] = {k.name: k for k in [
    Kernel("layernorm_forward", "layernorm_forward.cu", "layernorm_forward",
           "outputs first (out, mean, rstd, inp, weight, bias, N, C); a warp per row, __shfl_xor_sync",
           declare_layernorm, layernorm_reference, layernorm_inputs, tol={torch.float32: (1e-4, 1e-4)},
           edges=[(1, {"cols": 1}), (1, {}), (257, {"cols": 33}), (130, {"cols": 1024}), (0, {})],
           spec=layernorm_spec),
    Kernel("vector_add", "vector_add.cu", "vector_add",
           "size_t n first (CUDA samples); grid-stride loop",
           declare_vector_add, vector_add_reference, vector_add_inputs, tol={torch.float32: (0.0, 0.0)},
           edges=[(1, {}), (257, {}), (100_003, {}), (0, {})], spec=vector_add_spec),
    Kernel("matmul_tiled", "matmul_tiled.cu", "matmul_tiled",
           "2-D grid of 16x16 shared-memory tiles; (A, B, C, M, N, K)",
           declare_matmul, matmul_reference, matmul_inputs, tol={torch.float32: (1e-4, 1e-4)},
           edges=[(1, {"n": 1, "k": 1}), (17, {"n": 33, "k": 29}), (64, {"n": 48, "k": 160}), (0, {}),
                  (5, {"n": 0}), (3, {"k": 0})], spec=matmul_spec),
    Kernel("softmax_warp", "softmax_warp.cu", "softmax_rows",
           "extern __shared__ float smem[] sized by a shared_mem expression; __shfl_xor_sync",
           declare_softmax_warp, softmax_warp_reference, softmax_warp_inputs, tol={torch.float32: (1e-6, 3e-5)},
           edges=[(1, {"cols": 1}), (1, {}), (129, {"cols": 257}), (7, {"cols": 4000}), (0, {}), (3, {"cols": 0})],
           spec=softmax_warp_spec),
    Kernel("block_sum", "block_sum.cu", "block_sum<T, 256>",
           "template <typename T, int BLOCK>: kernel_name='block_sum<T, 256>' with dtypes",
           declare_block_sum, block_sum_reference, block_sum_inputs,
           tol={torch.float32: (1e-4, 1e-5), torch.float16: (2e-2, 2e-3), torch.bfloat16: (1.3e-1, 8e-3)},
           edges=[(1, {"cols": 1}), (1, {}), (33, {"cols": 257}), (0, {}), (4, {"cols": 0})], dtypes=HALF_TYPES,
           spec=block_sum_spec),
    Kernel("haxpy_half2", "haxpy_half2.cu", "haxpy_half2",
           "#include <cuda_fp16.h>, __hmul2/__hadd2 on packed half2; (int n, float alpha, x, y, out)",
           declare_haxpy, haxpy_reference, haxpy_inputs, tol={torch.float16: (1e-2, 2e-3)},
           edges=[(1, {}), (2, {}), (513, {}), (4096, {}), (0, {})], dtypes=(torch.float16,), spec=haxpy_spec),
    Kernel("transpose_strided", "transpose_strided.cu", "transpose_strided",
           "strides as long long parameters (SizeArg ctype 'long long'); 32x33 shared tile",
           declare_transpose, transpose_reference, transpose_inputs, tol={torch.float32: (0.0, 0.0)},
           edges=[(1, {"cols": 1}), (1, {}), (33, {"cols": 70}), (100, {"cols": 1}), (0, {}), (4, {"cols": 0})],
           spec=transpose_spec),
    Kernel("row_l2norm", "row_l2norm_cg.cu", "row_l2norm",
           "#include <cooperative_groups.h> + <cooperative_groups/reduce.h>; cg::tiled_partition<32>, cg::reduce",
           declare_row_l2norm, row_l2norm_reference, row_l2norm_inputs, tol={torch.float32: (1e-5, 1e-5)},
           edges=[(1, {"cols": 1}), (1, {}), (33, {"cols": 31}), (0, {}), (6, {"cols": 0})], spec=row_l2norm_spec),
    Kernel("rowmax", "rowmax_stdio.cu", "rowmax",
           "#include <stdio.h>, -INFINITY, printf under #ifdef; int64 indices output",
           declare_rowmax, rowmax_reference, rowmax_inputs, tol={torch.float32: (0.0, 0.0)},
           edges=[(1, {"cols": 1}), (1, {}), (129, {"cols": 129}), (0, {})], spec=rowmax_spec),
    Kernel("fused_bias_gelu", "fused_bias_gelu.py", "fused_bias_gelu",
           "Triton, outputs first, named sizes (out_ptr, x_ptr, b_ptr, n_rows, n_cols, BLOCK)",
           declare_fused_bias_gelu, fused_bias_gelu_reference, fused_bias_gelu_inputs,
           tol={torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)},
           edges=[(1, {"cols": 1}), (1, {}), (7, {"cols": 333}), (0, {})], dtypes=HALF_TYPES),
    Kernel("softmax_rows", "softmax_rows.py", "softmax_kernel",
           "Triton row softmax with input_row_stride / output_row_stride as SizeArgs",
           declare_softmax_rows, softmax_rows_reference, softmax_rows_inputs,
           tol={torch.float32: (1e-6, 3e-5), torch.float16: (1e-3, 4e-3), torch.bfloat16: (4e-3, 1.6e-2)},
           edges=[(1, {"cols": 1}), (1, {}), (9, {"cols": 1024}), (5, {"cols": 3001}), (0, {}), (3, {"cols": 0})],
           dtypes=HALF_TYPES),
    # widths on both sides of each power of two the block rounds up to (and of the num_warps steps at 2048
    # and 4096); no rows of width 0 beside rows > 0: next_power_of_2(0) is 0, a block Triton cannot compile
    Kernel("softmax_fused", "softmax_fused.py", "softmax_kernel",
           "Triton fused softmax: BLOCK_SIZE = next_power_of_2(n_cols), num_warps from BLOCK_SIZE, per call",
           declare_softmax_fused, softmax_fused_reference, softmax_fused_inputs,
           tol={torch.float32: (1e-6, 3e-5), torch.float16: (1e-3, 4e-3), torch.bfloat16: (4e-3, 1.6e-2)},
           edges=[(1, {"cols": 1}), (1, {}), (3, {"cols": 2}), (5, {"cols": 3}), (9, {"cols": 127}),
                  (9, {"cols": 128}), (9, {"cols": 129}), (7, {"cols": 1023}), (7, {"cols": 1024}),
                  (7, {"cols": 1025}), (5, {"cols": 2047}), (5, {"cols": 2048}), (5, {"cols": 2049}),
                  (4, {"cols": 4095}), (4, {"cols": 4096}), (4, {"cols": 4097}), (3, {"cols": 5000}),
                  (2, {"cols": 8193}), (0, {})],
           dtypes=HALF_TYPES),
    Kernel("matmul_bias", "matmul_bias_autotune.py", "matmul_bias_kernel",
           "@triton.autotune(configs=[5 tile shapes], key=['M', 'N', 'K']) as written; grouped tile order, strides",
           declare_matmul_bias, matmul_bias_reference, matmul_bias_inputs,
           tol={torch.float16: (1e-2, 4e-3), torch.bfloat16: (4e-2, 1.6e-2)},
           edges=[(1, {"n": 1, "k": 1}), (31, {"n": 33, "k": 17}), (64, {"n": 64, "k": 64}),
                  (65, {"n": 127, "k": 129}), (129, {"n": 257, "k": 31}), (0, {}), (5, {"n": 0}), (3, {"k": 0})],
           dtypes=MATMUL_BIAS_TYPES),
    Kernel("swiglu", "swiglu_heuristics.py", "swiglu_kernel",
           "@triton.heuristics({'EVEN_N': n_elements % BLOCK_SIZE == 0}) as written: unmasked when the block divides",
           declare_swiglu, swiglu_reference, swiglu_inputs,
           tol={torch.float32: (1e-5, 1e-5), torch.float16: (2e-3, 2e-3), torch.bfloat16: (1.6e-2, 1.6e-2)},
           edges=[(1, {"cols": 1}), (1, {"cols": 512}), (2, {"cols": 256}), (3, {"cols": 171}), (5, {"cols": 1023}),
                  (7, {"cols": 1024}), (0, {}), (4, {"cols": 0})],
           dtypes=HALF_TYPES),
]}

CUDA_KERNELS = [k for k in GALLERY.values() if not k.triton]
TRITON_KERNELS = [k for k in GALLERY.values() if k.triton]


def triton_missing() -> Optional[str]:
    """Why the Triton kernels cannot be declared here, or None."""
    if importlib.util.find_spec("triton") is None:
        return "triton is not installed (pip install 'trt-kernels[triton]')"
    return None


# ---------------------------------------------------------------------------------------------------------
# in place: (15) an AdamW step, (16) a KV-cache write through a slot mapping
# ---------------------------------------------------------------------------------------------------------

ADAMW_SCALARS = ("learning_rate", "beta1", "beta2", "beta1_correction", "beta2_correction", "eps", "weight_decay")


def adamw_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    n = ttk.Numel("params_memory")
    return ttk.KernelSpec(
        kernel_source=kernel_text("adamw_step.cu"), kernel_name="adamw_kernel",
        inputs=[ttk.InputDecl("params_memory", mutated=True), ttk.InputDecl("grads_memory"),
                ttk.InputDecl("m_memory", mutated=True), ttk.InputDecl("v_memory", mutated=True)]
        + [ttk.ScalarInput(name, float) for name in ADAMW_SCALARS],
        outputs=[], extras=[ttk.SizeArg("num_parameters", n, "long")],
        geometry=ttk.Custom(grid=(ttk.cdiv(n, 256),), block=(256,)),
        checks=[ttk.SameShape("params_memory", "grads_memory", "m_memory", "v_memory")], arch_override=arch)


def declare_adamw(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "adamw_step"), adamw_spec(arch))


def adamw_reference(params, grads, m, v, lr, beta1, beta2, c1, c2, eps, weight_decay):
    """The written inputs after the step (params, m, v), computed on copies."""
    m = beta1 * m + (1 - beta1) * grads
    v = beta2 * v + (1 - beta2) * grads * grads
    return params - lr * ((m / c1) / (torch.sqrt(v / c2) + eps) + weight_decay * params), m, v


def adamw_inputs(device, size):
    step = 3
    return (_randn(size, device=device), _randn(size, device=device), _randn(size, device=device),
            torch.rand(size, device=device), 1e-3, 0.9, 0.999, 1 - 0.9 ** step, 1 - 0.999 ** step, 1e-8, 0.01)


def kv_cache_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=kernel_text("kv_cache_write.cu"), kernel_name="reshape_and_cache",
        inputs=[ttk.InputDecl("key", ndim=2), ttk.InputDecl("value", ndim=2),
                ttk.InputDecl("key_cache", ndim=2, mutated=True), ttk.InputDecl("value_cache", ndim=2, mutated=True),
                ttk.InputDecl("slot_mapping", dtype=torch.int64, ndim=1)],
        outputs=[], extras=[ttk.SizeArg("num_tokens", ttk.DimSize("key", 0)),
                            ttk.SizeArg("head_size", ttk.DimSize("key", 1))],
        geometry=ttk.Custom(grid=(ttk.DimSize("key", 0),), block=(128,)),
        checks=[ttk.SameShape("key", "value"), ttk.SameShape("key_cache", "value_cache"),
                ttk.SameDim(("key", 1), ("key_cache", 1)), ttk.SameDim(("key", 0), ("slot_mapping", 0))],
        arch_override=arch)


def declare_kv_cache(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "kv_cache_write"), kv_cache_spec(arch))


def kv_cache_reference(key, value, key_cache, value_cache, slot_mapping):
    """The caches after the write (key_cache, value_cache), computed on copies."""
    kc, vc = key_cache.clone(), value_cache.clone()
    keep = slot_mapping >= 0
    kc[slot_mapping[keep]] = key[keep]
    vc[slot_mapping[keep]] = value[keep]
    return kc, vc


def kv_cache_inputs(device, size, head_size=64, slots=512):
    """``size`` tokens written to distinct slots of a ``slots``-row cache, every fourth one padding (-1)."""
    slots = max(slots, size)
    slot_mapping = torch.randperm(slots, device=device)[:size]
    slot_mapping[::4] = -1
    return (_randn(size, head_size, device=device), _randn(size, head_size, device=device),
            _randn(slots, head_size, device=device), _randn(slots, head_size, device=device), slot_mapping)


# ---------------------------------------------------------------------------------------------------------
# sizes the kernel decides: (17) nonzero by an ordered block scan, (18) a score-threshold box filter
# ---------------------------------------------------------------------------------------------------------

SCAN_THREADS = 256  # the kernels' THREADS: one block


def nonzero_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    return ttk.KernelSpec(
        kernel_source=kernel_text("nonzero_scan.cu"), kernel_name="nonzero_2d",
        inputs=[ttk.InputDecl("x", ndim=2)],
        # as many (row, col) pairs as the kernel finds, at most one per element; it writes the count itself
        outputs=[ttk.OutputDecl("indices", shape=(ttk.Written("num_nonzero", max=ttk.Numel("x")), 2),
                                dtype=torch.int64)],
        extras=[ttk.SizeArg("rows", ttk.DimSize("x", 0)), ttk.SizeArg("cols", ttk.DimSize("x", 1))],
        geometry=ttk.Custom(grid=(1,), block=(SCAN_THREADS,)), arch_override=arch)


def declare_nonzero(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "nonzero_scan"), nonzero_spec(arch))


def nonzero_reference(x):
    return torch.nonzero(x)


def nonzero_inputs(device, size, cols=37, zeros=0.5):
    """A ``size`` x ``cols`` matrix of random values, about a ``zeros`` share of them zero."""
    x = _randn(size, cols, device=device)
    return (x.masked_fill(torch.rand(size, cols, device=device) < zeros, 0.0),)


def score_filter_spec(arch: Optional[str] = None) -> ttk.KernelSpec:
    n = ttk.DimSize("scores", 0)
    kept = ttk.Written("num_kept", max=n, dtype=torch.int64)  # one count for both outputs
    return ttk.KernelSpec(
        kernel_source=kernel_text("score_filter.cu"), kernel_name="filter_boxes",
        inputs=[ttk.InputDecl("boxes", ndim=2), ttk.InputDecl("scores", ndim=1),
                ttk.ScalarInput("score_threshold", float)],
        outputs=[ttk.OutputDecl("kept_boxes", shape=(kept, 4)), ttk.OutputDecl("kept_scores", shape=(kept,))],
        extras=[ttk.SizeArg("num_boxes", n)],
        geometry=ttk.Custom(grid=(1,), block=(SCAN_THREADS,)),
        checks=[ttk.SameDim(("boxes", 0), ("scores", 0)), ttk.SameDim(("boxes", 1), 4)], arch_override=arch)


def declare_score_filter(name: Optional[str] = None, arch: Optional[str] = None):
    return ttk.cuda_kernel_op(_op_name(name, "score_filter"), score_filter_spec(arch))


def score_filter_reference(boxes, scores, score_threshold):
    keep = scores > score_threshold
    return boxes[keep], scores[keep]


def score_filter_inputs(device, size, threshold=0.5):
    return _randn(size, 4, device=device), torch.rand(size, device=device), threshold


#: kernels whose output sizes the kernel decides (ttk.Written): eager reads the count back and returns the outputs
#: at their actual size; in TensorRT each count is a plugin's size tensor (docs/tensorrt.md)
DATA_DEPENDENT: Dict[str, Kernel] = {k.name: k for k in [
    Kernel("nonzero_scan", "nonzero_scan.cu", "nonzero_2d",
           "torch.nonzero of a matrix by one block's ordered scan (warp shuffles); the count written at the end",
           declare_nonzero, nonzero_reference, nonzero_inputs, tol={torch.int64: (0.0, 0.0)},
           edges=[(1, {"cols": 1}), (1, {"cols": 1, "zeros": 1.0}), (3, {"cols": 255}), (5, {"cols": 257}),
                  (7, {"zeros": 0.0}), (11, {"zeros": 1.0}), (0, {}), (4, {"cols": 0})],
           spec=nonzero_spec),
    Kernel("score_filter", "score_filter.cu", "filter_boxes",
           "boxes above a score threshold with their scores, in order (warp ballots); an int64 count for both",
           declare_score_filter, score_filter_reference, score_filter_inputs, tol={torch.float32: (0.0, 0.0)},
           edges=[(1, {}), (1, {"threshold": 2.0}), (255, {}), (257, {}), (300, {"threshold": -1.0}),
                  (513, {"threshold": 2.0}), (0, {})],
           spec=score_filter_spec),
]}


@dataclass(frozen=True)
class InPlaceKernel:
    """A gallery kernel that writes some of its inputs (``written``: their argument positions) and returns
    nothing; ``reference`` returns what those inputs hold after the call."""

    name: str
    file: str
    kernel_name: str
    style: str
    declare: Callable[..., Any]
    reference: Callable[..., Any]
    inputs: Callable[..., tuple]
    written: Tuple[int, ...]
    edges: Sequence[int] = (0, 1, 257)
    spec: Optional[Callable[..., ttk.KernelSpec]] = None


IN_PLACE: Dict[str, InPlaceKernel] = {k.name: k for k in [
    InPlaceKernel("adamw_step", "adamw_step.cu", "adamw_kernel",
                  "an optimizer step writing params, m and v in place; long num_parameters; bias corrections "
                  "from the host", declare_adamw, adamw_reference, adamw_inputs, written=(0, 2, 3),
                  edges=(0, 1, 255, 100_003), spec=adamw_spec),
    InPlaceKernel("kv_cache_write", "kv_cache_write.cu", "reshape_and_cache",
                  "new keys/values scattered into a paged cache at int64 slots (-1: padding); <stdint.h>",
                  declare_kv_cache, kv_cache_reference, kv_cache_inputs, written=(2, 3), edges=(0, 1, 37),
                  spec=kv_cache_spec),
]}


def check_in_place(kernel: InPlaceKernel, op, args) -> Tuple[bool, float]:
    """Run ``op`` on ``args`` and compare what it wrote with the reference on copies: (equal within 1e-5,
    max abs error)."""
    want = kernel.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args])
    ok = op(*args) is None
    got = [args[i] for i in kernel.written]
    for g, w in zip(got, want):
        ok &= bool(torch.allclose(g, w, atol=1e-5, rtol=1e-5))
    return ok, max_error(tuple(got), tuple(want))


class OneOpModule(torch.nn.Module):
    """One gallery op as a module, for torch.export, torch.compile and TensorRT: its scalar arguments are fixed
    attributes, its tensors the module's inputs (each a named parameter of ``forward``: Torch-TensorRT maps its
    inputs, and their dynamic shapes, to those names; :func:`one_op_module` picks the subclass)."""

    def __init__(self, op, args):
        super().__init__()
        self.op = op
        self.template = [None if isinstance(a, torch.Tensor) else a for a in args]

    def arguments(self, tensors):
        it = iter(tensors)
        return [next(it) if a is None else a for a in self.template]

    def call(self, tensors):
        return self.op(*self.arguments(tensors))


class _One1(OneOpModule):
    def forward(self, t0):
        return self.call((t0,))


class _One2(OneOpModule):
    def forward(self, t0, t1):
        return self.call((t0, t1))


class _One3(OneOpModule):
    def forward(self, t0, t1, t2):
        return self.call((t0, t1, t2))


class _One4(OneOpModule):
    def forward(self, t0, t1, t2, t3):
        return self.call((t0, t1, t2, t3))


def one_op_module(op, args) -> OneOpModule:
    """``op`` called with ``args`` (its arguments in call order) as a module of its tensor arguments."""
    n = sum(isinstance(a, torch.Tensor) for a in args)
    return (_One1, _One2, _One3, _One4)[n - 1](op, args)



def declare_all(arch: Optional[str] = None) -> Dict[str, Any]:
    """Declare every gallery kernel (the Triton ones where triton is installed) as ``gallery::<name>``."""
    skip = triton_missing()
    ops = {k.name: k.declare(arch=arch) for k in GALLERY.values() if not (k.triton and skip)}
    ops.update({k.name: k.declare(arch=arch) for k in IN_PLACE.values()})
    ops.update({k.name: k.declare(arch=arch) for k in DATA_DEPENDENT.values()})
    return ops


def _first(out):
    return out if isinstance(out, (tuple, list)) else (out,)


def max_error(got, want) -> float:
    errs = [(g.double() - w.double()).abs().max().item() for g, w in zip(_first(got), _first(want)) if g.numel()]
    return max(errs, default=0.0)


def check(kernel: Kernel, op, args) -> Tuple[bool, float]:
    """Run ``op`` on ``args`` and compare with the reference: (within tolerance, max abs error)."""
    got, want = _first(op(*args)), _first(kernel.reference(*args))
    ok = len(got) == len(want)
    for g, w in zip(got, want):
        ok &= g.shape == w.shape and g.dtype == w.dtype
        atol, rtol = kernel.tol.get(w.dtype, (0.0, 0.0))
        ok &= bool(torch.allclose(g.double(), w.double(), atol=atol, rtol=rtol))
    return ok, max_error(got, want)


def main() -> int:
    ops = declare_all()
    skipped = triton_missing()
    print(f"declared {len(ops)} gallery ops" + (f" (Triton kernels skipped: {skipped})" if skipped else ""))
    if not torch.cuda.is_available():
        for k in [*GALLERY.values(), *IN_PLACE.values(), *DATA_DEPENDENT.values()]:
            if k.name in ops:
                print(f"  {NAMESPACE}::{k.name:18s} kernels/{k.file:24s} {k.style}")
        print("examples/gallery/declare.py: not run: it launches its kernels on a CUDA GPU, and none is visible "
              "here (torch.cuda.is_available() is False). The declarations above compiled and passed the "
              "parameter check.", file=sys.stderr)
        return 1
    ok_all = True
    print(f"{'op':28s} {'file':24s} {'dtype':9s} {'shape':14s} {'max abs err':>12s}  ok")
    for k in GALLERY.values():
        if k.name not in ops:
            continue
        for dtype in k.dtypes:
            kw = {"dtype": dtype} if len(k.dtypes) > 1 else {}
            args = k.inputs("cuda", 300, **kw)
            ok, err = check(k, ops[k.name], args)
            ok_all &= ok
            shape = next(a for a in args if isinstance(a, torch.Tensor)).shape
            print(f"{NAMESPACE + '::' + k.name:28s} {k.file:24s} {str(dtype)[6:]:9s} {str(tuple(shape)):14s} "
                  f"{err:12.3g}  {'yes' if ok else 'NO'}")
    for k in IN_PLACE.values():
        args = k.inputs("cuda", 300)
        ok, err = check_in_place(k, ops[k.name], args)
        ok_all &= ok
        print(f"{NAMESPACE + '::' + k.name:28s} {k.file:24s} {'float32':9s} {str(tuple(args[0].shape)):14s} "
              f"{err:12.3g}  {'yes' if ok else 'NO'} (in place)")
    for k in DATA_DEPENDENT.values():
        args = k.inputs("cuda", 300)
        ok, err = check(k, ops[k.name], args)
        ok_all &= ok
        got = _first(ops[k.name](*args))[0].shape
        print(f"{NAMESPACE + '::' + k.name:28s} {k.file:24s} {'float32':9s} {str(tuple(args[0].shape)):14s} "
              f"{err:12.3g}  {'yes' if ok else 'NO'} (size {got[0]} written by the kernel)")
    return 0 if ok_all else 1


if __name__ == "__main__":
    raise SystemExit(main())
