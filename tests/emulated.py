"""Helpers shared by the emulated Torch-TensorRT tier's tests (marker ``trt_emulated``)."""

import torch


def compile_trt(tt, model, inputs, **kw):
    """``torch_tensorrt.compile(..., min_block_size=1)`` of ``model`` over the emulator ``tt``."""
    kw.setdefault("enabled_precisions", {torch.float32})
    return tt[1].compile(model.cuda().eval(), ir="dynamo", inputs=list(inputs), min_block_size=1, **kw)


def engines(gm):
    """The emulated engines of every TensorRT submodule of a compiled module."""
    mods = [m for _, m in gm.named_modules() if type(m).__name__ == "PythonTorchTensorRTModule"]
    return [m.engine for m in mods]


def layers(gm):
    """Every layer record of those engines, in order."""
    return [layer for eng in engines(gm) for layer in eng._plan["layers"]]
