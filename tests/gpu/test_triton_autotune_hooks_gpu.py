"""@triton.autotune's options on real kernels, eager on the GPU: ``restore_value`` (an in-place accumulate that the
tuning launches many times, yet the caller's tensor gets exactly one update), ``reset_to_zero`` (an atomic-add
sum into a tensor that must start at zero), ``prune_configs_by`` (the configs pruned away are never launched;
``perf_model`` + ``top_k``), and the choice kept on disk (forgotten in memory, or a second process: not timed
again). Fresh random inputs, sizes of 1 and not a multiple of any block.

Timing is observed by wrapping ``trt_kernels.eager.cuda_kernel._tune`` (every tuning goes through it) or through the
autotuner's own ``pre_hook``. The module compiles and records into a cache directory of its own, so a record left
by an earlier run never stands in for a tuning these tests expect."""

import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

triton = pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")

import triton.language as tl  # noqa: E402

import trt_kernels as ttk  # noqa: E402
from kernels import unique  # noqa: E402
from trt_kernels.eager import cuda_kernel as ck  # noqa: E402

HERE = pathlib.Path(__file__).resolve()
CONFIGS = [triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 256}, num_warps=4),
           triton.Config({"BLOCK": 512}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)]
LAUNCHES_PER_CONFIG = 11  # _tune: one warm-up launch and a median of 10
SIZES = [1, 1000, 4097, 100_003]


@triton.jit
def axpy_into_kernel(x_ptr, y_ptr, alpha, n, BLOCK: tl.constexpr):
    """y += alpha * x, in place (fp32 math, one rounding)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m).to(tl.float32)
    y = tl.load(y_ptr + offs, mask=m).to(tl.float32)
    tl.store(y_ptr + offs, (y + alpha * x).to(y_ptr.dtype.element_ty), mask=m)


@triton.jit
def atomic_sum_kernel(x_ptr, total_ptr, n, BLOCK: tl.constexpr):
    """total += sum(x): each program adds its block's sum atomically, so total must start at zero."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.atomic_add(total_ptr, tl.sum(x, axis=0))


@triton.jit
def affine_kernel(x_ptr, n, out_ptr, BLOCK: tl.constexpr):
    """out = 3 x + 1 (a fresh output)."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 3.0 + 1.0, mask=m)


def declare_axpy(name, kernel):
    return ttk.triton_kernel_op(
        name, kernel, inputs=[ttk.InputDecl("x"), ttk.InputDecl("y", mutated=True), ttk.ScalarInput("alpha", float)],
        outputs=[], extras=[ttk.SizeArg("n", ttk.Numel("x"))], checks=[ttk.SameShape("x", "y")],
        grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),), dtypes=[torch.float32, torch.float16])


def declare_sum(name, kernel):
    return ttk.triton_kernel_op(
        name, kernel, inputs=[ttk.InputDecl("x"), ttk.InputDecl("total", mutated=True)], outputs=[],
        extras=[ttk.SizeArg("n", ttk.Numel("x"))], grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),))


def declare_affine(name, kernel):
    return ttk.triton_kernel_op(
        name, kernel, inputs=[ttk.InputDecl("x")], outputs=[ttk.OutputDecl("out", shape=ttk.SameAs("x"))],
        extras=[ttk.SizeArg("n", ttk.Numel("x"))], grid=lambda meta: (ttk.cdiv(ttk.Numel("x"), meta["BLOCK"]),))


@pytest.fixture(scope="module", autouse=True)
def own_cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        root = tmp_path_factory.mktemp("ttk-autotune-cache")
        mp.setenv("TRT_KERNELS_CACHE_DIR", str(root))
        mp.delenv("TRT_KERNELS_CACHE", raising=False)
        mp.delenv("TRT_KERNELS_SHARED_CACHE_DIR", raising=False)
        yield root


@pytest.fixture
def tunings(monkeypatch):
    """Each tuning as it happens: the number of configs timed."""
    seen = []
    real = ck._tune

    def counting(launchers, *a, **k):
        seen.append(len(launchers))
        return real(launchers, *a, **k)

    monkeypatch.setattr(ck, "_tune", counting)
    return seen


def choices(name):
    return dict(ck._CHOICES[name])


# ---------------- restore_value: an in-place accumulate ----------------


@pytest.fixture(scope="module")
def axpy():
    restored = triton.autotune(configs=CONFIGS, key=["n"], restore_value=["y_ptr"])(axpy_into_kernel)
    plain = triton.autotune(configs=CONFIGS, key=["n"])(axpy_into_kernel)
    return declare_axpy(unique("tri_at_gpu"), restored), declare_axpy(unique("tri_at_gpu"), plain)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("n", SIZES)
def test_restore_value_leaves_exactly_one_update(axpy, tunings, n, dtype):
    op = axpy[0]
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-3, atol=1e-3)
    for _ in range(2):  # the tuning call, then a call whose choice comes from memory
        x, y = (torch.randn(n, device="cuda", dtype=dtype) for _ in range(2))
        y0 = y.clone()
        assert op(x, y, 0.75) is None
        want = (y0.float() + 0.75 * x.float()).to(dtype)
        torch.testing.assert_close(y, want, **tol)
        assert tunings == [len(CONFIGS)]  # timed once per key (n, dtypes): 4 configs, several launches each


def test_without_restore_value_the_tuning_launches_show(axpy, tunings):
    """The same kernel without restore_value: every timed launch added into y (as in Triton), which is what
    restore_value prevents. Integer-valued data, so the sums are exact."""
    op = axpy[1]
    x = torch.randint(-4, 5, (3001,), device="cuda").float()
    y = torch.randint(-100, 100, (3001,), device="cuda").float()
    y0 = y.clone()
    op(x, y, 1.0)
    assert tunings == [len(CONFIGS)]
    assert torch.equal(y, y0 + (len(CONFIGS) * LAUNCHES_PER_CONFIG + 1) * x)
    y = y0.clone()
    op(x, y, 1.0)  # the choice from memory: one launch
    assert torch.equal(y, y0 + x)


# ---------------- reset_to_zero: an atomic-add sum ----------------


@pytest.fixture(scope="module")
def atomic_sum():
    kernel = triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["total_ptr"])(atomic_sum_kernel)
    name = unique("tri_at_gpu")
    return declare_sum(name, kernel), name


def _sum_tol(x):
    return dict(rtol=0, atol=1e-5 * float(x.abs().sum()) + 1e-6)  # atomics add in any order


@pytest.mark.parametrize("n", SIZES)
def test_reset_to_zero_makes_the_tuned_sum_right(atomic_sum, tunings, n):
    op, _ = atomic_sum
    for _ in range(2):  # the tuning call, then one from memory
        x = torch.randn(n, device="cuda")
        total = torch.zeros(1, device="cuda")
        op(x, total)
        torch.testing.assert_close(total, x.sum().reshape(1), **_sum_tol(x))
    assert tunings == [len(CONFIGS)]


def test_reset_to_zero_zeroes_before_the_tuning_calls_own_launch_only(atomic_sum, tunings):
    """Triton's semantics: after timing it zeroes reset_to_zero's tensors once more (pre_hook(reset_only=True)),
    so the tuning call's result does not include what the caller passed; later calls launch without a reset."""
    op, name = atomic_sum
    x = torch.randn(7777, device="cuda")
    total = torch.full((1,), 5.0, device="cuda")
    op(x, total)
    assert tunings == [len(CONFIGS)]
    torch.testing.assert_close(total, x.sum().reshape(1), **_sum_tol(x))
    total = torch.full((1,), 5.0, device="cuda")
    op(x, total)
    assert tunings == [len(CONFIGS)]  # the choice from memory
    torch.testing.assert_close(total, x.sum().reshape(1) + 5.0, **_sum_tol(x))


# ---------------- prune_configs_by ----------------


def test_early_config_prune_keeps_the_pruned_configs_from_launching(tunings):
    returned, timed = [], []

    def prune(configs, named_args, **kwargs):
        assert named_args["n"] == named_args["x_ptr"].numel()
        keep = [c for c in configs if c.kwargs["BLOCK"] in (256, 1024)]
        returned.append([c.kwargs["BLOCK"] for c in keep])
        return keep

    def record(args, reset_only=False):
        if not reset_only:
            timed.append(args["BLOCK"])

    kernel = triton.autotune(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": prune},
                             pre_hook=record)(affine_kernel)
    name = unique("tri_at_gpu")
    op = declare_affine(name, kernel)
    for n in (1, 5000, 5000, 70_001):
        x = torch.randn(n, device="cuda")
        torch.testing.assert_close(op(x), x * 3 + 1)
    assert returned == [[256, 1024]] * 3  # once per key (n = 1, 5000, 70001)
    assert tunings == [2, 2, 2] and set(timed) == {256, 1024}
    assert len(timed) == 3 * 2 * LAUNCHES_PER_CONFIG
    assert set(choices(name).values()) <= {1, 3}  # tactics 2 and 4 (0-based 1, 3)


def test_perf_model_and_top_k_time_the_best_ranked(tunings):
    timed = []
    kernel = triton.autotune(
        configs=CONFIGS, key=["n"], prune_configs_by={"perf_model": lambda BLOCK, num_warps, **kw: -BLOCK, "top_k": 2},
        pre_hook=lambda args, reset_only=False: None if reset_only else timed.append(args["BLOCK"]))(affine_kernel)
    name = unique("tri_at_gpu")
    op = declare_affine(name, kernel)
    x = torch.randn(12_345, device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    assert tunings == [2] and set(timed) == {512, 1024} and set(choices(name).values()) <= {2, 3}


def test_one_config_left_by_pruning_is_launched_untimed(tunings):
    kernel = triton.autotune(configs=CONFIGS, key=["n"],
                             prune_configs_by={"early_config_prune": lambda cs, a, **k: [cs[2]]})(affine_kernel)
    name = unique("tri_at_gpu")
    op = declare_affine(name, kernel)
    x = torch.randn(999, device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    assert tunings == [] and list(choices(name).values()) == [2]


# ---------------- the choice on disk ----------------


def test_a_forgotten_choice_comes_back_from_disk_untimed(tunings):
    name = unique("tri_at_gpu")
    op = declare_affine(name, triton.autotune(configs=CONFIGS, key=["n"])(affine_kernel))
    x = torch.randn(33_333, device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    first = choices(name)
    assert tunings == [len(CONFIGS)] and len(first) == 1
    ck.forget_tuning(name)
    assert choices(name) == {}
    x = torch.randn(33_333, device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    assert tunings == [len(CONFIGS)] and choices(name) == first  # read from the record, not timed


CHILD = textwrap.dedent("""
    import importlib.util, sys
    import torch
    spec = importlib.util.spec_from_file_location("autotune_gpu_child", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    from trt_kernels.eager import cuda_kernel as ck
    timed = []
    real = ck._tune
    ck._tune = lambda launchers, *a, **k: timed.append(len(launchers)) or real(launchers, *a, **k)
    name = sys.argv[2]
    op = mod.declare_affine(name, mod.triton.autotune(configs=mod.CONFIGS, key=["n"])(mod.affine_kernel))
    x = torch.randn(int(sys.argv[3]), device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    print("TIMED", timed, "CHOSEN", sorted(ck._CHOICES[name].values()))
""")


def _child(name, n, env):
    r = subprocess.run([sys.executable, "-c", CHILD, str(HERE), name, str(n)], env=env, capture_output=True,
                       text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r.stdout.strip().splitlines()[-1]


def test_a_second_process_reads_the_choice_and_does_not_time(own_cache, tunings):
    name = unique("tri_at_disk")
    op = declare_affine(name, triton.autotune(configs=CONFIGS, key=["n"])(affine_kernel))
    x = torch.randn(50_001, device="cuda")
    torch.testing.assert_close(op(x), x * 3 + 1)
    assert tunings == [len(CONFIGS)]
    chosen = sorted(choices(name).values())
    tests = str(HERE.parents[1])
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(own_cache),
               PYTHONPATH=os.pathsep.join(filter(None, [tests, os.environ.get("PYTHONPATH")])))
    assert _child(name, 50_001, env) == f"TIMED [] CHOSEN {chosen}"
    # another key is timed in the child (and its record written for the next process)
    assert _child(name, 50_002, env).startswith(f"TIMED [{len(CONFIGS)}] CHOSEN")
    assert _child(name, 50_002, env).startswith("TIMED [] CHOSEN")
    # with the disk cache off, nothing is read: timed again
    assert _child(name, 50_001, dict(env, TRT_KERNELS_CACHE="0")).startswith(f"TIMED [{len(CONFIGS)}] CHOSEN")
