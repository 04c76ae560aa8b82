"""The examples on a machine without a GPU: importing them needs none, so ``trt-kernels status``,
``inspect`` and ``compile`` work on them (the README says so); running one without a GPU ends with a
message saying why, not a traceback.

``examples/cuda_kernel_op.py`` once compiled case 6's kernel at import, as the seed does
(``cuda.core.Device()``), and every command on it failed with ``DynamicLibNotFoundError: "cuda" is an
NVIDIA driver library``. The examples run as a user runs them, each in a fresh process (``python
examples/NAME.py``, all started together); the ``trt-kernels`` commands run in this process (tests/support.py,
run_cli). Both are the session's shared runs (tests/conftest.py's ``shared_runs``: a cache of their own): the
docs show some of these commands, and tests/unit/test_docs.py reads the same results.
"""

import importlib.util
import json
import os

import pytest
import torch

import support
from support import ROOT, finish, start

SEED_OPS = ["kern_ex::sigmoid", "kern_ex::add", "kern_ex::scale", "kern_ex::relu_2d", "kern_ex::row_sum",
            "kern_ex::repeat2", "kern_ex::sin_cos"]
EXAMPLES = ["cuda_kernel_op", "triton_kernel_op", "dtypes_autograd", "aot_replay", "serialize_reload", "circular_pad",
            "rmsnorm_mixed"]


def _env(cache):
    env = dict(os.environ)
    env.pop("TRT_KERNELS_ARCH", None)
    env.pop("TRT_KERNELS_CACHE", None)
    env["TRT_KERNELS_CACHE_DIR"] = str(cache)
    return env


def _tail(text, n=25):
    return "\n".join(text.strip().splitlines()[-n:])


def _needs(name):
    if name == "triton_kernel_op" and importlib.util.find_spec("triton") is None:
        pytest.skip("the Triton example needs triton (pip install 'trt-kernels[triton]')")


def _names():
    return [n for n in EXAMPLES if n != "triton_kernel_op" or importlib.util.find_spec("triton") is not None]


def _scripts(tmp_path_factory):
    """Without a GPU, each example run as a script (it imports the example, then main() says why it stops): the
    session's shared Jobs (the docs run `python examples/cuda_kernel_op.py` too), not started yet."""
    if torch.cuda.is_available():
        return {}
    shared = support.shared_runs(tmp_path_factory)
    return {f"run {name}": shared.shell_job(f"python examples/{name}.py") for name in _names()}


support.early("examples", __file__, "runs", _scripts)  # queued at the session's start (tests/support.py)


@pytest.fixture(scope="module")
def runs(tmp_path_factory, shared_runs):
    """Every command of this file: the examples' fresh processes started first, the CLI's commands run here
    meanwhile."""
    scripts = {k: j.start() for k, j in support.early_jobs("examples", tmp_path_factory).items()}
    procs = {}
    if torch.cuda.is_available():  # import each example (what the commands do) in a fresh process
        code = "import runpy, sys; runpy.run_path(sys.argv[1], run_name='imported'); print('imported')"
        procs = {f"import {name}": start(["-c", code, f"examples/{name}.py"], cwd=ROOT,
                                         env=_env(tmp_path_factory.mktemp("cache"))) for name in _names()}
    cmds = {"inspect": ["inspect", "examples/cuda_kernel_op.py", "--arch", "sm_90", "--json"],
            "status": ["status", "examples/cuda_kernel_op.py"],
            "inspect checks": ["inspect", "examples/rmsnorm_mixed.py", "--arch", "sm_90"],
            "inspect checks json": ["inspect", "examples/rmsnorm_mixed.py", "--arch", "sm_90", "--json"],
            "inspect written": ["inspect", "examples/gallery/ops.py", "--arch", "sm_90", "--op",
                                "gallery::score_filter"],
            "inspect written json": ["inspect", "examples/gallery/ops.py", "--arch", "sm_90", "--op",
                                     "gallery::score_filter", "--json"]}
    out = {k: shared_runs.cli(*args) for k, args in cmds.items()}
    out.update(finish(procs))
    out.update({k: j.result() for k, j in scripts.items()})
    return out


def test_seed_example_status_and_inspect_need_no_gpu(runs):
    """``trt-kernels inspect examples/cuda_kernel_op.py --arch sm_90 --json`` and ``status`` list the seven ops."""
    for k in ("inspect", "status"):
        res = runs[k]
        assert res.returncode == 0, (f"{k} exited {res.returncode}:\n{_tail(res.stderr)}\n"
                                     f"--- stdout:\n{_tail(res.stdout)}")
    ins = json.loads(runs["inspect"].stdout)
    assert ins["ok"] is True and ins["arch"] == "sm_90"
    assert [d["op"] for d in ins["ops"]] == SEED_OPS
    for d in ins["ops"]:
        assert d["errors"] == [] and d["declared_by"] == "cuda_kernel_op", d
    assert [d["overrides"] for d in ins["ops"] if d["op"] == "kern_ex::repeat2"] == [["meta_fn", "eager_fn", "aot_fn"]]
    listed = [line.split("(")[0] for line in runs["status"].stdout.splitlines() if line.startswith("kern_ex::")]
    assert listed == SEED_OPS, runs["status"].stdout


def test_inspect_shows_an_ops_size_checks(runs):
    """An op declared with ``checks=`` shows them in ``inspect`` (text and JSON); one without shows none."""
    for k in ("inspect checks", "inspect checks json"):
        assert runs[k].returncode == 0, f"{k}:\n{_tail(runs[k].stderr)}"
    assert "  checks        SameDim(('x', -1), ('w', 0))" in runs["inspect checks"].stdout.splitlines()
    (op,) = json.loads(runs["inspect checks json"].stdout)["ops"]
    assert op["checks"] == ["SameDim(('x', -1), ('w', 0))"]
    assert all(d["checks"] == [] for d in json.loads(runs["inspect"].stdout)["ops"])


def test_inspect_shows_a_size_the_kernel_writes(runs):
    """The gallery's score filter (``ttk.Written("num_kept", max=DimSize("scores", 0), dtype=int64)`` on two outputs):
    ``inspect`` shows each output's written axis with its bound and the count the kernel writes (text and JSON)."""
    for k in ("inspect written", "inspect written json"):
        assert runs[k].returncode == 0, f"{k}:\n{_tail(runs[k].stderr)}"
    lines = runs["inspect written"].stdout.splitlines()
    assert "    output      kept_boxes: (num_kept <= scores.shape[0], 4) dtype of boxes" in lines
    assert ("    count       num_kept: int64 the kernel writes, in [0, scores.shape[0]] (not returned; TensorRT: a "
            "size tensor tuned for (scores.shape[0] // 2))") in lines
    (op,) = json.loads(runs["inspect written json"].stdout)["ops"]
    assert op["plan"]["outputs"][2] == {"name": "num_kept", "shape": [], "dtype": "int64",
                                        "written": {"max": "scores.shape[0]", "opt": "(scores.shape[0] // 2)"}}
    assert op["plan"]["arguments"][-1] == "num_kept.data_ptr()"


@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_import_without_a_gpu(name, runs):
    """Importing an example (what ``trt-kernels status|inspect|compile`` do) does no GPU work."""
    _needs(name)
    if f"import {name}" in runs:
        r = runs[f"import {name}"]
        assert r.returncode == 0 and r.stdout.strip().endswith("imported"), _tail(r.stderr)
    else:  # no GPU: the script's run got past the import to main()'s message
        r = runs[f"run {name}"]
        assert "Traceback" not in r.stderr and f"examples/{name}.py: not run:" in r.stderr, _tail(r.stderr)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks what the examples say where no GPU is visible")
@pytest.mark.parametrize("name", EXAMPLES)
def test_examples_run_without_a_gpu_say_why(name, runs):
    _needs(name)
    r = runs[f"run {name}"]
    assert r.returncode == 1 and "Traceback" not in r.stderr, _tail(r.stderr)
    assert f"examples/{name}.py: not run: it launches its kernels on a CUDA GPU, and none is visible here" in r.stderr
    assert "trt-kernels " in r.stderr
