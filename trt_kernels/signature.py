"""What a kernel takes, resolved once: the :class:`Signature` every part of the package reads.

:func:`trt_kernels.validate.validate_signature` checks a declaration (inputs, outputs,
extras, geometry, dtypes) and resolves it into a ``Signature``: input positions, tensor
indices instead of names, output dtype rules, size expressions with their leaves resolved
to tensor indices, one launch geometry per tactic, and the kernel's parameter list (the
ABI). The plan, the ABI check, the fake impl, the fast path, the TensorRT plugin and the
CLI read it and never look names up again. (These are frozen records, :mod:`trt_kernels._record`:
a ``@dataclass(frozen=True)`` cost about 0.4 ms of every ``import trt_kernels`` to generate its methods, a
``NamedTuple`` with string annotations about 0.3 ms, a record about 0.03 ms.) Where the kernel's *code* comes from
(CUDA C++, PTX, Triton) is a separate object, a :class:`~trt_kernels.sources.kernel_source.KernelSource`.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence, Tuple, Union

import torch

from trt_kernels import dtypes as _dt
from trt_kernels._record import Frozen, plain_record
from trt_kernels.dtypes import SCALAR_TYPES, SIZE_TYPES
from trt_kernels.expr import Const, Expr
from trt_kernels.spec import InputDecl, ScalarInput


@plain_record
class Param(Frozen):
    """One kernel parameter: ``kind`` is ``ptr``, ``int``, ``float`` or ``bool``; ``code`` its struct code;
    ``role`` and ``index`` say where its value comes from: ``"input"`` (the pointer of tensor input
    ``index``), ``"scalar"`` (scalar input ``index``; ``element`` of a tuple input), ``"extra"`` (the size
    expression ``extras[index]``), ``"output"`` (the pointer of output ``index``). Every reader of a
    launch (:class:`~trt_kernels.recipe.LaunchRecipe`) takes the kernel's parameters from these, in order."""

    kind: str
    size: int
    code: str  # struct format code used to pack it
    label: str  # how the declaration describes it, for messages
    role: str = ""
    index: int = 0
    element: Optional[int] = None

    def __init__(self, kind: str, size: int, code: str, label: str, role: str = "", index: int = 0,
                 element: Optional[int] = None) -> None:
        self.__dict__.update(kind=kind, size=size, code=code, label=label, role=role, index=index, element=element)




# ----- scalar inputs: a plain scalar, or a fixed-length tuple of them (``ScalarInput("pads", (int, 4))``) -----

def scalar_type(d: ScalarInput) -> type:
    """The Python type of a (validated) scalar input, or of each element of a tuple input."""
    return d.py_type[0] if isinstance(d.py_type, tuple) else d.py_type


def scalar_c(d: ScalarInput) -> _dt.ScalarType:
    """The C type of a (validated) scalar input, or of each element of a tuple input: its ``ctype`` (an int
    input's may be 64-bit), else its Python type's own (``int``, ``float``, ``bool``)."""
    t = scalar_type(d)
    ctype = d.ctype
    return SCALAR_TYPES[t] if ctype is None else _dt.SCALAR_CTYPES[t][ctype]


def scalar_len(d: ScalarInput) -> Optional[int]:
    """How many values a tuple input takes; None for a plain scalar."""
    return d.py_type[1] if isinstance(d.py_type, tuple) else None


def scalar_type_name(d: ScalarInput) -> str:
    """The input's type as the torch schema writes it: ``float``, ``int[4]``."""
    n = scalar_len(d)
    base = SCALAR_TYPES[scalar_type(d)].schema
    return base if n is None else f"{base}[{n}]"


def scalar_misfit(op: str, d: ScalarInput, value: Any) -> Optional[Exception]:
    """The :class:`~trt_kernels.errors.InputError` for a value of scalar input ``d`` (a tuple's elements each)
    that the kernel's C type cannot hold (naming the op, the argument and the fix); None where every value
    fits or is symbolic (a traced size: checked where it becomes a number)."""
    import struct

    from trt_kernels.errors import InputError

    st = scalar_c(d)
    n = scalar_len(d)
    for k, v in enumerate([value] if n is None else value):
        if isinstance(v, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            continue
        try:
            struct.pack("=" + st.code, v)
        except (struct.error, OverflowError, TypeError):
            label = repr(d.name) if n is None else f"{d.name!r}[{k}]"
            return InputError(f"{op}: scalar {label} = {v!r} does not fit {_dt.c_scalar_text(st)}. "
                              f"Fix: {scalar_fix(st)}")
    return None


def scalar_fix(st) -> str:
    """The fix for a scalar value outside its C type ``st``."""
    if st.kind != "int":
        return "pass a value in range"
    lo, hi = _dt.INT_RANGES[st.code]
    fix = f"pass a value in [{lo}, {hi}]"
    if st.size == 4:
        fix += (", or, where the kernel's parameter is 64-bit, declare it so: ttk.ScalarInput(name, int, "
                "ctype='long long')")
    return fix


def scalar_value(op: str, d: ScalarInput, value: Any) -> Any:
    """``value`` as the input's Python type (a tuple of them for a tuple input); :class:`InputError`
    naming the op and the argument for a tuple of the wrong length or a value of the wrong kind."""
    from trt_kernels.errors import InputError

    t, n = scalar_type(d), scalar_len(d)
    if n is None:
        return t(value)
    if hasattr(value, "tolist") and not isinstance(value, (list, tuple)):  # a numpy array (a plugin attribute)
        value = value.tolist()
        value = value if isinstance(value, list) else [value]
    if not isinstance(value, (list, tuple)) or len(value) != n:
        got = f"{len(value)} values" if isinstance(value, (list, tuple)) else type(value).__name__
        example = ", ".join(["1" if t is int else "1.0"] * n)
        raise InputError(f"{op}: scalar {d.name!r} takes {n} {t.__name__}s, got {got} ({value!r}"[:300] +
                         f"). Fix: pass a tuple or list of {n} {t.__name__}s, e.g. {d.name}=({example})")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, (torch.SymInt, torch.SymFloat)):  # traced (torch.compile): kept symbolic, not specialized
            if t is int and isinstance(v, torch.SymFloat):
                raise InputError(f"{op}: scalar {d.name!r}[{i}] is a float. Fix: pass {n} ints")
            out.append(v)
            continue
        ok = isinstance(v, int) if t is int else isinstance(v, (int, float))
        if isinstance(v, bool) or not ok:
            raise InputError(f"{op}: scalar {d.name!r}[{i}] = {v!r} is not {'an int' if t is int else 'a float'}. "
                             f"Fix: pass {n} {t.__name__}s")
        out.append(t(v))
    return tuple(out)


def scalar_items(d: ScalarInput, value: Any) -> List[Any]:
    """The C scalars an input's value passes to the kernel: itself, or the tuple's elements in order."""
    return [value] if scalar_len(d) is None else list(value)


@plain_record
class OutputSig(Frozen):
    """One output, resolved. ``kind``: ``like`` (the shape of tensor input ``tensor``), ``reduce``
    (input ``tensor`` with ``dims`` removed, or kept as 1 with ``keepdim``), ``exprs`` (``exprs``,
    size expressions over the inputs) or ``count`` (a size the kernel writes, :class:`~trt_kernels.spec.Written`:
    a 0-D ``dtype`` tensor; ``exprs`` = its ``(max, opt)``). dtype: ``dtype`` if fixed, else that of tensor
    input ``dtype_src``. ``written``: for an ``exprs`` output, the axis whose size the kernel writes (its
    expression there is the bound) and ``count`` the index of that size's ``count`` output; -1: none."""

    name: str
    kind: str
    tensor: int
    dims: Tuple[int, ...] = ()
    keepdim: bool = False
    exprs: Tuple[Expr, ...] = ()
    dtype: Optional[torch.dtype] = None
    dtype_src: Optional[int] = None
    written: int = -1
    count: int = -1

    def __init__(self, name: str, kind: str, tensor: int, dims: Tuple[int, ...] = (), keepdim: bool = False,
                 exprs: Tuple[Expr, ...] = (), dtype: Optional[torch.dtype] = None,
                 dtype_src: Optional[int] = None, written: int = -1, count: int = -1) -> None:
        self.__dict__.update(name=name, kind=kind, tensor=tensor, dims=dims, keepdim=keepdim, exprs=exprs, dtype=dtype,
                             dtype_src=dtype_src, written=written, count=count)


@plain_record
class CheckSig(Frozen):
    """A size relation between inputs, resolved. ``kind``: ``shape`` (tensor inputs ``tensors`` have equal
    shapes) or ``dims`` (the size expressions ``exprs``, leaves resolved, are equal); ``label``: as
    declared (``SameDim(('x', -1), ('w', 0))``), ``texts``: each operand as declared, for messages."""

    label: str
    kind: str
    tensors: Tuple[int, ...] = ()
    exprs: Tuple[Expr, ...] = ()
    texts: Tuple[str, ...] = ()

    def __init__(self, label: str, kind: str, tensors: Tuple[int, ...] = (), exprs: Tuple[Expr, ...] = (),
                 texts: Tuple[str, ...] = ()) -> None:
        self.__dict__.update(label=label, kind=kind, tensors=tensors, exprs=exprs, texts=texts)


@plain_record
class LaunchSig(Frozen):
    """The launch geometry of one tactic. ``kind``: ``flat`` / ``nd`` (one thread per element of
    output 0), ``reduce`` (one block per element of output 0) or ``custom`` (``grid`` and
    ``shared_mem`` as resolved size expressions)."""

    kind: str
    block: Tuple[int, ...]
    grid: Tuple[Expr, ...] = ()
    shared_mem: Expr = Const(0)
    reduce_dims: Tuple[int, ...] = ()

    def __init__(self, kind: str, block: Tuple[int, ...], grid: Tuple[Expr, ...] = (), shared_mem: Expr = Const(0),
                 reduce_dims: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(kind=kind, block=block, grid=grid, shared_mem=shared_mem, reduce_dims=reduce_dims)


@plain_record
class Signature(Frozen):
    """A validated declaration: what the kernel takes and how it is launched, by position.

    Size expressions (``extras``, ``OutputSig.exprs``, ``LaunchSig.grid``/``shared_mem``) have their
    leaves resolved to tensor indices (:class:`~trt_kernels.expr.NumelOf`,
    :class:`~trt_kernels.expr.Dim`); a ``Dim`` axis may still be negative, the plan makes it
    non-negative for the input ranks it is built for.
    """

    op_name: str
    namespace: str
    name: str
    inputs: Tuple[Union[InputDecl, ScalarInput], ...]
    arg_kinds: Tuple[str, ...]  # per declared input, in order: "tensor" or "scalar"
    tensor_pos: Tuple[int, ...]  # argument position of each tensor input
    tensor_decls: Tuple[InputDecl, ...]
    scalar_decls: Tuple[ScalarInput, ...]
    # what T may be ((float32,) for a plain kernel); with several type_params, tuples of dtypes, one per parameter
    kernel_dtypes: Tuple[Any, ...]
    outputs: Tuple[OutputSig, ...]  # empty: meta_fn says what the op returns
    extras: Tuple[Expr, ...]
    extra_labels: Tuple[str, ...]  # each extra as the user wrote it
    launches: Tuple[LaunchSig, ...]  # one per tactic; empty: eager_fn (and aot_fn) launch
    type_params: Tuple[str, ...] = ("T",)  # the template's type parameters; kernel_dtypes are tuples when > 1
    checks: Tuple[CheckSig, ...] = ()  # size relations between inputs
    extra_names: Tuple[str, ...] = ()  # each extra's name (a SizeArg's; "" for a plain expression)
    extra_ctypes: Tuple[str, ...] = ()  # each extra's C type (a key of dtypes.SIZE_TYPES); () : all "int"
    # the kernel's parameter order: position k of the kernel takes parameter order[k] of the calling
    # convention's list (inputs, scalars, extras, outputs); () : the convention's order itself
    order: Tuple[int, ...] = ()

    def __init__(self, op_name: str, namespace: str, name: str, inputs: Tuple[Union[InputDecl, ScalarInput], ...],
                 arg_kinds: Tuple[str, ...], tensor_pos: Tuple[int, ...], tensor_decls: Tuple[InputDecl, ...],
                 scalar_decls: Tuple[ScalarInput, ...], kernel_dtypes: Tuple[Any, ...],
                 outputs: Tuple[OutputSig, ...], extras: Tuple[Expr, ...], extra_labels: Tuple[str, ...],
                 launches: Tuple[LaunchSig, ...], type_params: Tuple[str, ...] = ("T",),
                 checks: Tuple[CheckSig, ...] = (), extra_names: Tuple[str, ...] = (),
                 extra_ctypes: Tuple[str, ...] = (), order: Tuple[int, ...] = ()) -> None:
        self.__dict__.update(op_name=op_name, namespace=namespace, name=name, inputs=inputs, arg_kinds=arg_kinds,
                             tensor_pos=tensor_pos, tensor_decls=tensor_decls, scalar_decls=scalar_decls,
                             kernel_dtypes=kernel_dtypes, outputs=outputs, extras=extras, extra_labels=extra_labels,
                             launches=launches, type_params=type_params, checks=checks, extra_names=extra_names,
                             extra_ctypes=extra_ctypes, order=order)

    @property
    def tensor_names(self) -> Tuple[str, ...]:
        return tuple(d.name for d in self.tensor_decls)

    @property
    def has_outputs(self) -> bool:
        """Whether the declaration says what the op writes (outputs, or inputs written in place); else
        ``meta_fn`` says what it returns."""
        return bool(self.outputs) or bool(self.mutated)

    @property
    def returned(self) -> Tuple[int, ...]:
        """The outputs the op returns (their indices in :attr:`outputs`): all but the sizes the kernel writes."""
        return tuple(i for i, o in enumerate(self.outputs) if o.kind != "count")

    @property
    def counts(self) -> Tuple[int, ...]:
        """The sizes the kernel writes (:class:`~trt_kernels.spec.Written`; their indices in :attr:`outputs`, after
        the returned outputs): each a 0-D int tensor the kernel writes, a plugin's size tensor in TensorRT."""
        return tuple(i for i, o in enumerate(self.outputs) if o.kind == "count")

    @property
    def mutated(self) -> Tuple[int, ...]:
        """The tensor inputs the kernel writes in place (their indices)."""
        return tuple(i for i, d in enumerate(self.tensor_decls) if d.mutated)

    @property
    def has_geometry(self) -> bool:
        return bool(self.launches)

    @property
    def tactics(self) -> int:
        """How many launch variants TensorRT may choose from (tactic ids 1..n; eager uses the first)."""
        return max(len(self.launches), 1)

    def launch(self, tactic: int) -> LaunchSig:
        """The geometry of ``tactic`` (0 and 1 are the default; ids past the last clamp to it)."""
        return self.launches[min(max(int(tactic or 1), 1), len(self.launches)) - 1]

    # ----- dtypes: the one place the output-dtype rule is written -----
    # A kernel dtype ``kdt`` is one entry of ``kernel_dtypes``: a torch.dtype for a kernel with one type
    # parameter, a tuple (one dtype per type parameter) for one with several.
    def binding(self, kdt) -> dict:
        """``{type parameter: dtype}`` when the kernel runs at ``kdt``."""
        return dict(zip(self.type_params, kdt)) if len(self.type_params) > 1 else {self.type_params[0]: kdt}

    def type_param_of(self, decl: InputDecl) -> Optional[str]:
        """The type parameter that is ``decl``'s dtype (None: the input has a fixed dtype)."""
        if decl.dtype is None:
            return self.type_params[0]
        return decl.dtype if isinstance(decl.dtype, str) else None

    def in_dtypes(self, kdt) -> List[torch.dtype]:
        """The dtype of each tensor input when the kernel runs at ``kdt``."""
        b = self.binding(kdt)
        return [d.dtype if isinstance(d.dtype, torch.dtype) else b[d.dtype or self.type_params[0]]
                for d in self.tensor_decls]

    def declared_kernel_dtype(self, in_dtypes: Sequence[Optional[torch.dtype]], given_by: str):
        """:meth:`kernel_dtype_of`, or :class:`InputError` naming the op, what gave the dtypes (``given_by``,
        e.g. "TensorRT chose") and the declared combinations."""
        kdt = self.kernel_dtype_of(in_dtypes)
        if kdt is not None:
            return kdt
        from trt_kernels.errors import InputError

        chosen = ", ".join(f"{n}: {_dt.short(dt) if isinstance(dt, torch.dtype) else 'a type torch lacks'}"
                           for n, d, dt in zip(self.tensor_names, self.tensor_decls, in_dtypes)
                           if self.type_param_of(d) is not None)
        declared = "; ".join(_dt.label(k, self.type_params) for k in self.kernel_dtypes)
        raise InputError(f"{self.op_name}: {given_by} input dtypes ({chosen}), which are not a combination the kernel "
                         f"declares ({declared})")

    def kernel_dtype_of(self, in_dtypes: Sequence[Optional[torch.dtype]]):
        """The declared kernel dtype whose tensor inputs have ``in_dtypes``, or None. With one type
        parameter, as eager decides it: the first input typed ``T`` gives it (the first declared dtype when
        no input is)."""
        if len(self.type_params) == 1:
            for d, dt in zip(self.tensor_decls, in_dtypes):
                if self.type_param_of(d) is not None:
                    return dt if dt in self.kernel_dtypes else None
            return self.kernel_dtypes[0]
        want = list(in_dtypes)
        for k in self.kernel_dtypes:
            if self.in_dtypes(k) == want:
                return k
        return None

    def out_dtypes(self, in_dtypes: Sequence[torch.dtype]) -> List[torch.dtype]:
        """The dtype of each output, given the tensor inputs' dtypes."""
        return [o.dtype if o.dtype is not None else in_dtypes[o.dtype_src] for o in self.outputs]

    def io_dtypes(self, kdt: torch.dtype) -> List[torch.dtype]:
        """dtypes of every tensor input, then every output, when the kernel runs at ``kdt``."""
        ins = self.in_dtypes(kdt)
        return ins + self.out_dtypes(ins)

    # ----- the kernel ABI -----
    def params(self, kdt: torch.dtype) -> List[Param]:
        """The kernel's parameter list at ``kdt``, in the kernel's order (:attr:`order`; by default the
        calling convention's ``(tensor input pointers, scalar inputs, extras, output pointers)``, each in
        declaration order)."""
        out = self.convention_params(kdt)
        return [out[i] for i in self.order] if self.order else out

    def convention_params(self, kdt: torch.dtype) -> List[Param]:
        """The parameters in the calling convention's order (what :attr:`order` permutes)."""
        ins = self.in_dtypes(kdt)
        out = [Param("ptr", 8, "Q", f"const {_dt.c_type(dt)}* {d.name}", "input", t)
               for t, (d, dt) in enumerate(zip(self.tensor_decls, ins))]
        for i, s in enumerate(self.scalar_decls):
            st = scalar_c(s)
            kind, size, code, ct = st.kind, st.size, st.code, st.c
            n = scalar_len(s)
            if n is None:
                out.append(Param(kind, size, code, f"{ct} {s.name}", "scalar", i))
            else:  # a tuple: one C scalar per element, in order
                out += [Param(kind, size, code, f"{ct} {s.name}_{k} /* {s.name}[{k}] */", "scalar", i, k)
                        for k in range(n)]
        for i, lbl in enumerate(self.extra_labels):
            st = SIZE_TYPES[self.extra_ctype(i)]
            name = self.extra_names[i] if self.extra_names and self.extra_names[i] else f"extra{i}"
            out.append(Param("int", st.size, st.code, f"{st.c} {name} /* {lbl} */", "extra", i))
        out += [Param("ptr", 8, "Q", f"{_dt.c_type(dt)}* {o.name}", "output", i)
                for i, (o, dt) in enumerate(zip(self.outputs, self.out_dtypes(ins)))]
        return out

    def extra_ctype(self, i: int) -> str:
        """The C type of extra ``i`` (a key of :data:`trt_kernels.dtypes.SIZE_TYPES`)."""
        return self.extra_ctypes[i] if self.extra_ctypes else "int"

    def param_codes(self, kdt: torch.dtype) -> List[str]:
        return [p.code for p in self.params(kdt)]
