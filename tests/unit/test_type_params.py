"""Kernels with several type parameters (``type_params=("T", "W")``, ``dtypes`` as combinations):
declaration errors, NVRTC instantiation and the ABI check of every combination, dispatch on the
inputs' dtypes in the fake impl and the eager launcher, and the dtype rules every other part reads."""

import types

import pytest
import torch

import trt_kernels as ttk
from kernels import MIXED_COMBOS, RMSNORM_MIXED, rmsnorm_mixed_spec, unique
from test_fastpath import Recorder, StubKernel
from test_spec_validation import expect
from trt_kernels import recipe, registry
from trt_kernels.eager.fastpath import build_launcher

F16, BF16, F32, F64 = torch.float16, torch.bfloat16, torch.float32, torch.float64


@pytest.fixture
def arch(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


def declare(spec=None, **kw):
    name = unique("ttk_tp")
    ttk.cuda_kernel_op(name, spec or rmsnorm_mixed_spec(**kw))
    return name, registry.get(name)


def meta(*shape, dtype=F32):
    return torch.empty(*shape, device="meta", dtype=dtype)


# ---------- declarations ----------

def test_type_params_errors():
    expect(r"type_params: got the str 'TW'", rmsnorm_mixed_spec(type_params="TW"))
    expect(r"type_params: duplicate names", rmsnorm_mixed_spec(type_params=("T", "T")))
    expect(r"type_params: '1W' is not a C\+\+ identifier", rmsnorm_mixed_spec(type_params=("T", "1W")))
    expect(r"type_params: empty", rmsnorm_mixed_spec(type_params=()))


def test_combinations_errors():
    msg = expect(r"dtypes\[1\]: .* is not a combination of 2 dtypes", rmsnorm_mixed_spec(dtypes=[(F16, F32), F16]))
    assert "type_params=['T', 'W']" in msg
    expect(r"dtypes\[0\]: .* is not a combination of 2 dtypes", rmsnorm_mixed_spec(dtypes=[(F16, F32, F32)]))
    expect(r"dtypes\[0\]: torch.complex64 is not supported", rmsnorm_mixed_spec(dtypes=[(torch.complex64, F32)]))
    expect(r"duplicate entries in \['\(T=float16, W=float32\)', '\(T=float16, W=float32\)'\]",
           rmsnorm_mixed_spec(dtypes=[(F16, F32), (F16, F32)]))
    expect(r"dtypes: empty list", rmsnorm_mixed_spec(dtypes=[]))
    expect(r"dtypes: type_params=\['T', 'W'\] but no combinations are declared", rmsnorm_mixed_spec(dtypes=None))
    # one type parameter: plain dtypes, not combinations
    expect(r"dtypes\[0\]: .* is a combination, but the kernel has one type parameter \(T\)",
           rmsnorm_mixed_spec(type_params=None, dtypes=[(F16, F32)]))


def test_type_parameter_references():
    expect(r"inputs\[1\].dtype: 'V' names no type parameter \(type_params=\['T', 'W'\]\)",
           rmsnorm_mixed_spec(inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="V"),
                                      ttk.ScalarInput("eps", float)]))
    msg = expect(r"type_params: 'W' is the dtype of no tensor input",
                 rmsnorm_mixed_spec(inputs=[ttk.InputDecl("x"), ttk.InputDecl("w"), ttk.ScalarInput("eps", float)]))
    assert "InputDecl(name, dtype='W')" in msg
    expect(r"outputs\[0\].dtype: 'V' names no type parameter",
           rmsnorm_mixed_spec(outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"), dtype="V")]))
    expect(r"kernel_name: 'rms<T>' does not name the type parameter\(s\) \['W'\]",
           rmsnorm_mixed_spec(kernel_name="rms<T>"))
    # a one-parameter kernel names its parameter as a str too
    spec = rmsnorm_mixed_spec(type_params=None, dtypes=[F32, F16], kernel_name="rms<T, float>",
                              inputs=[ttk.InputDecl("x", dtype="T"), ttk.InputDecl("w", dtype=F32),
                                      ttk.ScalarInput("eps", float)])
    expect(r"inputs\[0\].dtype: 'W' names no type parameter \(type_params=\['T'\]\)",
           rmsnorm_mixed_spec(type_params=None, dtypes=[F32, F16], kernel_name="rms<T, float>",
                              inputs=[ttk.InputDecl("x", dtype="W"), ttk.InputDecl("w", dtype=F32),
                                      ttk.ScalarInput("eps", float)]))
    assert spec.inputs[0].dtype == "T"


def test_single_type_parameter_declarations_unchanged(arch):
    """The one-T form: dtypes a plain list, inputs without a dtype follow T (what every other test declares)."""
    from kernels import TEMPLATE_SIGMOID, sigmoid_spec

    name, kop = declare(sigmoid_spec(kernel_source=TEMPLATE_SIGMOID, kernel_name="tsig<T>", dtypes=[F32, F16]))
    assert kop.sig.type_params == ("T",) and kop.dtypes == (F32, F16)
    assert kop.source.names == ["tsig<float>", "tsig<__half>"]


# ---------- compile: every combination instantiated and ABI-checked ----------

def test_every_combination_compiles_and_is_abi_checked(arch):
    name, kop = declare()
    assert kop.dtypes == tuple(MIXED_COMBOS)
    assert kop.source.names == ["rms<__half, float>", "rms<__nv_bfloat16, float>", "rms<float, float>"]
    b = kop.binary("sm_90")
    symbols = {k: b.kernel(k).symbol for k in kop.dtypes}
    assert len(set(symbols.values())) == 3  # three instantiations
    for k in kop.dtypes:
        labels = [p.label for p in kop.sig.params(k)]
        t = {F16: "__half", BF16: "__nv_bfloat16", F32: "float"}[k[0]]
        assert labels == [f"const {t}* x", "const float* w", "float eps", "int extra0 /* DimSize('x', -1) */",
                          f"{t}* y"]
    # the parameter count is checked per combination: a kernel that drops eps is refused
    bad = RMSNORM_MIXED.replace("float eps, ", "").replace(" + eps", "")
    with pytest.raises(ttk.KernelABIError, match=r"rms<__half, float>"):
        ttk.cuda_kernel_op(unique("ttk_tp"), rmsnorm_mixed_spec(kernel_source=bad))


def test_inspect_lists_each_combination(arch):
    """``trt-kernels inspect``'s record: one ABI row per combination, named by its type parameters."""
    from trt_kernels.cli import inspect as cli_inspect

    name, kop = declare()
    d = cli_inspect.describe(kop, "sm_90", {}, {})
    labels = ["(T=float16, W=float32)", "(T=bfloat16, W=float32)", "(T=float32, W=float32)"]
    assert d["dtypes"] == labels
    assert [r["dtype"] for r in d["abi"]] == labels
    assert [r["kernel_name"] for r in d["abi"]] == kop.source.names
    assert d["abi"][1]["c_signature"].startswith("__global__ void rms(const __nv_bfloat16* x, const float* w, "
                                                 "float eps")


# ---------- dispatch: fake impl, eager launcher ----------

@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS)
def test_fake_impl_dispatches_on_the_input_dtypes(arch, xdt, wdt):
    name, kop = declare()
    op = kop.overload
    y = op(meta(3, 40, dtype=xdt), meta(40, dtype=wdt), 1e-6)
    assert y.dtype == xdt and y.shape == (3, 40)


def test_undeclared_combination_lists_the_declared_ones(arch):
    name, kop = declare()
    with pytest.raises(ttk.InputError) as info:
        kop.overload(meta(3, 40, dtype=F16), meta(40, dtype=F16), 1e-6)
    msg = str(info.value)
    assert msg.startswith(f"{name}: input dtypes (x: float16, w: float16) are not a combination the kernel declares "
                          "(x: float16, w: float32; x: bfloat16, w: float32; x: float32, w: float32)")
    assert "Fix:" in msg
    with pytest.raises(ttk.InputError, match=r"input dtypes \(x: float64, w: float32\)"):
        kop.overload(meta(3, 40, dtype=F64), meta(40), 1e-6)


def test_output_dtype_from_a_type_parameter(arch):
    """OutputDecl(dtype="W"): the output takes the dtype W is bound to."""
    src = (RMSNORM_MIXED.replace("T* __restrict__ y", "W* __restrict__ y")
           .replace("static_cast<T>(static_cast<float>(xr[j])", "static_cast<W>(static_cast<float>(xr[j])"))
    name, kop = declare(rmsnorm_mixed_spec(kernel_source=src, dtypes=[(F16, F32), (F16, F64)],
                                           outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"), dtype="W")]))
    assert kop.overload(meta(2, 8, dtype=F16), meta(8, dtype=F64), 1e-6).dtype == F64
    assert kop.sig.io_dtypes((F16, F32)) == [F16, F32, F32]
    assert [p.label for p in kop.sig.params((F16, F64))][-1] == "double* y"


def test_fixed_dtype_input_alongside_type_parameters(arch):
    src = RMSNORM_MIXED.replace("float eps, int D", "const int* idx, float eps, int D")
    name, kop = declare(rmsnorm_mixed_spec(
        kernel_source=src, inputs=[ttk.InputDecl("x"), ttk.InputDecl("w", dtype="W"),
                                   ttk.InputDecl("idx", dtype=torch.int32), ttk.ScalarInput("eps", float)]))
    assert kop.overload(meta(2, 8, dtype=BF16), meta(8), meta(2, dtype=torch.int32), 1e-6).dtype == BF16
    with pytest.raises(ttk.InputError, match=r"input 'idx' has dtype int64 but the kernel takes int32 there"):
        kop.overload(meta(2, 8, dtype=BF16), meta(8), meta(2, dtype=torch.int64), 1e-6)


def test_kernel_dtype_of():
    name, kop = declare()
    sig = kop.sig
    assert sig.kernel_dtype_of([BF16, F32]) == (BF16, F32)
    assert sig.kernel_dtype_of([F32, F32]) == (F32, F32)
    assert sig.kernel_dtype_of([F32, F16]) is None
    assert sig.binding((F16, F32)) == {"T": F16, "W": F32}


@pytest.mark.parametrize("xdt, wdt", MIXED_COMBOS)
def test_eager_launcher_per_combination(arch, xdt, wdt):
    """The generated launcher of each combination (CPU tensors, a recording cuLaunchKernel): the output has
    T's dtype and the parameters are the ABI's."""
    name, kop = declare()
    x, w = torch.randn(5, 300).to(xdt), torch.rand(300).to(wdt)
    plan = kop.plan((2, 1))
    holder = {}
    k = (xdt, wdt)
    fn = build_launcher(kop, recipe.make(kop.sig, k, plan, None), StubKernel(),
                        launch=lambda *a: holder["rec"](*a), stream=lambda dev: 7)
    holder["rec"] = rec = Recorder(fn.pack)
    y = fn(x, w, 0.5)
    assert y.dtype == xdt and y.shape == x.shape
    (call,) = rec.calls
    assert call["grid"] == (5, 1, 1) and call["block"] == (128, 1, 1)
    assert call["vals"] == [x.data_ptr(), w.data_ptr(), 0.5, 300, y.data_ptr()]


def test_dispatcher_key_tells_combinations_apart(arch):
    """Eager's dispatch key holds every tensor input's dtype, so two combinations that share x's dtype
    (float32 x with a float32 or a float64 w) get different launchers."""
    name, kop = declare(rmsnorm_mixed_spec(dtypes=[(F32, F32), (F32, F64)]))
    from trt_kernels.library.arguments import check_tensor_args

    assert check_tensor_args(kop, [meta(2, 3), meta(3), ]) == (F32, F32)
    assert check_tensor_args(kop, [meta(2, 3), meta(3, dtype=F64)]) == (F32, F64)
    shell = kop.cuda_impl  # the key its lookup computes reads w's dtype too
    key_of = shell.__globals__[f"{shell.generation}_key"]
    assert key_of((meta(2, 3), meta(3))) == (F32, F32, 2, 1)
    assert key_of((meta(2, 3), meta(3, dtype=F64))) == (F32, F64, 2, 1)


# ---------- the ONNX route's IPluginV3One plugin ----------

def _fake_trt():
    """The few tensorrt names the IPluginV3One plugin's build methods read (the TensorRT emulator has no
    IPluginV3One classes)."""
    import enum

    class Base:
        def __init__(self, *a):
            pass

    return types.SimpleNamespace(
        IPluginV3=type("IPluginV3", (Base,), {}), IPluginV3OneCore=type("IPluginV3OneCore", (Base,), {}),
        IPluginV3OneBuild=type("IPluginV3OneBuild", (Base,), {}),
        IPluginV3OneRuntime=type("IPluginV3OneRuntime", (Base,), {}),
        IPluginCreatorV3One=type("IPluginCreatorV3One", (Base,), {}),
        DataType=enum.Enum("DataType", "FLOAT HALF BF16 INT32 INT64 INT8 UINT8 BOOL"),
        TensorFormat=enum.Enum("TensorFormat", "LINEAR CHW32"),
        PluginFieldType=enum.Enum("PluginFieldType", "FLOAT32 INT32"))


def test_v3one_plugin_offers_exactly_the_combinations(arch):
    from trt_kernels.plugins.v3one import _classes

    trt = _fake_trt()
    name, kop = declare()
    KernelPlugin, _ = _classes(trt)
    p = KernelPlugin(name, {"eps": 1e-5}, 1)
    H, B, F = trt.DataType.HALF, trt.DataType.BF16, trt.DataType.FLOAT

    def io(*ts, fmt=trt.TensorFormat.LINEAR):
        return [types.SimpleNamespace(desc=types.SimpleNamespace(type=t, format=fmt)) for t in ts]

    ok = [all(p.supports_format_combination(pos, io(*combo), 2) for pos in range(3))
          for combo in [(H, F, H), (B, F, B), (F, F, F), (H, H, H), (B, F, H), (F, H, F), (H, F, F)]]
    assert ok == [True, True, True, False, False, False, False]
    assert not p.supports_format_combination(0, io(H, F, H, fmt=trt.TensorFormat.CHW32), 2)
    assert p.get_output_data_types([B, F]) == [B]
    with pytest.raises(ttk.InputError, match=r"TensorRT gives input dtypes \(x: float16, w: float16\), "
                                             r"which are not a combination the kernel declares"):
        p.get_output_data_types([H, H])
