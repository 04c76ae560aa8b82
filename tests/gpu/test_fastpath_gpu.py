"""The inlined eager launcher on a GPU: results, every check, other keys, CUDA graphs, and a
warm start that initialises CUDA and loads the kernel only at the first launch."""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import trt_kernels as ttk
from kernels import mixed_spec, sigmoid_spec, unique
from support import ROOT
from trt_kernels import registry
from trt_kernels.eager.dispatcher import MAX_INLINED


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def test_inlined_keys_and_lookup_keys_give_the_same_results():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    op, impl = _op(name), registry.get(name).cuda_impl
    shapes = [(1000,), (7, 33), (2, 3, 5), (1, 2, 3, 4), (2, 1, 2, 1, 3), (1, 1, 1, 1, 1, 9), (0,)]
    for _ in range(2):
        for shape in shapes:
            x = torch.randn(*shape, device="cuda")
            torch.testing.assert_close(op(x), torch.sigmoid(x), atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(op.default(x), torch.sigmoid(x), atol=1e-6, rtol=1e-5)
    assert len(impl.inlined) == MAX_INLINED
    assert impl.source.count("if a0.dtype is") == MAX_INLINED
    with torch.inference_mode():
        x = torch.randn(4097, device="cuda")
        torch.testing.assert_close(op(x), torch.sigmoid(x), atol=1e-6, rtol=1e-5)


def test_checks_hold_in_the_inlined_body():
    name = unique()
    ttk.cuda_kernel_op(name, mixed_spec())
    op = _op(name)
    a, b = torch.randn(3, 100, device="cuda"), torch.randn(3, 100, device="cuda")
    op(a, 1.5, b, 2, True)  # builds and inlines the key
    assert len(registry.get(name).cuda_impl.inlined) == 1
    with pytest.raises(ttk.InputError, match="does not fit a 32-bit C int"):
        op(a, 1.5, b, 2**32, True)
    with pytest.raises(ttk.InputError, match="has no backward, and an input requires grad"):
        op(a.clone().requires_grad_(), 1.5, b, 2, True)
    with torch.no_grad():
        op(a.clone().requires_grad_(), 1.5, b, 2, True)
    with pytest.raises((ttk.InputError, RuntimeError)):
        op(a, 1.5, b.cpu(), 2, True)
    big = torch.zeros(1, device="cuda").expand(2**31)
    name2 = unique()
    ttk.cuda_kernel_op(name2, sigmoid_spec())
    _op(name2)(torch.zeros(8, device="cuda"))
    with pytest.raises(ttk.InputError, match="does not fit the kernel's 32-bit int"):
        _op(name2)(big)


def test_cuda_graph_capture_after_inlining():
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    op = _op(name)
    x = torch.randn(4096, device="cuda")
    op(x)  # inlined now
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        op(x)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = op(x)
    x.copy_(torch.randn(4096, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.sigmoid(x), atol=1e-6, rtol=1e-5)


CHILD = textwrap.dedent(r"""
    import json, sys
    sys.path.insert(0, sys.argv[1])
    import torch
    with open("/proc/self/maps") as f:
        by_torch = "libnvrtc" in f.read()  # torch's CUDA builds may map libnvrtc themselves
    import trt_kernels as ttk
    import seed_specs

    names = seed_specs.declare()
    after_declare = torch.cuda.is_initialized()
    ops = [getattr(getattr(torch.ops, n.split("::")[0]), n.split("::")[1]) for n in names]
    args = seed_specs.inputs("cuda")
    refs = [torch.sigmoid(args[0][0]), args[1][0] + args[1][1], args[2][0] * 2.5, torch.relu(args[3][0]),
            args[4][0].sum(-1), args[5][0].repeat_interleave(2), (torch.sin(args[6][0]), torch.cos(args[6][0]))]
    ok = []
    for op, a, ref in zip(ops, args, refs):
        out = op(*a)
        outs, rs = (out, ref) if isinstance(out, tuple) else ((out,), (ref,))
        ok.append(all(torch.allclose(o, r, atol=1e-3, rtol=1e-3) for o, r in zip(outs, rs)))
    torch.cuda.synchronize()
    with open("/proc/self/maps") as f:
        nvrtc = "cuda.bindings.nvrtc" in sys.modules or ("libnvrtc" in f.read() and not by_torch)
    print("RESULT " + json.dumps({"cuda_after_declare": after_declare, "ok": ok, "nvrtc": nvrtc}))
""")


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads /proc/self/maps (Linux)")
def test_warm_start_on_the_gpu(tmp_path):
    env = dict(os.environ, TRT_KERNELS_CACHE_DIR=str(tmp_path))
    env.pop("TRT_KERNELS_ARCH", None)
    env.pop("TRT_KERNELS_CACHE", None)
    results = []
    for _ in range(2):  # cold (fills the cache for this GPU's arch), then warm
        r = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / "benchmarks")], env=env,
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        results.append(json.loads([ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")][-1][7:]))
    cold, warm = results
    assert all(cold["ok"]) and all(warm["ok"]), results
    assert cold["cuda_after_declare"] is True and cold["nvrtc"] is True  # compiled at declaration
    assert warm["cuda_after_declare"] is False  # nothing asked the GPU before the first launch
    assert warm["nvrtc"] is False  # the CUBIN for this arch came from the cache
