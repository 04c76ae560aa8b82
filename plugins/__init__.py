"""The TensorRT QDP side (imports tensorrt.plugin); filled by the TensorRT issue."""
