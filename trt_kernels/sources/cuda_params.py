"""The parameter names of a ``__global__`` function, read from its CUDA C++ source.

Declarations are matched to a kernel's parameters by name (:func:`trt_kernels.validate.validate_signature`),
so the kernel is declared in its own parameter order. This reads only the kernel's declaration: comments
are dropped, the declaration named ``kernel_name`` (its template arguments ignored) that ``__global__``
marks is found, and each parameter's name is the last identifier before a default value or an array bound.
Where that cannot be told (no such declaration, an unnamed parameter, two declarations that disagree,
a macro that makes the parameter list), the names are unknown and the calling convention applies.
"""

from __future__ import annotations

from typing import List, Optional

_OPEN = {"(": ")", "<": ">", "[": "]", "{": "}"}
# words a parameter's last identifier cannot be: then it has no name
_NOT_NAMES = frozenset("""const volatile restrict __restrict__ __restrict int unsigned signed long short char
float double bool void size_t half __half __nv_bfloat16 struct class typename auto int8_t uint8_t int16_t uint16_t
int32_t uint32_t int64_t uint64_t ptrdiff_t intptr_t uintptr_t""".split())


def kernel_param_names(source: str, kernel_name: str) -> Optional[List[str]]:
    """The names of the parameters of the ``__global__`` function ``kernel_name`` (``k`` or ``k<T>``) in
    ``source``, in order; None where they cannot be read. (Plain string search: a declaration reads it
    once per op, and a pattern per kernel name would be compiled each time.)"""
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
            names = _names(inner) if inner is not None else None
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


def _names(params: str) -> Optional[List[str]]:
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
        out.append(name)
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
