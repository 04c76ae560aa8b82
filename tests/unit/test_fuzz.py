"""Fuzzing declarations and calls (issue 15): whatever a user passes, a refusal is one of this
package's errors, names the op and the field or argument, and says how to fix it; nothing foreign
(TypeError, IndexError, ZeroDivisionError, torch's errors) escapes. Bounded to a few seconds: 50 examples per
test by default (the same ones every run), ``TTK_FUZZ_EXAMPLES`` sets how many (``.ci/run`` runs 150)."""

import os

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import unique
from test_fastpath import dispatcher_for
from trt_kernels import registry
from trt_kernels.expr import lift

FIELDS = ("op_name", "spec", "kernel_source", "kernel_name", "inputs", "outputs", "extras", "geometry", "dtypes",
          "compile_options", "include_paths", "compile_std", "arch_override", "schema", "meta_fn", "eager_fn",
          "type_params", "checks", "params", "min_arch")
OURS = (ttk.SpecError, ttk.CompileError)
SETTINGS = settings(max_examples=int(os.environ.get("TTK_FUZZ_EXAMPLES", "50")), deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])

# a few kernels whose parameter lists fit common declarations, so some fuzzed specs compile and get called
SOURCES = {
    "k1": 'extern "C" __global__ void k1(const float* x, int n, float* y) {}',
    "k2": 'extern "C" __global__ void k2(const float* x, const float* w, int n, float* y) {}',
    "k3": 'extern "C" __global__ void k3(const float* x, float a, int n, float* y) {}',
    "k4": 'extern "C" __global__ void k4(const float* x, float* y) {}',
    "k5": 'extern "C" __global__ void k5(const float* x, int n0, int n1, float a, int m, float* y) {}',
    "bad": 'extern "C" __global__ void bad(const float* x, int n, float* y) { int = ; }',
    "k6": 'template <typename T, typename W> __global__ void k6(const T* x, const W* w, int n, T* y) {}',
    "k7": 'extern "C" __global__ void k7(const float* x, int n, float* y, int* count) {}',
    # pointers naming other dtypes than the declarations' (half in, int64 out): refused before compiling
    "k1h": 'extern "C" __global__ void k1(const __half* x, int n, long long* y) {}',
}
NAMES = st.sampled_from(["x", "w", "a", "n", "y", "self", "class", "1x", "", None, 3])
SMALL_INT = st.sampled_from([-2, -1, 0, 1, 2, 3, 7, 2**31, -(2**31) - 1, 2**40, 1.5, True, "2", None])


def exprs(depth=2):
    leaf = st.one_of(
        st.builds(ttk.Numel, NAMES), st.builds(ttk.DimSize, NAMES, SMALL_INT),
        st.sampled_from([0, 1, 2, 8, -4, 2**40]).map(lift),
        st.builds(ttk.Scalar, NAMES), st.builds(ttk.Scalar, NAMES, SMALL_INT),  # Scalar(name), Scalar(name)[i]
    )
    if depth == 0:
        return leaf
    sub = exprs(depth - 1)
    return st.one_of(leaf, st.builds(lambda a, b: a + b, sub, sub), st.builds(lambda a, b: a - b, sub, sub),
                     st.builds(lambda a, b: a * b, sub, sub), st.builds(ttk.cdiv, sub, sub),
                     st.builds(lambda a, b: a // b, sub, sub))


EXPR = st.one_of(exprs(), st.sampled_from([3, -1, 1.5, "n", None]))
SHAPE = st.one_of(
    st.builds(ttk.SameAs, st.one_of(NAMES, SMALL_INT)),
    st.builds(ttk.ReduceDims, NAMES, st.one_of(st.tuples(SMALL_INT), st.just(()), SMALL_INT), st.booleans()),
    st.lists(st.one_of(EXPR, EXPR, st.builds(  # ttk.Written: a size the kernel writes, among the axes
        ttk.Written, st.one_of(NAMES, st.sampled_from(["count", "count", "n"])), EXPR, st.one_of(st.none(), EXPR),
        st.sampled_from([torch.int32, torch.int64, torch.float32, None, "int32"]))), max_size=3).map(tuple),
    st.just("x"), st.none(),
)
BLOCK = st.one_of(st.sampled_from([(256,), (32, 8), (2048,), (0,), (1, 1, 65), (-1,), (1.5,), "256", 128, ()]))
GEOMETRY = st.one_of(
    st.builds(ttk.Elementwise, block=BLOCK, layout=st.sampled_from(["flat", "nd", "x"]),
              tactics=st.one_of(st.just(()), st.lists(BLOCK, max_size=2).map(tuple), st.none())),
    st.builds(ttk.Reduction, reduce_dims=st.one_of(st.tuples(SMALL_INT), st.just(()), SMALL_INT),
              block_size=st.sampled_from([256, 0, 2048, "x"]), tactics=st.sampled_from([(), (128,), None, (0,)])),
    st.builds(ttk.Custom, grid=st.one_of(st.lists(EXPR, min_size=0, max_size=4).map(tuple), EXPR), block=BLOCK,
              shared_mem=st.one_of(EXPR, st.sampled_from([-1, 2**40, 1.5]))),
    st.none(), st.just("elementwise"),
)
DTYPE = st.sampled_from([None, torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.float64,
                         torch.complex64, "float", "T", "W"])
INPUT = st.one_of(
    st.builds(ttk.InputDecl, NAMES, dtype=DTYPE, ndim=st.sampled_from([None, 0, 1, 2, -1, 1.5]),
              mutated=st.sampled_from([False, False, True, 1, None])),
    st.builds(ttk.ScalarInput, NAMES, st.sampled_from([float, int, bool, str, None, (int, 2), (float, 2), (int, 0),
                                                       (bool, 2), [int, 2], (int, "2"), (int, 65), (int,)]),
              default=st.sampled_from([None, None, 1, 1.5, True, (1, 2), [0.5, 2], (1, 2, 3), "x", 2**40,
                                       float("inf"), (1, 2**31)])),
    st.just("x"), st.none(),
)
SIZE_ARG = st.builds(ttk.SizeArg, st.one_of(NAMES, st.sampled_from(["n", "2n", "", None])), EXPR,
                     st.sampled_from(["int", "size_t", "long long", "unsigned", "ulong", None, 4]))
OPERAND = st.one_of(st.tuples(NAMES, SMALL_INT), st.tuples(NAMES), EXPR)
CHECK = st.one_of(st.builds(lambda names: ttk.SameShape(*names), st.lists(NAMES, max_size=3)),
                  st.builds(lambda ops: ttk.SameDim(*ops), st.lists(OPERAND, max_size=3)), st.sampled_from(["x", 3]))
OUTPUT = st.one_of(st.builds(ttk.OutputDecl, NAMES, SHAPE, dtype_from=st.sampled_from([None, "x", "w", 1]),
                             dtype=DTYPE), st.just("y"))
FIELD_VALUES = {  # per KernelSpec field: values to put there, valid and not
    "kernel_source": st.one_of(st.sampled_from(list(SOURCES.values())), st.sampled_from(["", None, 5, "\ud800"])),
    "kernel_name": st.sampled_from(["k1", "k2", "k3", "k4", "bad", "nope", "k1<T>", "", None, "k6<T, W>", "k6<T>",
                                     "k7"]),
    "inputs": st.one_of(st.lists(INPUT, max_size=3), st.none(), INPUT),
    "outputs": st.one_of(st.lists(OUTPUT, max_size=2), st.none(), OUTPUT),
    "extras": st.one_of(st.lists(st.one_of(EXPR, SIZE_ARG), max_size=2), st.none(), EXPR, SIZE_ARG),
    "params": st.one_of(st.none(), st.lists(st.one_of(NAMES, st.sampled_from(["n", "y", 3, None])), max_size=4),
                        st.sampled_from(["x", ("x", "n", "y"), ["x", "x"]])),
    "geometry": GEOMETRY,
    "include_paths": st.sampled_from([None, [], ["/nonexistent"], "abc", [None]]),
    "compile_std": st.sampled_from(["c++17", "c++20", "c++99", None]),
    "arch_override": st.sampled_from([None, "sm_90", "sm-90", (9,), (9, 0), 90, "compute_90", [9, 0], 1.5]),
    "min_arch": st.sampled_from([None, "sm_80", "sm_90a", "sm_70", "sm-80", (8, 0), 86, "compute_89", [8, 0], 1.5, "",
                                 "sm_100"]),
    "dtypes": st.sampled_from([None, [torch.float32], [torch.float32, torch.float16], [], torch.float32, ["x"],
                               [(torch.float16, torch.float32), (torch.float32, torch.float32)], [(torch.float16,)],
                               [(torch.float16, torch.float32), torch.float16], [(torch.float16, torch.float32)] * 2,
                               [(torch.float16, torch.complex64)], [(torch.float16, torch.float32, torch.float32)]]),
    "type_params": st.sampled_from([None, ("T",), ("T", "W"), ("T", "T"), "TW", (), ("T", 3), ("W", "T"), ("T", "1W")]),
    "checks": st.one_of(st.lists(CHECK, max_size=2), CHECK, st.none()),
    "compile_options": st.sampled_from([(), ["--use_fast_math"], None, [1], "-O3", ["-arch=sm_80"], [""]]),
}


def base_specs():
    """Valid declarations of the fuzz kernels: a fuzzed spec is one of them with some fields replaced."""
    y = [ttk.OutputDecl("y", shape=ttk.SameAs("x"))]
    return [
        dict(kernel_source=SOURCES["k1"], kernel_name="k1", inputs=[ttk.InputDecl("x")], outputs=y,
             extras=[ttk.Numel("x")], geometry=ttk.Elementwise()),
        dict(kernel_source=SOURCES["k2"], kernel_name="k2", inputs=[ttk.InputDecl("x"), ttk.InputDecl("w")],
             outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("x", -1)],
             geometry=ttk.Reduction(reduce_dims=(-1,))),
        dict(kernel_source=SOURCES["k3"], kernel_name="k3",
             inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)], outputs=y, extras=[ttk.Numel("x")],
             geometry=ttk.Custom(grid=(ttk.cdiv(ttk.Numel("x"), 64),), block=(64,))),
        dict(kernel_source=SOURCES["k4"], kernel_name="k4", inputs=[ttk.InputDecl("x", ndim=2)],
             outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 1), ttk.DimSize("x", 0)))], extras=[],
             geometry=ttk.Elementwise(block=(16, 16), layout="nd")),
        dict(kernel_source=SOURCES["k5"], kernel_name="k5",
             inputs=[ttk.InputDecl("x"), ttk.ScalarInput("n", (int, 2)), ttk.ScalarInput("a", float, default=0.5)],
             outputs=[ttk.OutputDecl("y", shape=(ttk.Numel("x") + ttk.Scalar("n")[0] * ttk.Scalar("n")[1],))],
             extras=[ttk.Numel("x")], geometry=ttk.Elementwise()),
        dict(kernel_source=SOURCES["k6"], kernel_name="k6<T, W>", type_params=("T", "W"),
             dtypes=[(torch.float16, torch.float32), (torch.float32, torch.float32)],
             inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W")], outputs=y, extras=[ttk.Numel("x")],
             geometry=ttk.Elementwise(), checks=[ttk.SameShape("x", "w")]),
        dict(kernel_source=SOURCES["k7"], kernel_name="k7", inputs=[ttk.InputDecl("x")],
             outputs=[ttk.OutputDecl("y", shape=(ttk.Written("count", max=ttk.Numel("x")),))],
             extras=[ttk.SizeArg("n", ttk.Numel("x"))], geometry=ttk.Custom(grid=(1,), block=(32,))),
    ]


@st.composite
def specs(draw):
    fields = dict(draw(st.sampled_from(base_specs())))
    for name in draw(st.lists(st.sampled_from(sorted(FIELD_VALUES)), max_size=3, unique=True)):
        fields[name] = draw(FIELD_VALUES[name])
    return ttk.KernelSpec(**fields)


SPEC = specs()
OP_NAMES = st.one_of(st.builds(lambda: unique("fz")), st.builds(lambda: unique("fz")), st.builds(lambda: unique("fz")),
                     st.sampled_from(["fz::class", "prim::x", "nons", "a::b::c", "", 7, "trt::x", "fz::"]))
SCHEMAS = st.sampled_from([None] * 6 + ["", "(Tensor x) -> Tensor", "(Tensor x, float a=2.0) -> Tensor",
                                        "(Tensor x, int[2] n, float a=0.5) -> Tensor",
                                        "(Tensor x, int[] n, float a) -> Tensor",
                                        "(Tensor x) -> (Tensor, Tensor)", "garbage", 3])


def assert_ours(exc, op_name):
    assert isinstance(exc, OURS), f"foreign error {type(exc).__name__}: {exc}"
    msg = str(exc)
    if isinstance(exc, ttk.CompileError):  # NVRTC's log, prefixed by the op
        assert str(op_name) in msg, msg
        return
    assert msg.startswith(str(op_name)) or msg.startswith("op_name"), msg
    assert any(f in msg for f in FIELDS) and "Fix:" in msg, msg


@pytest.fixture(autouse=True)
def arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


@SETTINGS
@given(op_name=OP_NAMES, spec=SPEC, schema=SCHEMAS)
def test_fuzzed_declarations_fail_with_our_errors(op_name, spec, schema):
    try:
        ttk.cuda_kernel_op(op_name, spec, schema=schema)
    except Exception as e:  # noqa: BLE001 - asserted to be ours
        assert_ours(e, op_name)
        if isinstance(op_name, str) and "::" in op_name:
            assert registry.lookup(op_name) is None  # nothing half-declared is left behind
        return
    kop = registry.get(op_name)
    assert kop.source.kernel_name == spec.kernel_name
    # defaults normalized
    assert [(d.name, type(d)) for d in kop.sig.inputs] == [(d.name, type(d)) for d in spec.inputs]
    ttk.unregister(op_name)


# ---------------- calls ----------------

CALL_SPECS = [
    ttk.KernelSpec(kernel_source=SOURCES["k1"], kernel_name="k1", inputs=[ttk.InputDecl("x", ndim=2)],
                   outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", 0) - 2,
                                                       ttk.DimSize("x", 1) // ttk.DimSize("x", 0)))],
                   extras=[ttk.Numel("x")], geometry=ttk.Custom(grid=(ttk.DimSize("x", 0) - 1,), block=(32,),
                                                                   shared_mem=ttk.DimSize("x", 1) * 4 - 8)),
    ttk.KernelSpec(kernel_source=SOURCES["k2"], kernel_name="k2", inputs=[ttk.InputDecl("x"), ttk.InputDecl("w")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))], extras=[ttk.DimSize("w", -1)],
                   geometry=ttk.Reduction(reduce_dims=(-1,), block_size=128)),
    ttk.KernelSpec(kernel_source=SOURCES["k3"], kernel_name="k3",
                   inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                   geometry=ttk.Elementwise(block=(64,))),
    # a tuple input that sizes the output (and the grid), and a float with a default
    ttk.KernelSpec(kernel_source=SOURCES["k5"], kernel_name="k5",
                   inputs=[ttk.InputDecl("x"), ttk.ScalarInput("n", (int, 2)),
                           ttk.ScalarInput("a", float, default=0.5)],
                   outputs=[ttk.OutputDecl("y", shape=(ttk.DimSize("x", -1) + ttk.Scalar("n")[0] - ttk.Scalar("n")[1],
                                                       ttk.DimSize("x", 0) // ttk.Scalar("n")[1]))],
                   extras=[ttk.Numel("x") * ttk.Scalar("n")[0]], geometry=ttk.Elementwise(block=(64,))),
    ttk.KernelSpec(kernel_source=SOURCES["k2"], kernel_name="k2", inputs=[ttk.InputDecl("x"), ttk.InputDecl("w")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.ReduceDims("x", (-1,)))],
                   extras=[ttk.Numel("w") // ttk.DimSize("x", 0)],
                   geometry=ttk.Reduction(reduce_dims=(-1,), block_size=128),
                   checks=[ttk.SameDim(("x", -1), ("w", 0)),
                           ttk.SameDim(ttk.Numel("w") // ttk.DimSize("x", 0), ("x", 1))]),
    ttk.KernelSpec(kernel_source=SOURCES["k6"], kernel_name="k6<T, W>", type_params=("T", "W"),
                   dtypes=[(torch.float16, torch.float32), (torch.float32, torch.float32),
                           (torch.float32, torch.int32)],
                   inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W")],
                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                   extras=[ttk.Numel("x")], geometry=ttk.Elementwise(), checks=[ttk.SameShape("x", "w")]),
]
CALL_OPS = []


def call_ops():
    if not CALL_OPS:
        for spec in CALL_SPECS:
            name = unique("fzc")
            ttk.cuda_kernel_op(name, spec)
            CALL_OPS.append(name)
    return CALL_OPS


SHAPE_DIMS = st.lists(st.sampled_from([0, 1, 2, 3, 5]), max_size=4).map(tuple)
HUGE_DIMS = st.sampled_from([(2**31,), (3, 2**31), (2**31, 3), (2**40,), (0, 2**40), (1, 2**31, 1), (2, 2**35)])
DTYPES = st.sampled_from([torch.float32, torch.float32, torch.float16, torch.int32, torch.float64])
SCALAR = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.just(3.5e38 * 10))
TUPLE = st.lists(st.sampled_from([-3, 0, 1, 2, 7, 2**31, -(2**31) - 1, 2**40]), max_size=4)


@SETTINGS
@given(which=st.integers(0, len(CALL_SPECS) - 1), shapes=st.lists(SHAPE_DIMS, min_size=2, max_size=2),
       huge=st.lists(HUGE_DIMS, min_size=2, max_size=2), dtypes=st.lists(DTYPES, min_size=2, max_size=2), a=SCALAR,
       p=TUPLE)
def test_fuzzed_calls_fail_with_our_errors(which, shapes, huge, dtypes, a, p):
    """Random ranks, sizes (empty, 1, non-multiples of the block; sizes past int32 and int64 in the fake
    impl, where they cost no memory), dtypes and scalars (NaN, inf, past float32)."""
    name = call_ops()[which]
    kop = registry.get(name)
    dispatch, holder, _ = dispatcher_for(name)
    calls = [lambda: dispatch(*args_for(kop, [(torch.rand(s) * 4 - 2).to(d) for s, d in zip(shapes, dtypes)], a, p)),
             lambda: fake_call(name, kop, shapes, dtypes, a, p), lambda: fake_call(name, kop, huge, dtypes, a, p)]
    for call in calls:
        try:
            call()
        except ttk.InputError as e:
            msg = str(e)
            assert msg.startswith(name) and "Fix:" in msg, msg
        except Exception as e:  # noqa: BLE001
            pytest.fail(f"foreign error {type(e).__name__}: {e}")
    rec = holder.get("rec")
    for c in rec.calls if rec is not None else ():  # what did launch was in range
        assert all(1 <= g <= lim for g, lim in zip(c["grid"], (2**31 - 1, 65535, 65535))) and c["smem"] >= 0, c


def args_for(kop, tensors, a, p=()):
    tensors = list(tensors)
    return [tensors.pop(0) if kind == "tensor" else (list(p) if isinstance(d.py_type, tuple) else a)
            for d, kind in zip(kop.sig.inputs, kop.sig.arg_kinds)]


def fake_call(name, kop, shapes, dtypes, a, p=()):
    ns, n = name.split("::")
    with FakeTensorMode():
        tensors = [torch.empty(s, dtype=d) for s, d in zip(shapes, dtypes)]
        return getattr(getattr(torch.ops, ns), n)(*args_for(kop, tensors, a, p))
