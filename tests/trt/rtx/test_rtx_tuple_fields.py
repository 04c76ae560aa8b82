"""The ONNX route's IPluginV3One creator and plugin with a tuple input and a default, against
TensorRT-RTX's real plugin classes (no ONNX parsing, so in this process): a tuple is one field of its
length, read back as a tuple; a field the node leaves out takes the input's default."""

import importlib.util

import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("tensorrt_rtx") is None,
                                reason="tensorrt_rtx not installed (pip install 'trt-kernels[rtx]')")


def test_tuple_field_and_default(monkeypatch):
    import numpy as np
    import tensorrt_rtx as trt

    import trt_kernels as ttk
    from kernels import unique
    from support import load_example
    from trt_kernels import registry
    from trt_kernels.plugins import v3one

    monkeypatch.setenv("TRT_KERNELS_ARCH", "sm_90")
    ex = load_example("circular_pad")
    pad, rms = unique("ttk_rtx_tuple"), unique("ttk_rtx_tuple")
    ttk.cuda_kernel_op(pad, ex.circular_pad_spec())
    ttk.cuda_kernel_op(rms, ex.rms_norm_spec())
    _, creator_cls = v3one._classes(trt)
    creator = creator_cls(registry.get(pad))
    assert [(f.name, f.type) for f in creator.field_names] == [("pads", trt.PluginFieldType.INT32)]

    def fields(**kw):
        return trt.PluginFieldCollection([trt.PluginField(k, np.array(v, dtype=np.int32), trt.PluginFieldType.INT32)
                                          for k, v in kw.items()])

    plugin = creator.create_plugin("n", fields(pads=[1, 2, 3, 4]), trt.TensorRTPhase.BUILD)
    assert plugin.scalars == {"pads": (1, 2, 3, 4)}
    (f,) = plugin.get_fields_to_serialize()
    assert f.name == "pads" and np.asarray(f.data).tolist() == [1, 2, 3, 4]
    with pytest.raises(ttk.InputError, match=r"plugin field 'pads' is missing or not 4 values"):
        creator.create_plugin("n", fields(pads=[1, 2]), trt.TensorRTPhase.BUILD)
    plugin = creator_cls(registry.get(rms)).create_plugin("n", trt.PluginFieldCollection([]), trt.TensorRTPhase.BUILD)
    assert plugin.scalars == {"eps": 1e-6}  # the node left eps out: its default
