"""The GPU half of the docs tests (tests/unit/test_docs.py has the CPU half and the markers' meaning):
the commands and Python blocks the docs mark ``gpu`` run here, on a CUDA GPU, as written."""

import os
import subprocess
import sys

import pytest

import docs_blocks as db

ALL = db.blocks()
SHELL = [(b, c) for b in ALL if b.kind == "gpu" for c in b.commands()]
PYTHON = [b for b in ALL if b.kind == "python" and "gpu" in b.flags]


def _env(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("TRT_KERNELS_")}
    env["TRT_KERNELS_CACHE_DIR"] = str(tmp_path / "cache")
    return env


def test_the_docs_have_gpu_blocks():
    assert SHELL and PYTHON


@pytest.mark.parametrize("block,command", SHELL, ids=[f"{b.where}:{c[:40]}" for b, c in SHELL])
def test_gpu_command_runs(block, command, tmp_path):
    r = subprocess.run(["bash", "-c", command], cwd=db.ROOT, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=600)
    out = r.stdout + r.stderr
    assert r.returncode == 0 and "Traceback" not in out, (f"{block.where}: {command!r} exited {r.returncode}:\n"
                                                          f"{out[-4000:]}")


@pytest.mark.parametrize("block", PYTHON, ids=[b.where for b in PYTHON])
def test_gpu_python_block_runs(block, tmp_path):
    script = tmp_path / "block.py"
    script.write_text(db.program(ALL, block) + "\nprint('DOCS-BLOCK-OK')\n")
    r = subprocess.run([sys.executable, str(script)], cwd=db.ROOT, env=_env(tmp_path), capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0 and "DOCS-BLOCK-OK" in r.stdout, f"{block.where}:\n{r.stderr[-4000:]}"
