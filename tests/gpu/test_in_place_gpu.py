"""An optimizer step that writes its inputs in place, on the GPU: eager against the same step in torch on
fresh random inputs at edge sizes, torch.compile (functionalization writes the results back), CUDA graphs."""

import pytest
import torch

import trt_kernels as ttk
from kernels import adamw_reference, adamw_spec, unique

SCALARS = (1e-3, 0.9, 0.999, 0.1, 0.001, 1e-8, 0.01)


@pytest.fixture(scope="module")
def adamw():
    return ttk.cuda_kernel_op(unique("ttk_inplace_gpu"), adamw_spec(arch_override=None))


def _state(n):
    p, g, m = (torch.randn(n, device="cuda") for _ in range(3))
    return p, g, m, torch.rand(n, device="cuda")  # v >= 0


def _check(got, want):
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("n", [0, 1, 255, 256, 1000, 65537])
def test_the_step_updates_its_inputs_in_place(adamw, n):
    p, g, m, v = _state(n)
    want = adamw_reference(p.clone(), g, m.clone(), v.clone(), *SCALARS)
    g0 = g.clone()
    assert adamw(p, g, m, v, *SCALARS) is None
    _check((p, m, v), want)
    assert torch.equal(g, g0)  # not written


def test_a_non_contiguous_written_input_is_refused(adamw):
    p, g, m, v = _state(64)
    with pytest.raises(ttk.InputError, match="written in place"):
        adamw(p, g, torch.randn(128, device="cuda")[::2], v, *SCALARS)


def test_under_torch_compile_the_writes_reach_the_callers_tensors(adamw):
    def step(p, g, m, v):
        adamw(p, g, m, v, *SCALARS)
        return p.sum()

    f = torch.compile(step, fullgraph=True)
    p, g, m, v = _state(1000)
    want = adamw_reference(p.clone(), g, m.clone(), v.clone(), *SCALARS)
    total = f(p, g, m, v)
    _check((p, m, v), want)
    torch.testing.assert_close(total, want[0].sum())


def test_cuda_graph_replays_the_step(adamw):
    p, g, m, v = _state(4096)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        adamw(p, g, m, v, *SCALARS)  # warm-up: builds the launcher outside the capture
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        adamw(p, g, m, v, *SCALARS)
    for _ in range(2):
        g.copy_(torch.randn_like(g))
        want = adamw_reference(p.clone(), g, m.clone(), v.clone(), *SCALARS)
        graph.replay()
        torch.cuda.synchronize()
        _check((p, m, v), want)
