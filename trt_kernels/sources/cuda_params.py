"""The parameters of a ``__global__`` function, read from its CUDA C++ source: their names, and the dtype a
pointer's type names (checked against the declaration before anything compiles, :func:`check_pointees`).

Declarations are matched to a kernel's parameters by name (:func:`trt_kernels.validate.validate_signature`),
so the kernel is declared in its own parameter order. This reads only the kernel's declaration: comments
are dropped, the declaration named ``kernel_name`` (its template arguments ignored) that ``__global__``
marks is found, and each parameter's name is the last identifier before a default value or an array bound.
Where that cannot be told (no such declaration, an unnamed parameter, two declarations that disagree,
a macro that makes the parameter list), the names are unknown and the calling convention applies.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
# words a parameter's last identifier cannot be: then it has no name
_NOT_NAMES = frozenset("""const volatile restrict __restrict__ __restrict int unsigned signed long short char
float double bool void size_t half __half __nv_bfloat16 struct class typename auto int8_t uint8_t int16_t uint16_t
int32_t uint32_t int64_t uint64_t ptrdiff_t intptr_t uintptr_t""".split())


def kernel_param_names(source: str, kernel_name: str) -> Optional[List[str]]:
    """The names of the parameters of the ``__global__`` function ``kernel_name`` (``k`` or ``k<T>``) in
    ``source``, in order; None where they cannot be read."""
    params = kernel_params(source, kernel_name)
    return None if params is None else [name for _, name in params]


def kernel_params(source: str, kernel_name: str) -> Optional[List[Tuple[str, str]]]:
    """``(type, name)`` of each parameter of the ``__global__`` function ``kernel_name`` (``k`` or ``k<T>``)
    in ``source``, in order (the type as written, the name and any default or array bound taken off); None
    where they cannot be read. (Plain string search: a declaration reads it once per op, and a pattern per
    kernel name would be compiled each time.)"""
    base = kernel_name.split("<", 1)[0].strip()
    if not base.isidentifier():
        return None
    text = _without_comments(source) if "/" in source else source
    found = []
    at = text.find(base)
    while at >= 0:
        end = at + len(base)
        after = text[end:end + 200].lstrip()
        whole = (at == 0 or not (text[at - 1].isalnum() or text[at - 1] == "_")) and after.startswith("(")
        head = text[max(0, at - 400):at]
        head = head[max(head.rfind(";"), head.rfind("}")) + 1:]  # the declaration this name belongs to
        if whole and "__global__" in head:
            inner = _balanced(text, text.index("(", end))
            names = _params(inner) if inner is not None else None
            if names is None:
                return None
            found.append(names)
        at = text.find(base, end)
    if not found or any(f != found[0] for f in found):
        return None
    return found[0]


def _balanced(text: str, start: int) -> Optional[str]:
    """What lies between the parenthesis at ``start`` and its match."""
    close = text.find(")", start)
    if close >= 0 and text.find("(", start + 1, close) < 0:  # no parentheses inside (the common case)
        return text[start + 1:close]
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return text[start + 1:i]
    return None


def _params(params: str) -> Optional[List[Tuple[str, str]]]:
    if not params.strip() or params.strip() == "void":
        return []
    out = []
    for p in _split(params):
        p = p.split("=", 1)[0]  # a default value
        while "[" in p and "]" in p[p.index("["):]:  # array bounds
            p = p[:p.index("[")] + " " + p[p.index("]", p.index("[")) + 1:]
        p = p.rstrip()
        i = len(p)
        while i > 0 and (p[i - 1].isalnum() or p[i - 1] == "_"):
            i -= 1
        name = p[i:]
        if not name.isidentifier() or name in _NOT_NAMES or not p[:i].strip():
            return None  # unnamed (``float*``), or a macro
        out.append((" ".join(p[:i].split()), name))
    return out


def _without_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments blanked (string literals are rare in a kernel's
    declaration and not looked at)."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            out.append(" ")
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            out.append(" ")
        else:
            j = min((k for k in (text.find("//", i), text.find("/*", i)) if k >= 0), default=n)
            out.append(text[i:j])
            i = j
    return "".join(out)


def _split(params: str) -> List[str]:
    """``params`` split at its top-level commas (not those inside <>, (), [] or {})."""
    if not any(c in params for c in "<([{"):
        return params.split(",")
    parts, depth, cur = [], 0, []
    for c in params:
        if c in _OPEN:
            depth += 1
        elif c in _OPEN.values():
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return parts


# the C spellings of a pointee that say one tensor dtype (by its name in torch); the char types, which kernels also use
# to read any tensor's bytes, vector types (float4), unsigned ints and template parameters say none: not checked
_POINTEE = {
    "float": "float32", "double": "float64", "__half": "float16", "half": "float16",
    "__nv_bfloat16": "bfloat16", "nv_bfloat16": "bfloat16", "int": "int32", "signed int": "int32", "signed": "int32",
    "int32_t": "int32", "long long": "int64", "long long int": "int64", "signed long long": "int64",
    "long": "int64", "long int": "int64", "int64_t": "int64", "int8_t": "int8", "uint8_t": "uint8", "bool": "bool",
}
_QUALIFIERS = frozenset("const volatile __restrict__ __restrict restrict".split())


def _element(type_text: str) -> Optional[str]:
    """What a one-level pointer type points to, qualifiers dropped (``const __half* __restrict__`` ->
    ``__half``); None for a value, a reference or a pointer to a pointer."""
    if type_text.count("*") != 1 or "&" in type_text:
        return None
    head, _, tail = type_text.partition("*")
    if any(w not in _QUALIFIERS for w in tail.split()):
        return None
    return " ".join(w for w in head.split() if w not in _QUALIFIERS)


def pointee(type_text: str) -> Optional[str]:
    """The tensor dtype's name (``"float16"``) a parameter of type ``type_text`` (``const __half* __restrict__``)
    points to, where its spelling says one (see ``_POINTEE``); None for anything else (a value, a pointer to a
    pointer, a char or vector type, a template parameter)."""
    element = _element(type_text)
    return None if element is None else _POINTEE.get(element)


def check_pointees(op: str, sig: Any, params: Sequence[Tuple[str, str]], kernel: str) -> None:
    """:class:`~trt_kernels.errors.SpecError` where a pointer parameter of the kernel (``params``, as
    :func:`kernel_params` read them) points to a type that is not the dtype the declaration gives its tensor,
    at any of the declared dtypes (``sig``'s kernel dtypes): the kernel would read that tensor's bytes as
    another type. Parameters whose spelling says no dtype (:func:`pointee`) are not checked."""
    import torch

    from trt_kernels import dtypes as _dt
    from trt_kernels.validate import fail

    named = [(j, getattr(torch, name)) for j, name in enumerate(pointee(t) for t, _ in params) if name is not None]
    if not named:
        return
    expected = sig.params(sig.kernel_dtypes[0])  # (where each parameter's value comes from: the same at every dtype)
    if len(expected) != len(params):
        return  # (the ABI check names a count that differs)
    wrong: Dict[int, List[torch.dtype]] = {}
    for kdt in sig.kernel_dtypes:
        ins = sig.in_dtypes(kdt)
        outs = sig.out_dtypes(ins)
        for j, dtype in named:
            p = expected[j]
            dt = ins[p.index] if p.role == "input" else outs[p.index] if p.role == "output" else None
            if dt is not None and dt != dtype and dt not in wrong.get(j, []):
                wrong.setdefault(j, []).append(dt)
    if not wrong:
        return
    j, dts = next(iter(wrong.items()))
    p, (ctype, pname) = expected[j], params[j]
    tensor = (sig.tensor_names[p.index] if p.role == "input" else sig.outputs[p.index].name)
    given = ", ".join(_dt.short(d) for d in dts)
    if p.role == "output" and sig.outputs[p.index].dtype is None:
        src = sig.tensor_names[sig.outputs[p.index].dtype_src]
        whence = f" (an output's dtype follows input {src!r} unless declared)"
        fix = (f"give the output its dtype (OutputDecl({tensor!r}, ..., dtype=torch.{pointee(ctype)}) or "
               f"dtype_from= the input it follows), or write the parameter for {given}")
    elif p.role == "output":
        whence = ""
        fix = (f"give {tensor!r} the dtype the kernel writes (dtype=torch.{pointee(ctype)} on its OutputDecl, or on "
               f"its ttk.Written for a count), or write the parameter for {given}")
    else:
        whence = ""
        fix = (f"declare {tensor!r} with the dtype the kernel reads (dtypes= / InputDecl(dtype=)), or write the "
               f"parameter for {given} (a template parameter, const T*, serves every dtype)")
    elem = _element(ctype)
    field = f"inputs[{[d.name for d in sig.inputs].index(tensor)}] {tensor!r}" if p.role == "input" else \
        f"outputs {tensor!r}"
    raise fail(op, field, f"{kernel} parameter {j} ({ctype} {pname}) points to {elem} ({pointee(ctype)}), but the "
               f"declaration gives {tensor!r} the dtype {given}{whence}: the kernel would "
               f"{'write' if p.role == 'output' else 'read'} its bytes as another type", fix)
