"""NVRTC compile without a GPU, lowered names, errors with the log, and the disk cache."""

import os

import pytest
import torch

import trt_kernels as ttk
from kernels import SIGMOID, TEMPLATE_SIGMOID, sigmoid_spec, unique
from support import counting_compile_cache
from trt_kernels.sources import nvrtc as comp


@pytest.fixture
def cache(tmp_path, monkeypatch):
    return tmp_path, counting_compile_cache(tmp_path, monkeypatch)


def test_ptx_and_cubin_for_sm90_without_gpu(cache):
    prog = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert b".entry my_sigmoid(" in prog.ptx
    assert b".target sm_90" in prog.ptx
    assert prog.cubin[:4] == b"\x7fELF"  # a CUBIN is an ELF image
    assert prog.lowered == {"my_sigmoid": "my_sigmoid"}
    assert prog.arch == "sm_90" and prog.nvrtc_version == comp.nvrtc_version()
    assert prog.ptx_isa is not None and prog.ptx_isa[0] >= 8


def test_template_lowered_names_per_dtype(cache):
    names = ["tsig<float>", "tsig<__half>", "tsig<__nv_bfloat16>"]
    prog = comp.compile_program("#include <cuda_fp16.h>\n#include <cuda_bf16.h>\n" + TEMPLATE_SIGMOID, names,
                                arch="sm_90")
    assert set(prog.lowered) == set(names)
    for n in names:
        sym = prog.lowered[n]
        assert sym.startswith("_Z") and f".entry {sym}(".encode() in prog.ptx
    assert len(set(prog.lowered.values())) == 3


def test_compile_error_carries_the_log(cache):
    with pytest.raises(ttk.CompileError, match=r"(?s)could not compile.*undefined_thing"):
        comp.compile_program('extern "C" __global__ void k(float* y) { y[0] = undefined_thing; }', ["k"], arch="sm_90")


def test_unknown_kernel_name(cache):
    with pytest.raises(ttk.CompileError, match="names no __global__ function"):
        comp.compile_program(SIGMOID, ["not_there"], arch="sm_90")


def test_cache_miss_then_hit_across_processes(cache):
    tmp, calls = cache
    a = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert not a.from_cache and len(calls) == 1
    files = list(tmp.glob("*/*.bin"))
    assert len(files) == 1
    comp.forget()  # as a fresh process would see it
    b = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert b.from_cache and len(calls) == 1
    assert (b.ptx, b.cubin, b.lowered) == (a.ptx, a.cubin, a.lowered)


def test_key_covers_source_options_arch(cache):
    tmp, calls = cache
    comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    comp.compile_program(SIGMOID + "\n// changed", ["my_sigmoid"], arch="sm_90")
    comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_80")
    comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90", options=["--use_fast_math"])
    assert len(calls) == 4 and len(list(tmp.glob("*/*.bin"))) == 4


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty"])
def test_corrupt_entry_is_recompiled(cache, damage):
    tmp, calls = cache
    good = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    (path,) = tmp.glob("*/*.bin")
    blob = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(blob[: len(blob) // 2])
    elif damage == "flip":
        path.write_bytes(blob[:-10] + bytes([blob[-10] ^ 0xFF]) + blob[-9:])
    elif damage == "garbage":
        path.write_bytes(os.urandom(len(blob)))
    else:
        path.write_bytes(b"")
    comp.forget()
    again = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert not again.from_cache and len(calls) == 2
    assert again.cubin == good.cubin
    comp.forget()
    assert comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90").from_cache  # rewritten whole


def test_cache_disabled(cache, monkeypatch):
    tmp, calls = cache
    monkeypatch.setenv("TRT_KERNELS_CACHE", "0")
    comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert list(tmp.iterdir()) == []


def test_unwritable_cache_still_compiles(cache, monkeypatch, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(blocker / "sub"))
    prog = comp.compile_program(SIGMOID, ["my_sigmoid"], arch="sm_90")
    assert prog.cubin


def test_no_temp_files_left(cache):
    tmp, _ = cache
    for i in range(3):
        comp.compile_program(SIGMOID + f"\n// {i}", ["my_sigmoid"], arch="sm_90")
    assert all(p.suffix == ".bin" for p in tmp.rglob("*") if p.is_file())


@pytest.mark.parametrize("given,want", [("sm_90", "sm_90"), ("90", "sm_90"), (90, "sm_90"), ((8, 6), "sm_86"),
                                        ("compute_90", "sm_90"), ("sm_90a", "sm_90a")])
def test_normalize_arch(given, want):
    assert comp.normalize_arch(given) == want


def test_bad_arch():
    with pytest.raises(ValueError, match="expected something like 'sm_90'"):
        comp.normalize_arch("hopper")


def test_arch_from_environment(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_89")
    assert comp.default_arch() == "sm_89"


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU behaviour")
@pytest.mark.skipif(torch.cuda.is_available(), reason="checks declaring on a machine without a GPU")
def test_registration_without_gpu_or_arch_compiles_for_the_check_arch(monkeypatch, cache):
    """Errors surface at declaration everywhere (issue 15, item 14): the kernel is compiled for CHECK_ARCH."""
    from trt_kernels.registry import CHECK_ARCH

    tmp, calls = cache
    monkeypatch.delenv("TRT_KERNELS_ARCH", raising=False)
    name = unique()
    op = ttk.cuda_kernel_op(name, sigmoid_spec())
    from trt_kernels import registry

    assert len(calls) == 1 and list(registry.get(name).builds()) == [CHECK_ARCH]
    with pytest.raises(ttk.NoCudaDeviceError, match="No CUDA device is visible here"):
        op(torch.randn(4))


def test_registration_with_arch_override_compiles(cache, monkeypatch):
    tmp, calls = cache
    monkeypatch.delenv("TRT_KERNELS_ARCH", raising=False)
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec(arch_override="sm_90"))
    assert len(calls) == 1
    from trt_kernels import registry

    assert registry.get(name).binary("sm_90").kernel(torch.float32).symbol == "my_sigmoid"


def test_half_headers_found_without_system_toolkit(cache):
    dirs = comp.include_dirs()
    assert any(os.path.isfile(os.path.join(d, "cuda_fp16.h")) for d in dirs), dirs
