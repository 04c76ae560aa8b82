"""Outputs whose size the kernel writes (``ttk.Written``) through the ONNX route into TensorRT-RTX's real builder,
on the CPU: the plugin declares each size as a 0-D size tensor (``IExprBuilder::declareSizeTensor``), the real
builder accepts it and makes an engine, and the network's outputs have -1 in the written axis (rtx_written_child.py
runs it in a child process; see test_rtx_builder.py)."""

import pytest
from test_rtx_builder import missing

pytestmark = pytest.mark.skipif(bool(missing), reason=f"{' and '.join(missing)} not installed "
                                "(pip install 'trt-kernels[rtx]')")

# kernel -> (each returned output's shape with -1 where the kernel writes the size, the size tensor's type)
EXPECTED = {"nonzero_scan": ([[-1, 2]], "DataType.INT32"), "score_filter": ([[-1, 4], [-1]], "DataType.INT64")}


@pytest.fixture(scope="module")
def built(rtx_children):
    return rtx_children.result("written")  # conftest.py starts the child with the tier's others


@pytest.mark.parametrize("mode", ["static", "dynamic"])
@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_a_size_the_kernel_writes_builds_as_a_size_tensor_in_a_real_engine(built, kernel, mode):
    r = built["kernels"][f"{kernel}/{mode}"]
    assert r["parsed"] and r["errors"] == [], r
    assert r["engine_bytes"], r.get("build_errors")
    shapes, size_type = EXPECTED[kernel]
    assert r["outputs"] == shapes  # the network's outputs: the op's, the written axis data-dependent
    plugin = r["plugin_outputs"]
    assert [s for _, s, _ in plugin] == shapes + [[]]  # then the size tensor, 0-D, unused by the graph
    assert plugin[-1][2] == size_type
