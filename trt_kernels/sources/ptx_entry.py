"""Rewriting a kernel's PTX ``.entry`` to the argument layout of TensorRT's AOT launch.

TensorRT's AOT launch (a QDP plugin's ``aot_impl``) passes ``(input pointers, extra args, output
pointers)``, the extra args as 32-bit ints (``SymInt32``), and nothing else. A kernel written in its
own parameter order (outputs first, sizes between pointers), with 64-bit size parameters (``size_t
n``) or with compiler-appended parameters (Triton's scratch pointers) takes another layout. PTX names
its parameters (``k_param_3``) and the body reads them by name, so the layout is a matter of the
``.entry`` header alone:

- :func:`strip_hidden_params` drops appended parameters the body never names;
- :func:`rearranged` lists the parameters in another order, and declares 64-bit integer parameters as
  32-bit ones whose loads widen the value (``ld.param.u32`` then ``cvt``), where every use of the
  parameter is such a load.

Each returns ``(None, why)`` where the PTX is not what it expects; the op's plugin then uses its JIT impl
and says why.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Sequence, Tuple

_PARAM_LINE = re.compile(r"\.param\b[^,)]*?([\w$]+)(?:\[\d+\])?\s*$")


def _entry_span(text: str, symbol: str) -> Optional[Tuple[int, int]]:
    m = re.search(r"\.entry\s+" + re.escape(symbol) + r"\s*\(", text)
    if not m:
        return None
    close = text.find(")", m.end())
    return (m.end(), close) if close >= 0 else None


def _entry(text: str, symbol: str):
    """``(span, parameter declarations, their names)`` of ``.entry symbol``, or ``(None, why, None)``."""
    span = _entry_span(text, symbol)
    if span is None:
        return None, f"no .entry {symbol!r} in the PTX", None
    params = [p.strip() for p in text[span[0]:span[1]].split(",") if p.strip()]
    names = []
    for p in params:
        m = _PARAM_LINE.search(p)
        if not m:
            return None, f"cannot read the PTX parameter {p!r}", None
        names.append(m.group(1))
    return span, params, names


def _with_params(text: str, span: Tuple[int, int], params: Sequence[str]) -> str:
    return text[:span[0]] + "\n\t" + ",\n\t".join(params) + "\n" + text[span[1]:]


def strip_hidden_params(ptx: bytes, symbol: str, n_user: int) -> Tuple[Optional[bytes], str]:
    """PTX whose ``.entry symbol`` takes only its first ``n_user`` parameters, or ``(None, why)``.

    The hidden parameters are dropped only when the kernel body never names them (then no
    instruction reads them, and removing them changes nothing but the launch layout)."""
    text = ptx.decode("latin-1")
    span, params, names = _entry(text, symbol)
    if span is None:
        return None, params
    if len(params) < n_user:
        return None, f".entry {symbol!r} has {len(params)} parameters, fewer than the {n_user} declared"
    body = text[span[1]:]
    for name in names[n_user:]:
        if re.search(r"\b" + re.escape(name) + r"\b", body):
            return None, f"the kernel reads its hidden parameter {name!r} (a Triton scratch buffer)"
    if len(params) == n_user:
        return ptx, ""
    return _with_params(text, span, params[:n_user]).encode("latin-1"), ""


def rearranged(ptx: bytes, symbol: str, order: Sequence[int], narrow: Dict[int, bool]) -> Tuple[Optional[bytes], str]:
    """PTX whose ``.entry symbol`` takes its parameters in ``order`` (position ``k`` of the new entry is the
    old parameter ``order[k]``), with each parameter of ``narrow`` (old index -> signed) taken as a 32-bit
    int and widened where the body loads it; or ``(None, why)``."""
    text = ptx.decode("latin-1")
    span, params, names = _entry(text, symbol)
    if span is None:
        return None, params
    if sorted(order) != list(range(len(params))):
        return None, f".entry {symbol!r} has {len(params)} parameters, not the {len(order)} declared"
    body = text[span[1]:]
    params = list(params)
    for i, signed in narrow.items():
        name = re.escape(names[i])
        if not re.search(r"\.param\s+\.[usb]64\s+" + name + r"\s*$", params[i]):
            return None, f"parameter {i} ({params[i]!r}) is not a 64-bit integer"
        uses = len(re.findall(r"\b" + name + r"\b", body))
        load = re.compile(r"ld\.param\.[usb]64\s+(%[\w$]+)\s*,\s*\[\s*" + name + r"\s*\]\s*;")
        if uses != len(load.findall(body)):
            return None, (f"the kernel uses its 64-bit parameter {names[i]!r} other than by loading it, so it "
                          "cannot be passed as TensorRT's 32-bit extra argument")
        t = "s32" if signed else "u32"
        wide = "s64" if signed else "u64"
        body = load.sub(lambda m: "{ .reg .b32 %ttk_w; ld.param." + t + " %ttk_w, [" + names[i] + "]; cvt." + wide
                        + "." + t + " " + m.group(1) + ", %ttk_w; }", body)
        params[i] = re.sub(r"\.[usb]64(\s+)" + name + r"\s*$", "." + t + r"\g<1>" + names[i], params[i])
    header = "\n\t" + ",\n\t".join(params[i] for i in order) + "\n"
    return (text[:span[0]] + header + body).encode("latin-1"), ""
