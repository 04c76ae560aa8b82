"""The console script and the status report; the NVRTC-newer-than-driver check."""

import subprocess
import sys

import pytest

import trt_kernels as ttk
from kernels import sigmoid_spec, unique
from trt_kernels.cli import main
from trt_kernels.sources.ptxcheck import check_ptx_for_driver, ptx_loadable_note
from trt_kernels.status import status


def test_info_runs(capsys):
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for key in ("torch", "cuda-bindings", "NVRTC", "CUDA driver", "cache"):
        assert key in out


def test_status_lists_ops(capsys):
    name = unique()
    ttk.cuda_kernel_op(name, sigmoid_spec())
    row = [r for r in status() if r["op"] == name][0]
    assert row["torch_op"] == "registered" and row["fake"] == "derived from the plan"
    assert row["eager"] == "derived launch" and row["dtypes"] == "float32"
    assert main(["status"]) == 0
    assert name in capsys.readouterr().out


def test_console_script_entry_point():
    out = subprocess.run([sys.executable, "-m", "trt_kernels.cli", "cache", "path"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip()


def test_python_dash_m_trt_kernels_runs_the_command():
    out = subprocess.run([sys.executable, "-m", "trt_kernels", "cache", "path"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip(), out.stderr
    bad = subprocess.run([sys.executable, "-m", "trt_kernels", "no-such-command"], capture_output=True, text=True)
    assert bad.returncode == 1 and "invalid choice" in bad.stderr


def test_package_is_typed():
    from importlib.resources import files

    assert files("trt_kernels").joinpath("py.typed").is_file()


def test_nvrtc_newer_than_driver_is_explained():
    assert ptx_loadable_note((13, 0), (13, 0)) is None
    assert ptx_loadable_note((12, 8), (13, 0)) is None
    note = ptx_loadable_note((13, 5), (13, 0))
    assert "NVRTC 13.5 is newer than the CUDA driver (CUDA 13.0)" in note
    assert "nvidia-cuda-nvrtc==13.0.*" in note and "CUBIN" in note
    with pytest.raises(ttk.PtxVersionError, match=r"k::op: PTX for TensorRT \(PTX ISA 9.5\)"):
        check_ptx_for_driver("k::op", (13, 5), (13, 0), (9, 5))
