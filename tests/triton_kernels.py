"""@triton.jit kernels shared by the Triton tests, the example and the benchmark (import only where
triton imports). Each follows the calling convention: tensor inputs, scalar inputs, extras, outputs."""

import torch
import triton
import triton.language as tl

import trt_kernels as ttk

HALF = [torch.float32, torch.float16, torch.bfloat16]


@triton.jit
def scale_shift_kernel(x_ptr, alpha, n, y_ptr, BLOCK: tl.constexpr):
    """y = x * alpha + 1 (masked elementwise, a float scalar); computed in fp32, rounded once."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (x * alpha + 1.0).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def rmsnorm_kernel(x_ptr, w_ptr, eps, D, y_ptr, BLOCK_D: tl.constexpr):
    """One program per row of x (rows x D): y = x / sqrt(mean(x^2) + eps) * w, in BLOCK_D chunks."""
    row = tl.program_id(0).to(tl.int64)
    base = row * D
    acc = tl.zeros([BLOCK_D], dtype=tl.float32)
    for off in range(0, D, BLOCK_D):
        cols = off + tl.arange(0, BLOCK_D)
        x = tl.load(x_ptr + base + cols, mask=cols < D, other=0.0).to(tl.float32)
        acc += x * x
    r = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / D + eps)
    for off in range(0, D, BLOCK_D):
        cols = off + tl.arange(0, BLOCK_D)
        m = cols < D
        x = tl.load(x_ptr + base + cols, mask=m, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=m, other=0.0).to(tl.float32)
        tl.store(y_ptr + base + cols, (x * r * w).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def add_mul_kernel(a_ptr, b_ptr, n, s_ptr, p_ptr, BLOCK: tl.constexpr):
    """Two outputs: s = a + b, p = a * b."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    a = tl.load(a_ptr + offs, mask=m)
    b = tl.load(b_ptr + offs, mask=m)
    tl.store(s_ptr + offs, a + b, mask=m)
    tl.store(p_ptr + offs, a * b, mask=m)


@triton.jit
def tma_copy_kernel(x_ptr, M, N, y_ptr, BM: tl.constexpr, BN: tl.constexpr):
    """A copy through device-side tensor descriptors: Triton gives it a global scratch buffer."""
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    src = tl.make_tensor_descriptor(x_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst = tl.make_tensor_descriptor(y_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    dst.store([pm * BM, pn * BN], src.load([pm * BM, pn * BN]))


def declare_scale(name, arch=None, tactics=True):
    return ttk.triton_kernel_op(
        name, scale_shift_kernel,
        inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),), constexprs={"BLOCK": 1024}, num_warps=4,
        tactics=[ttk.TritonConfig({"BLOCK": 256}, num_warps=2), ttk.TritonConfig({"BLOCK": 4096}, num_warps=8)]
        if tactics else (),
        dtypes=HALF, arch_override=arch)


def declare_rmsnorm(name, arch=None, block_d=1024, num_warps=4):
    # rows = numel / D; maximum(D, 1) keeps an empty last axis from dividing by zero
    return ttk.triton_kernel_op(
        name, rmsnorm_kernel,
        inputs=[ttk.InputDecl("x"), ttk.InputDecl("w"), ttk.ScalarInput("eps", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.DimSize("x", -1)],
        grid=(ttk.Numel("x") // ttk.maximum(ttk.DimSize("x", -1), 1),), constexprs={"BLOCK_D": block_d},
        num_warps=num_warps, dtypes=HALF, arch_override=arch)


MIXED = [(torch.float16, torch.float32), (torch.bfloat16, torch.float32), (torch.float32, torch.float32)]


def declare_rmsnorm_mixed(name, arch=None):
    """rmsnorm_kernel with x of type T (float16/bfloat16/float32) and w of type W (float32): two type
    parameters, and w's length checked against x's last axis."""
    return ttk.triton_kernel_op(
        name, rmsnorm_kernel,
        inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W"), ttk.ScalarInput("eps", float)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.DimSize("x", -1)],
        grid=(ttk.Numel("x") // ttk.maximum(ttk.DimSize("x", -1), 1),), constexprs={"BLOCK_D": 1024},
        type_params=("T", "W"), dtypes=MIXED, checks=[ttk.SameDim(("x", -1), ("w", 0))], arch_override=arch)


def declare_add_mul(name, arch=None):
    return ttk.triton_kernel_op(
        name, add_mul_kernel, inputs=[ttk.InputDecl("a"), ttk.InputDecl("b")],
        outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("a")), ttk.OutputDecl("p", shape=ttk.SameAs("a"))],
        extras=[ttk.Numel("a")], grid=lambda meta: (ttk.cdiv(ttk.Numel("a"), meta["BLOCK"]),),
        constexprs={"BLOCK": 512}, dtypes=HALF, arch_override=arch)


def declare_tma_copy(name, arch=None):
    return ttk.triton_kernel_op(
        name, tma_copy_kernel, inputs=[ttk.InputDecl("x", ndim=2)],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.DimSize("x", 0), ttk.DimSize("x", 1)],
        grid=lambda meta: (ttk.cdiv(ttk.DimSize("x", 0), meta["BM"]), ttk.cdiv(ttk.DimSize("x", 1), meta["BN"])),
        constexprs={"BM": 16, "BN": 16}, arch_override=arch)


def rmsnorm_ref(x, w, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w.float()).to(x.dtype)


@triton.jit
def row_softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_cols,
                       BLOCK_SIZE: tl.constexpr):
    """One program per row, the whole row in one block (BLOCK_SIZE >= n_cols), as Triton's tutorial writes
    it: the launcher computes BLOCK_SIZE and num_warps from n_cols."""
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_SIZE)
    x = tl.load(input_ptr + row * input_row_stride + cols, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    e = tl.exp(x)
    tl.store(output_ptr + row * output_row_stride + cols, (e / tl.sum(e, axis=0)).to(output_ptr.dtype.element_ty),
             mask=cols < n_cols)


def softmax_num_warps(meta):
    """num_warps as the tutorial's launcher picks it from BLOCK_SIZE."""
    return 16 if meta["BLOCK_SIZE"] >= 4096 else 8 if meta["BLOCK_SIZE"] >= 2048 else 4


def declare_row_softmax(name, **kw):
    rows = ttk.Numel("x") // ttk.DimSize("x", -1)
    args = dict(inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("output", shape=ttk.SameAs("x"))],
                params=["output", "x", "input_row_stride", "output_row_stride", "n_cols"],
                extras=[ttk.SizeArg("input_row_stride", ttk.DimSize("x", -1)),
                        ttk.SizeArg("output_row_stride", ttk.DimSize("x", -1)),
                        ttk.SizeArg("n_cols", ttk.DimSize("x", -1))],
                grid=(rows,), constexprs={"BLOCK_SIZE": ttk.next_power_of_2(ttk.DimSize("x", -1))},
                num_warps=softmax_num_warps, dtypes=HALF)
    args.update(kw)
    return ttk.triton_kernel_op(name, row_softmax_kernel, **args)


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=4),
                          triton.Config({"BLOCK": 512}, num_warps=8), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def tuned_axpb_kernel(out_ptr, x_ptr, a, b, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """out = a * x + b, autotuned over BLOCK; unmasked when the block divides n (a heuristic)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        x = tl.load(x_ptr + offs)
        tl.store(out_ptr + offs, (a * x.to(tl.float32) + b).to(out_ptr.dtype.element_ty))
    else:
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(out_ptr + offs, (a * x.to(tl.float32) + b).to(out_ptr.dtype.element_ty), mask=m)


def declare_tuned_axpb(name, kernel=tuned_axpb_kernel, **kw):
    args = dict(inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float), ttk.ScalarInput("b", float)],
                outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("x"))], extras=[ttk.SizeArg("n", ttk.Numel("x"))],
                grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),))
    args.update(kw)
    return ttk.triton_kernel_op(name, kernel, **args)


@triton.jit
def keep_positive_kernel(x_ptr, n, out_ptr, count_ptr, BLOCK: tl.constexpr):
    """One program: the positive values of x, in order, packed at the front of out; their count stored last (an
    output size the kernel decides). Each block's kept values get their slots from a running count and a cumsum."""
    kept = 0
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        keep = (x > 0).to(tl.int32)
        slot = kept + tl.cumsum(keep, axis=0) - 1
        tl.store(out_ptr + slot, x, mask=keep > 0)
        kept += tl.sum(keep, axis=0)
    tl.store(count_ptr, kept)


def declare_keep_positive(name, arch=None, per_call=False):
    """``per_call``: BLOCK computed at each call from the input's size (a variant per value: a JIT TensorRT plugin)."""
    block = (ttk.maximum(ttk.minimum(ttk.next_power_of_2(ttk.Numel("x")), 1024), 16) if per_call else 256)
    return ttk.triton_kernel_op(
        name, keep_positive_kernel, inputs=[ttk.InputDecl("x", ndim=1)],
        outputs=[ttk.OutputDecl("out", shape=(ttk.Written("count", max=ttk.Numel("x")),))],
        extras=[ttk.SizeArg("n", ttk.Numel("x"))], grid=(1,), constexprs={"BLOCK": block}, arch_override=arch)
