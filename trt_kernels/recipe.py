"""One launch of an op's kernel, as data: the :class:`LaunchRecipe`.

:meth:`trt_kernels.op.KernelOp.recipe` makes one per (kernel dtype, input ranks, tactic, arch), once: the
kernel image, the kernel's parameters in the kernel's own order (each with where its value comes from,
:class:`~trt_kernels.signature.Param`), the plan (output allocations, size expressions and checks, grid,
block, shared memory; :attr:`LaunchRecipe.eager` is the same with each expression in the one form eager
readers evaluate, :func:`trt_kernels.expr.lower`) and the pointers the compiler appended (scratch). Its
readers:

- the generated Python launcher (:func:`trt_kernels.eager.fastpath.launcher_parts`), which writes the
  parameters out as Python;
- the native kernel (:func:`trt_kernels.eager.native.encode`), which encodes them as data;
- :func:`trt_kernels.eager.cuda_kernel.launch_into` (TensorRT's JIT plugin, the replays), through :meth:`values`;
- the TensorRT plugins' AOT impl, through :meth:`aot_extras`.

None of them restates the parameter order or an expression's form: they walk :attr:`params`. A new kind
of parameter is a new ``role`` here and a case in each reader.

**Specialization** (Triton's, at each launch): a source may compile its kernel assuming facts about one call's
values, as ``kernel[grid]`` does: a pointer or an int that is a multiple of 16 (Triton's ``tt.divisibility``),
an int that is exactly 1 (folded into the code: the parameter leaves the kernel's ``.entry``). The source says
which parameters it specializes and how (:attr:`LaunchRecipe.spec`, from ``KernelSource.specialization``); a
call's facts are one small int, its *key* (:func:`spec_key`), the same bits in every reader (the Python
launcher writes them as Python, the native kernel computes them in C++); :func:`spec_facts` reads a key back.
Every launch picks the code compiled for its own key, so an unaligned view gets code that assumes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple

from trt_kernels._record import Frozen, plain_record
from trt_kernels.dtypes import AOT_INT_RANGES, SIZE_TYPES

if TYPE_CHECKING:
    from trt_kernels.plan import LaunchPlan
    from trt_kernels.signature import Param, Signature
    from trt_kernels.sources.kernel_source import KernelImage

#: where a parameter's value comes from (``Param.role``), each a case of every reader
ROLES = ("input", "scalar", "extra", "output")

#: what a launch may tell the compiler about a parameter's value (flags of a ``spec`` entry, bits of a key)
ALIGNED = 1  # a multiple of 16: a pointer 16-byte aligned, an int divisible by 16 (Triton's "D")
ONE = 2  # an int equal to exactly 1 (Triton makes it a constant; the parameter leaves the kernel)
FACT_BITS = 16  # the alignment the ALIGNED fact tests, in bytes (pointers) or units (ints)


@plain_record
class LaunchRecipe(Frozen):
    """Everything one launch of an op's kernel needs, made once per (dtype, ranks, tactic, arch)."""

    op_name: str
    kdt: Any  # the kernel dtype (a tuple of dtypes for a kernel with several type parameters)
    in_dtypes: Tuple[Any, ...]  # each tensor input's dtype
    out_dtypes: Tuple[Any, ...]  # each output's dtype
    plan: LaunchPlan  # as built (the fake impl, TensorRT and error messages read it)
    params: Tuple[Param, ...]  # the kernel's declared parameters, in the kernel's order
    image: Optional[KernelImage]  # the code for this dtype and tactic, built for the arch
    scratch: Tuple[Tuple[int, int], ...] = ()  # (bytes per block, alignment) of each pointer appended after them
    eager: Optional[LaunchPlan] = None  # the plan as eager launches evaluate it (LaunchPlan.lowered)
    # (parameter position, ALIGNED | ONE) of each parameter the source compiles per call's facts, in order;
    # empty: one code for every call (CUDA C++, PTX), and no key is computed
    spec: Tuple[Tuple[int, int], ...] = ()

    def __init__(self, op_name: str, kdt: Any, in_dtypes: Tuple[Any, ...], out_dtypes: Tuple[Any, ...],
                 plan: LaunchPlan, params: Tuple[Param, ...], image: Optional[KernelImage],
                 scratch: Tuple[Tuple[int, int], ...] = (), eager: Optional[LaunchPlan] = None,
                 spec: Tuple[Tuple[int, int], ...] = ()) -> None:
        self.__dict__.update(op_name=op_name, kdt=kdt, in_dtypes=in_dtypes, out_dtypes=out_dtypes, plan=plan,
                             params=params, image=image, scratch=scratch,
                             eager=plan.lowered() if eager is None else eager, spec=tuple(spec))

    @property
    def codes(self) -> Tuple[str, ...]:
        """The struct code of each declared parameter, in order."""
        return tuple(p.code for p in self.params)

    @property
    def needs_scratch(self) -> bool:
        """Whether a launch allocates a scratch buffer (else the appended pointers are NULL)."""
        return any(size > 0 for size, _ in self.scratch)

    def values(self, tensors: Sequence[Any], scalars: Sequence[Any], extras: Sequence[int], outs: Sequence[Any]
               ) -> List[Any]:
        """The declared parameters' values for one launch, in the kernel's order: ``tensors`` and ``outs``
        as tensors (their data pointers), ``scalars`` the scalar inputs' values (a tuple input's
        elements taken in order), ``extras`` the evaluated size expressions."""
        return [_value(p, tensors, scalars, extras, outs) for p in self.params]

    def aot_extras(self, scalar_arg: Callable[[int, int], Any], extra_arg: Callable[[int], Any]) -> List[Any]:
        """The arguments TensorRT's AOT launch passes between the input and the output pointers (its
        ``extra_args``), in the order of :func:`tensorrt_order`: ``scalar_arg(scalar index, element)`` for a
        scalar, ``extra_arg(extra index)`` for a size."""
        order = tensorrt_order(self.params)
        return [scalar_arg(p.index, p.element or 0) if p.role == "scalar" else extra_arg(p.index)
                for p in (self.params[i] for i in order) if p.role in ("scalar", "extra")]

    def key(self, values: Sequence[Any]) -> int:
        """The specialization key of a launch with these parameter ``values`` (:meth:`values`)."""
        return spec_key(self.spec, values)

    def aot_key(self, scalars: Sequence[Any] = (), extras: Sequence[Optional[int]] = ()) -> int:
        """The key TensorRT's AOT launch may compile for, valid for every launch of the engine: each pointer
        ALIGNED (TensorRT hands plugins 256-byte aligned tensors: ``setTensorAddress`` requires it of the
        engine's inputs and outputs, and TensorRT allocates the others so), an int ALIGNED only where its value
        is known at build time as a multiple of 16: a scalar (``scalars``: each scalar input's value, baked into
        the engine), a size whose value ``extras`` gives (None: it varies with the engine's shapes); never ONE
        (the parameter would leave the ``.entry`` TensorRT passes its extra arguments to)."""
        return aot_key(self.spec, self.params, scalars, extras)

    def describe(self) -> str:
        return f"{self.plan.describe()}; params ({', '.join(p.label for p in self.params)})"


def make(sig: Signature, kdt: Any, plan: LaunchPlan, image: Optional[KernelImage],
         scratch: Optional[Tuple[Tuple[int, int], ...]] = None,
         spec: Tuple[Tuple[int, int], ...] = ()) -> LaunchRecipe:
    """The recipe of ``sig``'s kernel at ``kdt`` for ``plan`` (its ranks and tactic) with ``image`` (None: no
    code at hand, as in tests of the readers). ``scratch``: the appended pointers (default: the image's);
    ``spec``: what the source specializes per call (``KernelSource.specialization``)."""
    ins = tuple(sig.in_dtypes(kdt))
    if scratch is None:
        scratch = image.scratch if image is not None else ()
    return LaunchRecipe(sig.op_name, kdt, ins, tuple(sig.out_dtypes(ins)), plan, tuple(sig.params(kdt)), image,
                        tuple(scratch), spec=spec)


# ---------------- specialization keys ----------------


def spec_key(spec: Sequence[Tuple[int, int]], values: Sequence[Any]) -> int:
    """One call's key: for each ``(position, flags)`` of ``spec`` in order, one bit per flag, lowest first:
    ALIGNED set where ``values[position] % 16 == 0`` (a pointer or an int), ONE set where it is exactly 1.
    The Python launcher (:func:`trt_kernels.eager.fastpath.key_source`) and the native kernel compute the same
    bits; this is their definition."""
    facts = []
    for pos, flags in spec:
        v = int(values[pos])
        facts.append((ALIGNED if flags & ALIGNED and v & (FACT_BITS - 1) == 0 else 0)
                     | (ONE if flags & ONE and v == 1 else 0))
    return _key_of(spec, facts)


def aot_key(spec: Sequence[Tuple[int, int]], params: Sequence[Param], scalars: Sequence[Any] = (),
            extras: Sequence[Optional[int]] = ()) -> int:
    """:meth:`LaunchRecipe.aot_key` of a kernel's ``spec`` and ``params`` (by default no int is known, so only
    the pointers are ALIGNED)."""
    facts = []
    for pos, flags in spec:
        p = params[pos]
        v = None
        if p.role == "scalar" and p.index < len(scalars):
            v = scalars[p.index] if p.element is None else scalars[p.index][p.element]
        elif p.role == "extra" and p.index < len(extras):
            v = extras[p.index]
        aligned = p.kind == "ptr" or (v is not None and int(v) % FACT_BITS == 0)
        facts.append(flags & ALIGNED if aligned else 0)
    return _key_of(spec, facts)


def _key_of(spec: Sequence[Tuple[int, int]], facts: Sequence[int]) -> int:
    key, bit = 0, 0
    for (_, flags), fact in zip(spec, facts):
        for flag in (ALIGNED, ONE):
            if flags & flag:
                key |= (1 << bit) if fact & flag else 0
                bit += 1
    return key


def spec_facts(spec: Sequence[Tuple[int, int]], key: int) -> Tuple[frozenset, frozenset]:
    """``(ALIGNED positions, ONE positions)`` a key says (the inverse of :func:`spec_key`)."""
    aligned, ones, bit = set(), set(), 0
    for pos, flags in spec:
        for flag, into in ((ALIGNED, aligned), (ONE, ones)):
            if flags & flag:
                if key >> bit & 1:
                    into.add(pos)
                bit += 1
    return frozenset(aligned), frozenset(ones)


def spec_bits(spec: Sequence[Tuple[int, int]]) -> int:
    """How many bits a key of ``spec`` has."""
    return sum(bool(flags & ALIGNED) + bool(flags & ONE) for _, flags in spec)


def tensorrt_order(params: Sequence[Param]) -> List[int]:
    """The kernel's parameters (their positions) in the order TensorRT's AOT launch passes them: the input
    pointers by input index, the other arguments in the kernel's order, the output pointers by output index."""
    pos = range(len(params))
    return (sorted((i for i in pos if params[i].role == "input"), key=lambda i: params[i].index)
            + [i for i in pos if params[i].role not in ("input", "output")]
            + sorted((i for i in pos if params[i].role == "output"), key=lambda i: params[i].index))


def tensorrt_narrowed(params: Sequence[Param]) -> Dict[int, bool]:
    """The 64-bit integer parameters (position -> signed) that TensorRT's AOT launch passes as 32-bit
    extra args (``SymInt32``): sizes, whose values TensorRT computes as 32-bit ints, and 64-bit int
    scalars, whose values are baked in where they fit 32 bits (:func:`aot_int`; elsewhere the layer is JIT)."""
    return {i: p.code.islower() for i, p in enumerate(params)
            if p.size == 8 and (p.role == "extra" or (p.role == "scalar" and p.kind == "int"))}


def aot_int(code: str, value: int) -> Optional[int]:
    """The ``SymInt32`` value that passes the int ``value`` to a kernel parameter of struct ``code`` in
    TensorRT's AOT launch (its 32 bits as a signed int; a 64-bit parameter is narrowed to 32 bits of its
    signedness and widened where the kernel loads it), or None where 32 bits cannot carry it exactly."""
    lo, hi = AOT_INT_RANGES[code]
    if not lo <= value <= hi:
        return None
    return value - 2**32 if value >= 2**31 else value


def aot_scalar_refusal(sig: Signature, values: Dict[str, Any]) -> Optional[str]:
    """Why TensorRT's AOT launch cannot take the scalar inputs' ``values`` (name -> value, a tuple's as a
    tuple) exactly, or None: a 64-bit int scalar whose value does not fit the 32 bits of TensorRT's extra
    arguments (``SymInt32``), or a 64-bit size computed from scalars alone (``SizeArg("n", Scalar("k") * 2,
    "long long")``) whose value does not. The layer then takes the JIT impl, which launches the exact value."""
    from trt_kernels.expr import Const, ScalarOf, SizesEvaluator, evaluate, leaves
    from trt_kernels.signature import scalar_c, scalar_items

    for d in sig.scalar_decls:
        st = scalar_c(d)
        if st.kind != "int" or st.size != 8 or d.name not in values:
            continue
        for k, v in enumerate(scalar_items(d, values[d.name])):
            if aot_int(st.code, int(v)) is None:
                label = repr(d.name) if d.py_type is int else f"{d.name!r}[{k}]"
                lo, hi = AOT_INT_RANGES[st.code]
                return (f"scalar {label} = {v} is a 64-bit {st.c} whose value is outside [{lo}, {hi}]: TensorRT's AOT "
                        "launch passes scalars as 32-bit extra arguments (SymInt32), so the JIT impl, which launches "
                        "the exact value, runs the layer instead (the engine then needs trt_kernels imported to run)")
    by_index = [values.get(d.name) for d in sig.scalar_decls]
    for i, e in enumerate(sig.extras):  # a size that reads a tensor's shape is TensorRT's to compute
        st = SIZE_TYPES[sig.extra_ctype(i)]
        reads = list(leaves(e))
        if st.size != 8 or not any(isinstance(x, ScalarOf) for x in reads):
            continue
        if not all(isinstance(x, Const) or (isinstance(x, ScalarOf) and by_index[x.scalar] is not None)
                   for x in reads):
            continue
        try:
            v = int(evaluate(e, SizesEvaluator((), by_index)))
        except (ZeroDivisionError, TypeError, IndexError):
            continue  # the launch reports it
        if aot_int(st.code, v) is None:
            lo, hi = AOT_INT_RANGES[st.code]
            return (f"extras[{i}] ({sig.extra_labels[i]}) = {v}, a 64-bit {st.c} computed from scalars, is outside "
                    f"[{lo}, {hi}]: TensorRT's AOT launch passes sizes as 32-bit extra arguments (SymInt32), so the "
                    "JIT impl, which launches the exact value, runs the layer instead (the engine then needs "
                    "trt_kernels imported to run)")
    return None


def _value(p: Param, tensors, scalars, extras, outs) -> Any:
    if p.role == "input":
        return tensors[p.index].data_ptr()
    if p.role == "scalar":
        v = scalars[p.index]
        return v if p.element is None else v[p.element]
    if p.role == "extra":
        return extras[p.index]
    if p.role == "output":
        return outs[p.index].data_ptr()
    raise ValueError(f"unknown parameter role {p.role!r}")


__all__ = ("ALIGNED", "FACT_BITS", "LaunchRecipe", "ONE", "ROLES", "aot_int", "aot_key", "aot_scalar_refusal", "make",
           "spec_bits", "spec_facts", "spec_key", "tensorrt_narrowed", "tensorrt_order")
