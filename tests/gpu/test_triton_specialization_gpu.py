"""Triton's launch-time specialization on the GPU: each call launches the code compiled for its own key
(trt_kernels.recipe), so views at odd offsets, sizes not divisible by 16 and sizes of 1 get code that assumes
nothing they break, with the right answer, through the Python launcher, the native kernel, TensorRT's JIT
impl (jit_replay) and its AOT launch (aot_replay, where the inputs are copied to aligned memory as TensorRT's
are)."""

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")

import triton_kernels as tk  # noqa: E402
from kernels import unique  # noqa: E402
from trt_kernels import registry  # noqa: E402
from trt_kernels.eager import native  # noqa: E402
from trt_kernels.eager.fastpath import build_launcher  # noqa: E402
from trt_kernels.library.definition import native_slot  # noqa: E402
from trt_kernels.recipe import spec_facts  # noqa: E402
from trt_kernels.testing import _standin as standin  # noqa: E402

DT = pytest.mark.parametrize("dtype", tk.HALF, ids=["fp32", "fp16", "bf16"])
TOL = {torch.float32: 1e-5, torch.float16: 1e-3, torch.bfloat16: 1e-2}
needs_trtp = pytest.mark.skipif(standin.unavailable_reason() is not None,
                                reason=f"NVIDIA tensorrt.plugin sources unavailable: {standin.unavailable_reason()}")


@pytest.fixture(scope="module")
def names():
    n = {k: unique("tri_spec_gpu") for k in ("scale", "rms")}
    tk.declare_scale(n["scale"], tactics=False)
    tk.declare_rmsnorm(n["rms"])
    return n


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def _view(n_elems, offset, dtype):
    """A contiguous view of fresh random data starting ``offset`` elements into its allocation."""
    return torch.randn(n_elems + offset, device="cuda", dtype=dtype)[offset:]


def _keys(name):
    """Every specialization key the op's launchers have launched, and the op's spec."""
    kop = registry.get(name)
    fns = list(kop.cuda_impl.launchers.values())
    return {k for f in fns for k in f.specs}, fns[0].recipe.spec


@DT
@pytest.mark.parametrize("n", [0, 1, 17, 1000, 4096, 70001])
@pytest.mark.parametrize("offset", [0, 1, 3, 8])
def test_elementwise_at_every_alignment_and_size(names, dtype, n, offset):
    x = _view(n, offset, dtype)
    torch.testing.assert_close(_op(names["scale"])(x, -0.75), (x.float() * -0.75 + 1).to(dtype), atol=TOL[dtype],
                               rtol=TOL[dtype])


@DT
@pytest.mark.parametrize("shape", [(64, 4096), (7, 333), (5, 1), (1, 16), (3, 48), (0, 32), (4, 0)])
@pytest.mark.parametrize("offset", [0, 1, 5])
def test_rmsnorm_at_every_alignment_and_size(names, dtype, shape, offset):
    x = _view(shape[0] * shape[1], offset, dtype).view(shape)
    w = _view(shape[1], offset, dtype)
    tol = max(TOL[dtype], 2e-2 if dtype != torch.float32 else 1e-5)
    torch.testing.assert_close(_op(names["rms"])(x, w, 1e-6), tk.rmsnorm_ref(x, w, 1e-6), atol=tol, rtol=tol)


def test_a_misaligned_view_gets_the_code_that_assumes_nothing_of_it(names):
    """The aligned call and the misaligned call (x[1:]) launch different code; the misaligned one's key does not
    say x is aligned, and its answer is right."""
    op, name = _op(names["rms"]), names["rms"]
    w = torch.randn(256, device="cuda")
    aligned = torch.randn(32, 256, device="cuda")
    mis = _view(32 * 256, 1, torch.float32).view(32, 256)
    assert aligned.data_ptr() % 16 == 0 and mis.data_ptr() % 16 == 4
    torch.testing.assert_close(op(aligned, w, 1e-6), tk.rmsnorm_ref(aligned, w, 1e-6))
    torch.testing.assert_close(op(mis, w, 1e-6), tk.rmsnorm_ref(mis, w, 1e-6))
    keys, spec = _keys(name)
    x_facts = {0 in spec_facts(spec, k)[0] for k in keys}
    assert x_facts == {True, False}  # one code assumed x aligned, another did not


def test_a_size_of_one_is_folded_into_the_code(names):
    """RMSNorm over a last axis of 1: D == 1 becomes a constant of the code (Triton's rule), the launch passes one
    value fewer, and the answer is right."""
    x, w = torch.randn(9, 1, device="cuda"), torch.randn(1, device="cuda")
    torch.testing.assert_close(_op(names["rms"])(x, w, 1e-6), tk.rmsnorm_ref(x, w, 1e-6))
    kop = registry.get(names["rms"])
    n = len(kop.sig.params(torch.float32))
    folded = [s for f in kop.cuda_impl.launchers.values() for s in f.specs.values() if len(s.kept) < n]
    assert folded and all(3 not in s.kept for s in folded)  # D, the kernel's fourth parameter


def test_the_native_kernel_launches_every_key_it_has_seen(names):
    slot = native_slot(names["scale"])
    if slot is None:
        pytest.skip("the native kernel is not used here")
    op = _op(names["scale"])
    calls = [torch.randn(4096, device="cuda"), _view(4096, 1, torch.float32), _view(4099, 2, torch.float32)]
    for x in calls:  # the first call of each key compiles (or reads) its code in Python
        op(x, 2.0)
    before = native.launches(slot)
    for _ in range(3):
        for x in calls:
            torch.testing.assert_close(op(x, 2.0), x * 2.0 + 1.0)
    assert native.launches(slot) - before == 3 * len(calls)


def test_the_python_launcher_without_the_compiled_launcher(names):
    """cuda.bindings' launch (no C compiler) of specialized code, a folded parameter included."""
    kop = registry.get(names["rms"])
    recipe = kop.recipe(torch.float32, (2, 1), 1)
    fn = build_launcher(kop, recipe, kop.loaded_kernel(torch.float32, torch.cuda.current_device()), claunch=None)
    for shape, offset in [((6, 64), 0), ((6, 64), 1), ((6, 1), 0), ((5, 37), 3)]:
        x = _view(shape[0] * shape[1], offset, torch.float32).view(shape)
        w = torch.randn(shape[1], device="cuda")
        torch.testing.assert_close(fn(x, w, 1e-6), tk.rmsnorm_ref(x, w, 1e-6))
    assert len(fn.specs) == 4


@needs_trtp
@pytest.mark.parametrize("shape", [(64, 256), (7, 333), (5, 1)])
def test_aot_replay_of_a_misaligned_view(names, shape):
    """TensorRT's AOT code assumes aligned pointers (and a static size divisible by 16): the replay copies the
    view to aligned memory as TensorRT's tensors are, and matches eager launched with the same facts bit for bit,
    and the torch reference."""
    from trt_kernels.testing import aot_replay

    x = _view(shape[0] * shape[1], 1, torch.float32).view(shape)
    w = torch.randn(shape[1], device="cuda")
    res = aot_replay(names["rms"], x, w, 1e-6)
    assert res.bitwise_equal, res.max_abs_diff()
    torch.testing.assert_close(res.outputs[0], tk.rmsnorm_ref(x, w, 1e-6))


@needs_trtp
def test_jit_replay_of_a_misaligned_view(names):
    from trt_kernels.testing import jit_replay

    x = _view(48 * 64, 3, torch.float32).view(48, 64)
    res = jit_replay(names["rms"], x, torch.randn(64, device="cuda"), 1e-6)
    torch.testing.assert_close(res.outputs[0], res.eager[0])
