"""The TensorRT-RTX tier: NVIDIA's real TensorRT-RTX library (pip tensorrt-rtx, it builds engines on a CPU)
parses models exported with trt_kernels.onnx_export and builds engines holding our IPluginV3One plugins.
Every test under tests/trt/rtx is marked ``tensorrt_rtx`` here; they skip, with the reason, where
tensorrt_rtx or onnx is not installed. ``python -m pytest -m tensorrt_rtx`` runs it."""

import pathlib

import pytest

from support import mark_items_under


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    mark_items_under(pathlib.Path(__file__).parent, items, pytest.mark.tensorrt_rtx)
