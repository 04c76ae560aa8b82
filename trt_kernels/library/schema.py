"""An op's torch schema: derived from the spec (:func:`build_schema`), or the user's checked against it
(:func:`check_schema`), and parsed by torch (:func:`parse_schema`)."""

from __future__ import annotations

import struct
from typing import Any, Tuple

import torch

from trt_kernels.errors import SpecError
from trt_kernels.op import KernelOp
from trt_kernels.signature import scalar_c, scalar_len, scalar_type_name


def build_schema(kop: KernelOp) -> str:
    """``(Tensor x, float alpha) -> Tensor`` from the spec (declaration order of inputs)."""
    if not kop.sig.has_outputs:  # override path: the meta function's annotations say it
        return torch.library.infer_schema(kop.meta_fn, mutates_args=())
    alias = iter("abcdefghijklmnopqrstuvwxyz")
    args = [(f"Tensor({next(alias)}!) {d.name}" if d.mutated else f"Tensor {d.name}") if kind == "tensor"
            else f"{scalar_type_name(d)} {d.name}" + _default_text(d)
            for d, kind in zip(kop.sig.inputs, kop.sig.arg_kinds)]
    n = len(kop.sig.returned)
    ret = "Tensor" if n == 1 else "(" + ", ".join(["Tensor"] * n) + ")"
    return "(" + ", ".join(args) + ") -> " + ret


def _default_text(d) -> str:
    """``=1e-06`` / ``=[1, 1]`` for a scalar input with a default (schema syntax), else ``""``."""
    if d.default is None:
        return ""

    def one(v) -> str:
        return ("True" if v else "False") if isinstance(v, bool) else repr(v)

    v = d.default
    return "=" + ("[" + ", ".join(one(x) for x in v) + "]" if isinstance(v, tuple) else one(v))


def spec_defaults(kop: KernelOp) -> Tuple[Any, ...]:
    """The defaults of the trailing arguments of a schema :func:`build_schema` derived from the spec: the scalar
    inputs' declared defaults, which the spec's validation has checked (finite, in the kernel's C range, trailing)
    and normalized (a float as float, a tuple's as a tuple), so a derived schema needs no parse to know them
    (``tests/unit/test_scalar_inputs.py`` checks they are what :func:`check_schema` reads back)."""
    return tuple(d.default for d, kind in zip(kop.sig.inputs, kop.sig.arg_kinds)
                 if kind != "tensor" and d.default is not None)


def check_schema(kop: KernelOp) -> None:
    """Check the op's schema (the user's, or one derived from its meta function; a schema derived from the spec
    is not parsed back, :func:`spec_defaults`) against its declaration and record the defaults of its trailing
    arguments in ``kop.defaults``; :class:`SpecError` naming the argument otherwise."""
    op = kop.op_name
    parsed = parse_schema(op, kop.schema)
    decls = list(kop.sig.inputs)
    args = list(parsed.arguments)

    def bad(where: str, msg: str, fix: str) -> SpecError:
        return SpecError(f"{op}: schema {kop.schema!r}: {where}: {msg}. Fix: {fix}")

    mutated = {d.name for d in kop.sig.tensor_decls if d.mutated}
    for a in args:
        writes = a.alias_info is not None and a.alias_info.is_write
        if (a.alias_info is not None and not writes) or writes != (a.name in mutated):
            raise bad(f"argument {a.name!r}", "is declared to alias or be written in place"
                      if a.alias_info is not None else "is written in place by the kernel (mutated=True)",
                      "mark exactly the inputs declared mutated=True as Tensor(a!), each with its own letter")
    if any(r.alias_info is not None for r in parsed.returns):
        raise bad("returns", "an output aliases an argument, but the kernels write fresh outputs",
                  "drop the (a) annotation of the return")
    if len(args) != len(decls):
        raise bad("arguments", f"{len(args)} arguments but the spec declares {len(decls)} inputs "
                  f"({', '.join(d.name for d in decls)})", "list one schema argument per declared input, in order")
    defaults = []
    for i, (a, d, kind) in enumerate(zip(args, decls, kop.sig.arg_kinds)):
        where = f"argument {i} ({a.name!r})"
        if a.kwarg_only:
            raise bad(where, "keyword-only arguments are not supported", "remove the '*' from the schema")
        if a.name != d.name:
            raise bad(where, f"the spec's input {i} is named {d.name!r}", f"name it {d.name!r} in the schema")
        want = "Tensor" if kind == "tensor" else scalar_type_name(d)  # torch prints SymInt as int
        n = None if kind == "tensor" else scalar_len(d)
        if n is None and str(a.type) != want or \
                n is not None and (str(a.type) != f"List[{want.split('[')[0]}]" or
                                   getattr(a, "N", None) not in (n, None)):
            raise bad(where, f"has type {_schema_type(a)} but the spec declares {want}",
                      f"declare it as '{want} {d.name}'")
        spec_default = None if kind == "tensor" else d.default
        if a.has_default_value():
            if kind == "tensor":
                raise bad(where, "a tensor argument cannot have a default", "drop its default")
            value = a.default_value
            items = list(value) if n is not None else [value]
            try:
                if n is not None and len(items) != n:
                    raise struct.error
                for x in items:
                    struct.pack("=" + scalar_c(d).code, x)
            except (struct.error, OverflowError, TypeError):
                raise bad(where, f"default {value!r} does not fit the kernel's C {want}",
                          "give a default in range") from None
            value = tuple(items) if n is not None else value
            if spec_default is not None and value != spec_default:
                raise bad(where, f"default {value!r} differs from the spec's ScalarInput default {spec_default!r}",
                          "give the same default in both, or one of them only")
            defaults.append(value)
        elif spec_default is not None:
            raise bad(where, f"has no default but the spec's ScalarInput gives {spec_default!r}",
                      f"write '{want} {d.name}{_default_text(d)}' in the schema, or leave schema out")
        elif defaults:
            raise bad(where, "has no default but an earlier argument has one",
                      "give defaults to trailing arguments only")
    if kop.sig.has_outputs:
        rets = [str(r.type) for r in parsed.returns]
        if rets != ["Tensor"] * len(kop.sig.returned):
            raise bad("returns", f"returns ({', '.join(rets)}) but the spec declares {len(kop.sig.returned)} "
                      "output tensor(s)", "return one Tensor per declared output")
    kop.defaults = tuple(defaults)



def _schema_type(a) -> str:
    """An argument's type as a schema writes it (``int[4]``, not ``List[int]``)."""
    t = str(a.type)
    if t.startswith("List[") and t.endswith("]"):
        n = getattr(a, "N", None)
        return f"{t[5:-1]}[{n if n is not None else ''}]"
    return t


def parse_schema(op_name: str, schema: str):
    """torch's parsed ``FunctionSchema`` of ``op_name`` + ``schema``; :class:`SpecError` if it does not parse."""
    if not isinstance(schema, str) or not schema.strip().startswith("("):
        raise SpecError(f"{op_name}: schema: {schema!r} is not an argument list and return type. "
                        "Fix: e.g. schema='(Tensor x, float alpha) -> Tensor', or leave schema out to derive it")
    try:
        return torch._C.parse_schema(f"{op_name}{schema}")
    except RuntimeError as e:
        raise SpecError(f"{op_name}: schema: {schema!r} does not parse ({str(e).splitlines()[0]}). "
                        "Fix: e.g. schema='(Tensor x, float alpha) -> Tensor'") from None
