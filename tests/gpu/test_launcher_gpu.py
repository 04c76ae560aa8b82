"""The compiled eager launcher against cuda.bindings' on the GPU (trt_kernels.eager.compiled_launcher.using): each op is
declared twice, one twin's launchers built under the compiled launcher, the other's under cuda.bindings';
their outputs agree bit for bit for CUDA C++ ops (scalars, extras, several outputs, a template at two
dtypes, a reduction), a PTX op and Triton ops (a scratch buffer included), at edge sizes, and both match
torch. A launch the driver refuses gives the same LaunchError through both; CUDA graphs capture the
compiled launcher's launches; a thread with a foreign context current gets the retry; threads on their
own streams get their own results."""

import threading

import pytest
import torch

import trt_kernels as ttk
from kernels import SIGMOID, SIN_COS, TEMPLATE_SIGMOID, mixed_spec, row_sum_spec, scale_spec, sigmoid_spec, unique
from trt_kernels import registry
from trt_kernels.eager import compiled_launcher
from trt_kernels.sources.nvrtc import compile_program

SIZES = [1, 255, 256, 257, 4097, 0]


def _no_build():
    cc, why = compiled_launcher.find_compiler()
    return why if cc is None else compiled_launcher.python_includes()[1]


NO_BUILD = _no_build()
# a GPU machine without a C compiler or Python's headers launches through cuda.bindings (the other GPU
# tests cover that); tests/unit/test_launcher.py checks the fallback itself
pytestmark = pytest.mark.skipif(NO_BUILD is not None, reason=f"the compiled launcher cannot be built here: {NO_BUILD}")


def _op(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def _twins(declare):
    """``(op through the compiled launcher, op through cuda.bindings, their names)`` for one declaration."""
    c, py = unique("ttk_claunch"), unique("ttk_pylaunch")
    declare(c)
    declare(py)
    return _op(c), _op(py), c, py


def _run(op, kind, calls):
    """Each call's outputs as a tuple; the op's launchers for new keys are built under ``kind``."""
    with compiled_launcher.using(kind):
        out = [op(*a) for a in calls]
    torch.cuda.synchronize()
    return [o if isinstance(o, tuple) else (o,) for o in out]


def _launchers(name):
    return list(registry.get(name).cuda_impl.launchers.values())


def _compare(declare, calls, refs, tol=None):
    """Run ``calls`` through both twins: bit-identical outputs, each close to its torch reference."""
    op_c, op_py, c, py = _twins(declare)
    out_c, out_py = _run(op_c, "compiled", calls), _run(op_py, "python", calls)
    assert _launchers(c) and all(fn.claunch is not None for fn in _launchers(c))
    assert _launchers(py) and all(fn.claunch is None for fn in _launchers(py))
    for oc, op_, ref in zip(out_c, out_py, refs):
        ref = ref if isinstance(ref, tuple) else (ref,)
        assert len(oc) == len(op_) == len(ref)
        for a, b, r in zip(oc, op_, ref):
            assert a.shape == b.shape == r.shape and a.dtype == b.dtype == r.dtype
            assert torch.equal(a, b), "the two launchers gave different bits"
            t = tol or (1e-5 if a.dtype == torch.float32 else 2e-3)
            torch.testing.assert_close(a, r, atol=t, rtol=t)
    return op_c, op_py


def _x(n, dtype=torch.float32):
    return torch.randn(n, device="cuda").to(dtype)


def test_sigmoid_and_nd_and_noncontiguous_inputs():
    calls = [(_x(n),) for n in SIZES] + [(torch.randn(7, 33, device="cuda"),),
                                         (torch.randn(37, 129, device="cuda").t(),)]
    _compare(lambda name: ttk.cuda_kernel_op(name, sigmoid_spec()), calls, [torch.sigmoid(a[0]) for a in calls])


def test_float_scalar():
    calls = [(_x(n), float(torch.randn(()).item()) * 10) for n in SIZES]
    _compare(lambda name: ttk.cuda_kernel_op(name, scale_spec()), calls, [a * s for a, s in calls])


def test_scalars_of_every_kind_between_tensors():
    calls = []
    for n in SIZES:
        a, b = _x(n), _x(n)
        calls += [(a, 1.25, b, -7, True), (a, -3.5, b, 2**31 - 1, False)]
    refs = [a * al + b + k if fl else a.clone() for a, al, b, k, fl in calls]
    _compare(lambda name: ttk.cuda_kernel_op(name, mixed_spec()), calls, refs)


def test_reduction_with_an_extra():
    calls = [(torch.randn(*s, device="cuda"),) for s in [(1, 1), (4, 6, 9), (33, 1000), (5, 0), (0, 7)]]
    _compare(lambda name: ttk.cuda_kernel_op(name, row_sum_spec()), calls, [a[0].sum(-1) for a in calls])


def test_several_outputs():
    spec = sigmoid_spec(kernel_source=SIN_COS, kernel_name="my_sin_cos",
                        outputs=[ttk.OutputDecl("s", shape=ttk.SameAs("x")),
                                 ttk.OutputDecl("c", shape=ttk.SameAs("x"))])
    calls = [(_x(n),) for n in SIZES]
    _compare(lambda name: ttk.cuda_kernel_op(name, spec), calls, [(torch.sin(a[0]), torch.cos(a[0])) for a in calls],
             tol=1e-4)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
def test_template_at_two_dtypes(dtype):
    spec = sigmoid_spec(kernel_source=TEMPLATE_SIGMOID, kernel_name="tsig<T>", dtypes=[torch.float32, torch.float16])
    calls = [(_x(n, dtype),) for n in SIZES]
    _compare(lambda name: ttk.cuda_kernel_op(name, spec), calls, [torch.sigmoid(a[0].float()).to(dtype) for a in calls])


def test_ptx_op():
    major, minor = torch.cuda.get_device_capability()
    ptx = compile_program(SIGMOID, ["my_sigmoid"], arch=f"sm_{major}{minor}").ptx
    calls = [(_x(n),) for n in SIZES]

    def declare(name):
        ttk.ptx_op(name, ptx, "my_sigmoid", inputs=[ttk.InputDecl("x")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                   geometry=ttk.Elementwise(block=(256,)))

    _compare(declare, calls, [torch.sigmoid(a[0]) for a in calls])


def test_triton_ops_with_a_scalar_two_outputs_and_a_scratch_buffer():
    pytest.importorskip("triton", reason="triton is not installed (pip install 'trt-kernels[triton]')")
    import triton_kernels as tk

    calls = [(_x(n), 0.75) for n in [0, 1, 255, 1025, 4097]]
    _compare(lambda name: tk.declare_scale(name), calls, [x * a + 1.0 for x, a in calls])
    ab = [(_x(n), _x(n)) for n in [0, 1, 513, 100003]]
    _compare(lambda name: tk.declare_add_mul(name), ab, [(a + b, a * b) for a, b in ab])
    rows = [(torch.randn(*s, device="cuda"), torch.randn(s[-1], device="cuda"), 1e-6)
            for s in [(1, 1), (7, 333), (5, 1500)]]
    _compare(lambda name: tk.declare_rmsnorm(name), rows, [tk.rmsnorm_ref(x, w, e) for x, w, e in rows], tol=1e-4)
    if torch.cuda.get_device_capability()[0] >= 9:  # device-side tensor descriptors: a global scratch buffer
        mats = [(torch.randn(*s, device="cuda"),) for s in [(16, 16), (48, 64), (100, 36)]]
        _compare(lambda name: tk.declare_tma_copy(name), mats, [m[0] for m in mats])


def test_a_refused_launch_gives_the_same_error_through_both():
    """Dynamic shared memory from the input's size: over what the device allows at a large input, where
    the driver refuses the launch (CUDA_ERROR_INVALID_VALUE, not retried)."""
    spec = sigmoid_spec(geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 256),), block=(256,),
                                            shared_mem=ttk.Numel("x") * 64))
    op_c, op_py, c, py = _twins(lambda name: ttk.cuda_kernel_op(name, spec))
    small = _x(100)
    out = _run(op_c, "compiled", [(small,)]) + _run(op_py, "python", [(small,)])
    assert torch.equal(out[0][0], out[1][0])
    big = _x(1 << 16)  # 4 MiB of shared memory per block
    messages = []
    for op, kind, name in ((op_c, "compiled", c), (op_py, "python", py)):
        with compiled_launcher.using(kind), pytest.raises(ttk.LaunchError) as e:
            op(big)
        messages.append(str(e.value).replace(name, "OP"))
    assert messages[0] == messages[1]
    assert "cuLaunchKernel failed on cuda:0" in messages[0] and "shared memory 4194304 bytes" in messages[0]
    torch.cuda.synchronize()  # the refusal left the context usable
    assert torch.equal(op_c(small), op_py(small))


def test_cuda_graph_capture_and_replay_through_the_compiled_launcher():
    op_c, _, c, _ = _twins(lambda name: ttk.cuda_kernel_op(name, scale_spec()))
    x = _x(4096)
    with compiled_launcher.using("compiled"):
        op_c(x, 2.0)
    assert _launchers(c)[0].claunch is not None
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        op_c(x, 2.0)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        y = op_c(x, 3.0)
    for _ in range(2):
        x.copy_(_x(4096))
        g.replay()
        torch.cuda.synchronize()
        torch.testing.assert_close(y, x * 3.0, atol=0, rtol=0)


def test_a_thread_with_a_foreign_context_current_gets_the_retry():
    """A thread whose current context is not the device's primary one: where the driver refuses the launch
    there (INVALID_HANDLE / INVALID_CONTEXT), it is redone through the compiled launcher with the primary
    context current, and the thread's own context is current again after."""
    from cuda.bindings import driver as cu

    op_c, _, c, _ = _twins(lambda name: ttk.cuda_kernel_op(name, sigmoid_spec()))
    x = _x(1000)
    with compiled_launcher.using("compiled"):
        ref = op_c(x)
    torch.cuda.synchronize()
    torch.testing.assert_close(ref, torch.sigmoid(x), atol=1e-6, rtol=1e-5)
    out = {}

    def body():
        try:
            err, dev = cu.cuDeviceGet(0)
            err, ctx = cu.cuCtxCreate(None, 0, dev)
            assert int(err) == 0, f"cuCtxCreate: {err}"
            try:
                out["y"] = op_c(x)
                out["restored"] = int(cu.cuCtxGetCurrent()[1]) == int(ctx)
            finally:
                cu.cuCtxDestroy(ctx)
            torch.cuda.synchronize()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=body)
    t.start()
    t.join()
    assert "error" not in out, out.get("error")
    assert out["restored"] and torch.equal(out["y"], ref)


def test_threads_on_their_own_streams():
    op_c, _, c, _ = _twins(lambda name: ttk.cuda_kernel_op(name, mixed_spec()))
    a, b = _x(1 << 16), _x(1 << 16)
    with compiled_launcher.using("compiled"):
        op_c(a, 1.0, b, 1, True)
    failures = []

    def body(i):
        s = torch.cuda.Stream()
        with torch.cuda.stream(s):
            for j in range(50):
                y = op_c(a, float(i), b, j, True)
                ref = a * float(i) + b + j
            s.synchronize()
            if not torch.allclose(y, ref, atol=1e-4, rtol=1e-5):
                failures.append(i)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert all(fn.claunch is not None for fn in _launchers(c))


def test_status_and_doctor_name_the_compiled_launcher():
    from trt_kernels.cli import doctor
    from trt_kernels.status import format_status

    lau = compiled_launcher.prepare()
    assert lau.kind == "compiled", lau.reason  # the GPU machine has a C compiler and Python's headers
    assert f"eager launcher: compiled ({lau.reason})" in format_status()
    facts = {"eager_launcher": doctor.launcher_facts(True)}
    check = [c for c in doctor.assess(facts) if c["check"] == "eager launcher"][0]
    assert check["status"] == "ok" and facts["eager_launcher"]["bound"] is True
