"""Headers as nvcc users expect them (CPU tier: NVRTC compiles without a GPU).

The include path is the kernel's include_paths, then the CUDA runtime headers, CCCL and the toolkit's; the
package builds in device-side <stdint.h>, <cmath>, <cfloat> ... and pre-includes INFINITY / NAN; a header that
cannot be used fails with a CompileError that says why and what to do.
"""

import math
import os
import re
import struct

import pytest
import torch

import trt_kernels as ttk
from kernels import row_sum_spec, sigmoid_spec, unique
from support import counting_compile_cache
from trt_kernels import registry
from trt_kernels.sources import nvrtc as comp

try:
    comp.nvrtc_version()
except Exception as e:  # noqa: BLE001 - no NVRTC here: nothing in this file can run
    pytest.skip(f"NVRTC cannot be loaded here ({type(e).__name__}: {e})", allow_module_level=True)


def _cccl_on_this_machine():
    """A CCCL include directory, found without the code under test (pathfinder, then the toolkits)."""
    found = []
    try:
        from cuda import pathfinder

        found.append(pathfinder.find_nvidia_header_directory("cccl"))
    except Exception:  # noqa: BLE001 - an older pathfinder does not know "cccl"
        pass
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root:
            found.append(os.path.join(root, "include", "cccl"))
    return next((d for d in found if d and os.path.isfile(os.path.join(d, "cuda", "std", "version"))), None)


needs_cccl = pytest.mark.skipif(_cccl_on_this_machine() is None, reason="no CCCL headers (cuda/std) on this machine")


@pytest.fixture
def calls(tmp_path, monkeypatch):
    """A private, empty compile cache; the list of NVRTC compiles made."""
    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    return counting_compile_cache(tmp_path / "cache", monkeypatch)


def _declare(spec):
    name = unique("ttk_hdr")
    ttk.cuda_kernel_op(name, spec)
    return registry.get(name).binary("sm_90")


# ---------------- (a) cooperative groups need CCCL on the default include path ----------------

CG_ROW_SUM = """
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

extern "C" __global__ void cg_row_sum(const float* x, int D, float* y) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  __shared__ float partial[32];
  const float* row = x + static_cast<long long>(blockIdx.x) * D;
  float s = 0.f;
  for (int j = block.thread_rank(); j < D; j += block.size()) s += row[j];
  s = cg::reduce(warp, s, cg::plus<float>());
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = s;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    s = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.f;
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) y[blockIdx.x] = s;
  }
}
"""


@needs_cccl
def test_cooperative_groups_reduce_compiles_with_the_default_headers(calls):
    binary = _declare(row_sum_spec(kernel_source=CG_ROW_SUM, kernel_name="cg_row_sum"))
    assert binary.kernel(next(iter(binary.kernels))[0]).symbol == "cg_row_sum"
    assert len(calls) == 1
    assert "warning" not in binary.log, binary.log


# ---------------- (b) the C standard headers a device file includes ----------------

NAN_TO_NUM = """
#include <stdio.h>
#include <stdint.h>
#include <cstdint>
#include <math.h>
#include <float.h>
#include <limits.h>
#include <cassert>

static_assert(sizeof(int64_t) == 8 && sizeof(std::int32_t) == 4 && sizeof(uint8_t) == 1, "fixed widths");

extern "C" __global__ void nan_to_num(const float* __restrict__ x, int n, float* __restrict__ y) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  assert(n >= 0 && n <= INT_MAX);
  if (i >= n) return;
  float v = x[i];
  if (v == INFINITY) v = FLT_MAX;
  else if (v == -INFINITY) v = -FLT_MAX;
  else if (isnan(v)) v = 0.0f;
  if (i == 0 && isnan(NAN) && n < 0) printf("n = %d\\n", n);
  y[i] = v;
}
"""


def test_c_standard_headers_of_a_device_file(calls):
    binary = _declare(sigmoid_spec(kernel_source=NAN_TO_NUM, kernel_name="nan_to_num"))
    image = binary.kernel(next(iter(binary.kernels))[0])
    assert image.symbol == "nan_to_num"
    assert b"vprintf" in image.ptx and b"__assertfail" in image.ptx  # printf and assert are live


LIMITS = """
#include <climits>
#include <cfloat>
#include <cstdint>
#include <cstddef>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <cstdio>
static_assert(CHAR_BIT == 8 && SCHAR_MIN == -128 && UCHAR_MAX == 255 && SHRT_MAX == 32767, "");
static_assert(INT_MAX == static_cast<int>(~0u >> 1) && INT_MIN == -INT_MAX - 1 && UINT_MAX == ~0u, "");
static_assert(LLONG_MAX == static_cast<long long>(~0ull >> 1) && ULLONG_MAX == ~0ull, "");
static_assert(LONG_MAX == static_cast<long>(~0ul >> 1) && ULONG_MAX == ~0ul, "");
static_assert(INT8_MIN == -128 && INT16_MAX == SHRT_MAX && INT32_MAX == INT_MAX && INT64_MAX == LLONG_MAX, "");
static_assert(UINT32_MAX == UINT_MAX && UINT64_MAX == ULLONG_MAX && SIZE_MAX == static_cast<std::size_t>(-1), "");
static_assert(sizeof(intptr_t) == sizeof(void*) && sizeof(std::uintptr_t) == sizeof(void*), "");
static_assert((INT64_C(1) << 40) == 1099511627776LL && (UINT64_C(1) << 63) == 9223372036854775808ULL, "");
static_assert(FLT_MANT_DIG == 24 && DBL_MANT_DIG == 53 && FLT_MAX_EXP == 128 && DBL_MAX_EXP == 1024, "");
static_assert(1.0f + FLT_EPSILON != 1.0f && 1.0 + DBL_EPSILON != 1.0 && 1.0 + DBL_EPSILON / 2 == 1.0, "");
struct Pair { int a; double b; };
static_assert(offsetof(Pair, b) == 8, "");

extern "C" __global__ void consts(float* f, double* d, long long* q) {
  f[0] = FLT_MAX; f[1] = FLT_MIN; f[2] = FLT_EPSILON; f[3] = FLT_TRUE_MIN * 1073741824.0f;
  f[4] = INFINITY; f[5] = HUGE_VALF;
  f[6] = std::sqrt(f[7]) + std::fabs(f[8]) + std::abs(f[9]);
  d[0] = DBL_MAX; d[1] = DBL_MIN; d[2] = DBL_EPSILON; d[3] = DBL_TRUE_MIN * 1152921504606846976.0; d[4] = HUGE_VAL;
  d[5] = M_PI; d[6] = M_E; d[7] = M_SQRT2; d[8] = M_LN2; d[9] = M_1_PI;
  q[0] = std::abs(-3) + llabs(-4ll);
  std::memcpy(q + 1, q + 2, sizeof(long long));
}
"""


def _stored(ptx, fmt, v):
    """Whether the PTX stores the value ``v`` (as ``struct`` format ``fmt``: ">f" or ">d"): NVVM writes a
    constant as a float immediate (``0f7F7FFFFF``) or as the integer of its bits (``2139095039``)."""
    raw = struct.pack(fmt, v)
    bits = int.from_bytes(raw, "big")
    return f"0{fmt[1]}{raw.hex().upper()}" in ptx or re.search(rf"(?<![\w.]){bits}(?![\w.])", ptx) is not None


@pytest.mark.parametrize("std", ["c++14", "c++17"])  # c++17: CCCL's <cuda/std/c...> first where found
@pytest.mark.parametrize("cccl", [True, False], ids=["default-path", "no-cccl"])
def test_the_builtin_limits_and_constants_have_the_ieee_values(calls, monkeypatch, std, cccl):
    if not cccl:
        from trt_kernels.sources import toolchain

        real = toolchain.include_dirs
        monkeypatch.setattr(toolchain, "include_dirs", lambda extra=None: [
            d for d in real(extra) if not os.path.isdir(os.path.join(d, "cuda", "std"))])
    prog = comp.compile_program(LIMITS, ["consts"], arch="sm_90", std=std)
    assert "warning" not in prog.log, prog.log
    ptx = prog.ptx.decode()
    for v in (struct.unpack(">f", bytes.fromhex("7f7fffff"))[0], 2.0 ** -126, 2.0 ** -23, 2.0 ** -119, math.inf):
        assert _stored(ptx, ">f", v), v  # FLT_TRUE_MIN is 2**-149: times 2**30 it is 2**-119
    for v in (1.7976931348623157e308, 2.0 ** -1022, 2.0 ** -52, 2.0 ** -1014, math.inf,
              math.pi, math.e, math.sqrt(2), math.log(2), 1 / math.pi):
        assert _stored(ptx, ">d", v), v


def test_assert_follows_ndebug(calls):
    src = '#include <cassert>\nextern "C" __global__ void k(int* x) { assert(x[0] > 0); x[0] = 1; }\n'
    assert b"__assertfail" in comp.compile_program(src, ["k"], arch="sm_90").ptx
    assert b"__assertfail" not in comp.compile_program(src, ["k"], arch="sm_90", options=["-DNDEBUG"]).ptx
    again = '#define NDEBUG\n#include <assert.h>\n#undef NDEBUG\n#include <assert.h>\n' + src
    assert b"__assertfail" in comp.compile_program(again, ["k"], arch="sm_90").ptx  # re-evaluated at each include


# ---------------- (c) INFINITY and NAN with no include, as under nvcc ----------------

MASKED_MAX = """
__device__ const float& larger(const float& a, const float& b) { return a < b ? b : a; }

extern "C" __global__ void masked_max(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float m = -INFINITY;
  m = larger(m, x[i] < 0.0f ? -INFINITY : x[i]);
  y[i] = isnan(x[i]) ? NAN : m * static_cast<float>(M_PI / M_PI) + 0.0f * HUGE_VALF;
}
"""


def test_infinity_and_nan_need_no_include(calls):
    binary = _declare(sigmoid_spec(kernel_source=MASKED_MAX, kernel_name="masked_max"))
    assert binary.kernel(next(iter(binary.kernels))[0]).symbol == "masked_max"
    assert "warning" not in binary.log, binary.log
    # code written for NVRTC that defines them itself (guarded or not) keeps compiling, quietly
    for own in ("#ifndef INFINITY\n#define INFINITY __int_as_float(0x7f800000)\n#endif\n",
                "#define INFINITY __int_as_float(0x7f800000)\n#define NAN __int_as_float(0x7fffffff)\n"):
        prog = comp.compile_program(own + MASKED_MAX, ["masked_max"], arch="sm_90")
        assert "warning" not in prog.log, prog.log
    by_value = MASKED_MAX.replace("const float& larger", "float larger").replace("const float&", "float")
    prog = comp.compile_program(by_value, ["masked_max"], arch="sm_90", std="c++03")  # no constexpr: the macros
    assert prog.lowered == {"masked_max": "masked_max"}


BLOCK_MAX = """
#include <cub/block/block_reduce.cuh>

extern "C" __global__ void block_max(const float* x, int D, float* y) {
  using BlockReduce = cub::BlockReduce<float, 256>;
  __shared__ typename BlockReduce::TempStorage tmp;
  float m = -INFINITY;
  for (int j = threadIdx.x; j < D; j += blockDim.x) m = fmaxf(m, x[blockIdx.x * D + j]);
  m = BlockReduce(tmp).Reduce(m, cuda::maximum<float>{});
  if (threadIdx.x == 0) y[blockIdx.x] = isnan(m) ? NAN : m;
}
"""


@needs_cccl
def test_infinity_with_cub_block_reduce_compiles_without_redefinition_warnings(calls):
    """<cub/block/block_reduce.cuh> brings libcu++'s INFINITY / NAN macros (unguarded under NVRTC); the prelude's
    constants must neither clash with them nor make them warn."""
    prog = comp.compile_program("#include <climits>\n#include <cstdint>\n" + BLOCK_MAX, ["block_max"], arch="sm_90")
    assert "warning" not in prog.log, prog.log


# ---------------- (d), (e) include_paths add to the defaults; a user's header wins ----------------

def test_include_paths_come_first_and_keep_the_defaults(calls, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "half_ops.cuh").write_text(
        "#pragma once\n#include <cuda_fp16.h>\n"
        "__device__ __forceinline__ __half halve(__half h) { return __hmul(h, __float2half(0.5f)); }\n")
    src = """
#include "half_ops.cuh"
extern "C" __global__ void halve_f32(const float* __restrict__ x, int n, float* __restrict__ y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = __half2float(halve(__float2half(x[i])));
}
"""
    binary = _declare(sigmoid_spec(kernel_source=src, kernel_name="halve_f32", include_paths=[str(inc)]))
    assert binary.kernel(next(iter(binary.kernels))[0]).symbol == "halve_f32"
    dirs = comp.include_dirs([str(inc), str(tmp_path / "no-such-dir")])
    assert dirs[0] == str(inc) and str(tmp_path / "no-such-dir") not in dirs
    assert dirs[1:] == comp.include_dirs() and any(os.path.isfile(os.path.join(d, "cuda_fp16.h")) for d in dirs)


def test_a_users_stdint_h_wins_over_the_builtin_one(calls, tmp_path):
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "stdint.h").write_text("#pragma once\n#define USERS_OWN_STDINT_H 1\ntypedef long long int64_t;\n")
    src = """
#include <stdint.h>
#include <float.h>
#ifndef USERS_OWN_STDINT_H
#error the built-in stdint.h was used
#endif
extern "C" __global__ void k(float* y, int64_t n) { if (n > 0) y[0] = FLT_MAX; }
"""
    prog = comp.compile_program(src, ["k"], arch="sm_90", include_paths=[str(inc)])
    assert prog.lowered == {"k": "k"}
    from trt_kernels.sources import std_headers

    handed = dict(std_headers.for_compile([str(inc)]))
    assert "stdint.h" not in handed and "float.h" in handed and std_headers.PRELUDE in handed


# ---------------- (f) what cannot compile says why and what to do ----------------

K = 'extern "C" __global__ void k(float* y) { y[0] = 1.0f; }\n'


@pytest.mark.parametrize("header,says", [
    ("vector", [r"<vector> is a C or C\+\+ standard library header", "NVRTC compiles device code only",
                r"Fix: remove the include"]),
    ("iostream", ["NVRTC compiles device code only", "no host headers", r"include_paths=\[\.\.\.\]"]),
    ("no_such_header.cuh", [r"<no_such_header\.cuh> is not on NVRTC's include path", "Searched, in order",
                            r"Fix: pass the directory that holds it in KernelSpec\(include_paths"]),
])
def test_a_header_nvrtc_cannot_use_gives_an_explained_error(calls, header, says):
    with pytest.raises(ttk.CompileError) as info:
        comp.compile_program(f"#include <{header}>\n" + K, ["k"], arch="sm_90")
    msg = str(info.value)
    for pattern in says + ["built in: stdint.h", "NVRTC said:", f'open source file "{header}"']:
        assert re.search(pattern, msg), (pattern, msg)


def test_a_missing_header_of_the_source_itself_names_no_includer(calls, tmp_path, monkeypatch):
    # with include_paths given, the source's program name was read as a file under the current directory
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ttk.CompileError) as info:
        comp.compile_program('#include "myhelpers.cuh"\n' + K, ["k"], arch="sm_90",
                             include_paths=[str(tmp_path.parent)])
    said = str(info.value).split("NVRTC said:")[0]
    assert "for sm_90: <myhelpers.cuh> is not on NVRTC's include path. Searched, in order: " in said
    assert "which" not in said, said  # (it named "<tmp.../program>, which ... includes")


@needs_cccl
def test_cub_cub_cuh_and_std_headers_point_at_their_device_parts(calls):
    with pytest.raises(ttk.CompileError, match=r"(?s)host code.*<cub/block/block_reduce\.cuh>.*NVRTC said:"):
        comp.compile_program("#include <cub/cub.cuh>\n" + K, ["k"], arch="sm_90")
    with pytest.raises(ttk.CompileError, match=r"Fix: include <cuda/std/type_traits> and use cuda::std::"):
        comp.compile_program("#include <type_traits>\n" + K, ["k"], arch="sm_90")


# ---------------- (g) the cache key follows the headers a compile sees ----------------

SCALED = ('#include "scale.cuh"\nextern "C" __global__ void k(const float* x, int n, float* y) '
          '{ int i = threadIdx.x; if (i < n) y[i] = x[i] * SCALE; }')


def _scaled_ptx(tmp_path, include_paths=None):
    """The PTX of a kernel that includes a header of yours, declared as a fresh process would (memo emptied)."""
    comp.forget()
    name = unique("ttk_ownhdr")
    ttk.cuda_kernel_op(name, ttk.KernelSpec(SCALED, "k", inputs=[ttk.InputDecl("x")], extras=[ttk.Numel("x")],
                                            outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))],
                                            geometry=ttk.Elementwise(), include_paths=include_paths))
    b = registry.get(name).binary("sm_90")
    return b.from_cache, [ln.split()[0] for ln in b.kernel(torch.float32, 1).ptx.decode().splitlines()
                          if ln.strip().startswith(("mul.f32", "add.f32"))]


def test_an_edited_header_of_yours_compiles_anew(tmp_path, monkeypatch):
    # the key named the include directories but read no header: an edited one gave the old kernel from the cache
    monkeypatch.setenv("TRT_KERNELS_CACHE_DIR", str(tmp_path / "cache"))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    (work / "scale.cuh").write_text("#define SCALE 2.0f\n")  # found in the current directory (a quoted include)
    assert _scaled_ptx(tmp_path) == (False, ["add.f32"])  # x * 2 is x + x
    assert _scaled_ptx(tmp_path) == (True, ["add.f32"])
    (work / "scale.cuh").write_text("#define SCALE 5.0f\n")
    assert _scaled_ptx(tmp_path) == (False, ["mul.f32"])
    # through include_paths (relative, from the current directory), and a header that header includes
    inc = work / "inc"
    inc.mkdir()
    (work / "scale.cuh").unlink()
    (inc / "scale.cuh").write_text('#include "factor.cuh"\n#define SCALE FACTOR\n')
    (inc / "factor.cuh").write_text("#define FACTOR 2.0f\n")
    assert _scaled_ptx(tmp_path, ["inc"]) == (False, ["add.f32"])
    (inc / "factor.cuh").write_text("#define FACTOR 3.0f\n")
    assert _scaled_ptx(tmp_path, ["inc"]) == (False, ["mul.f32"])
    # the same headers elsewhere (another checkout, the CLI run from another directory): the same entry
    other = tmp_path / "other"
    (other / "inc").mkdir(parents=True)
    for f in ("scale.cuh", "factor.cuh"):
        (other / "inc" / f).write_text((inc / f).read_text())
    monkeypatch.chdir(other)
    assert _scaled_ptx(tmp_path, ["inc"]) == (True, ["mul.f32"])


def test_own_headers_reads_only_what_is_yours(tmp_path, monkeypatch):
    from trt_kernels.sources import toolchain

    monkeypatch.chdir(tmp_path)
    assert toolchain.own_headers('extern "C" __global__ void k() {}', None) == ""
    # a header found nowhere of yours (CUDA's, a built-in one) is not read; one found is, by name and contents
    (tmp_path / "mine.h").write_text("// mine\n")
    src = '#include <cuda_fp16.h>\n  #  include "mine.h"\n// #include "mine.h"\n#include "missing.h"\n'
    digest = toolchain.own_headers(src, None)
    assert digest.startswith("mine.h=") and ";" not in digest
    assert toolchain.own_headers("#include <mine.h>\n", None) == ""  # <...>: the include paths only
    assert toolchain.own_headers("#include <mine.h>\n", [str(tmp_path)]) == digest


def test_the_cache_key_follows_the_include_path_and_the_builtin_headers(tmp_path, monkeypatch):
    from trt_kernels.sources import std_headers, toolchain

    monkeypatch.setattr(toolchain, "_headers_resolved", False)

    def key(paths):
        return comp.program_key(K, ["k"], (), "c++17", paths, "toolchain")

    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert key(None) == key([])  # the same directories: the defaults
    assert len({key(None), key([a]), key([b]), key([a, b]), key([b, a])}) == 5
    assert not toolchain.headers_resolved()  # a key looks nothing up
    before = key(None)
    # the built-in headers' texts are in the key through BUILTIN_HEADERS, a constant that must be their digest
    assert std_headers.digest() == comp.BUILTIN_HEADERS, (
        "a built-in header's text changed: set nvrtc.BUILTIN_HEADERS to std_headers.digest() "
        f"({std_headers.digest()!r}) so programs compiled with the old texts are not taken from the cache")
    changed = dict(std_headers._headers(), **{"float.h": std_headers.text("float.h") + "/* changed */\n"})
    monkeypatch.setattr(std_headers, "_headers", lambda: changed)
    assert std_headers.digest() != comp.BUILTIN_HEADERS  # a text's change is the digest's
    monkeypatch.setattr(comp, "BUILTIN_HEADERS", std_headers.digest())
    assert key(None) != before
    monkeypatch.undo()
    assert key(None) == before
