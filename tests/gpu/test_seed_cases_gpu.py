"""The seven seed cases, eager, on the GPU: fresh random inputs, edge sizes, bad inputs."""

import subprocess
import sys

import pytest
import torch

import trt_kernels as ttk
from support import ROOT, load_example


@pytest.fixture(scope="module")
def ex():
    return load_example("cuda_kernel_op")


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, device="cuda", dtype=dtype)


SIZES_1D = [1, 255, 256, 257, 1000, 4097, 0]
SHAPES = [(1,), (257,), (33, 47), (0,), (4, 0, 3), (2, 3, 5, 7)]


@pytest.mark.parametrize("shape", SHAPES)
def test_sigmoid(ex, shape):
    x = rnd(*shape)
    y = torch.ops.kern_ex.sigmoid(x)
    assert y.shape == x.shape and y.dtype == x.dtype and y.device == x.device
    torch.testing.assert_close(y, torch.sigmoid(x), atol=1e-6, rtol=1e-5)


@pytest.mark.parametrize("shape", SHAPES)
def test_add(ex, shape):
    a, b = rnd(*shape), rnd(*shape)
    torch.testing.assert_close(torch.ops.kern_ex.add(a, b), a + b, atol=0, rtol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_scale(ex, shape):
    x = rnd(*shape)
    alpha = float(torch.randn(()).item())
    torch.testing.assert_close(torch.ops.kern_ex.scale(x, alpha), x * alpha, atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(1, 1), (1, 257), (257, 1), (33, 47), (16, 16), (0, 5), (5, 0), (100, 300)])
def test_relu_2d(ex, shape):
    x = rnd(*shape)
    torch.testing.assert_close(torch.ops.kern_ex.relu_2d(x), torch.relu(x), atol=0, rtol=0)


@pytest.mark.parametrize("shape", [(1, 1), (8, 256), (3, 257), (33, 47), (1, 5000), (0, 8), (2, 3, 9)])
def test_row_sum(ex, shape):
    x = rnd(*shape)
    y = torch.ops.kern_ex.row_sum(x)
    assert y.shape == shape[:-1]
    torch.testing.assert_close(y, x.sum(-1), atol=1e-4, rtol=1e-5)


def test_row_sum_empty_rows_sum_to_zero(ex):
    x = rnd(4, 0)
    y = torch.ops.kern_ex.row_sum(x)
    assert y.shape == (4,)
    torch.testing.assert_close(y, torch.zeros(4, device="cuda"), atol=0, rtol=0)


@pytest.mark.parametrize("n", SIZES_1D)
def test_repeat2_override_path(ex, n):
    x = rnd(n)
    torch.testing.assert_close(torch.ops.kern_ex.repeat2(x), torch.repeat_interleave(x, 2, dim=0), atol=0, rtol=0)


@pytest.mark.parametrize("shape", SHAPES)
def test_sin_cos_multi_output(ex, shape):
    x = rnd(*shape)
    s, c = torch.ops.kern_ex.sin_cos(x)
    torch.testing.assert_close(s, torch.sin(x), atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(c, torch.cos(x), atol=1e-5, rtol=1e-4)


def test_outputs_fully_written(ex):
    """Poisoned caching-allocator memory must be overwritten everywhere."""
    for _ in range(3):
        junk = torch.full((4097,), float("nan"), device="cuda")
        del junk
        x = rnd(4097)
        y = torch.ops.kern_ex.sigmoid(x)
        assert not torch.isnan(y).any()


def test_non_contiguous_inputs_are_made_contiguous(ex):
    x = rnd(47, 33).t()
    assert not x.is_contiguous()
    torch.testing.assert_close(torch.ops.kern_ex.relu_2d(x), torch.relu(x), atol=0, rtol=0)
    a, b = rnd(64, 8)[:, ::2], rnd(8, 64).t()[:, :4]
    torch.testing.assert_close(torch.ops.kern_ex.add(a, b), a + b, atol=0, rtol=0)


def test_runs_on_current_stream(ex):
    s = torch.cuda.Stream()
    x = rnd(1 << 20)
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        y = torch.ops.kern_ex.sigmoid(x)
        z = torch.ops.kern_ex.scale(y, 3.0)
    s.synchronize()
    torch.testing.assert_close(z, torch.sigmoid(x) * 3.0, atol=1e-5, rtol=1e-5)


def test_cpu_tensor_raises(ex):
    with pytest.raises(ttk.InputError, match=r"kern_ex::sigmoid runs on CUDA devices only; got x on cpu"):
        torch.ops.kern_ex.sigmoid(torch.randn(8))


def test_mixed_devices_raise(ex):
    with pytest.raises((ttk.InputError, RuntimeError), match="device"):
        torch.ops.kern_ex.add(rnd(8), torch.randn(8))


@pytest.mark.parametrize("dtype", [torch.float16, torch.float64, torch.bfloat16, torch.int32])
def test_undeclared_dtype_raises(ex, dtype):
    x = rnd(8).to(dtype)
    with pytest.raises(ttk.InputError,
                       match=r"kern_ex::sigmoid: input dtype .* is not one the kernel declares \(float32\)"):
        torch.ops.kern_ex.sigmoid(x)
    with pytest.raises(ttk.InputError, match="input 'b' has dtype"):
        torch.ops.kern_ex.add(rnd(8), x)


def test_numel_beyond_int32_raises_before_allocating(ex):
    x = rnd(1).expand(2**31)  # a view: nothing of that size is allocated
    before = torch.cuda.memory_allocated()
    with pytest.raises(ttk.InputError,
                       match=r"extras\[0\] \(Numel\('x'\)\) = 2147483648 does not fit the kernel's 32-bit int"):
        torch.ops.kern_ex.sigmoid(x)
    assert torch.cuda.memory_allocated() == before


def test_dimsize_beyond_int32_raises(ex):
    x = rnd(1, 1).expand(1, 2**31)
    with pytest.raises(ttk.InputError, match="does not fit the kernel's 32-bit int"):
        torch.ops.kern_ex.relu_2d(x)


def test_grid_limit_raises(ex):
    x = rnd(1, 1).expand(65536 * 16 + 1, 1)  # grid y over the limit
    with pytest.raises(ttk.InputError, match="exceeds CUDA's limits"):
        torch.ops.kern_ex.relu_2d(x)


def test_rank_too_small_raises(ex):
    with pytest.raises(ttk.InputError, match=r"extras\[1\]: axis 1 is out of range for input 'x' of rank 1"):
        torch.ops.kern_ex.relu_2d(rnd(5))


def test_float_scalar_out_of_range_raises(ex):
    with pytest.raises(ttk.InputError, match=r"scalar 'alpha' = 1e\+39 does not fit a 32-bit C float"):
        torch.ops.kern_ex.scale(rnd(4), 1e39)


def test_example_script_prints_all_cases_match():
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "cuda_kernel_op.py")], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "7/7 cases match their references eagerly" in out.stdout
    assert out.stdout.count("eager matches reference: True") == 7
