"""The dtypes a kernel may declare and the scalar types an op may take: one table each, with every spelling
the package needs (C++, TensorRT, Triton, ONNX, the CUDA array interface, struct codes, torch's schema).
Every other module asks here; none keeps its own mapping."""

from __future__ import annotations

from typing import Optional

import torch

from trt_kernels._record import Frozen, plain_record


@plain_record
class TensorType(Frozen):
    """One tensor dtype's spellings."""

    c: str  # the C++ type a template is instantiated with
    header: Optional[str]  # the CUDA header that declares it
    autotune: Optional[str]  # its name in tensorrt.plugin's AutoTuneCombination (None: TensorRT lacks it)
    trt: Optional[str]  # its trt.DataType member (None: TensorRT lacks it)
    triton: str  # Triton's signature type
    onnx: str  # ONNX's type string
    typestr: str  # the __cuda_array_interface__ typestr of a view of it ...
    view: torch.dtype  # ... and the dtype that typestr gives (bfloat16 has no typestr: viewed as int16)

    def __init__(self, c: str, header: Optional[str], autotune: Optional[str], trt: Optional[str], triton: str,
                 onnx: str, typestr: str, view: torch.dtype) -> None:
        self.__dict__.update(c=c, header=header, autotune=autotune, trt=trt, triton=triton, onnx=onnx,
                             typestr=typestr, view=view)


TENSOR_TYPES = {
    torch.float32: TensorType("float", None, "FP32", "FLOAT", "fp32", "tensor(float)", "<f4", torch.float32),
    torch.float16: TensorType("__half", "cuda_fp16.h", "FP16", "HALF", "fp16", "tensor(float16)", "<f2",
                              torch.float16),
    torch.bfloat16: TensorType("__nv_bfloat16", "cuda_bf16.h", "BF16", "BF16", "bf16", "tensor(bfloat16)", "<u2",
                               torch.int16),
    torch.float64: TensorType("double", None, None, None, "fp64", "tensor(double)", "<f8", torch.float64),
    torch.int32: TensorType("int", None, "INT32", "INT32", "i32", "tensor(int32)", "<i4", torch.int32),
    torch.int64: TensorType("long long", None, "INT64", "INT64", "i64", "tensor(int64)", "<i8", torch.int64),
    torch.int8: TensorType("signed char", None, "INT8", "INT8", "i8", "tensor(int8)", "|i1", torch.int8),
    torch.uint8: TensorType("unsigned char", None, "UINT8", "UINT8", "u8", "tensor(uint8)", "|u1", torch.uint8),
    torch.bool: TensorType("bool", None, "BOOL", "BOOL", "i1", "tensor(bool)", "|b1", torch.bool),
}

SUPPORTED = tuple(TENSOR_TYPES)


@plain_record
class ScalarType(Frozen):
    """One scalar input type's spellings."""

    kind: str  # the parameter kind the launch plan and the packers use
    size: int  # bytes in the kernel's parameter buffer
    code: str  # its struct format code
    c: str  # the C type the kernel declares
    schema: str  # torch's schema type
    triton: str  # Triton's signature type

    def __init__(self, kind: str, size: int, code: str, c: str, schema: str, triton: str) -> None:
        self.__dict__.update(kind=kind, size=size, code=code, c=c, schema=schema, triton=triton)


#: a scalar input's Python type -> its spellings
SCALAR_TYPES = {
    float: ScalarType("float", 4, "f", "float", "float", "fp32"),
    int: ScalarType("int", 4, "i", "int", "int", "i32"),
    bool: ScalarType("bool", 1, "?", "bool", "bool", "i1"),
}


_I32 = ScalarType("int", 4, "i", "int", "int", "i32")
_U32 = ScalarType("int", 4, "I", "unsigned int", "int", "u32")
_I64 = ScalarType("int", 8, "q", "long long", "int", "i64")
_U64 = ScalarType("int", 8, "Q", "unsigned long long", "int", "u64")

#: the C integer types a size argument (:class:`~trt_kernels.spec.SizeArg`) may have, as kernels spell them
#: (``long`` is 64-bit, as on the Linux targets NVRTC compiles for)
SIZE_TYPES = {
    "int": _I32, "int32_t": _I32, "signed": _I32,
    "unsigned": _U32, "unsigned int": _U32, "uint32_t": _U32,
    "long": _I64, "long long": _I64, "int64_t": _I64, "ptrdiff_t": _I64, "long int": _I64, "long long int": _I64,
    "unsigned long": _U64, "unsigned long long": _U64, "uint64_t": _U64, "size_t": _U64,
}

#: the values each struct code of an int parameter holds, and its name in messages
INT_RANGES = {"i": (-(2**31), 2**31 - 1), "I": (0, 2**32 - 1), "q": (-(2**63), 2**63 - 1), "Q": (0, 2**64 - 1)}
INT_NAMES = {"i": "32-bit int", "I": "32-bit unsigned int", "q": "64-bit int", "Q": "64-bit unsigned int"}

#: the values TensorRT's AOT launch passes exactly to an int parameter of each struct code: its extra arguments
#: are 32-bit (``SymInt32``), so a 64-bit parameter is narrowed to 32 bits of its signedness
#: (:func:`trt_kernels.recipe.tensorrt_narrowed`)
AOT_INT_RANGES = {"i": INT_RANGES["i"], "I": INT_RANGES["I"], "q": INT_RANGES["i"], "Q": INT_RANGES["I"]}

#: the C types a scalar input (:class:`~trt_kernels.spec.ScalarInput`'s ``ctype``) may declare, per Python type
#: (None, the default: the first); an int scalar takes any C integer type a size may have
SCALAR_CTYPES = {
    int: SIZE_TYPES,
    float: {"float": SCALAR_TYPES[float]},
    bool: {"bool": SCALAR_TYPES[bool]},
}
DEFAULT_CTYPES = {int: "int", float: "float", bool: "bool"}


def c_scalar_text(st: ScalarType) -> str:
    """A scalar parameter's C type in messages: ``a 32-bit C int``, ``a 64-bit unsigned C int (unsigned long
    long)``, ``a 32-bit C float``."""
    if st.kind == "int":
        text = "a " + INT_NAMES[st.code].replace("int", "C int")
        return text if st.code == "i" else f"{text} ({st.c})"
    return {"f": "a 32-bit C float", "?": "a C bool"}.get(st.code, f"a C {st.c}")


def c_type(dtype: torch.dtype) -> str:
    return TENSOR_TYPES[dtype].c


def trt_name(dtype: torch.dtype) -> str | None:
    """TensorRT's name for the dtype in ``trtp.AutoTuneCombination`` (None: TensorRT lacks it)."""
    return TENSOR_TYPES[dtype].autotune


def header(dtype: torch.dtype) -> str | None:
    return TENSOR_TYPES[dtype].header


def short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def label(kdt, type_params=("T",)) -> str:
    """A kernel dtype for messages: ``float16``, or ``(T=float16, W=float32)`` for several type parameters."""
    if isinstance(kdt, tuple):
        return "(" + ", ".join(f"{p}={short(d)}" for p, d in zip(type_params, kdt)) + ")"
    return short(kdt)


def flat(kdts) -> list:
    """Every dtype named by the kernel dtypes ``kdts`` (entries may be tuples), each once, in order."""
    out: list = []
    for k in kdts:
        for d in (k if isinstance(k, tuple) else (k,)):
            if d not in out:
                out.append(d)
    return out
