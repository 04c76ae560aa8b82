"""Compiling must leave the Python interpreter as it found it.

Regression test: NVRTC used to write its output (the program log's terminating NUL among
it) into ``b" " * size``. For an empty log ``size`` is 1, and ``b" " * 1`` is CPython's
cached one-byte ``bytes`` object, shared by the whole process: afterwards every ``b" "``,
``bytes([32])`` and ``print``'s separator were NUL bytes. Each case runs in a fresh
interpreter with the compile cache off, so NVRTC really runs (it needs no GPU: the arch is
given), and checks every one-byte ``bytes`` singleton and ``print`` afterwards.
"""

import os
import subprocess
import sys
import textwrap

import pytest

from support import ROOT

PRELUDE = textwrap.dedent(r'''
    import torch
    import trt_kernels as ttk

    COPY = 'extern "C" __global__ void k(const float* x, int n, float* y){int i=threadIdx.x; if(i<n) y[i]=x[i];}'
    TEMPLATE = """
    template <typename T>
    __global__ void tk(const T* x, int n, T* y) { int i = threadIdx.x; if (i < n) y[i] = x[i]; }
    """
    WARNS = ('extern "C" __global__ void w(const float* x, int n, float* y)'
             '{int unused; int i=threadIdx.x; if(i<n) y[i]=x[i];}')
    BROKEN = 'extern "C" __global__ void b(const float* x, int n, float* y){ this is not C++ }'

    def declare(name, src, kernel_name, **kw):
        return ttk.cuda_kernel_op(name, ttk.KernelSpec(
            kernel_source=src, kernel_name=kernel_name, inputs=[ttk.InputDecl("x")],
            outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
            geometry=ttk.Elementwise(block=(256,)), **kw))
''')

CASES = {
    "empty_log": 'declare("zz::k", COPY, "k")',
    "template": 'declare("zz::tk", TEMPLATE, "tk<T>", dtypes=[torch.float32, torch.float16, torch.bfloat16])',
    "warning_log": 'declare("zz::w", WARNS, "w")',
    "compile_error": textwrap.dedent('''
        try:
            declare("zz::b", BROKEN, "b")
        except ttk.CompileError as e:
            assert "NVRTC" in str(e), e
        else:
            raise AssertionError("a broken kernel compiled")
    '''),
    "all_four": "\n".join(['declare("zz::k", COPY, "k")', 'declare("zz::w", WARNS, "w")',
                           'declare("zz::tk", TEMPLATE, "tk<T>", dtypes=[torch.float32, torch.float16])',
                           'try:\n    declare("zz::b", BROKEN, "b")\nexcept ttk.CompileError:\n    pass']),
}

CHECK = textwrap.dedent(r'''
    bad = [i for i in range(256) if bytes([i])[0] != i or len(bytes([i])) != 1]
    assert not bad, f"one-byte bytes objects changed: {bad[:8]} (b' ' is now {b' '!r})"
    assert b" " == bytes([32]) and b" "[0] == 32
    assert bytes(range(256)) == b"".join(bytes([i]) for i in range(256))
    print("a", "b")
''')


@pytest.mark.parametrize("case", sorted(CASES))
def test_compiling_leaves_bytes_singletons_and_print_intact(case, tmp_path):
    script = PRELUDE + "\n" + CASES[case] + "\n" + CHECK
    env = dict(os.environ, TRT_KERNELS_CACHE="0", TRT_KERNELS_ARCH="sm_90",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, env=env, timeout=300, cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr).decode(errors="replace")
    # print's separator is the interpreter's one-character " " string; its bytes come out here
    assert r.stdout.endswith(b"a b\n"), r.stdout[-200:]
    assert b"\x00" not in r.stdout and b"\x00" not in r.stderr, (r.stdout, r.stderr)
