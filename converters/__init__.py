"""The Torch-TensorRT side (imports torch_tensorrt); filled by the TensorRT issue."""
