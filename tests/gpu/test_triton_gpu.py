"""Triton as a kernel source, GPU tier: eager (our cuLaunchKernel fast path on Triton's CUBIN) against
torch references on fresh random inputs and edge sizes, fp32/fp16/bf16; a kernel that needs a
scratch buffer; call-time errors; AOT replay (Triton's PTX as TensorRT launches it) bit for bit;
the JIT impl through NVIDIA's enqueue."""

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")

import triton_kernels as tk  # noqa: E402
import trt_kernels as ttk  # noqa: E402
from kernels import SIGMOID, unique  # noqa: E402
from trt_kernels import registry  # noqa: E402
from trt_kernels.testing import _standin as standin  # noqa: E402

DT = pytest.mark.parametrize("dtype", tk.HALF, ids=["fp32", "fp16", "bf16"])
TOL = {torch.float32: (1e-5, 1e-5), torch.float16: (1e-3, 1e-3), torch.bfloat16: (1e-2, 1e-2)}


@pytest.fixture(scope="module")
def ops():
    names = {k: unique("tri_gpu") for k in ("scale", "rms", "rms_wide", "am", "tma")}
    tk.declare_scale(names["scale"])
    tk.declare_rmsnorm(names["rms"])
    tk.declare_rmsnorm(names["rms_wide"], block_d=2048, num_warps=8)
    tk.declare_add_mul(names["am"])
    if torch.cuda.get_device_capability()[0] >= 9:  # device-side tensor descriptors need sm_90+
        tk.declare_tma_copy(names["tma"])
    sm90 = torch.cuda.get_device_capability()[0] >= 9
    return {k: _op(v) for k, v in names.items() if k != "tma" or sm90}, names


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def _rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


@DT
@pytest.mark.parametrize("n", [0, 1, 255, 1023, 1025, 4097, 1 << 20])
def test_masked_elementwise_with_float_scalar(ops, dtype, n):
    op = ops[0]["scale"]
    for _ in range(2):  # fresh inputs through the same launcher
        x = _rand(n, dtype=dtype)
        alpha = float(torch.randn(()).item())
        y = op(x, alpha)
        ref = (x.float() * alpha + 1.0).to(dtype)
        assert y.shape == x.shape and y.dtype == dtype
        torch.testing.assert_close(y, ref, atol=TOL[dtype][0], rtol=TOL[dtype][1])


def test_noncontiguous_and_nd_inputs(ops):
    op = ops[0]["scale"]
    x = _rand(37, 129).t()
    torch.testing.assert_close(op(x, 0.5), x * 0.5 + 1.0)
    x = _rand(3, 5, 7, 11)
    torch.testing.assert_close(op(x, -2.0), x * -2.0 + 1.0)


@DT
@pytest.mark.parametrize("shape", [(1, 1), (7, 333), (64, 1024), (5, 1500), (2, 3, 4096), (0, 128), (4, 0)])
def test_rmsnorm_over_the_last_axis(ops, dtype, shape):
    op = ops[0]["rms"]
    x = _rand(*shape, dtype=dtype)
    w = _rand(shape[-1], dtype=dtype)
    y = op(x, w, 1e-6)
    assert y.shape == x.shape and y.dtype == dtype
    torch.testing.assert_close(y, tk.rmsnorm_ref(x, w, 1e-6), atol=TOL[dtype][0] * 10, rtol=TOL[dtype][1] * 10)


@DT
def test_rmsnorm_wide_block_config(ops, dtype):
    x, w = _rand(33, 5000, dtype=dtype), _rand(5000, dtype=dtype)
    torch.testing.assert_close(ops[0]["rms_wide"](x, w, 1e-5), tk.rmsnorm_ref(x, w, 1e-5),
                               atol=TOL[dtype][0] * 10, rtol=TOL[dtype][1] * 10)


@DT
@pytest.mark.parametrize("n", [0, 1, 511, 513, 100003])
def test_two_outputs(ops, dtype, n):
    a, b = _rand(n, dtype=dtype), _rand(n, dtype=dtype)
    s, p = ops[0]["am"](a, b)
    torch.testing.assert_close(s, a + b, atol=0, rtol=0)
    torch.testing.assert_close(p, a * b, atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(16, 16), (48, 64), (100, 36)])
def test_kernel_with_a_scratch_buffer(ops, shape):
    """Triton's device-side tensor descriptors live in its global scratch buffer: eager allocates one
    of grid * global_scratch_size bytes per launch (the AOT plugin falls back to JIT)."""
    op, names = ops
    kop = registry.get(names["tma"])
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        pytest.skip("device-side tensor descriptors need sm_90+")
    assert kop.image(torch.float32, 1, f"sm_{major}{minor}").needs_scratch
    x = _rand(*shape)
    torch.testing.assert_close(op["tma"](x), x, atol=0, rtol=0)


def test_call_time_errors(ops):
    op = ops[0]["scale"]
    with pytest.raises(ttk.InputError, match="float64 is not one the kernel declares"):
        op(_rand(10).double(), 1.0)
    with pytest.raises((ttk.InputError, ttk.NoCudaDeviceError), match="CUDA"):
        op(torch.randn(10), 1.0)
    with pytest.raises(ttk.InputError, match="does not fit a 32-bit C float"):
        op(_rand(10), 1e300)
    x = _rand(10).requires_grad_()
    with pytest.raises(ttk.InputError, match="has no backward"):
        op(x, 1.0)
    with torch.no_grad():
        op(x, 1.0)


def test_same_stream_as_torch(ops):
    s = torch.cuda.Stream()
    x = _rand(1 << 22)
    with torch.cuda.stream(s):
        y = ops[0]["scale"](x, 3.0)
        z = y * 2
    s.synchronize()
    torch.testing.assert_close(z, (x * 3.0 + 1.0) * 2)


def test_torch_compile_fullgraph(ops):
    op = ops[0]["rms"]

    @torch.compile(fullgraph=True, dynamic=True)
    def f(x, w):
        return op(x, w, 1e-6) + 1

    for b in (3, 9):
        x, w = _rand(b, 256), _rand(256)
        torch.testing.assert_close(f(x, w), tk.rmsnorm_ref(x, w, 1e-6) + 1, atol=1e-4, rtol=1e-4)


def test_mixed_with_a_cuda_op_in_one_model(ops):
    name = unique("tri_gpu")
    cu = ttk.cuda_kernel_op(name, ttk.KernelSpec(
        kernel_source=SIGMOID, kernel_name="my_sigmoid", inputs=[ttk.InputDecl("x")],
        outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
        geometry=ttk.Elementwise(block=(256,))))
    x = _rand(17, 300)
    torch.testing.assert_close(cu(ops[0]["scale"](x, 0.25)), torch.sigmoid(x * 0.25 + 1.0), atol=1e-5, rtol=1e-5)


# ---------------- AOT / JIT replay ----------------

needs_trtp = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")


@needs_trtp
@DT
@pytest.mark.parametrize("tactic", [1, 2, 3])
@pytest.mark.parametrize("n", [1, 1025, 70000])
def test_aot_replay_bit_for_bit_every_tactic(ops, dtype, tactic, n):
    from trt_kernels.testing import aot_replay

    res = aot_replay(ops[1]["scale"], _rand(n, dtype=dtype), -0.75, tactic=tactic)
    assert res.tactic == tactic and res.kernel_name == "scale_shift_kernel"
    assert res.bitwise_equal, res.max_abs_diff()


@needs_trtp
@DT
@pytest.mark.parametrize("shape", [(1, 1), (7, 333), (64, 1024), (3, 2500)])
def test_aot_replay_rmsnorm(ops, dtype, shape):
    from trt_kernels.testing import aot_replay

    res = aot_replay(ops[1]["rms"], _rand(*shape, dtype=dtype), _rand(shape[-1], dtype=dtype), 1e-6)
    assert res.bitwise_equal, res.max_abs_diff()


@needs_trtp
@DT
def test_aot_replay_two_outputs(ops, dtype):
    from trt_kernels.testing import aot_replay

    res = aot_replay(ops[1]["am"], _rand(3001, dtype=dtype), _rand(3001, dtype=dtype))
    assert len(res.outputs) == 2 and res.bitwise_equal


@needs_trtp
def test_aot_replay_empty_launches_nothing(ops):
    from trt_kernels.testing import aot_replay

    res = aot_replay(ops[1]["scale"], _rand(0, 4), 1.0)
    assert not res.launched and res.bitwise_equal


@needs_trtp
@pytest.mark.parametrize("which", ["scale", "rms", "am", "tma"])
def test_jit_replay_through_nvidia_enqueue(ops, which):
    from trt_kernels.testing import jit_replay

    if which == "tma" and torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("sm_90+")
    x = _rand(48, 64)
    args = {"scale": (x, 1.5), "rms": (x, _rand(64), 1e-6), "am": (x, _rand(48, 64)), "tma": (x,)}[which]
    res = jit_replay(ops[1][which], *args)
    assert res.bitwise_equal, res.max_abs_diff()
