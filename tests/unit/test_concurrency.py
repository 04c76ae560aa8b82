"""Ops declared from several threads; two processes compiling one kernel leave one valid entry."""

import multiprocessing as mp
import threading

import torch

import trt_kernels as ttk
from kernels import SIGMOID, sigmoid_spec, unique
from trt_kernels import cache_store, registry
from trt_kernels.sources import nvrtc as comp


def test_declare_from_threads(monkeypatch):
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    names = [unique("ttk_thr") for _ in range(16)]
    errors = []

    def declare(n, i):
        try:
            ttk.cuda_kernel_op(n, sigmoid_spec(kernel_source=SIGMOID + f"\n// variant {i % 4}"))
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=declare, args=(n, i)) for i, n in enumerate(names)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for n in names:
        assert registry.get(n).binary("sm_90").kernel(torch.float32).symbol == "my_sigmoid"


def _compile_in_child(cache_dir, source, q):
    import os

    os.environ["TRT_KERNELS_CACHE_DIR"] = cache_dir
    from trt_kernels.sources.nvrtc import compile_program

    prog = compile_program(source, ["my_sigmoid"], arch="sm_90")
    q.put((prog.from_cache, len(prog.cubin)))


def test_two_processes_compile_the_same_kernel(tmp_path):
    source = SIGMOID + "\n// two processes\n"
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    procs = [ctx.Process(target=_compile_in_child, args=(str(tmp_path), source, q)) for _ in range(2)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=300)
        assert p.exitcode == 0
    results = [q.get() for _ in procs]
    assert all(n > 0 for _, n in results)
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(files) == 1 and files[0].suffix == ".bin"  # one entry, no temporary left behind
    key, arch = files[0].parent.name, files[0].stem
    from trt_kernels.sources import toolchain

    payload = cache_store.unframe(files[0].read_bytes(), comp._MAGIC)  # raises unless magic and checksum match
    prog = comp._decode(payload, key, arch, toolchain.identity(), files[0])  # valid: key, arch, toolchain
    assert prog.lowered == {"my_sigmoid": "my_sigmoid"}
