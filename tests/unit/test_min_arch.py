"""The arch TensorRT AOT code targets (issue 35), on the CPU: the helpers of trt_kernels.sources.archs, the
declaration's ``min_arch``, the one rule (``KernelOp.aot_target``) and the compile error of a kernel that uses a
newer arch's feature. NVRTC compiles here; nothing is launched."""

import pytest
import torch

import trt_kernels as ttk
from kernels import SIGMOID, sigmoid_spec, tma_spec, unique
from trt_kernels import registry
from trt_kernels.sources import archs


@pytest.fixture(autouse=True)
def _no_floor(monkeypatch):
    monkeypatch.delenv(archs.MIN_ARCH_ENV, raising=False)
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")


@pytest.mark.parametrize("arch,floor,ok", [
    ("sm_80", "sm_80", True), ("sm_75", "sm_80", True), ("sm_86", "sm_80", False), ("sm_90", "sm_80", False),
    ("sm_90a", "sm_90", False), ("sm_90", "sm_90", True), ("sm_100f", "sm_100", False), ("sm_80", "sm_90", True)])
def test_covers_means_loads_on_every_gpu_from_the_floor_up(arch, floor, ok):
    assert archs.covers(arch, floor) is ok


def test_loads_on_names_the_generations():
    assert archs.loads_on("sm_80") == "compute capability 8.0 and newer (Ampere, Ada, Hopper, Blackwell)"
    assert archs.loads_on("sm_90") == "compute capability 9.0 and newer (Hopper, Blackwell)"
    assert archs.loads_on("sm_90a").startswith("compute capability 9.0 only")
    assert "10.x family only" in archs.loads_on("sm_100f") and "Hopper" not in archs.loads_on("sm_100f")
    assert "A100" in archs.loads_on("sm_80", cards=True) and "L4" in archs.loads_on("sm_86", cards=True)
    assert "A100" not in archs.loads_on("sm_86", cards=True)
    assert archs.in_hardware_compatible_engines("sm_80") == "yes"
    assert archs.in_hardware_compatible_engines("sm_90").startswith("no")


@pytest.mark.parametrize("text,want", [
    (b"//\n.version 9.0\n.target sm_80\n.address_size 64\n", "sm_80"),
    (".version 8.8\n.target sm_90a\n", "sm_90a"),
    (b".target sm_86, debug\n", "sm_86"),
    (b".version 9.0\n.address_size 64\n", None)])
def test_ptx_target_reads_the_target_line(text, want):
    assert archs.ptx_target(text) == want


def test_feature_hint_names_the_features_arch():
    log = "ptxas application ptx input, line 48; error   : Feature 'cp.async.bulk' requires .target sm_90 or higher"
    hint = archs.feature_hint(log, "sm_80")
    assert "sm_90" in hint and "min_arch='sm_90'" in hint and "__CUDA_ARCH__ >= 900" in hint
    hint = archs.feature_hint("error   : Instruction 'wgmma.fence' not supported on .target 'sm_80'", "sm_80")
    assert "min_arch='sm_90a'" in hint
    assert archs.feature_hint("error: identifier \"foo\" is undefined", "sm_80") is None


@pytest.mark.parametrize("value,why", [
    ("ampere", "is not a GPU arch"), (70, "below sm_75"), ("sm_7x", "not a GPU"),
    # between two GPUs' archs (NVRTC refused it only when the AOT PTX was compiled, naming no min_arch)
    ("sm_85", r"sm_85 is no GPU's compute capability \(the nearest: sm_80 and sm_86\).* Fix: use the arch of the "
              r"oldest GPU the op must run on, e.g. min_arch='sm_80'"),
])
def test_a_bad_min_arch_is_refused_naming_the_field(value, why):
    name = unique("ttk_minarch")
    with pytest.raises(ttk.SpecError, match=f"{name}: min_arch: .*{why}"):
        ttk.cuda_kernel_op(name, sigmoid_spec(min_arch=value))
    assert registry.lookup(name) is None


@pytest.mark.parametrize("value,why", [
    ("hopper", r"'hopper' is not a GPU arch"),
    # NVRTC said "invalid value for --gpu-architecture", naming no field
    ("sm_9", r"sm_9 is below sm_75, the lowest arch NVRTC 13 compiles for\. Fix: give the arch of the GPU"),
    ("sm_85", r"sm_85 is no GPU's compute capability \(the nearest: sm_80 and sm_86\)\. Fix: give the arch"),
])
def test_a_bad_arch_override_is_refused_naming_the_field(value, why):
    name = unique("ttk_override")
    with pytest.raises(ttk.SpecError, match=f"{name}: arch_override: {why}"):
        ttk.cuda_kernel_op(name, sigmoid_spec(arch_override=value))


def test_an_arch_newer_than_nvrtc_knows_gets_nvrtcs_list():
    from trt_kernels.sources.nvrtc import nvrtc_supported_archs

    with pytest.raises(ttk.CompileError, match=r"for sm_200: NVRTC [\d.]+ cannot compile for sm_200 \(it compiles for "
                                               rf"sm_{nvrtc_supported_archs()[0]}, .*\)\. Fix: compile for one of"):
        ttk.cuda_kernel_op(unique("ttk_override"), sigmoid_spec(arch_override="sm_200"))


@pytest.mark.parametrize("value", ["sm_75", "sm_87", "sm_90a", "sm_100f", "sm_121", "sm_130"])
def test_every_gpus_arch_and_any_newer_one_is_a_floor(value):
    assert archs.floor_problem(archs.normalize_arch(value)) is None


def test_the_rule_without_a_floor_is_the_compile_arch_or_the_declared_minimum():
    plain = unique("ttk_minarch")
    ttk.cuda_kernel_op(plain, sigmoid_spec())
    assert registry.get(plain).aot_target() == ("sm_90", "the compile arch (the building GPU, arch_override or "
                                                         "TRT_KERNELS_ARCH)")
    low = unique("ttk_minarch")
    ttk.cuda_kernel_op(low, sigmoid_spec(min_arch=86))
    kop = registry.get(low)
    assert kop.source.min_arch == "sm_86"
    assert kop.aot_target() == ("sm_86", "the declaration's min_arch")
    assert kop.aot_target("sm_90") == ("sm_90", "the arch given to register_plugin")  # a floor the minimum covers
    with pytest.raises(ttk.ArchError, match="the arch given to register_plugin asks .* min_arch='sm_86'"):
        kop.aot_target("sm_80")  # a floor below what the kernel needs


def test_a_floor_from_the_environment_or_the_engine_level(monkeypatch):
    name = unique("ttk_minarch")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    kop = registry.get(name)
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "80")
    assert kop.aot_target() == ("sm_80", archs.MIN_ARCH_ENV)
    monkeypatch.delenv(archs.MIN_ARCH_ENV)
    kop.tensorrt.level = "AMPERE_PLUS"
    arch, origin = kop.aot_target()
    assert arch == "sm_80" and "AMPERE_PLUS" in origin and "hardware_compatible=True" in origin
    kop.tensorrt.level = None
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_8")
    with pytest.raises(ValueError, match="TRT_KERNELS_MIN_ARCH=sm_8: .*Fix"):
        kop.aot_target()


def test_a_declared_minimum_above_the_floor_is_refused_naming_both(monkeypatch):
    name = unique("ttk_minarch")
    ttk.cuda_kernel_op(name, tma_spec(min_arch="sm_90"))
    kop = registry.get(name)
    assert kop.aot_target() == ("sm_90", "the declaration's min_arch")
    kop.tensorrt.level = "AMPERE_PLUS"
    with pytest.raises(ttk.ArchError, match=rf"{name}: the engine's hardware compatibility level AMPERE_PLUS .*"
                                            r"8\.0 and newer.*min_arch='sm_90'.*9\.0 and newer.*Fix"):
        kop.aot_target()
    kop.tensorrt.level = None
    monkeypatch.setenv(archs.MIN_ARCH_ENV, "sm_80")
    with pytest.raises(ttk.ArchError, match="TRT_KERNELS_MIN_ARCH asks"):
        kop.aot_target()


def test_a_kernel_using_a_newer_feature_fails_for_the_lower_arch_with_the_fix(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_80")
    name = unique("ttk_minarch")
    with pytest.raises(ttk.CompileError, match=r"for sm_80: the code uses a feature of sm_90 .*min_arch='sm_90'"
                                               r"(.|\n)*Feature 'cp.async.bulk' requires .target sm_90"):
        ttk.cuda_kernel_op(name, tma_spec())
    # declaring its own minimum: the declaration compiles for sm_90 (not below it), the AOT code targets sm_90
    ttk.cuda_kernel_op(name, tma_spec(min_arch="sm_90"))
    kop = registry.get(name)
    assert set(kop.builds()) == {"sm_90"}
    assert archs.ptx_target(kop.image(torch.float32, 1, kop.aot_target()[0]).aot_ptx) == "sm_90"


def test_the_aot_ptx_for_a_floor_targets_it():
    name = unique("ttk_minarch")
    ttk.cuda_kernel_op(name, sigmoid_spec())
    kop = registry.get(name)
    kop.tensorrt.level = "AMPERE_PLUS"
    symbol, ptx = kop.aot_kernel(torch.float32, 1, kop.aot_target()[0])
    assert archs.ptx_target(ptx) == "sm_80" and symbol == "my_sigmoid"
    assert archs.ptx_target(kop.aot_kernel(torch.float32, 1, "sm_90")[1]) == "sm_90"


def test_a_ptx_source_keeps_its_own_target():
    from trt_kernels.sources.nvrtc import compile_program

    ptx = {a: compile_program(SIGMOID, ["my_sigmoid"], arch=a).ptx for a in ("sm_80", "sm_90")}
    for arch, text in ptx.items():
        name = unique("ttk_minarch")
        ttk.ptx_op(name, text, "my_sigmoid", inputs=[ttk.InputDecl("x", dtype=torch.float32)],
                   outputs=[ttk.OutputDecl("y", ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                   geometry=ttk.Elementwise(block=256))
        kop = registry.get(name)
        kop.tensorrt.level = "AMPERE_PLUS"
        if arch == "sm_80":
            assert kop.aot_target()[0] is None  # its PTX, as given
        else:
            with pytest.raises(ttk.ArchError, match="its PTX targets sm_90, which loads on compute capability 9.0") \
                    as e:
                kop.aot_target()
            # (ptx_op takes no min_arch: the fix is other PTX)
            assert "PTX whose .target is sm_80 or lower" in str(e.value) and "min_arch=" not in str(e.value)
