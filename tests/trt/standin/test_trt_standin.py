"""NVIDIA's real ``tensorrt.plugin`` (QDP) layer, run on CPU over the emulated native module (trt_kernels.testing).

Proves that the validators are NVIDIA's own, that descriptors and aot_impls can be
evaluated symbolically and at concrete sizes through NVIDIA's plugin-class code
paths, and that the stand-in never leaks out of its ``with`` block.
Independent of trt_kernels' plugin code on purpose.

Version-aware: NVIDIA's Python layer differs between the bindings wheels (10.15.1, Torch-TensorRT
2.11's; 11.0, 2.13's; 11.4), and where it does each test asserts what the wheel in use does
(``FIXED_IN`` below, read from the wheels' ``tensorrt/plugin`` sources). Run under another wheel with
``TRT_STANDIN_BINDINGS=<wheel>`` (``tests/trt/emulator/test_trt_emulator_names.py::test_each_extra_wheel`` does).
"""

import importlib.util
import struct
import sys
import types
import uuid
from typing import List, Tuple, Union

import numpy as np
import numpy.typing as npt
import pytest

from trt_kernels.testing import _standin as trt_standin

_REASON = trt_standin.unavailable_reason()
pytestmark = pytest.mark.skipif(
    _REASON is not None, reason=f"NVIDIA tensorrt.plugin sources unavailable: {_REASON}"
)

BLOCK = 256

#: the first bindings version of NVIDIA's ``tensorrt.plugin`` with each fix (seen in the wheels: 10.15.1.29,
#: 11.0.0.114 and 11.1's sources lack the two 11.2 fixes, 11.2.1.2 and 11.4.0.106 have them)
FIXED_IN = {
    # _lib.create_plugin turns a one-element float/int field into the attribute with float(arr)/int(arr),
    # which numpy >= 2.4 refuses for a 1-d array; 11.2 takes element 0
    "scalar_attributes": (11, 2),
    # _validate calls issubclass() on annotations without checking they are classes (a string annotation
    # raised TypeError); 11.2 checks inspect.isclass first and reports a ValueError
    "annotation_isclass": (11, 2),
    # SymIntExpr.__bool__ (symbolic: RuntimeError; constant: its value): 10.16; before it, always True
    "expr_bool": (10, 16),
}
NUMPY_REFUSES_1D_SCALARS = np.lib.NumpyVersion(np.__version__) >= "2.4.0"


def _version(qdp):
    """The bindings version the stand-in runs (``tensorrt.__version__``, NVIDIA's ``__init__``)."""
    return tuple(int(p) for p in qdp.trt.__version__.split(".")[:2])


def has_fix(qdp, fix: str) -> bool:
    return _version(qdp) >= FIXED_IN[fix]


def plain_scalars_work(qdp) -> bool:
    """Whether a plugin with a plain ``float``/``int`` attribute can be created (see ``FIXED_IN``)."""
    return has_fix(qdp, "scalar_attributes") or not NUMPY_REFUSES_1D_SCALARS


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _f32_bits(x: float) -> int:
    """IEEE-754 bits of a float32 as a signed int32 (how a float attr travels as SymInt32)."""
    return struct.unpack("<i", struct.pack("<f", x))[0]


@pytest.fixture
def qdp():
    yield from trt_standin.standin_fixture()


def _register_sigmoid(trtp, ns: str, calls: list):
    """A sigmoid-like plugin: out = sigmoid(alpha * x); descriptor + autotune + aot_impl + impl.

    Its scalars are one-element numpy arrays, which every TensorRT version can create (a plain ``float``
    attribute cannot, on TensorRT < 11.2 with numpy >= 2.4: ``test_plain_scalar_attributes_follow_the_version``)."""
    import tensorrt as trt  # the stand-in, inside the fixture

    pid = f"{ns}::scaled_sigmoid"
    F32, I32 = npt.NDArray[np.float32], npt.NDArray[np.int32]

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc, alpha: F32, block: I32) -> trtp.TensorDesc:
        return x.like()

    @trtp.autotune(pid)
    def _autotune(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]) -> List[trtp.AutoTuneCombination]:
        return [trtp.AutoTuneCombination("FP32|FP16, FP32|FP16", "LINEAR", [1, 2])]

    # NB: the aot_impl must take *all* attributes (NVIDIA passes them all positionally).
    @trtp.aot_impl(pid)
    def _aot(
        x: trtp.TensorDesc, alpha: F32, block: I32, outputs: Tuple[trtp.TensorDesc], tactic: int
    ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
        assert alpha.shape == (1,) and alpha.dtype == np.float32 and block.dtype == np.int32
        suffix = "f32" if x.dtype == trt.float32 else "f16"
        n = x.shape_expr.numel()
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(n, int(block[0]))
        launch.block_x = int(block[0])
        extra = trtp.SymIntExprs(2)
        extra[0] = trtp.SymInt32(n)
        extra[1] = trtp.SymInt32(_f32_bits(float(alpha[0])))
        name = f"scaled_sigmoid_{suffix}_t{tactic}"
        return name, _ptx(name), launch, extra

    @trtp.impl(pid)
    def _impl(x: trtp.Tensor, alpha: F32, outputs: Tuple[trtp.Tensor], stream: int) -> None:
        calls.append((x, alpha, outputs, stream))

    return pid


def _ptx(name: str) -> str:
    """PTX text with one (empty) entry: the builder refuses a kernel that is not PTX, as TensorRT would."""
    return f".version 9.0\n.target sm_90\n.address_size 64\n.visible .entry {name}()\n{{\n  ret;\n}}\n"


def _ns() -> str:
    return "ttk_standin_" + uuid.uuid4().hex[:8]


# ------------------------------------------------------------------------------------
# NVIDIA's validators
# ------------------------------------------------------------------------------------


def test_plugin_package_is_nvidias(qdp):
    trtp = qdp.trtp
    assert trtp.__name__ == "tensorrt.plugin"
    assert "tensorrt_bindings" in trtp.__file__.replace("\\", "/") or trtp.__file__.endswith("plugin/__init__.py")
    for name in ("register", "aot_impl", "impl", "autotune", "KernelLaunchParams", "SymInt32", "ShapeExprs",
                 "AutoTuneCombination", "cdiv", "max", "min", "op"):
        assert hasattr(trtp, name), name
    assert any("experimental" in msg for _, msg in qdp.log)  # logged by NVIDIA's __init__


def test_validator_rejects_aot_impl_with_unknown_attribute(qdp):
    trtp, ns = qdp.trtp, _ns()

    @trtp.register(f"{ns}::p")
    def _desc(x: trtp.TensorDesc, alpha: float) -> trtp.TensorDesc:
        return x.like()

    def bad(x: trtp.TensorDesc, beta: float, outputs: Tuple[trtp.TensorDesc], tactic: int
            ) -> Tuple[str, str, trtp.KernelLaunchParams, trtp.SymIntExprs]:
        raise AssertionError("never called")

    with pytest.raises(ValueError, match=r"Unexpected attribute 'beta'.*\['alpha'\]"):
        trtp.aot_impl(f"{ns}::p")(bad)


def test_validator_rejects_bad_descriptors(qdp):
    trtp, ns = qdp.trtp, _ns()

    def no_annotation(x: trtp.TensorDesc, alpha) -> trtp.TensorDesc:
        return x

    with pytest.raises(ValueError, match="does not have a type annotation"):
        trtp.register(f"{ns}::a")(no_annotation)

    def variadic(x: trtp.TensorDesc) -> Tuple[trtp.TensorDesc, ...]:
        return (x,)

    with pytest.raises(TypeError):  # Ellipsis is not a class
        trtp.register(f"{ns}::b")(variadic)

    def stringly(x, alpha):
        return x

    # What ``from __future__ import annotations`` produces: string annotations. Refused either way; before
    # 11.2 NVIDIA's validator hands the string to issubclass() (TypeError), from 11.2 it says so (ValueError)
    stringly.__annotations__ = {"x": "trtp.TensorDesc", "alpha": "float", "return": "trtp.TensorDesc"}
    if has_fix(qdp, "annotation_isclass"):
        with pytest.raises(ValueError):
            trtp.register(f"{ns}::c")(stringly)
    else:
        with pytest.raises(TypeError, match="issubclass"):
            trtp.register(f"{ns}::c")(stringly)

    def ok(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    trtp.register(f"{ns}::d")(ok)
    with pytest.raises(ValueError, match="already has a defintion"):
        trtp.register(f"{ns}::d")(ok)


def _register_plain(trtp, ns: str):
    """A plugin with plain ``float`` / ``int`` attributes (what NVIDIA's examples declare)."""
    pid = f"{ns}::plain"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc, alpha: float, block: int) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(pid)
    def _aot(x: trtp.TensorDesc, alpha: float, block: int, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
        assert type(alpha) is float and type(block) is int
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), block)
        launch.block_x = block
        extra = trtp.SymIntExprs(1)
        extra[0] = trtp.SymInt32(_f32_bits(alpha))
        return "plain", _ptx("plain"), launch, extra

    return pid


def test_plugin_call_checks_attribute_types_and_order(qdp):
    trtp, ns = qdp.trtp, _ns()
    _register_plain(trtp, ns)
    op = getattr(trtp.op, ns).plain
    x = qdp.network().add_input("x", qdp.trt.float32, (4, 8))
    with pytest.raises(ValueError, match="Expected '<class 'float'>'"):
        op(x, alpha=1, block=BLOCK)  # int for a float attribute
    with pytest.raises(ValueError, match="Unexpected schema"):
        op(x, block=BLOCK, alpha=1.0)  # kwargs must follow the descriptor's order
    op(x, alpha=1.0, block=BLOCK)
    _register_sigmoid(trtp, ns, [])
    arr = getattr(trtp.op, ns).scaled_sigmoid
    with pytest.raises(ValueError):
        arr(x, alpha=0.5, block=BLOCK)  # a Python float for a numpy-array attribute
    arr(x, alpha=np.array([0.5], np.float32), block=np.array([BLOCK], np.int32))


def test_plain_scalar_attributes_follow_the_version(qdp):
    """TensorRT's real behaviour: before 11.2, NVIDIA's ``create_plugin`` converts a plain ``float``/``int``
    attribute with ``float(field.data)`` on a one-element array, which numpy >= 2.4 refuses, so such a
    plugin cannot be created at all (TensorRT 10.15 with Torch-TensorRT 2.11, 11.0 with 2.13, on a current
    numpy). From 11.2 (or with numpy < 2.4) it is created and the aot_impl gets Python scalars."""
    trtp, ns = qdp.trtp, _ns()
    pid = _register_plain(trtp, ns)
    if plain_scalars_work(qdp):
        res = qdp.build(pid, [("FP32", (4, 100))], {"alpha": 0.25, "block": 128})
        assert res.grid == (_cdiv(400, 128), 1, 1) and res.extra_arg_values == [_f32_bits(0.25)]
    else:
        with pytest.raises(TypeError, match="only 0-dimensional arrays can be converted to Python scalars"):
            qdp.build(pid, [("FP32", (4, 100))], {"alpha": 0.25, "block": 128})


# ------------------------------------------------------------------------------------
# Evaluating descriptors and aot_impls through NVIDIA's plugin class
# ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype, shape", [("FP32", (4, 1000)), ("FP16", (3, 5, 7)), ("FP32", (1,))])
def test_build_evaluates_descriptor_and_aot_impl(qdp, dtype, shape):
    trtp, ns = qdp.trtp, _ns()
    pid = _register_sigmoid(trtp, ns, [])
    alpha = 0.75
    res = qdp.build(pid, inputs=[(dtype, shape)], attrs={"alpha": alpha, "block": BLOCK}, aot=True)

    numel = int(np.prod(shape))
    assert res.is_aot
    assert res.output_shapes == [tuple(shape)]
    assert res.output_dtypes == [trt_standin.as_dtype(qdp.trt, dtype)]
    # symbolic: the output shape is the input's symbols, not constants
    assert not any(e.is_constant() for e in res.output_shape_exprs[0])
    assert res.tactics == [1, 2] and res.tactic == 1
    suffix = "f32" if dtype == "FP32" else "f16"
    assert res.kernel_name == f"scaled_sigmoid_{suffix}_t1"
    assert res.ptx == _ptx(res.kernel_name).encode()  # get_kernel encodes str PTX

    assert res.grid == (_cdiv(numel, BLOCK), 1, 1)
    assert res.block == (BLOCK, 1, 1)
    assert res.launch_values["shared_mem"] == 0
    assert res.extra_args[0][0] is qdp.trt.PluginArgDataType.INT32
    assert res.extra_arg_values == [numel, _f32_bits(alpha)]
    assert res.problems() == []

    # the same symbolic launch at another input shape, without rebuilding
    other = tuple(s * 3 + 1 for s in shape)
    n2 = int(np.prod(other))
    assert res.launch_at([other])["grid_x"] == _cdiv(n2, BLOCK)
    assert res.extra_args_at([other])[0] == n2


def test_build_picks_requested_tactic_and_static_shapes_fold(qdp):
    trtp, ns = qdp.trtp, _ns()
    pid = _register_sigmoid(trtp, ns, [])
    res = qdp.build(pid, [("FP16", (2, 300))], {"alpha": 2.0, "block": 128}, tactic=2, static=True)
    assert res.kernel_name == "scaled_sigmoid_f16_t2"
    assert all(e.is_constant() for e in res.launch.values())
    assert res.launch["grid_x"].get_constant_value() == _cdiv(600, 128)
    with pytest.raises(ValueError, match="not among valid tactics"):
        qdp.build(pid, [("FP32", (8,))], {"alpha": 2.0, "block": 128}, tactic=7)
    with pytest.raises(ValueError, match="no supported combination"):
        qdp.build(pid, [("INT32", (8,))], {"alpha": 2.0, "block": 128})


def test_launch_limits_are_reported(qdp):
    trtp, ns = qdp.trtp, _ns()
    pid = _register_sigmoid(trtp, ns, [])
    # a launch CUDA refuses is refused at build: no tactic of the layer can run
    with pytest.raises(ValueError, match=r"Could not find any implementation.*block \(2048, 1, 1\) has 2048 threads"):
        qdp.build(pid, [("FP32", (4,))], {"alpha": 1.0, "block": 2048})
    res = qdp.build(pid, [("FP32", (4,))], {"alpha": 1.0, "block": 256})
    assert res.problems() == []
    assert any("does not fit in INT32" in p for p in res.problems([(2**31,)]))


def test_aot_impl_taking_a_subset_of_attributes_fails_at_build(qdp):
    """Accepted by NVIDIA's validator, but get_launch_params passes every attribute."""
    trtp, ns = qdp.trtp, _ns()

    F32, I32 = npt.NDArray[np.float32], npt.NDArray[np.int32]

    @trtp.register(f"{ns}::p")
    def _desc(x: trtp.TensorDesc, alpha: F32, block: I32) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(f"{ns}::p")
    def _aot(x: trtp.TensorDesc, block: I32, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[str, str, trtp.KernelLaunchParams, trtp.SymIntExprs]:
        return "k", "p", trtp.KernelLaunchParams(), trtp.SymIntExprs(0)

    with pytest.raises(TypeError, match="positional argument"):
        qdp.build(f"{ns}::p", [("FP32", (8,))], {"alpha": 1.0, "block": 32})


@pytest.mark.parametrize("kind", ["int", "symint8"])
def test_extra_args_must_be_symint32(qdp, kind):
    trtp, ns = qdp.trtp, _ns()

    @trtp.register(f"{ns}::p")
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    @trtp.aot_impl(f"{ns}::p")
    def _aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[str, str, trtp.KernelLaunchParams, trtp.SymIntExprs]:
        extra = trtp.SymIntExprs(1)
        extra[0] = 1 if kind == "int" else trtp.SymInt8(1)
        return "k", "p", trtp.KernelLaunchParams(), extra

    with pytest.raises(TypeError, match="must be a 'tensorrt.plugin.SymInt32'"):
        qdp.build(f"{ns}::p", [("FP32", (8,))])


def test_both_impls_need_a_preference(qdp):
    trtp, ns = qdp.trtp, _ns()
    calls = []
    pid = _register_sigmoid(trtp, ns, calls)
    attrs = {"alpha": 0.5, "block": BLOCK}
    with pytest.raises(ValueError, match="has both AOT and JIT"):
        qdp.build(pid, [("FP32", (8,))], attrs, aot=None)
    flag = qdp.trt.NetworkDefinitionCreationFlag.PREFER_AOT_PYTHON_PLUGINS
    assert qdp.build(pid, [("FP32", (8,))], attrs, aot=None, network_flags=[flag]).is_aot

    jit = qdp.build(pid, [("FP32", (2, 3))], attrs, aot=False)
    assert not jit.is_aot
    assert [f.name for f in jit.serialized_fields] == ["alpha"]  # only impl's attributes
    jit.enqueue([0x1000], [0x2000], stream=7)
    (x, alpha, outputs, stream), = calls
    assert (tuple(x.shape), x.data_ptr, alpha.tolist(), stream) == ((2, 3), 0x1000, [0.5], 7)
    assert tuple(outputs[0].shape) == (2, 3) and outputs[0].data_ptr == 0x2000


# ------------------------------------------------------------------------------------
# Direct symbolic evaluation
# ------------------------------------------------------------------------------------


def test_shape_expr_arithmetic(qdp):
    trtp = qdp.trtp
    x = qdp.tensor_desc("BF16", ("n", "c", 8))
    assert x.dtype is qdp.trt.DataType.BF16 and x.ndim == 3
    with qdp.symbolic():
        n, c, k = x.shape_expr
        out = x.like()
        assert qdp.evaluate(out, n=2, c=3) == (2, 3, 8)
        assert qdp.evaluate(x.shape_expr.numel(), n=2, c=3) == 48
        assert qdp.evaluate(trtp.cdiv(n * c, 4), n=5, c=3) == 4
        assert qdp.evaluate(trtp.max(n, 7), n=5) == 7
        assert qdp.evaluate(trtp.min(3, c), c=5) == 3
        assert qdp.evaluate(n - 1 + c // 2, n=5, c=9) == 8
        assert qdp.evaluate(n == 5, n=5) == 1 and qdp.evaluate(n < 5, n=5) == 0
        assert k.is_constant and k.constant_value() == 8 and not n.is_constant
        with pytest.raises(TypeError):
            2 * n  # no reflected operators (10.15 to 11.4)
        if has_fix(qdp, "expr_bool"):
            with pytest.raises(RuntimeError):
                bool(n == 5)  # symbolic comparisons cannot be branched on
            assert bool(k == 8) and not bool(k == 7)  # constant ones can
        else:  # no __bool__: every expression is truthy, whatever it evaluates to
            assert qdp.evaluate(n == 4, n=5) == 0 and bool(n == 4) is True
            assert qdp.evaluate(k == 7) == 0 and bool(k == 7) is True

        shape = trtp.ShapeExprs(2)
        shape[0] = n * 2
        shape[1] = 4
        assert qdp.evaluate(trtp.from_shape_expr(shape, x.dtype), n=3) == (6, 4)

        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), 128)
        launch.grid_z = n
        launch.block_x = 128
        assert qdp.evaluate(launch, n=2, c=100) == {
            "grid_x": 13, "grid_y": 1, "grid_z": 2, "block_x": 128, "block_y": 1, "block_z": 1, "shared_mem": 0}
        extra = trtp.SymIntExprs(2)
        extra[0] = trtp.SymInt32(c)
        extra[1] = trtp.SymInt32(-3)
        assert qdp.evaluate(extra, c=9) == [9, -3]

    # outside a shape context, constants are "fake" and arithmetic has no builder
    assert trtp.ShapeExpr(4).is_fake
    with pytest.raises(ValueError, match="no expression"):
        qdp.evaluate(trtp.SymInt32(4))


# ------------------------------------------------------------------------------------
# Isolation
# ------------------------------------------------------------------------------------


def _tensorrt_modules():
    return {k: v for k, v in sys.modules.items() if k == "tensorrt" or k.startswith("tensorrt.")}


def test_sys_modules_are_restored():
    before = _tensorrt_modules()
    had_tensorrt = "tensorrt" in sys.modules or importlib.util.find_spec("tensorrt") is not None
    probe_name = "_ttk_standin_probe"
    probe = types.ModuleType(probe_name)
    sys.modules[probe_name] = probe
    try:
        with trt_standin.standin(purge=(probe_name,)) as env:
            import tensorrt
            import tensorrt.plugin as trtp

            assert tensorrt is env.trt and tensorrt.__emulated__
            assert trtp is env.trtp
            assert probe_name not in sys.modules
            sys.modules[probe_name + ".child"] = types.ModuleType(probe_name + ".child")
            with pytest.raises(RuntimeError, match="already active"):
                with trt_standin.standin():
                    pass
        assert _tensorrt_modules() == before
        assert sys.modules[probe_name] is probe
        assert probe_name + ".child" not in sys.modules
    finally:
        sys.modules.pop(probe_name, None)
    if not had_tensorrt:  # the usual case here: no TensorRT at all
        with pytest.raises(ImportError):
            import tensorrt  # noqa: F401

    # a second stand-in gets a fresh registry
    with trt_standin.standin() as env:
        assert env.registry == {}
