"""The launch recipe (issue 29): one value per (dtype, ranks, tactic, arch) that every reader of a launch
walks, so none of them restates the kernel's parameter order.

Each reader is given a recipe whose parameters are in another order than the package's own (outputs
first, as many published kernels have them) and must follow it: the generated Python launcher packs
the values in that order, the native kernel's encoding lists its sources in that order, ``values``
(launch_into) yields them in that order, and the AOT impl's extra arguments refuse an order TensorRT's
AOT launch cannot express. The parameter order is decided in one place: ``Signature.params``."""

import torch

import trt_kernels as ttk
from kernels import sigmoid_spec, unique
from test_fastpath import Recorder, StubKernel
from trt_kernels import recipe, registry
from trt_kernels._record import replace
from trt_kernels.eager import native
from trt_kernels.eager.fastpath import build_launcher


def _declared(spec):
    name = unique()
    ttk.cuda_kernel_op(name, spec)
    return registry.get(name)


def _scaled_spec():
    src = r"""
    extern "C" __global__ void scaled(const float* x, float a, int n, float* y) {
      int i = blockIdx.x * blockDim.x + threadIdx.x;
      if (i < n) y[i] = a * x[i];
    }"""
    return ttk.KernelSpec(kernel_source=src, kernel_name="scaled",
                          inputs=[ttk.InputDecl("x"), ttk.ScalarInput("a", float)],
                          outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                          geometry=ttk.Elementwise(block=(128,)), arch_override="sm_90")


def test_the_recipe_lists_every_parameter_with_where_its_value_comes_from():
    kop = _declared(_scaled_spec())
    r = kop.recipe(torch.float32, (2,))
    assert [(p.role, p.index, p.code) for p in r.params] == [("input", 0, "Q"), ("scalar", 0, "f"), ("extra", 0, "i"),
                                                             ("output", 0, "Q")]
    assert r.codes == tuple(kop.sig.param_codes(torch.float32)) and r.image is not None
    assert r.image.symbol == "scaled" and r.plan.ranks == (2,) and r.out_dtypes == (torch.float32,)
    assert kop.recipe(torch.float32, (2,)) is r  # made once


def _outputs_first(r):
    """The same recipe with the output pointer moved to the front (``y, x, a, n``)."""
    return replace(r, params=(r.params[-1],) + r.params[:-1])


def test_the_python_launcher_packs_in_the_recipe_order():
    kop = _declared(_scaled_spec())
    r = _outputs_first(recipe.make(kop.sig, torch.float32, kop.plan((1,)), None))
    holder = {}
    fn = build_launcher(kop, r, StubKernel(), launch=lambda *a: holder["rec"](*a), stream=lambda dev: 3)
    holder["rec"] = rec = Recorder(fn.pack)
    x = torch.randn(300)
    y = fn(x, 2.5)
    assert rec.calls[-1]["vals"] == [y.data_ptr(), x.data_ptr(), 2.5, 300]
    assert fn.pack.codes == ("Q", "Q", "f", "i") and fn.recipe is r


def test_values_follow_the_recipe_order():
    kop = _declared(_scaled_spec())
    r = _outputs_first(kop.recipe(torch.float32, (1,)))
    x, y = torch.randn(3), torch.empty(3)
    assert r.values([x], [1.5], [3], [y]) == [y.data_ptr(), x.data_ptr(), 1.5, 3]


def test_the_native_encoding_follows_the_recipe_order():
    kop = _declared(_scaled_spec())
    r = kop.recipe(torch.float32, (1,))

    class Mod:  # the native module's dtype table, as the CPU torch has it
        @staticmethod
        def dtype_code(lib, name):
            return 6

    plain = native.encode(r, Mod)["params"]
    moved = native.encode(_outputs_first(r), Mod)["params"]
    assert [(c, s) for c, s, _ in plain] == [("Q", native.SRC_TENSOR), ("f", native.SRC_SCALAR),
                                              ("i", native.SRC_REG), ("Q", native.SRC_OUTPUT)]
    assert moved == [plain[-1]] + plain[:-1]


def test_the_aot_extra_arguments_are_the_arguments_between_pointers_in_the_kernels_order():
    kop = _declared(_scaled_spec())
    r = kop.recipe(torch.float32, (1,))
    assert r.aot_extras(lambda s, k: ("scalar", s, k), lambda j: ("extra", j)) == [("scalar", 0, 0), ("extra", 0)]
    moved = _outputs_first(r)  # (y, x, alpha, n): TensorRT still passes (x, alpha, n, y)
    assert moved.aot_extras(lambda s, k: ("scalar", s, k), lambda j: ("extra", j)) == [("scalar", 0, 0), ("extra", 0)]
    assert recipe.tensorrt_order(moved.params) == [1, 2, 3, 0]
    assert recipe.tensorrt_order(r.params) == [0, 1, 2, 3] and recipe.tensorrt_narrowed(r.params) == {}


def test_a_tuple_scalar_is_one_parameter_per_element():
    src = r"""
    extern "C" __global__ void padk(const float* x, int p0, int p1, int n, float* y) {}"""
    kop = _declared(ttk.KernelSpec(kernel_source=src, kernel_name="padk",
                                   inputs=[ttk.InputDecl("x"), ttk.ScalarInput("pads", (int, 2))],
                                   outputs=[ttk.OutputDecl("y", shape=ttk.SameAs("x"))], extras=[ttk.Numel("x")],
                                   geometry=ttk.Elementwise(block=(128,)), arch_override="sm_90"))
    r = kop.recipe(torch.float32, (1,))
    assert [(p.role, p.index, p.element) for p in r.params[1:3]] == [("scalar", 0, 0), ("scalar", 0, 1)]
    x, y = torch.randn(2), torch.empty(2)
    assert r.values([x], [(4, 7)], [2], [y])[1:3] == [4, 7]


def test_every_seed_spec_has_one_recipe_per_dtype_and_ranks():
    kop = _declared(sigmoid_spec())
    for dt in kop.dtypes:
        r = kop.recipe(dt, (2,), 1, "sm_90")
        assert [p.role for p in r.params] == ["input", "extra", "output"] and r.in_dtypes == (dt,)
