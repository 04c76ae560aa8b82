"""The gallery's kernels (examples/gallery) through the ONNX route into TensorRT-RTX's real builder, on the CPU:
the exported model parses, the builder makes an engine holding our plugins, and the network's output shapes are
the ops' (rtx_gallery_child.py runs it, all the kernels in one model, each alone where that fails; see
test_rtx_builder.py for the child process)."""

import pytest
from test_rtx_builder import missing

pytestmark = pytest.mark.skipif(bool(missing), reason=f"{' and '.join(missing)} not installed "
                                "(pip install 'trt-kernels[rtx]')")


@pytest.fixture(scope="module")
def built(rtx_children):
    return rtx_children.result("gallery")  # conftest.py starts the child with the tier's others


def test_every_gallery_kernel_builds_into_a_real_engine(built):
    kernels = built["kernels"]
    assert len(kernels) >= 9
    failed = {k: r.get("errors") for k, r in kernels.items() if not (r.get("parsed") and r.get("engine_bytes"))}
    assert failed == {}, failed
    for k, r in kernels.items():
        assert r["outputs"] == r["expected_outputs"], (k, r["outputs"], r["expected_outputs"])


def test_the_gallery_s_plugins_build_together_into_one_engine(built):
    """The child's one model with every gallery op: each op's outputs where the op says (the test above then
    checked them from that one engine); a failure here while each kernel builds alone is the plugins' interplay."""
    assert all(r["together"] for r in built["kernels"].values()), built.get("together_errors")
