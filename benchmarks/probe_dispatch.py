"""Probe: where the per-call cost of a trt_kernels op goes (dispatcher variants vs our Python body)."""
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))
import cuda_kernel_op as ex  # noqa: E402,F401

from trt_kernels import registry, torch_op  # noqa: E402


def bench(fn, calls=3000, reps=9):
    for _ in range(300):
        fn()
    torch.cuda.synchronize()
    s = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        s.append((time.perf_counter_ns() - t0) / calls / 1000)
        torch.cuda.synchronize()
    return statistics.median(s)


kop = registry.get("kern_ex::sigmoid")
body = torch_op.make_cuda_impl(kop)


def mk(name, cpu=False, fake=False, fallthrough=False):
    lib = torch.library.Library("probe2", "FRAGMENT")
    lib.define(f"{name}(Tensor x) -> Tensor")
    lib.impl(name, body, "CUDA")
    if cpu:
        lib.impl(name, lambda x: x, "CPU")
    if fake:
        torch.library.register_fake(f"probe2::{name}", lambda x: torch.empty_like(x), lib=lib)
    if fallthrough:
        lib.impl(name, torch.library.fallthrough_kernel, "Autograd")
    mk.libs.append(lib)
    return getattr(torch.ops.probe2, name).default


mk.libs = []
v1 = mk("plain")
v2 = mk("cpu_fake", cpu=True, fake=True)
v3 = mk("fallthrough", fallthrough=True)
ours = torch.ops.kern_ex.sigmoid.default
rows = []
for mode in ("grad", "inference"):
    with (torch.inference_mode() if mode == "inference" else torch.enable_grad()):
        x = torch.randn(1024, device="cuda")
        rows += [
            (mode, "torch.sigmoid", bench(lambda: torch.sigmoid(x))),
            (mode, "python body direct", bench(lambda: body(x))),
            (mode, "Library CUDA only", bench(lambda: v1(x))),
            (mode, "Library +CPU +fake", bench(lambda: v2(x))),
            (mode, "Library +Autograd fallthrough", bench(lambda: v3(x))),
            (mode, "ours (.default)", bench(lambda: ours(x))),
            (mode, "empty_like", bench(lambda: torch.empty_like(x))),
        ]
for r in rows:
    print(f"{r[0]:10s} {r[1]:32s} {r[2]:7.2f}")
