"""Declaring, re-declaring and unregistering ops (issue 15, items 5, 6, 8, 9, 10): a refused
re-declaration leaves the working op as it was, schema defaults work everywhere torch drops them,
same-name declarations from many threads are serialized, a call racing an unregister gets this
package's error, and an unregistered op's record is freed."""

import gc
import threading
import types
import weakref

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import trt_kernels as ttk
from kernels import SCALE, scale_spec, sigmoid_spec, unique
from test_fastpath import dispatcher_for
from trt_kernels import registry
from trt_kernels.converters import split_arguments
from trt_kernels.errors import UnregisteredOpError


def op_of(name):
    ns, n = name.split("::")
    return getattr(getattr(torch.ops, ns), n)


def fake_shape(name, *args):
    """The fake impl's output shape; tuple arguments become fake tensors of that shape."""
    with FakeTensorMode():
        args = [torch.empty(a) if isinstance(a, tuple) else a for a in args]
        return tuple(op_of(name)(*args).shape)


# ---------------- item 5: a failed re-declaration keeps the working op ----------------

@pytest.mark.parametrize("bad", [
    dict(schema=""),
    dict(schema="(Tensor x, Tensor y) -> Tensor"),
    dict(schema="(Tensor x) -> (Tensor, Tensor)"),
    dict(schema="(Tensor(a!) x) -> Tensor"),
    dict(spec=sigmoid_spec(kernel_name="no_such_kernel")),
    dict(spec=sigmoid_spec(extras=[ttk.Numel("nope")])),
    dict(spec=sigmoid_spec(compile_options=["--gpu-architecture=sm_80"])),
])
def test_refused_redeclaration_leaves_the_op_working(bad, monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    before = registry.get(name)
    kw = dict(bad)
    spec = kw.pop("spec", sigmoid_spec())
    with pytest.raises((ttk.SpecError, ttk.CompileError)):
        ttk.cuda_kernel_op(name, spec, **kw)
    assert registry.get(name) is before
    assert str(op_of(name).default._schema).endswith("(Tensor x) -> Tensor")
    assert fake_shape(name, (3, 4)) == (3, 4)


def test_redeclaration_with_another_schema_replaces_the_op():
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    ttk.cuda_kernel_op(name, scale_spec())
    assert str(op_of(name).default._schema).endswith("(Tensor x, float alpha) -> Tensor")
    assert fake_shape(name, (5,), 2.0) == (5,)
    with pytest.raises(Exception):
        fake_shape(name, (5,))  # the old signature is gone


def test_same_schema_redeclaration_keeps_the_overload_object():
    """Torch-TensorRT keys converters by OpOverload: a notebook re-run must not orphan them."""
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    ov = op_of(name).default
    ttk.cuda_kernel_op(name, sigmoid_spec(geometry=ttk.Elementwise(block=(128,))))
    assert op_of(name).default is ov
    assert registry.get(name).plan((1,)).block == (128, 1, 1)


# ---------------- item 6: re-declaring with the TensorRT side active ----------------

def test_redeclaration_keeps_tensorrt_support(trt_side):  # noqa: F811
    env, converters = trt_side
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, scale_spec())
    first = registry.get(name)
    assert first.tensorrt.aot is True and first.tensorrt.converter.startswith("registered")
    ttk.cuda_kernel_op(name, scale_spec(geometry=ttk.Elementwise(block=(64,))))  # same signature, new launch
    kop = registry.get(name)
    assert kop is not first
    assert kop.tensorrt.aot is True and kop.tensorrt.plugin.startswith("AOT")
    assert kop.tensorrt.converter.startswith("registered")
    fn, _ = converters[kop.overload]  # a converter for the op as it is now
    net = env.network()
    x = net.add_input("x", env.trt.float32, [-1, 8])
    fn(types.SimpleNamespace(net=net), kop.overload, (x, 0.5), {}, "scale_node")
    assert net.num_layers == 1
    # the registered plugin's functions use the current declaration
    from trt_kernels.plugins import QDP_PLUGINS as _PLUGINS
    assert _PLUGINS[name][1].kop is kop


def test_redeclaration_with_another_plugin_signature_is_refused_first(trt_side):  # noqa: F811
    env, converters = trt_side
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, scale_spec())
    first = registry.get(name)
    src = SCALE.replace("float alpha", "int alpha")
    with pytest.raises(ttk.SpecError, match="already registered in this process with another signature"):
        ttk.cuda_kernel_op(name, sigmoid_spec(kernel_source=src, kernel_name="my_scale",
                                              inputs=[ttk.InputDecl("x"), ttk.ScalarInput("alpha", int)]))
    assert registry.get(name) is first
    assert str(op_of(name).default._schema).endswith("(Tensor x, float alpha) -> Tensor")
    assert first.tensorrt.aot is True


def test_unregistered_op_plugin_and_converter_say_so(trt_side):  # noqa: F811
    env, converters = trt_side
    name = unique("ttk_redecl")
    ttk.cuda_kernel_op(name, scale_spec())
    ov = registry.get(name).overload
    fn, _ = converters[ov]
    ttk.unregister(name)
    net = env.network()
    x = net.add_input("x", env.trt.float32, [-1, 8])
    with pytest.raises(UnregisteredOpError, match="was unregistered"):
        fn(types.SimpleNamespace(net=net), ov, (x, 0.5), {}, "scale_node")


# ---------------- item 8: schema defaults ----------------

DEFAULTS = "(Tensor x, float alpha=2.5) -> Tensor"


def test_schema_defaults_in_fake_export_and_converter(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_dflt")
    op = ttk.cuda_kernel_op(name, scale_spec(), schema=DEFAULTS)
    kop = registry.get(name)
    assert kop.defaults == (2.5,)
    assert fake_shape(name, (3, 2)) == (3, 2)  # torch drops alpha=2.5: the fake impl fills it in
    assert fake_shape(name, (3, 2), 1.0) == (3, 2)

    class M(torch.nn.Module):
        def forward(self, x):
            return op(x) + op(x, 1.0) + op(x, alpha=2.5)

    ep = torch.export.export(M(), (torch.randn(4, 3),))
    nodes = [n for n in ep.graph.nodes if n.target is op.default]
    assert len(nodes) == 3
    seen = []
    for n in nodes:  # what the converter receives from the traced graph, defaults left out by torch
        tensors, attrs = split_arguments(kop, n.args, n.kwargs)
        assert [t for t, _ in tensors] == ["x"]
        seen.append(attrs["alpha"])
    assert sorted(seen) == [1.0, 2.5, 2.5]


def test_schema_defaults_reach_the_eager_launch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_dflt")
    ttk.cuda_kernel_op(name, scale_spec(), schema=DEFAULTS)
    dispatch, holder, _ = dispatcher_for(name)
    x = torch.randn(7)
    dispatch(x)  # as torch calls the kernel when alpha equals its default
    dispatch(x, 0.5)
    alphas = [c["vals"][1] for c in holder["rec"].calls]  # (x ptr, alpha, n, y ptr)
    assert alphas == [2.5, 0.5]


@pytest.mark.parametrize("schema,match", [
    ("(Tensor x, float beta) -> Tensor", "input 1 is named 'alpha'"),
    ("(Tensor x, int alpha) -> Tensor", "has type int but the spec declares float"),
    ("(Tensor x, float alpha) -> (Tensor, Tensor)", "declares 1 output"),
    ("(Tensor x=None, float alpha) -> Tensor", "does not parse|cannot have a default"),
    ("(Tensor x, *, float alpha) -> Tensor", "keyword-only"),
    ("(Tensor x, float alpha=1e39) -> Tensor", "does not fit"),
    ("(Tensor x) -> Tensor", "1 arguments but the spec declares 2 inputs"),
    ("Tensor x -> Tensor", "not an argument list"),
])
def test_schema_that_does_not_match_the_spec_is_refused(schema, match):
    name = unique("ttk_dflt")
    with pytest.raises(ttk.SpecError, match=match) as info:
        ttk.cuda_kernel_op(name, scale_spec(), schema=schema)
    assert str(info.value).startswith(name) and "Fix:" in str(info.value)
    assert registry.lookup(name) is None


# ---------------- item 9: same-name races ----------------

def test_threads_declaring_one_name_are_serialized(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_race")
    ttk.cuda_kernel_op(name, sigmoid_spec())  # compiled once; the threads hit the cache
    errors = []

    def declare():
        try:
            for _ in range(25):
                ttk.cuda_kernel_op(name, sigmoid_spec())
        except Exception as e:  # noqa: BLE001 - collected and asserted on below
            errors.append(e)

    threads = [threading.Thread(target=declare) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert fake_shape(name, (2, 3)) == (2, 3)


def test_calls_racing_unregister_get_our_error(monkeypatch):
    """Declare/unregister churn against callers: every failure a caller sees is this package's
    (torch used to raise its 'schema_.has_value() INTERNAL ASSERT')."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_race")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    stale = op_of(name).default  # kept across unregisters, as user code does
    stop = threading.Event()
    foreign = []

    def churn():
        for _ in range(60):
            ttk.unregister(name)
            ttk.cuda_kernel_op(name, sigmoid_spec())
        stop.set()

    def call():
        x = torch.randn(4)
        while not stop.is_set():
            for fn in (stale, lambda t: op_of(name)(t)):
                try:
                    fn(x)  # CPU tensor: the live op answers NoCudaDeviceError (or InputError on a GPU machine)
                except (UnregisteredOpError, ttk.NoCudaDeviceError, ttk.InputError):
                    pass
                except Exception as e:  # noqa: BLE001
                    foreign.append(e)

    callers = [threading.Thread(target=call) for _ in range(3)]
    for t in callers:
        t.start()
    churn()
    for t in callers:
        t.join()
    assert not foreign, foreign[:3]


def test_unregistered_op_answers_with_our_error():
    name = unique("ttk_race")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    stale = op_of(name).default
    ttk.unregister(name)
    for call in (lambda: stale(torch.randn(3)), lambda: op_of(name)(torch.randn(3)),
                 lambda: fake_shape(name, (3,))):
        with pytest.raises(UnregisteredOpError, match="was unregistered"):
            call()
    ttk.cuda_kernel_op(name, sigmoid_spec())  # declared again: the stale handle works again
    assert fake_shape(name, (3,)) == (3,)


# ---------------- item 10: records are freed ----------------

def test_unregistered_records_are_freed(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    refs = []
    for _ in range(5):
        name = unique("ttk_leak")
        ttk.cuda_kernel_op(name, sigmoid_spec())
        refs.append(weakref.ref(registry.get(name)))
        fake_shape(name, (2,))  # the kernels have run once
        ttk.unregister(name)
    name = unique("ttk_leak")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    refs.append(weakref.ref(registry.get(name)))
    ttk.cuda_kernel_op(name, sigmoid_spec())  # a re-declaration frees the record it replaces
    gc.collect()
    assert [r() for r in refs] == [None] * len(refs)


# ---------------- a re-declaration that adds or drops the backward ----------------

def _backward(ctx, grad):
    return grad * 2


def _setup_context(ctx, inputs, output):
    pass


def test_a_redeclaration_adds_and_drops_the_autograd_kernel_and_keeps_the_definition(monkeypatch):
    """The definition (and an OpOverload kept from before) stays; only the autograd kernel, in a library
    fragment of its own, comes and goes with the declaration's backward."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    name = unique("ttk_redecl")

    def autograd_kernel():
        return torch._C._dispatch_has_kernel_for_dispatch_key(name, "Autograd")

    def grad_of_fake():
        with FakeTensorMode():
            return op_of(name)(torch.empty(8, requires_grad=True)).requires_grad

    ttk.cuda_kernel_op(name, sigmoid_spec())
    kept = op_of(name).default
    assert not autograd_kernel()
    ttk.cuda_kernel_op(name, sigmoid_spec(), backward=_backward, setup_context=_setup_context)
    assert autograd_kernel() and grad_of_fake() and op_of(name).default is kept
    ttk.cuda_kernel_op(name, sigmoid_spec())
    assert not autograd_kernel() and op_of(name).default is kept
    ttk.cuda_kernel_op(name, sigmoid_spec(), backward=_backward, setup_context=_setup_context)
    assert autograd_kernel() and grad_of_fake()
    assert fake_shape(name, (3, 5)) == (3, 5)  # the fake kernel was never re-registered
    ttk.unregister(name)
