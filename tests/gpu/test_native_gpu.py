"""The native eager kernel on the GPU: the seed's ops declared twice, once with the native kernel
(the default) and once with the Python kernel only (native.disabled()), must give the same bits,
the same errors, launch on torch's current stream (CUDA graph capture), and follow re-declaration
and unregistration."""

import sys
from pathlib import Path

import pytest
import torch

import trt_kernels as ttk
from trt_kernels.eager import native
from trt_kernels.errors import UnregisteredOpError
from trt_kernels.library.definition import native_slot

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import seed_specs  # noqa: E402
from kernels import add_spec  # noqa: E402

pytestmark = pytest.mark.gpu

NAT, PY = "ttk_nat_gpu", "ttk_py_gpu"


@pytest.fixture(scope="module")
def seeds():
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    names = seed_specs.declare(NAT)
    with native.disabled():
        seed_specs.declare(PY)
    if native_slot(names[0]) is None:
        pytest.skip(f"the native kernel is not in use here: {native.describe()['reason']}")
    return [n.split("::")[1] for n in names]


def ops(name):
    return getattr(getattr(torch.ops, NAT), name), getattr(getattr(torch.ops, PY), name)


def sizes_for(i):
    """Argument sets per seed op: the seed's own, edge sizes (1, non-multiples of the block, empty)."""
    dev = "cuda"
    base = seed_specs.inputs(dev)[i]
    x = base[0]
    more = {
        0: [(torch.randn(1, device=dev),), (torch.randn(3, 257, device=dev),), (torch.randn(0, 4, device=dev),)],
        1: [(torch.randn(1, device=dev), torch.randn(1, device=dev)),
            (torch.randn(1000, device=dev), torch.randn(1000, device=dev))],
        2: [(torch.randn(513, device=dev), -0.25), (torch.randn(2, 2, device=dev), 1e30)],
        3: [(torch.randn(1, 1, device=dev),), (torch.randn(17, 300, device=dev),)],
        4: [(torch.randn(1, 1, device=dev),), (torch.randn(5, 1000, device=dev),), (torch.randn(3, 0, device=dev),)],
        5: [(torch.randn(7, device=dev),)],
        6: [(torch.randn(1, device=dev),), (torch.randn(1000, 3, device=dev),)],
    }[i]
    return [base] + more + ([(x.t(),)] if len(base) == 1 and x.dim() == 2 else [])


@pytest.mark.parametrize("i", range(7))
def test_native_and_python_kernels_give_the_same_bits(seeds, i):
    name = seeds[i]
    nat, py = ops(name)
    slot = native_slot(f"{NAT}::{name}")
    before = native.launches(slot) if slot is not None else 0
    for args in sizes_for(i):
        for call in (lambda o: o(*args), lambda o: o.default(*args)):
            got, want = call(nat), call(py)
            got = got if isinstance(got, tuple) else (got,)
            want = want if isinstance(want, tuple) else (want,)
            for g, w in zip(got, want):
                assert (g.shape, g.dtype, g.stride(), g.device) == (w.shape, w.dtype, w.stride(), w.device)
                assert torch.equal(g, w)
    if name == "repeat2":  # an eager_fn op: torch calls its Python function
        assert slot is None
    else:
        assert native.launches(slot) > before, "the native kernel launched nothing"


def test_errors_are_the_python_kernels(seeds):
    ttk.cuda_kernel_op(f"{NAT}::add_checked", add_spec())
    with native.disabled():
        ttk.cuda_kernel_op(f"{PY}::add_checked", add_spec())
    add_n, add_p = ops("add_checked")
    assert native_slot(f"{NAT}::add_checked") is not None
    a = torch.randn(4, device="cuda")
    assert torch.equal(add_n(a, a), add_p(a, a))
    for args in [(a, torch.randn(5, device="cuda")),  # SameShape
                 (a, torch.randn(4)),  # devices
                 (torch.randn(2, 2, device="cuda"), torch.randn(2, 2, device="cuda").t())]:  # fine: copied
        got = _outcome(add_n, args)
        want = _outcome(add_p, args)
        assert type(got) is type(want) and str(got).replace(NAT, PY) == str(want)  # the messages name the op
        if isinstance(want, torch.Tensor):
            assert torch.equal(got, want)
    sig_n, sig_p = ops(seeds[0])
    x = torch.randn(10, device="cuda", requires_grad=True)
    for op in (sig_n, sig_p):
        with pytest.raises(ttk.InputError, match="has no backward"):
            op(x)
    with torch.no_grad():
        assert torch.equal(sig_n(x), sig_p(x))


def _outcome(op, args):
    try:
        return op(*args)
    except Exception as e:  # noqa: BLE001 - compared by the caller
        return e


def test_launches_on_the_current_stream_under_graph_capture(seeds):
    sig_n, _ = ops(seeds[0])
    x = torch.randn(3, 300, device="cuda")
    sig_n(x)  # the launcher (and the native variant) exist before capture
    slot = native_slot(f"{NAT}::{seeds[0]}")
    before = native.launches(slot)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        with torch.cuda.graph(g):
            y = sig_n(x)
    assert native.launches(slot) == before + 1
    new = torch.randn(3, 300, device="cuda")
    x.copy_(new)
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.sigmoid(new), atol=1e-6, rtol=1e-5)


def test_redeclared_and_unregistered(seeds):
    name = "ttk_nat_gpu_re::neg"
    src = ('extern "C" __global__ void k(const float* x, int n, float* y) '
           '{{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = {e}; }}')
    spec = lambda e: ttk.KernelSpec(kernel_source=src.format(e=e), kernel_name="k", inputs=[ttk.InputDecl("x")],  # noqa: E731
                                    outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                                    geometry=ttk.Elementwise(block=(128,)))
    ttk.cuda_kernel_op(name, spec("-x[i]"))
    op = torch.ops.ttk_nat_gpu_re.neg
    x = torch.randn(1000, device="cuda")
    assert torch.equal(op(x), -x) and torch.equal(op(x), -x)
    slot = native_slot(name)
    assert native.launches(slot) >= 1
    ttk.cuda_kernel_op(name, spec("2.0f * x[i]"))  # same schema: the same registration, a new program
    assert native.variants(slot) == 0
    assert torch.equal(op(x), 2 * x) and torch.equal(op(x), 2 * x)
    assert native.variants(slot) == 1
    ttk.unregister(name)
    with pytest.raises(UnregisteredOpError):
        op(x)


def test_a_launch_whose_parameters_differ_from_the_kernels_is_not_taken(seeds):
    """The native kernel launches only a launch whose packed parameters have the loaded function's sizes
    (cuFuncGetParamInfo): anything else stays with the Python launcher instead of reading stray memory."""
    from trt_kernels import registry

    kernel = registry.get(f"{NAT}::sigmoid").loaded_kernel(torch.float32, 0)
    kernel.function(0)
    native._check_params(kernel, [("Q", 0, 0), ("i", 2, 0), ("Q", 3, 0)])  # my_sigmoid(const float*, int, float*)
    with pytest.raises(native._Unsupported, match="parameters"):
        native._check_params(kernel, [("Q", 0, 0), ("i", 2, 0)])
    with pytest.raises(native._Unsupported, match="parameters"):
        native._check_params(kernel, [("Q", 0, 0), ("i", 2, 0), ("Q", 3, 0), ("Q", 4, 0)])


def test_threads_calling_at_once_get_their_own_results(seeds):
    """The native kernel runs without the GIL: threads calling one op at once, each on its own stream."""
    import threading

    sig_n, _ = ops(seeds[0])
    errors, done = [], []

    def worker(seed):
        try:
            g = torch.Generator(device="cuda").manual_seed(seed)
            s = torch.cuda.Stream()
            with torch.cuda.stream(s):
                for n in (1, 255, 4097):
                    x = torch.randn(n, device="cuda", generator=g)
                    for _ in range(50):
                        y = sig_n(x)
                    s.synchronize()
                    torch.testing.assert_close(y, torch.sigmoid(x), atol=1e-6, rtol=1e-5)
            done.append(seed)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and sorted(done) == [0, 1, 2, 3], errors
