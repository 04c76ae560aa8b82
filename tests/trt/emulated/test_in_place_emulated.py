"""Ops that write inputs in place (the gallery's AdamW step and KV-cache write) in real Torch-TensorRT over
trt_kernels.testing's emulated libnvinfer (marker ``trt_emulated``).

torch.export turns the call into ``auto_functionalized_v2``; our converter puts the op's plugin in the engine
(no fallback of the op to PyTorch); the plugin, a JIT plugin, outputs each written input's new value in a
buffer of its own (copy, then the kernel in place there: TensorRT's plugin inputs are read-only, and the
emulator checks that), and what the model returns and what PyTorch copies back into the caller's tensors
(torch.export's input mutations) match the eager op and the torch reference. Emulated is not TensorRT: see
tests/trt/emulated/test_trt_emulated.py."""

import pytest
import torch

import emulated as emu
from kernels import unique
from support import load_example
from trt_kernels import registry

gallery = load_example("gallery/declare")


class InPlaceModule(torch.nn.Module):
    """The op on the module's tensor inputs (scalars fixed), returning what it wrote."""

    def __init__(self, op, args, written):
        super().__init__()
        self.op, self.written = op, written
        self.template = [None if isinstance(a, torch.Tensor) else a for a in args]

    def step(self, tensors):
        it = iter(tensors)
        args = [next(it) if a is None else a for a in self.template]
        self.op(*args)
        return tuple(args[i] for i in self.written)


class _Four(InPlaceModule):
    def forward(self, t0, t1, t2, t3):
        return self.step((t0, t1, t2, t3))


class _Five(InPlaceModule):
    def forward(self, t0, t1, t2, t3, t4):
        return self.step((t0, t1, t2, t3, t4))


def module(op, kernel, args):
    n = sum(isinstance(a, torch.Tensor) for a in args)
    return {4: _Four, 5: _Five}[n](op, args, kernel.written)


def _tensors(args):
    return [a for a in args if isinstance(a, torch.Tensor)]


@pytest.fixture(scope="module")
def ops(tt):
    declared = {}
    for k in gallery.IN_PLACE.values():
        name = unique("ttk_inplace_emu")
        declared[k.name] = (name, k.declare(name=name))
    return declared


@pytest.mark.parametrize("kernel", [pytest.param(k, id=k.name) for k in gallery.IN_PLACE.values()])
def test_in_place_op_runs_inside_the_engine(tt, ops, kernel):
    name, op = ops[kernel.name]
    kop = registry.get(name)
    assert "auto_functionalized_v2" in kop.tensorrt.converter and not kop.aot.aot
    args = kernel.inputs("cuda", 300)
    model = module(op, kernel, args)
    trt_model = emu.compile_trt(tt, model, [t.clone() for t in _tensors(args)])
    targets = [str(n.target) for _, m in trt_model.named_modules() if isinstance(m, torch.fx.GraphModule)
               for n in m.graph.nodes if n.op == "call_function"]
    assert not [t for t in targets if "auto_functionalized" in t or name.split("::")[0] in t], targets
    layers = [(layer["plugin"], layer["kind"], layer["aliased"]) for layer in emu.layers(trt_model)
              if "plugin" in layer]
    assert layers == [(name, "jit_plugin", {})], layers
    for size in (300, 300):  # the same engine twice, on fresh inputs each time
        fresh = kernel.inputs("cuda", size)
        tensors = _tensors(fresh)
        untouched = [t.clone() for i, t in enumerate(tensors) if i not in kernel.written]
        want = kernel.reference(*[a.clone() if isinstance(a, torch.Tensor) else a for a in fresh])
        with torch.no_grad():
            got = trt_model(*tensors)
        torch.cuda.synchronize()
        for g, w, i in zip(got, want, kernel.written):
            torch.testing.assert_close(g, w, atol=1e-5, rtol=1e-5)
            # torch.export's input mutation: the caller's tensor holds the new value too
            torch.testing.assert_close(tensors[i], w, atol=1e-5, rtol=1e-5)
        for t, u in zip([t for i, t in enumerate(tensors) if i not in kernel.written], untouched):
            assert torch.equal(t, u)


@pytest.mark.parametrize("kernel", [pytest.param(k, id=k.name) for k in gallery.IN_PLACE.values()])
def test_in_place_op_matches_eager_bit_for_bit(tt, ops, kernel):
    name, op = ops[kernel.name]
    args = kernel.inputs("cuda", 257)
    model = module(op, kernel, args)
    trt_model = emu.compile_trt(tt, model, [t.clone() for t in _tensors(args)])
    engine_in = [t.clone() for t in _tensors(args)]
    eager_in = [t.clone() for t in _tensors(args)]
    with torch.no_grad():
        got = trt_model(*engine_in)
        want = model(*eager_in)
    torch.cuda.synchronize()
    for g, w in zip(got, want):
        assert torch.equal(g, w)
