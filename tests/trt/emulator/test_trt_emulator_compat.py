"""Engine compatibility in the TensorRT emulator (issue 35): where a plan may be deserialized, as TensorRT
documents it (notes/fleet_engines.md, sections A, B and G), driven through NVIDIA's own ``tensorrt.plugin`` with
plugins and PTX written here.

a. ``stand_in_device(cc)`` makes the emulator believe the GPU is another card, restored on exit;
b. a plan records its hardware compatibility level and builder flags by name, and the engine reports the level;
c. NONE and SAME_COMPUTE_CAPABILITY plans deserialize only on their compute capability;
d. AMPERE_PLUS plans deserialize on every device of compute 8.0 and up, and are refused below in TensorRT's words;
e. AMPERE_PLUS is refused at build below compute 8.0, and so is a plugin whose PTX not every such GPU loads (the
   emulator's rule);
f. deserializing checks each AOT plugin's PTX against the device;
g. versions: a VERSION_COMPATIBLE plan runs on a newer runtime (never an older one), with the lean runtime it
   carries (``engine_host_code_allowed``) or, built with EXCLUDE_LEAN_RUNTIME, only on its own version here;
   ``build_engine_with_config`` refuses VERSION_COMPATIBLE;
h. plugins in version-compatible plans: an AOT layer needs nothing, a JIT layer its plugin registered.

CPU tests; on a GPU machine they run too (builds then also load the PTX through the real card's driver)."""

import os
import subprocess
import sys
import uuid
from typing import List, Tuple, Union

import pytest

from trt_kernels.testing import _standin as trt_standin

_REASON = trt_standin.unavailable_reason()
pytestmark = pytest.mark.skipif(_REASON is not None, reason=f"NVIDIA tensorrt.plugin sources unavailable: {_REASON}")

ENV = "TRT_EMULATOR_STAND_IN_CC"
KNOWN = "7.5, 8.0, 8.6, 8.9, 9.0, 10.0, 12.0"


@pytest.fixture
def qdp(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    yield from trt_standin.standin_fixture()


def stand_in(qdp, cc):
    return qdp.native._device.stand_in_device(cc)


def _ns() -> str:
    return "ttk_compat_" + uuid.uuid4().hex[:8]


def fleet_ptx(name: str, target: str = "sm_80") -> str:
    """A PTX module for ``target`` with one kernel ``name(in, out)`` that returns at once."""
    return (f"// written for the compatibility tests\n.version 9.0\n.target {target}\n.address_size 64\n\n"
            f".visible .entry {name}(\n    .param .u64 {name}_in,\n    .param .u64 {name}_out\n)\n{{\n    ret;\n}}\n")


def plugin(qdp, targets=("sm_80",), jit=False) -> str:
    """A one-input plugin whose tactic ``i + 1`` is PTX for ``targets[i]`` (AOT), or a JIT one (``jit``)."""
    trtp = qdp.trtp
    pid = f"{_ns()}::fleet"

    @trtp.register(pid)
    def _desc(x: trtp.TensorDesc) -> trtp.TensorDesc:
        return x.like()

    if jit:
        @trtp.impl(pid)
        def _impl(x: trtp.Tensor, outputs: Tuple[trtp.Tensor], stream: int) -> None:
            raise AssertionError("never run here")
        return pid

    if len(targets) > 1:
        @trtp.autotune(pid)
        def _autotune(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc]) -> List[trtp.AutoTuneCombination]:
            return [trtp.AutoTuneCombination("FP32, FP32", "LINEAR", list(range(1, len(targets) + 1)))]

    @trtp.aot_impl(pid)
    def _aot(x: trtp.TensorDesc, outputs: Tuple[trtp.TensorDesc], tactic: int
             ) -> Tuple[Union[str, bytes], Union[str, bytes], trtp.KernelLaunchParams, trtp.SymExprs]:
        launch = trtp.KernelLaunchParams()
        launch.grid_x = trtp.cdiv(x.shape_expr.numel(), 128)
        launch.block_x = 128
        target = targets[max(tactic, 1) - 1]
        name = f"fleet_{target}"
        return name, fleet_ptx(name, target), launch, trtp.SymIntExprs(0)

    return pid


def build(qdp, pid, level=None, flags=(), jit=False, with_config=False):
    """The plan of a network ``x -> plugin pid -> y`` (None where the build fails), built under ``level`` and
    builder ``flags`` (names)."""
    trt = qdp.trt
    builder = trt.Builder(trt.Logger())
    net = builder.create_network(0)
    x = net.add_input("x", trt.float32, (4, 256))
    ns, name = pid.split("::")
    layer = net.add_plugin(getattr(getattr(qdp.trtp.op, ns), name)(x), aot=not jit)
    layer.name = "fleet_layer"
    layer.get_output(0).name = "y"
    net.mark_output(layer.get_output(0))
    cfg = builder.create_builder_config()
    if level is not None:
        cfg.hardware_compatibility_level = getattr(trt.HardwareCompatibilityLevel, level)
    for f in flags:
        cfg.set_flag(getattr(trt.BuilderFlag, f))
    if with_config:
        return builder.build_engine_with_config(net, cfg)
    blob = builder.build_serialized_network(net, cfg)
    return None if blob is None else bytes(blob)


def load(qdp, blob, host_code=None):
    rt = qdp.trt.Runtime(qdp.trt.Logger())
    if host_code is not None:
        rt.engine_host_code_allowed = host_code
    return rt.deserialize_cuda_engine(blob)


def messages(qdp, since=0):
    return [m for _, m in qdp.log[since:]]


def forge(qdp, blob, **fields):
    """``blob``'s plan with ``fields`` replaced (what a plan from elsewhere would say)."""
    return qdp.native._format.encode(dict(qdp.native._format.decode(blob), **fields))


def other_versions(version: str) -> Tuple[str, str]:
    """A TensorRT release older and one newer than ``version`` (10.15.x or 11.x)."""
    major = int(version.split(".")[0])
    return ("10.14.1.48", "11.0.0.114") if major == 10 else ("10.15.1.29", "11.4.0.106")


INCOMPATIBLE = ("IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is generated on "
                "an incompatible device, expecting compute {want} got compute {got}, please rebuild.)")


# ------------------------------------------------------------------------------------------------
# a. standing in another device


@pytest.mark.parametrize("cc, key, optin", [("7.5", (7, 5), 65536), ((8, 0), (8, 0), 166912), ("8.6", (8, 6), 101376),
                                            ("8.9", (8, 9), 101376), ((9, 0), (9, 0), 232448),
                                            ("10.0", (10, 0), 232448), ("12.0", (12, 0), 101376)])
def test_stand_in_device_is_that_card_until_the_block_ends(qdp, cc, key, optin):
    from trt_kernels.testing import trt_emulator as emulator  # the public seam (a copy of the emulator by name)

    native = qdp.native
    before = native._device.current()
    with emulator.stand_in_device(cc) as dev:
        assert dev.cc == key and dev.stand_in and dev.compute == f"{key[0]}.{key[1]}"
        assert (dev.max_threads, dev.smem_default, dev.smem_optin) == (1024, 49152, optin)
        assert dev.max_block == (1024, 1024, 64) and dev.max_grid == (2**31 - 1, 65535, 65535)
        assert dev.gpu == native._cuda.available()  # kernels still load and launch on a real card, if any
        assert native._device.current() == dev  # the loaded emulator (tensorrt.tensorrt) sees it too
        assert os.environ[ENV] == dev.compute  # and a child process started here would
    assert native._device.current() == before and ENV not in os.environ


def test_stand_ins_nest_and_are_restored_on_exceptions(qdp):
    current = qdp.native._device.current
    before = current()
    with stand_in(qdp, "8.6"):
        with stand_in(qdp, "8.0"):
            assert current().cc == (8, 0)
        assert current().cc == (8, 6)
        with pytest.raises(RuntimeError, match="inside"):
            with stand_in(qdp, (12, 0)):
                raise RuntimeError("inside")
        assert current().cc == (8, 6)
    assert current() == before and ENV not in os.environ


def test_an_unknown_compute_capability_is_refused_naming_the_known_ones(qdp, monkeypatch):
    native = qdp.native
    for cc in ("7.0", (8, 7), "sm_86", "86", 8.6):
        with pytest.raises(ValueError, match=f"can stand in for compute capability {KNOWN}"):
            with stand_in(qdp, cc):
                raise AssertionError("not reached")
        assert ENV not in os.environ
    monkeypatch.setenv(ENV, "8.9")  # a whole process (and its children) can be told by the environment
    assert native._device.current().cc == (8, 9) and native._device.current().stand_in
    monkeypatch.setenv(ENV, "9.5")
    with pytest.raises(ValueError, match=r"\$TRT_EMULATOR_STAND_IN_CC '9\.5'"):
        native._device.current()


def test_a_child_process_started_inside_the_block_stands_in_too(qdp):
    from trt_kernels.testing import SHIM_PATH  # `import tensorrt` is the emulator there, without trt_kernels

    path = os.pathsep.join([SHIM_PATH] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    code = "import tensorrt; print(tensorrt.tensorrt._device.current().compute)"
    with stand_in(qdp, "8.9"):
        child = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=path),
                               capture_output=True, text=True, timeout=300)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.split()[-1] == "8.9"


# ------------------------------------------------------------------------------------------------
# b. the plan records the level and the flags; the engine reports the level


def test_plan_records_hardware_level_and_flags(qdp):
    trt, fmt = qdp.trt, qdp.native._format
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        blob = build(qdp, pid, "AMPERE_PLUS", ["VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME"])
        plan = fmt.decode(blob)
        assert plan["hardware_compatibility_level"] == "AMPERE_PLUS" and plan["compute_capability"] == "9.0"
        assert {"VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME"} <= set(plan["config"]["flags"])
        engine = load(qdp, blob)
        assert engine.hardware_compatibility_level == trt.HardwareCompatibilityLevel.AMPERE_PLUS
        plain = build(qdp, pid)
        assert fmt.decode(plain)["hardware_compatibility_level"] == "NONE"
        assert load(qdp, plain).hardware_compatibility_level == trt.HardwareCompatibilityLevel.NONE
    cfg = trt.Builder(trt.Logger()).create_builder_config()
    with pytest.raises(TypeError, match="HardwareCompatibilityLevel"):
        cfg.hardware_compatibility_level = 1


# ------------------------------------------------------------------------------------------------
# c. NONE and SAME_COMPUTE_CAPABILITY: the plan's compute capability only


@pytest.mark.parametrize("level", ["NONE", "SAME_COMPUTE_CAPABILITY"])
def test_a_plan_without_ampere_plus_loads_only_on_its_compute_capability(qdp, level):
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        blob = build(qdp, pid, level)
        assert load(qdp, blob) is not None
    for cc in ("8.6", "8.9", "10.0"):
        with stand_in(qdp, cc):
            before = len(qdp.log)
            assert load(qdp, blob) is None
            assert messages(qdp, before) == [INCOMPATIBLE.format(want=cc, got="9.0")]
    with stand_in(qdp, "8.6"):  # built for an 8.6 card: recorded, and loads there only
        blob86 = build(qdp, pid, level)
        assert qdp.native._format.decode(blob86)["compute_capability"] == "8.6"
        assert load(qdp, blob86) is not None
    with stand_in(qdp, "9.0"):
        before = len(qdp.log)
        assert load(qdp, blob86) is None
        assert messages(qdp, before) == [INCOMPATIBLE.format(want="9.0", got="8.6")]


# ------------------------------------------------------------------------------------------------
# d. AMPERE_PLUS: every device of compute 8.0 and up


@pytest.mark.parametrize("cc", ["8.0", "8.6", "8.9", "9.0", "10.0", "12.0"])
def test_an_ampere_plus_plan_loads_on_every_ampere_or_newer_device(qdp, cc):
    pid = plugin(qdp, ("sm_80",))
    with stand_in(qdp, "9.0"):
        blob = build(qdp, pid, "AMPERE_PLUS")
    assert blob is not None
    with stand_in(qdp, cc):
        engine = load(qdp, blob)
        assert engine is not None, messages(qdp)[-1:]
        assert engine.hardware_compatibility_level == qdp.trt.HardwareCompatibilityLevel.AMPERE_PLUS


def test_an_ampere_plus_plan_is_refused_below_ampere(qdp):
    pid = plugin(qdp, ("sm_75",))
    with stand_in(qdp, "9.0"):
        blob, plain = build(qdp, pid, "AMPERE_PLUS"), build(qdp, pid)
    with stand_in(qdp, "7.5"):
        before = len(qdp.log)
        assert load(qdp, blob) is None
        assert messages(qdp, before) == [
            "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The current device is not compatible with "
            "this hardware-compatible engine. Expected compute capability >= 8.0 but got compute capability = 7.5. "
            "Please rebuild the engine.)"]
        before = len(qdp.log)
        assert load(qdp, plain) is None  # a plan of no hardware compatibility: the other text
        assert messages(qdp, before) == [INCOMPATIBLE.format(want="7.5", got="9.0")]


# ------------------------------------------------------------------------------------------------
# e. AMPERE_PLUS at build


def test_ampere_plus_cannot_be_built_below_ampere(qdp):
    pid = plugin(qdp, ("sm_75",))
    with stand_in(qdp, "7.5"):
        assert build(qdp, pid) is not None  # a Turing card builds plain engines
        before = len(qdp.log)
        assert build(qdp, pid, "AMPERE_PLUS") is None
        log = " ".join(messages(qdp, before))
        assert ("HardwareCompatibilityLevel.AMPERE_PLUS is only supported for engines built on NVIDIA Ampere and "
                "later GPUs (compute capability 8.0 and up); the build device is compute 7.5") in log
        assert build(qdp, pid, "SAME_COMPUTE_CAPABILITY") is not None  # Turing and later


@pytest.mark.parametrize("target", ["sm_86", "sm_89", "sm_90", "sm_90a"])
def test_ampere_plus_refuses_plugin_ptx_not_every_ampere_gpu_loads(qdp, target):
    pid = plugin(qdp, (target,))
    with stand_in(qdp, "9.0"):
        assert build(qdp, pid) is not None  # the build GPU loads it: fine for an engine of this GPU only
        before = len(qdp.log)
        assert build(qdp, pid, "AMPERE_PLUS") is None
    log = " ".join(messages(qdp, before))
    assert f"Could not find any implementation for node fleet_layer ({pid})" in log
    assert f"the kernel 'fleet_{target}' is PTX for .target {target}, but a HardwareCompatibilityLevel.AMPERE_PLUS " \
           "engine must load on every GPU of compute capability 8.0 and up" in log
    assert "compile the plugin's PTX for .target sm_80" in log and "TensorRT emulator's rule" in log


def test_under_ampere_plus_a_tactic_with_newer_ptx_is_skipped(qdp):
    pid = plugin(qdp, ("sm_90", "sm_80"))
    with stand_in(qdp, "9.0"):
        before = len(qdp.log)
        blob = build(qdp, pid, "AMPERE_PLUS")
    layer = qdp.native._format.decode(blob)["layers"][0]
    assert layer["tactic"] == 2 and ".target sm_80" in layer["ptx"]
    assert any("skipping tactic 1" in m and ".target sm_90" in m for m in messages(qdp, before))


def test_the_fp8_flag_is_refused_with_ampere_plus(qdp):
    """NvInfer.h of 10.15, BuilderFlag::kFP8: "not supported when HardwareCompatibilityLevel::kAMPERE_PLUS is
    enabled" (TensorRT 11 has no such flag)."""
    if "FP8" not in qdp.trt.BuilderFlag.__members__:
        pytest.skip(f"TensorRT {qdp.native._version.VERSION} has no BuilderFlag.FP8")
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        assert build(qdp, pid, flags=["FP8"]) is not None
        before = len(qdp.log)
        assert build(qdp, pid, "AMPERE_PLUS", ["FP8"]) is None
    assert any("BuilderFlag.FP8 (plugins with FP8 input/output) is not supported when "
               "HardwareCompatibilityLevel.AMPERE_PLUS is enabled" in m for m in messages(qdp, before))


# ------------------------------------------------------------------------------------------------
# f. deserializing checks the plugin PTX against the device


def test_deserializing_checks_plugin_ptx_against_the_device(qdp):
    """A plan from elsewhere (TensorRT itself does not check the PTX target at build) whose AOT kernel is PTX for
    sm_86 or sm_90a: it loads where the device's driver loads that PTX, and is refused elsewhere."""
    pid = plugin(qdp, ("sm_80",))
    with stand_in(qdp, "9.0"):
        blob = build(qdp, pid, "AMPERE_PLUS")
    plan = qdp.native._format.decode(blob)
    for target, loads, refused in (("sm_86", ("8.6", "8.9", "9.0", "12.0"), ("8.0",)),
                                   ("sm_90a", ("9.0",), ("8.6", "10.0", "12.0"))):
        layer = dict(plan["layers"][0], ptx=plan["layers"][0]["ptx"].replace(".target sm_80", f".target {target}"))
        other = forge(qdp, blob, layers=[layer])
        for cc in loads:
            with stand_in(qdp, cc):
                assert load(qdp, other) is not None, (target, cc, messages(qdp)[-1:])
        for cc in refused:
            with stand_in(qdp, cc):
                before = len(qdp.log)
                assert load(qdp, other) is None
                (msg,) = messages(qdp, before)
                assert (f"plugin layer 'fleet_layer': its kernel 'fleet_sm_80' does not load on this device "
                        f"(compute {cc}): cuModuleLoadData would fail with CUDA_ERROR_INVALID_PTX (218): "
                        f".target {target} cannot run on a compute {cc} device") in msg


# ------------------------------------------------------------------------------------------------
# g. versions, the lean runtime and engine_host_code_allowed


def test_a_version_compatible_plan_runs_on_a_newer_runtime_never_an_older(qdp):
    version = qdp.native._version.VERSION
    older, newer = other_versions(version)
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        vc, plain = build(qdp, pid, flags=["VERSION_COMPATIBLE"]), build(qdp, pid)
        assert load(qdp, forge(qdp, vc, tensorrt_version=older), host_code=True) is not None  # its lean runtime
        for blob, built_by in ((vc, newer), (plain, older), (plain, newer)):
            before = len(qdp.log)
            assert load(qdp, forge(qdp, blob, tensorrt_version=built_by), host_code=True) is None
            assert messages(qdp, before) == [
                "IRuntime::deserializeCudaEngine: Error Code 6: API Usage Error (The engine plan file is not "
                f"compatible with this version of TensorRT, expecting library version {version} got {built_by}, "
                "please rebuild.)"]


def test_a_plan_carrying_the_lean_runtime_needs_engine_host_code_allowed(qdp):
    trt = qdp.trt
    pid = plugin(qdp)
    rt = trt.Runtime(trt.Logger())
    assert rt.engine_host_code_allowed is False
    with stand_in(qdp, "9.0"):
        vc = build(qdp, pid, flags=["VERSION_COMPATIBLE"])
        before = len(qdp.log)
        assert rt.deserialize_cuda_engine(vc) is None
        (msg,) = messages(qdp, before)
        assert msg.startswith("IRuntime::deserializeCudaEngine: Cannot deserialize engine with lean runtime since "
                              "IRuntime::getEngineHostCodeAllowed() is false.")
        rt.engine_host_code_allowed = True
        assert rt.engine_host_code_allowed is True and rt.deserialize_cuda_engine(vc) is not None
        # built without its lean runtime (Torch-TensorRT's version_compatible): a plain runtime of its version
        lean_less = build(qdp, pid, flags=["VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME"])
        assert load(qdp, lean_less) is not None
        # EXCLUDE_LEAN_RUNTIME without VERSION_COMPATIBLE is ignored (NvInfer.h): a plain plan
        assert load(qdp, build(qdp, pid, flags=["EXCLUDE_LEAN_RUNTIME"])) is not None


def test_a_plan_without_its_lean_runtime_runs_only_on_its_own_version_here(qdp):
    """VERSION_COMPATIBLE + EXCLUDE_LEAN_RUNTIME: another (newer) TensorRT needs ``Runtime.load_runtime`` of the
    building version's lean library, which the emulator cannot load: refused, saying so."""
    trt = qdp.trt
    version = qdp.native._version.VERSION
    older, _ = other_versions(version)
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        blob = build(qdp, pid, flags=["VERSION_COMPATIBLE", "EXCLUDE_LEAN_RUNTIME"])
        before = len(qdp.log)
        assert load(qdp, forge(qdp, blob, tensorrt_version=older), host_code=True) is None
        (msg,) = messages(qdp, before)
        assert (f"the engine plan was built by TensorRT {older} with BuilderFlag.VERSION_COMPATIBLE and "
                "BuilderFlag.EXCLUDE_LEAN_RUNTIME, so it carries no lean runtime") in msg
        assert "Runtime.load_runtime()" in msg and "does not emulate" in msg
        before = len(qdp.log)
        assert trt.Runtime(trt.Logger()).load_runtime("/opt/tensorrt/lib/libnvinfer_lean.so.10") is None
        assert messages(qdp, before)[0].startswith("IRuntime::loadRuntime: Runtime load failed: ")


def test_build_engine_with_config_refuses_version_compatible(qdp):
    pid = plugin(qdp)
    with stand_in(qdp, "9.0"):
        assert build(qdp, pid, with_config=True) is not None
        before = len(qdp.log)
        assert build(qdp, pid, flags=["VERSION_COMPATIBLE"], with_config=True) is None
    assert any("use build_serialized_network to get a version compatible engine" in m for m in messages(qdp, before))


# ------------------------------------------------------------------------------------------------
# h. plugins in version-compatible plans


def test_version_compatible_plugin_layers_on_a_newer_runtime(monkeypatch):
    """Built VERSION_COMPATIBLE by an older TensorRT and run by this one (with the lean runtime the plan carries):
    the AOT layer needs nothing (its kernel name and PTX are in the plan), the JIT layer its plugin registered in the
    deserializing process, else TensorRT's words."""
    monkeypatch.delenv(ENV, raising=False)
    blobs = {}
    for env in trt_standin.standin_fixture():
        older, _ = other_versions(env.native._version.VERSION)
        with stand_in(env, "9.0"):
            for jit in (False, True):
                blob = build(env, plugin(env, jit=jit), flags=["VERSION_COMPATIBLE"], jit=jit)
                blobs[jit] = forge(env, blob, tensorrt_version=older)
            assert load(env, blobs[True], host_code=True) is not None  # its plugin is registered here
    with trt_standin.standin() as fresh, stand_in(fresh, "9.0"):  # a new process: nothing registered
        assert fresh.registry == {}
        engine = load(fresh, blobs[False], host_code=True)
        assert engine is not None and engine.num_layers == 1
        before = len(fresh.log)
        assert load(fresh, blobs[True], host_code=True) is None
        (msg,) = messages(fresh, before)
        assert ("Cannot deserialize plugin since corresponding IPluginCreatorInterface not found in Plugin Registry"
                in msg)
