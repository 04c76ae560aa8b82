"""The C standard headers device code includes, written for NVRTC by this package, and the prelude.

NVRTC compiles device code only and ships no host headers: ``#include <stdint.h>``, ``<cmath>``,
``<cfloat>`` ... fail with "cannot open source file", where nvcc finds the host compiler's. Yet what a
kernel wants from them is small and device-side (``int64_t``, ``FLT_MAX``, ``INT_MAX``, ``INFINITY``,
``assert``), and NVRTC already knows much of the rest as builtins (``printf``, ``malloc``, ``memcpy``,
the math functions, ``size_t``, ``NULL``). So the package hands NVRTC a few headers of its own, by
name, in memory (``nvrtcCreateProgram``'s ``headers`` / ``includeNames``):

``stdint.h``/``cstdint``, ``stddef.h``/``cstddef``, ``limits.h``/``climits``, ``float.h``/``cfloat``,
``math.h``/``cmath``, ``stdio.h``/``cstdio``, ``stdlib.h``/``cstdlib``, ``string.h``/``cstring``,
``assert.h``/``cassert``.

- NVRTC prefers a header it is handed over one on its include path, so :func:`for_compile` leaves out
  any name that one of the user's ``include_paths`` holds: a user's ``stdint.h`` wins. The default
  directories (CUDA's own headers) hold none of these names and do not shadow them.
- Every macro is defined only if it is not defined yet (a user's ``-D`` or earlier ``#define`` wins),
  except ``assert``, which ``<assert.h>`` redefines at each inclusion from the current ``NDEBUG``, as
  the C standard says.
- The ``<cxxx>`` forms include the ``.h`` ones and add the names to ``std::`` (``std::int64_t``,
  ``std::sqrt`` ...) through using-declarations of what NVRTC declares.
- Where CCCL's libcu++ is on the include path (C++17 and later), ``<stdint.h>`` and ``<limits.h>``
  start by including ``<cuda/std/cstdint>`` / ``<cuda/std/climits>``. Under NVRTC those define
  ``INT_MAX``, ``INT64_MAX`` ... themselves, unconditionally (cooperative groups, CUB and every
  ``cuda/std`` header pull them in); a definition of ours made first would turn each of theirs into an
  "incompatible redefinition" warning. Theirs made first, ours are skipped. The integer types are the
  same either way (``int64_t`` is ``long long``, as libcu++ has it under NVRTC).

The prelude (:data:`PRELUDE`) is pre-included into every CUDA C++ compile (``--pre-include``): nvcc
includes ``cuda_runtime.h`` into every ``.cu`` file and through it the host ``<math.h>``, so kernels
use ``INFINITY``, ``NAN``, ``HUGE_VALF`` and ``M_PI`` with no ``#include``; under NVRTC those are
undefined. The prelude includes nothing, so it costs nothing measurable to compile (a one-line kernel,
41 compiles each way, alternating: 44.0 ms without it and the built-in headers, 44.3 ms with them, by
the fastest run; the medians differ by less than 1 ms, in its favour). ``HUGE_VALF``, ``HUGE_VAL`` and
``M_E`` ... ``M_SQRT1_2`` are macros there; ``INFINITY`` and ``NAN`` are ``constexpr`` float constants,
not macros: libcu++'s ``<cuda/std/cmath>`` (which CUB's block headers and others include) defines both
as macros under NVRTC without checking for an earlier definition, so macros from the prelude would make
those headers warn of an incompatible redefinition; a constant is simply hidden by their macro from that
point on. Code that defines either itself (behind ``#ifndef INFINITY`` or not) compiles quietly too.
What differs from nvcc: ``#ifdef INFINITY`` is false until a header defines the macro, and a kernel
that takes the constant's address gets a ``.global`` of that name in its PTX. Under ``-std=c++03``
(no ``constexpr``, and no libcu++) the two are macros.

The texts are part of every program's cache key (:func:`identity`): changing one recompiles.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from typing import Dict, Iterable, Optional, Sequence, Tuple

#: The header pre-included into every compile (``--pre-include``), handed to NVRTC like the others.
PRELUDE = "trt_kernels_prelude.h"


def _macros(pairs: Iterable[Tuple[str, str]]) -> str:
    """``#define NAME VALUE`` for each pair, each only where NAME is not defined yet."""
    return "".join(f"#ifndef {n.split('(')[0]}\n#define {n} {v}\n#endif\n" for n, v in pairs)


def _using(names: str) -> str:
    """``namespace std { using ::a; using ::b; ... }`` for the whitespace-separated ``names``."""
    body = "".join(f"using ::{n};\n" for n in names.split())
    return "namespace std {\n" + body + "}\n"


def _guarded(guard: str, comment: str, body: str) -> str:
    return f"/* {comment} (trt_kernels built-in header for NVRTC) */\n#ifndef {guard}\n#define {guard}\n{body}#endif\n"


# The values are the IEEE-754 binary32 / binary64 limits and the mathematical constants, to the digits
# that round back to the exact float (checked by tests/unit/test_headers.py against Python's).
_MATH_CONSTANTS = (
    ("M_E", "2.71828182845904523536"), ("M_LOG2E", "1.44269504088896340736"),
    ("M_LOG10E", "0.434294481903251827651"), ("M_LN2", "0.693147180559945309417"),
    ("M_LN10", "2.30258509299404568402"), ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"), ("M_PI_4", "0.785398163397448309616"),
    ("M_1_PI", "0.318309886183790671538"), ("M_2_PI", "0.636619772367581343076"),
    ("M_2_SQRTPI", "1.12837916709551257390"), ("M_SQRT2", "1.41421356237309504880"),
    ("M_SQRT1_2", "0.707106781186547524401"),
)

# (the texts are built at the first compile, by _headers(): a warm start does not import this module, its cache
# keys carry nvrtc.BUILTIN_HEADERS)
def _prelude_h() -> str:
    return _guarded("TRT_KERNELS_PRELUDE_H", "pre-included: what nvcc's implicit <math.h> gives every .cu file", (
        "#if __cplusplus >= 201103L\n"
        "#ifndef INFINITY\n"
        "static __device__ constexpr float INFINITY = __builtin_bit_cast(float, 0x7f800000u);\n"
        "#endif\n"
        "#ifndef NAN\n"
        "static __device__ constexpr float NAN = __builtin_bit_cast(float, 0x7fffffffu);\n"
        "#endif\n"
        "#else\n"
        + _macros((("INFINITY", "__int_as_float(0x7f800000)"), ("NAN", "__int_as_float(0x7fffffff)"))) +
        "#endif\n"
        + _macros((("HUGE_VALF", "__builtin_bit_cast(float, 0x7f800000u)"),
                   ("HUGE_VAL", "__builtin_bit_cast(double, 0x7ff0000000000000ull)"))
                  + _MATH_CONSTANTS)
    ))


# <cuda/std/...> first where libcu++ is reachable (C++17 on): see the module docstring
_LIBCUXX_FIRST = (
    "#if __cplusplus >= 201703L && defined(__has_include)\n"
    "#if __has_include(<cuda/std/{0}>)\n"
    "#include <cuda/std/{0}>\n"
    "#endif\n"
    "#endif\n"
)

_INT_LIMITS = (
    ("CHAR_BIT", "8"), ("MB_LEN_MAX", "16"),
    ("SCHAR_MAX", "127"), ("SCHAR_MIN", "(-SCHAR_MAX - 1)"), ("UCHAR_MAX", "255"),
    ("SHRT_MAX", "32767"), ("SHRT_MIN", "(-SHRT_MAX - 1)"), ("USHRT_MAX", "65535"),
    ("INT_MAX", "2147483647"), ("INT_MIN", "(-INT_MAX - 1)"), ("UINT_MAX", "4294967295U"),
    ("LONG_MAX", "9223372036854775807L"), ("LONG_MIN", "(-LONG_MAX - 1L)"), ("ULONG_MAX", "18446744073709551615UL"),
    ("LLONG_MAX", "9223372036854775807LL"), ("LLONG_MIN", "(-LLONG_MAX - 1LL)"),
    ("ULLONG_MAX", "18446744073709551615ULL"),
)

def _limits_h() -> str:
    return _guarded("TRT_KERNELS_LIMITS_H", "limits.h: integer limits", (
        _LIBCUXX_FIRST.format("climits")
        + _macros(_INT_LIMITS)
        + "#ifdef __CHAR_UNSIGNED__\n" + _macros((("CHAR_MIN", "0"), ("CHAR_MAX", "UCHAR_MAX")))
        + "#else\n" + _macros((("CHAR_MIN", "SCHAR_MIN"), ("CHAR_MAX", "SCHAR_MAX"))) + "#endif\n"
    ))

_FLOAT_LIMITS = (
    ("FLT_RADIX", "2"), ("FLT_ROUNDS", "1"), ("FLT_EVAL_METHOD", "0"), ("DECIMAL_DIG", "17"),
    ("FLT_MANT_DIG", "24"), ("FLT_DIG", "6"), ("FLT_DECIMAL_DIG", "9"),
    ("FLT_MIN_EXP", "(-125)"), ("FLT_MIN_10_EXP", "(-37)"), ("FLT_MAX_EXP", "128"), ("FLT_MAX_10_EXP", "38"),
    ("FLT_MAX", "3.4028234663852886e+38F"), ("FLT_MIN", "1.1754943508222875e-38F"),
    ("FLT_EPSILON", "1.1920928955078125e-07F"), ("FLT_TRUE_MIN", "1.4012984643248171e-45F"),
    ("FLT_HAS_SUBNORM", "1"),
    ("DBL_MANT_DIG", "53"), ("DBL_DIG", "15"), ("DBL_DECIMAL_DIG", "17"),
    ("DBL_MIN_EXP", "(-1021)"), ("DBL_MIN_10_EXP", "(-307)"), ("DBL_MAX_EXP", "1024"), ("DBL_MAX_10_EXP", "308"),
    ("DBL_MAX", "1.7976931348623157e+308"), ("DBL_MIN", "2.2250738585072014e-308"),
    ("DBL_EPSILON", "2.220446049250313e-16"), ("DBL_TRUE_MIN", "4.9406564584124654e-324"),
    ("DBL_HAS_SUBNORM", "1"),
)

_INT_TYPES = (("int8_t", "signed char"), ("int16_t", "short"), ("int32_t", "int"), ("int64_t", "long long"))


def _stdint_body() -> str:
    types = []
    for name, c in _INT_TYPES:
        for prefix in ("", "_least", "_fast"):
            signed = name.replace("int", f"int{prefix}", 1)
            types.append(f"typedef {c} {signed};\ntypedef unsigned {c.replace('signed ', '')} u{signed};\n")
    types.append("typedef long long intptr_t;\ntypedef unsigned long long uintptr_t;\n"
                 "typedef long long intmax_t;\ntypedef unsigned long long uintmax_t;\n")
    bits = {"8": ("127", "255"), "16": ("32767", "65535"), "32": ("2147483647", "4294967295U"),
            "64": ("9223372036854775807LL", "18446744073709551615ULL")}
    limits = []
    for n, (smax, umax) in bits.items():
        for kind in ("", "_LEAST", "_FAST"):
            limits += [(f"INT{kind}{n}_MAX", smax), (f"INT{kind}{n}_MIN", f"(-INT{kind}{n}_MAX - 1)"),
                       (f"UINT{kind}{n}_MAX", umax)]
    limits += [("INTPTR_MAX", "INT64_MAX"), ("INTPTR_MIN", "INT64_MIN"), ("UINTPTR_MAX", "UINT64_MAX"),
               ("INTMAX_MAX", "INT64_MAX"), ("INTMAX_MIN", "INT64_MIN"), ("UINTMAX_MAX", "UINT64_MAX"),
               ("PTRDIFF_MAX", "9223372036854775807L"), ("PTRDIFF_MIN", "(-PTRDIFF_MAX - 1L)"),
               ("SIZE_MAX", "18446744073709551615UL"),
               ("INT8_C(c)", "c"), ("INT16_C(c)", "c"), ("INT32_C(c)", "c"), ("INT64_C(c)", "c ## LL"),
               ("UINT8_C(c)", "c"), ("UINT16_C(c)", "c"), ("UINT32_C(c)", "c ## U"), ("UINT64_C(c)", "c ## ULL"),
               ("INTMAX_C(c)", "c ## LL"), ("UINTMAX_C(c)", "c ## ULL")]
    return _LIBCUXX_FIRST.format("cstdint") + "".join(types) + _macros(limits)


def _stddef_h() -> str:
    return _guarded("TRT_KERNELS_STDDEF_H", "stddef.h: size_t, ptrdiff_t, NULL, offsetof", (
        "#if __cplusplus >= 201103L\n"
        "typedef decltype(sizeof(0)) size_t;\n"
        "typedef decltype(static_cast<char*>(nullptr) - static_cast<char*>(nullptr)) ptrdiff_t;\n"
        "#endif\n"
        + _macros((("NULL", "0"), ("offsetof(type, member)", "__builtin_offsetof(type, member)")))
    ))


# the C math functions NVRTC declares (with their float overloads), for <cmath>'s std::
_MATH_FUNCTIONS = """
abs fabs fabsf fmod fmodf remainder remainderf remquo remquof fma fmaf fmax fmaxf fmin fminf fdim fdimf nan nanf
exp expf exp2 exp2f expm1 expm1f log logf log10 log10f log2 log2f log1p log1pf pow powf sqrt sqrtf cbrt cbrtf
hypot hypotf sin sinf cos cosf tan tanf asin asinf acos acosf atan atanf atan2 atan2f sinh sinhf cosh coshf
tanh tanhf asinh asinhf acosh acoshf atanh atanhf erf erff erfc erfcf tgamma tgammaf lgamma lgammaf
ceil ceilf floor floorf trunc truncf round roundf lround lroundf llround llroundf nearbyint nearbyintf rint rintf
lrint lrintf llrint llrintf frexp frexpf ldexp ldexpf modf modff scalbn scalbnf scalbln scalblnf ilogb ilogbf
logb logbf nextafter nextafterf copysign copysignf isfinite isinf isnan signbit
"""

_ASSERT_H = (
    "/* assert.h: assert() from the current NDEBUG at each inclusion, as the C standard has it "
    "(trt_kernels built-in header for NVRTC) */\n"
    "#undef assert\n"
    "#ifdef NDEBUG\n"
    "#define assert(condition) ((void)0)\n"
    "#else\n"
    "#define assert(condition) (static_cast<bool>(condition) ? (void)0 : "
    "__assertfail(#condition, __FILE__, __LINE__, __PRETTY_FUNCTION__, sizeof(char)))\n"
    "#endif\n"
)


@functools.lru_cache(maxsize=1)
def _headers() -> Dict[str, str]:
    """``{include name: text}`` of the prelude and every built-in header, in the order handed to NVRTC."""
    return {
        PRELUDE: _prelude_h(),
        "stdint.h": _guarded("TRT_KERNELS_STDINT_H", "stdint.h: fixed-width integer types", _stdint_body()),
        "cstdint": _guarded("TRT_KERNELS_CSTDINT", "cstdint", "#include <stdint.h>\n" + _using(
            " ".join(f"{n.replace('int', 'int' + p, 1)} u{n.replace('int', 'int' + p, 1)}"
                     for n, _ in _INT_TYPES for p in ("", "_least", "_fast"))
            + " intptr_t uintptr_t intmax_t uintmax_t")),
        "stddef.h": _stddef_h(),
        "cstddef": _guarded("TRT_KERNELS_CSTDDEF", "cstddef", "#include <stddef.h>\n#if __cplusplus >= 201103L\n"
                            + _using("size_t ptrdiff_t") + "namespace std { typedef decltype(nullptr) nullptr_t; }\n"
                            "#endif\n"),
        "limits.h": _limits_h(),
        "climits": _guarded("TRT_KERNELS_CLIMITS", "climits", "#include <limits.h>\n"),
        "float.h": _guarded("TRT_KERNELS_FLOAT_H", "float.h: float and double limits (IEEE-754)",
                            _macros(_FLOAT_LIMITS)),
        "cfloat": _guarded("TRT_KERNELS_CFLOAT", "cfloat", "#include <float.h>\n"),
        "math.h": _guarded("TRT_KERNELS_MATH_H", "math.h: the math functions are NVRTC builtins; the constants",
                           f"#include <{PRELUDE}>\ntypedef float float_t;\ntypedef double double_t;\n"),
        "cmath": _guarded("TRT_KERNELS_CMATH", "cmath",
                          "#include <math.h>\n" + _using(_MATH_FUNCTIONS + "float_t double_t")),
        "stdio.h": _guarded("TRT_KERNELS_STDIO_H", "stdio.h: printf is an NVRTC builtin; device code has no FILE",
                            "#include <stddef.h>\n"),
        "cstdio": _guarded("TRT_KERNELS_CSTDIO", "cstdio", "#include <stdio.h>\n" + _using("printf")),
        "stdlib.h": _guarded("TRT_KERNELS_STDLIB_H", "stdlib.h: malloc, free, abs, labs, llabs are NVRTC builtins",
                             "#include <stddef.h>\n" + _macros((("EXIT_SUCCESS", "0"), ("EXIT_FAILURE", "1")))),
        "cstdlib": _guarded("TRT_KERNELS_CSTDLIB", "cstdlib",
                            "#include <stdlib.h>\n" + _using("malloc free abs labs llabs")),
        "string.h": _guarded("TRT_KERNELS_STRING_H", "string.h: memcpy and memset are NVRTC builtins",
                             "#include <stddef.h>\n"),
        "cstring": _guarded("TRT_KERNELS_CSTRING", "cstring", "#include <string.h>\n" + _using("memcpy memset")),
        "assert.h": _ASSERT_H,
        "cassert": "/* cassert (trt_kernels built-in header for NVRTC) */\n#include <assert.h>\n",
    }


#: The standard headers this package provides (besides the prelude), in the order handed to NVRTC.
NAMES: Tuple[str, ...] = ("stdint.h", "cstdint", "stddef.h", "cstddef", "limits.h", "climits", "float.h", "cfloat",
                          "math.h", "cmath", "stdio.h", "cstdio", "stdlib.h", "cstdlib", "string.h", "cstring",
                          "assert.h", "cassert")


def text(name: str) -> str:
    """The text of built-in header ``name`` (``"stdint.h"``, or :data:`PRELUDE`)."""
    return _headers()[name]


def for_compile(user_dirs: Sequence[str] = ()) -> Tuple[Tuple[str, str], ...]:
    """``(include name, text)`` of the headers to hand NVRTC: the prelude, and every built-in header
    that no directory of ``user_dirs`` (``KernelSpec.include_paths``) holds a file of the same name of."""
    return tuple((n, t) for n, t in _headers().items()
                 if n == PRELUDE or not any(os.path.isfile(os.path.join(d, n)) for d in user_dirs))


def options() -> Tuple[str, ...]:
    """The NVRTC options the built-in headers need: pre-include the prelude."""
    return (f"--pre-include={PRELUDE}",)


def digest() -> str:
    """A digest of the built-in headers' texts and how they are used: what
    :data:`trt_kernels.sources.nvrtc.BUILTIN_HEADERS`, their part of every program's cache key, must be."""
    h = hashlib.sha256()
    for n, t in _headers().items():
        h.update(f"{n}\0{len(t)}\0{t}\0".encode())
    h.update("\0".join(options()).encode())
    return h.hexdigest()[:16]


# ---------------- what to say when a header cannot be used ----------------

# (patterns as text: compiled at the first failed compile, not at every import)
_NOT_FOUND = r'^(.*?)\(\d+\): catastrophic error: (?:cannot|could not) open source file "([^"]+)"'
_HOST_CODE = r"^(.*?)\(\d+\): error: A function explicitly marked as a __host__ function is not allowed in JIT mode"
# The C and C++ standard library headers: host code, which NVRTC has none of (the built-in ones aside)
_STANDARD = frozenset("""
iostream istream ostream sstream fstream iomanip ios iosfwd streambuf vector string string_view map unordered_map set
unordered_set list forward_list deque queue stack memory memory_resource algorithm numeric iterator functional
thread mutex condition_variable future shared_mutex chrono random regex exception stdexcept system_error
typeinfo new locale codecvt filesystem any optional variant tuple utility type_traits limits array bitset
initializer_list ratio complex valarray atomic bit span concepts ranges format compare numbers execution
cstdarg csignal csetjmp ctime cwchar cwctype cctype clocale cerrno cfenv cinttypes cuchar
stdarg.h signal.h setjmp.h time.h wchar.h wctype.h ctype.h locale.h errno.h fenv.h inttypes.h uchar.h
""".split())


def compile_hint(log: str, search: Sequence[str]) -> Optional[str]:
    """Why a compile failed and what to do, where NVRTC's ``log`` shows a header problem; None otherwise.
    ``search`` is the include path the compile had, in order."""
    host = re.search(_HOST_CODE, log, re.M)
    if host:
        where = _header_name(host.group(1), search)
        return ("a header brought in host code" + (f" ({where})" if where else "") + ": NVRTC compiles device "
                "code only (no __host__ functions, kernel launches, or CUB/Thrust device-wide algorithms). Fix: "
                "include only the device-side headers, e.g. <cub/block/block_reduce.cuh> or "
                "<cub/warp/warp_reduce.cuh> in place of <cub/cub.cuh>, and no <thrust/...>.")
    found = re.search(_NOT_FOUND, log, re.M)
    if not found:
        return None
    includer, name = _header_name(found.group(1), search), found.group(2)
    what = f"<{name}>" + (f", which {includer} includes," if includer else "")
    searched = (f"Searched, in order: {', '.join(search) or 'no directory'} (include_paths first; an entry that "
                f"is not a directory is skipped); built in: {', '.join(NAMES)}.")
    if name not in _STANDARD:
        return f"{what} is not on NVRTC's include path. {searched} Fix: pass the directory that holds it in " \
               f"KernelSpec(include_paths=[...])."
    libcuxx = _libcuxx_equivalent(name, search)
    if includer:
        fix = f"include the device-side parts of {includer} rather than it"
    elif libcuxx:
        fix = f"include <{libcuxx}> and use cuda::std:: in place of std::"
    else:
        fix = "remove the include (device code cannot use it)"
    return (f"{what} is a C or C++ standard library header, and NVRTC compiles device code only: it has no host "
            f"headers (the package builds in a few small device-side ones). {searched} Fix: {fix}; or, where a "
            f"header of that name is meant, pass its directory in KernelSpec(include_paths=[...]).")


def _header_name(path: str, search: Sequence[str]) -> Optional[str]:
    """``<relative/name.h>`` for a header file under a directory of ``search``; None for another file (the
    kernel's own source)."""
    path = path.strip()
    if not os.path.isfile(path):  # the kernel's own source, named by its program name (no file)
        return None
    for d in search:
        root = os.path.join(os.path.abspath(d), "")
        if os.path.abspath(path).startswith(root):
            return "<" + os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/") + ">"
    return None


def _libcuxx_equivalent(name: str, search: Sequence[str]) -> Optional[str]:
    """``cuda/std/<name>`` where a directory of ``search`` has it (libcu++'s device version of a std header)."""
    if "/" in name or name.endswith(".h"):
        return None
    for d in search:
        if os.path.isfile(os.path.join(d, "cuda", "std", name)):
            return f"cuda/std/{name}"
    return None
