"""TensorRT-RTX's real ONNX parser and builder, on the CPU, with our IPluginV3One plugins.

The seed's seven cases and one case per other kernel source are exported to ONNX (a dynamic batch),
parsed by TensorRT-RTX 1.7, built into real engines with a dynamic profile, and what the builder asked
our plugins is checked against the plan. TensorRT-RTX builds on a CPU; deserializing needs a CUDA driver,
which a CPU machine lacks: the test checks that it fails with TensorRT's message, not a crash. Everything
runs in a child process (rtx_child.py) started as a user starts Python, with no LD_LIBRARY_PATH step: the
parser loads ``libtensorrt_rtx.so`` by that name, the wheel ships ``libtensorrt_rtx.so.1``, and the package
makes the name resolve inside the process (trt_kernels.plugins.rtx_lib); where it cannot, registering
refuses rather than let the parser abort the process (test_register_refuses_where_the_name_cannot_resolve).
The tier's child processes are started together (conftest.py, ``rtx_children``).
"""

import importlib.util
import os
import pathlib

import pytest

missing = [m for m in ("tensorrt_rtx", "onnx", "onnxscript") if importlib.util.find_spec(m) is None]
pytestmark = pytest.mark.skipif(bool(missing), reason=f"{' and '.join(missing)} not installed "
                                "(pip install 'trt-kernels[rtx]')")


def _name_resolves_at_start() -> bool:
    """Whether this machine's own LD_LIBRARY_PATH makes ``libtensorrt_rtx.so`` resolve (then the package's
    in-process fix is not what the children exercise)."""
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    return any((pathlib.Path(d) / "libtensorrt_rtx.so").exists() for d in dirs)


@pytest.fixture(scope="module")
def built(rtx_children):
    return rtx_children.result("builder")


CASES = ["sigmoid", "add", "scale", "relu_2d", "row_sum", "repeat2", "sin_cos", "ptx_sigmoid", "triton_scale"]


@pytest.mark.parametrize("case", CASES)
def test_real_engine_holds_our_plugin(built, case):
    if case == "triton_scale" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    r = built["cases"][case]
    assert r["parsed"] and not r["errors"], r["errors"]
    assert r["engine_bytes"] and r["engine_bytes"] > 0
    # the network's outputs: the dynamic batch is -1, every other dimension as the op's fake impl says
    assert len(r["outputs"]) == len(r["expected_outputs"])
    for got, want in zip(r["outputs"], r["expected_outputs"]):
        assert len(got) == len(want) and got[0] == -1 and got[1:] == want[1:], (got, want)


@pytest.mark.parametrize("case", CASES)
def test_builder_asked_what_the_plan_says(built, case):
    if case == "triton_scale" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    r = built["cases"][case]
    (cfg,) = r["configure_plugin"]  # [input dims..., [mins], [maxs]]
    *in_dims, mins, maxs = cfg
    assert all(d[0] == -1 for d in in_dims)  # dynamic dims reach the plugin as -1
    assert all(m[0] == 1 for m in mins) and all(m[0] == 2048 for m in maxs)  # the profile
    assert r["valid_tactics"] == [list(range(1, r["tactics"] + 1))]


def test_a_chain_of_ops_is_one_engine(built):
    c = built["chain"]
    assert c["nodes"] == ["scale", "sigmoid", "sin_cos"] and c["parsed"] and not c["errors"], c
    assert c["engine_bytes"] and c["outputs"] == [[-1, 128], [-1, 128]]


def test_scalar_fields_round_trip(built):
    f = built["cases"]["scale"]["fields"]
    assert f["serialized"] == f["read_back"] == f["given"] and list(f["given"]) == ["alpha"]


def test_deserializing_without_a_gpu_is_tensorrts_error_not_a_crash(built):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible: test_engines_run_on_the_gpu runs the engines")
    for case, r in built["cases"].items():
        if r.get("engine_bytes"):
            assert r["deserialized"] is False, case  # this machine has no CUDA driver
            assert any("CUDA driver" in m or "cudaError" in m for m in r["deserialize_log"]), r["deserialize_log"]


def test_an_op_without_a_registered_creator_is_a_parse_error(built):
    u = built["unregistered"]
    assert u["parsed"] is False and u["errors"]
    assert any("sigmoid" in e for e in u["errors"]), u["errors"]


def test_the_package_makes_the_library_name_resolve_in_process(rtx_children):
    """A fresh process without LD_LIBRARY_PATH: the bare name does not resolve until registering, which makes
    it resolve (a stub in the cache, loaded), to the one TensorRT-RTX library the bindings loaded."""
    if _name_resolves_at_start():
        pytest.skip("libtensorrt_rtx.so resolves here already (LD_LIBRARY_PATH)")
    r = rtx_children.run("resolves")  # conftest.py, RESOLVES
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split() == ["BEFORE", "False", "AFTER", "True", "COPIES", "1"], r.stdout
    stubs = list((rtx_children.folders["resolves"] / "cache").rglob("libtensorrt_rtx-alias-*.so"))
    assert len(stubs) == 1 and stubs[0].stat().st_size < 1024 and (stubs[0].stat().st_mode & 0o022) == 0


def test_register_refuses_where_the_name_cannot_resolve(rtx_children):
    """Where the name cannot be made to resolve (here: the wheel's library not found), registering raises,
    naming the manual fix, instead of the process aborting later in the parser."""
    if _name_resolves_at_start():
        pytest.skip("libtensorrt_rtx.so resolves here already (LD_LIBRARY_PATH)")
    r = rtx_children.run("refuses")  # conftest.py, REFUSES
    assert r.returncode == 0, r.stderr[-2000:]
    assert "REFUSED" in r.stdout and "libtensorrt_rtx.so.1 is not installed" in r.stdout
    assert "LD_LIBRARY_PATH" in r.stdout


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_engines_run_on_the_gpu(built, case):
    """Where a GPU is visible: TensorRT-RTX deserializes the engine and runs it (our plugin's enqueue
    launching the kernel on TensorRT's stream), at the inputs' size and at a batch of 1, bit for bit
    equal to the eager op and matching the torch reference."""
    if case == "triton_scale" and importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed")
    r = built["cases"][case]
    refused = [m for m in r["deserialize_log"] if "cannot run on this GPU" in m]
    if not r["deserialized"] and refused:  # TensorRT-RTX 1.7 runs on RTX GPUs: on the H100 (sm_90) it says
        pytest.skip(f"TensorRT-RTX refuses this GPU: {refused[0]}")
    assert r["deserialized"], r["deserialize_log"]
    for batch, res in r["run"].items():
        assert res["executed"] and res["max_abs_diff_eager"] == 0.0 and res["reference_mismatch"] is None, (batch, res)


@pytest.mark.gpu
def test_enqueue_launches_the_kernel_on_the_gpu():
    """The plugin's enqueue as TensorRT calls it (tensor descriptors, device pointers, a stream), in this
    process: the output is the eager op's, bit for bit. (Importing tensorrt_rtx parses nothing, so the
    libtensorrt_rtx.so name does not matter here.)"""
    import tensorrt_rtx as trt
    import torch

    from trt_kernels.cli import seed_cases as sc
    from trt_kernels.plugins import v3one

    ns = "ttk_rtx_enqueue"
    case = sc.declare(ns, [sc.CASES[2]])[0]  # scale: a tensor and a float scalar
    from trt_kernels import registry

    kop = registry.get(case.op_name(ns))
    (x,), (alpha,) = case.make_inputs(torch.device("cuda"))
    _, creator_cls = v3one._classes(trt)
    fields = trt.PluginFieldCollection([trt.PluginField("alpha", __import__("numpy").array([alpha], dtype="float32"),
                                                        trt.PluginFieldType.FLOAT32)])
    plugin = creator_cls(kop).create_plugin(kop.name, fields, trt.TensorRTPhase.RUNTIME)
    plugin.set_tactic(1)
    y = torch.full_like(x, float("nan"))
    descs = []
    for t in (x, y):
        d = trt.PluginTensorDesc()
        d.dims, d.type, d.format = trt.Dims(list(t.shape)), trt.DataType.FLOAT, trt.TensorFormat.LINEAR
        descs.append(d)
    stream = torch.cuda.current_stream()
    plugin.enqueue([descs[0]], [descs[1]], [x.data_ptr()], [y.data_ptr()], 0, stream.cuda_stream)
    stream.synchronize()
    assert torch.equal(y, torch.ops.ttk_rtx_enqueue.scale(x, alpha))


def test_onnx_route_example_builds_an_engine(rtx_children):
    """``examples/onnx_route.py`` (docs/tensorrt.md quotes it) exports, parses and builds with TensorRT-RTX; on a
    GPU TensorRT-RTX supports it also runs the engine against the eager op."""
    r = rtx_children.run("onnx_route")  # run as written, its TMPDIR a folder of its own
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    scratch = rtx_children.folders["onnx_route"] / "tmp"
    assert not list(scratch.glob("onnx_route_*")), "the example left its temporary folder behind"
    # no noise from the exporter (torchvision's absence, a deprecation inside torch)
    assert "torchvision" not in r.stderr and "FutureWarning" not in r.stderr, r.stderr[-3000:]
    assert "nodes [('onnx_ex', 'scale')]" in r.stdout
    assert "built a TensorRT-RTX engine holding the plugin onnx_ex::scale" in r.stdout, r.stdout
