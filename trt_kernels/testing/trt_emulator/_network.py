"""The network definition: ``INetworkDefinition`` and its ``add_*`` methods, and the QDP plugin layer.

Layer kinds emulated: network inputs, QDP plugin layers (``add_plugin``, AOT or JIT, here), and
TensorRT's standard layers (``_layers``: elementwise, unary, activation, select, cast, identity,
constant, shuffle, shape, unsqueeze, gather, concatenation, slice, matrix multiply, softmax, reduce,
convolution, pooling, scale, normalization). Every other ``add_*`` is an ``AttributeError`` naming it. A tensor's type
and shape are inferred as TensorRT infers them (``_tensor.Shapes``); a layer TensorRT would refuse makes
the question fail, reported through the builder's logger, and fails the build.
"""

import itertools
from typing import List, Optional

from ._dims import DimsExprs, IDimensionExpr, IExprBuilder, bind_size_tensors, foreign
from ._enums import (
    ActivationType,
    DataType,
    ElementWiseOperation,
    LayerType,
    MatrixOperation,
    NetworkDefinitionCreationFlag,
    PoolingType,
    QuickPluginCreationRequest,
    ReduceOperation,
    ScaleMode,
    Severity,
    UnaryOperation,
)
from ._layers import (
    IActivationLayer,
    ICastLayer,
    IConcatenationLayer,
    IConstantLayer,
    IConvolutionLayer,
    IElementWiseLayer,
    IGatherLayer,
    IIdentityLayer,
    IMatrixMultiplyLayer,
    INormalizationLayer,
    IPoolingLayer,
    IReduceLayer,
    IScaleLayer,
    ISelectLayer,
    IShapeLayer,
    IShuffleLayer,
    ISliceLayer,
    ISoftMaxLayer,
    IUnaryLayer,
    IUnsqueezeLayer,
    constant_problem,
)
from ._logging import report
from ._strict import Strict, unpicklable
from ._tensor import ILayer, Info, ITensor, LayerError, Shapes, Weights, as_weights, dim_symbol


class IPluginV3Layer(ILayer):
    _TYPE = LayerType.PLUGIN_V3
    _KIND = "PluginV3"

    def __init__(self, network, inputs, plugin, request):
        super().__init__(network, inputs)
        self._plugin, self._request = plugin, request
        types = plugin.get_output_data_types([t.dtype for t in inputs], [len(t.shape) for t in inputs])
        in_exprs = [network._exprs_of(t) for t in inputs]
        out_exprs = plugin.get_output_shapes(in_exprs, [], network._expr_builder)
        for exprs in out_exprs:
            for e in exprs:
                why = "" if not isinstance(e, IDimensionExpr) else foreign(e, network._expr_builder)
                if not isinstance(e, IDimensionExpr) or why:
                    raise ValueError(f"add_plugin: output shape {e!r}: {why or 'not a dimension expression'}")
        for dt, exprs in zip(types, out_exprs):
            self._add_output(dt, [e.get_constant_value() if e.is_constant() else -1 for e in exprs])
        for t, exprs in zip(self._outputs, out_exprs):
            # a size tensor (a data-dependent extent) is tied to the output holding it: two plugins' size
            # tensors of the same output index are different extents
            t._exprs = DimsExprs(bind_size_tensors(exprs, self._outputs))

    @property
    def plugin(self):
        return self._plugin


_network_ids = itertools.count()


def _enum_arg(method: str, what: str, value, cls):
    if not isinstance(value, cls):
        raise TypeError(f"{method}(): {what} must be a tensorrt.{cls.__name__}, got {value!r}")
    return value


@unpicklable
class INetworkDefinition(Strict):
    def __init__(self, flags: int = 0, logger=None):
        self._flags = int(flags)
        self._logger = logger  # the builder's, for errors TensorRT reports while the network is defined
        self._inputs: List[ITensor] = []
        self._outputs: List[ITensor] = []
        self._layers: List[ILayer] = []
        self._expr_builder = IExprBuilder()
        self._expr_builder._logger = logger
        self._shapes = Shapes(self, self._expr_builder, self._leaf)
        self.name = f"Unnamed Network {next(_network_ids)}"

    # ----- flags -----
    @property
    def flags(self) -> int:
        return self._flags

    def get_flag(self, flag) -> bool:
        return bool(self._flags & (1 << int(flag)))

    # ----- inputs / outputs -----
    def add_input(self, name: str, dtype, shape) -> ITensor:
        if not isinstance(dtype, DataType):
            raise TypeError(f"add_input: dtype must be a tensorrt.DataType, got {dtype!r}")
        if any(t.name == name for t in self._inputs):
            raise ValueError(f"add_input: the network already has an input named {name!r}")
        t = ITensor(self, str(name), dtype, shape)
        self._inputs.append(t)
        return t

    def mark_output(self, tensor: ITensor) -> None:
        self._check_tensor(tensor, "mark_output")
        if not any(t is tensor for t in self._outputs):
            self._outputs.append(tensor)

    def unmark_output(self, tensor: ITensor) -> None:
        self._outputs = [t for t in self._outputs if t is not tensor]

    @property
    def num_inputs(self) -> int:
        return len(self._inputs)

    @property
    def num_outputs(self) -> int:
        return len(self._outputs)

    @property
    def num_layers(self) -> int:
        return len(self._layers)

    def get_input(self, index: int) -> ITensor:
        return self._inputs[index]

    def get_output(self, index: int) -> ITensor:
        return self._outputs[index]

    def get_layer(self, index: int) -> ILayer:
        return self._layers[index]

    def __getitem__(self, index: int) -> ILayer:
        return self._layers[index]

    def __len__(self) -> int:
        return len(self._layers)

    # ----- layers -----
    def add_plugin(self, tuple, aot: Optional[bool] = None) -> IPluginV3Layer:  # noqa: A002 (the binding's name)
        """A QDP plugin layer: ``tuple`` is ``trtp.op.ns.name(*itensors, **attrs)`` (a callable taking the
        plugin creation request) or the ``(inputs, shape_inputs, plugin)`` it returns."""
        request = self._request(aot)
        created = tuple(request) if callable(tuple) else tuple
        inputs, shape_inputs, plugin = created
        if shape_inputs:
            raise NotImplementedError("shape inputs are not supported for QDP plugins")
        for t in inputs:
            self._check_tensor(t, "add_plugin")
        return self._append(IPluginV3Layer(self, inputs, plugin, request))

    def add_cast(self, input: ITensor, to_type) -> ICastLayer:  # noqa: A002
        self._check_tensor(input, "add_cast")
        return self._append(ICastLayer(self, input, _enum_arg("add_cast", "to_type", to_type, DataType)))

    def add_identity(self, input: ITensor) -> IIdentityLayer:  # noqa: A002
        self._check_tensor(input, "add_identity")
        return self._append(IIdentityLayer(self, input))

    def add_constant(self, shape, weights: Weights) -> IConstantLayer:
        weights = as_weights(weights, "add_constant(): weights")
        shape = [int(s) for s in shape]
        problem = constant_problem(shape, weights)
        if problem:
            return self._refuse("INetworkDefinition::addConstant", problem)
        return self._append(IConstantLayer(self, shape, weights))

    def add_elementwise(self, input1: ITensor, input2: ITensor, op) -> IElementWiseLayer:
        self._check_tensor(input1, "add_elementwise")
        self._check_tensor(input2, "add_elementwise")
        return self._append(IElementWiseLayer(self, input1, input2,
                                              _enum_arg("add_elementwise", "op", op, ElementWiseOperation)))

    def add_unary(self, input: ITensor, op) -> IUnaryLayer:  # noqa: A002
        self._check_tensor(input, "add_unary")
        return self._append(IUnaryLayer(self, input, _enum_arg("add_unary", "op", op, UnaryOperation)))

    def add_activation(self, input: ITensor, type) -> IActivationLayer:  # noqa: A002
        self._check_tensor(input, "add_activation")
        return self._append(IActivationLayer(self, input, _enum_arg("add_activation", "type", type, ActivationType)))

    def add_select(self, condition: ITensor, then_input: ITensor, else_input: ITensor) -> ISelectLayer:
        for t in (condition, then_input, else_input):
            self._check_tensor(t, "add_select")
        return self._append(ISelectLayer(self, condition, then_input, else_input))

    def add_shuffle(self, input: ITensor) -> IShuffleLayer:  # noqa: A002
        self._check_tensor(input, "add_shuffle")
        return self._append(IShuffleLayer(self, input))

    def add_shape(self, input: ITensor) -> IShapeLayer:  # noqa: A002
        self._check_tensor(input, "add_shape")
        return self._append(IShapeLayer(self, input))

    def add_unsqueeze(self, input: ITensor, axes: ITensor) -> IUnsqueezeLayer:  # noqa: A002
        self._check_tensor(input, "add_unsqueeze")
        self._check_tensor(axes, "add_unsqueeze")
        return self._append(IUnsqueezeLayer(self, input, axes))

    def add_gather(self, input: ITensor, indices: ITensor, axis: int) -> IGatherLayer:  # noqa: A002
        self._check_tensor(input, "add_gather")
        self._check_tensor(indices, "add_gather")
        return self._append(IGatherLayer(self, input, indices, axis))

    def add_concatenation(self, inputs: List[ITensor]) -> Optional[IConcatenationLayer]:
        inputs = list(inputs)
        for t in inputs:
            self._check_tensor(t, "add_concatenation")
        if not inputs:
            return self._refuse("INetworkDefinition::addConcatenation", "nbInputs > 0")
        return self._append(IConcatenationLayer(self, inputs))

    def add_slice(self, input: ITensor, start, shape, stride) -> ISliceLayer:  # noqa: A002
        self._check_tensor(input, "add_slice")
        return self._append(ISliceLayer(self, input, start, shape, stride))

    def add_matrix_multiply(self, input0: ITensor, op0, input1: ITensor, op1) -> IMatrixMultiplyLayer:
        self._check_tensor(input0, "add_matrix_multiply")
        self._check_tensor(input1, "add_matrix_multiply")
        return self._append(IMatrixMultiplyLayer(
            self, input0, _enum_arg("add_matrix_multiply", "op0", op0, MatrixOperation), input1,
            _enum_arg("add_matrix_multiply", "op1", op1, MatrixOperation)))

    def add_softmax(self, input: ITensor) -> ISoftMaxLayer:  # noqa: A002
        self._check_tensor(input, "add_softmax")
        return self._append(ISoftMaxLayer(self, input))

    def add_reduce(self, input: ITensor, op, axes: int, keep_dims: bool) -> IReduceLayer:  # noqa: A002
        self._check_tensor(input, "add_reduce")
        return self._append(IReduceLayer(self, input, _enum_arg("add_reduce", "op", op, ReduceOperation), axes,
                                         keep_dims))

    def add_convolution_nd(self, input: ITensor, num_output_maps: int, kernel_shape, kernel: Weights,  # noqa: A002
                           bias: Optional[Weights] = None) -> Optional[IConvolutionLayer]:
        self._check_tensor(input, "add_convolution_nd")
        kernel = as_weights(kernel, "add_convolution_nd(): kernel")
        bias = as_weights(bias, "add_convolution_nd(): bias")
        kernel_shape = [int(k) for k in kernel_shape]
        if not 1 <= len(kernel_shape) <= 3 or min(kernel_shape) < 1 or int(num_output_maps) < 1:
            return self._refuse("INetworkDefinition::addConvolutionNd",
                                f"nbOutputMaps > 0 and 1 to 3 positive kernel dimensions (got {num_output_maps} and "
                                f"{tuple(kernel_shape)})")
        return self._append(IConvolutionLayer(self, input, num_output_maps, kernel_shape, kernel, bias))

    def add_pooling_nd(self, input: ITensor, type, window_size) -> Optional[IPoolingLayer]:  # noqa: A002
        self._check_tensor(input, "add_pooling_nd")
        window = [int(k) for k in window_size]
        if not 1 <= len(window) <= 3 or min(window) < 1:
            return self._refuse("INetworkDefinition::addPoolingNd", f"1 to 3 positive window dimensions (got "
                                f"{tuple(window)})")
        return self._append(IPoolingLayer(self, input, _enum_arg("add_pooling_nd", "type", type, PoolingType),
                                          window))

    def add_scale_nd(self, input: ITensor, mode, shift: Optional[Weights] = None,  # noqa: A002
                     scale: Optional[Weights] = None, power: Optional[Weights] = None,
                     channel_axis: int = 1) -> IScaleLayer:
        self._check_tensor(input, "add_scale_nd")
        shift, scale, power = (as_weights(w, f"add_scale_nd(): {what}")
                               for what, w in (("shift", shift), ("scale", scale), ("power", power)))
        return self._append(IScaleLayer(self, input, _enum_arg("add_scale_nd", "mode", mode, ScaleMode), shift,
                                        scale, power, channel_axis))

    def add_normalization(self, input: ITensor, scale: ITensor, bias: ITensor,  # noqa: A002
                          axesMask: int) -> INormalizationLayer:  # noqa: N803 - the binding's keyword
        for t in (input, scale, bias):
            self._check_tensor(t, "add_normalization")
        return self._append(INormalizationLayer(self, input, scale, bias, axesMask))

    # ----- the emulator's own -----
    def _append(self, layer):
        self._layers.append(layer)
        return layer

    def _refuse(self, where: str, condition: str) -> None:
        """A call TensorRT refuses: reported through the logger, no layer (``None``), as TensorRT returns."""
        report(self._logger, Severity.ERROR,
               f"{where}: Error Code 3: API Usage Error (Parameter check failed, condition: {condition}.)")
        return None

    def _check_tensor(self, t, what: str) -> None:
        if not isinstance(t, ITensor) or t._network is not self:
            raise TypeError(f"{what}: {t!r} is not a tensor of this network")

    def _leaf(self, t: ITensor) -> Info:
        if t._exprs is not None:  # a plugin's output
            return Info(t._dtype, list(t._exprs))
        b = self._expr_builder
        return Info(t._dtype, [b._symbol(dim_symbol(t.name, j)) if d < 0 else b.constant(int(d))
                               for j, d in enumerate(t._shape)])

    def _info(self, t: ITensor) -> Info:
        """What the network knows of ``t`` now; a layer TensorRT refuses is reported and raised."""
        try:
            return self._shapes.info(t)
        except LayerError as e:
            report(self._logger, Severity.ERROR, f"Error Code 4: API Usage Error (TensorRT emulator: {e})")
            raise

    def _changed(self, layer) -> None:
        """``layer`` changed (None: a network input did): inference forgets what depended on it."""
        if layer is None:
            self._shapes.clear()
        else:
            self._shapes.invalidate(layer)

    def _exprs_of(self, t: ITensor) -> DimsExprs:
        return DimsExprs(self._info(t).dims)

    def _request(self, aot: Optional[bool]):
        F, Q = NetworkDefinitionCreationFlag, QuickPluginCreationRequest
        if aot is True:
            return Q.STRICT_AOT
        if aot is False:
            return Q.STRICT_JIT
        prefer_aot, prefer_jit = self.get_flag(F.PREFER_AOT_PYTHON_PLUGINS), self.get_flag(F.PREFER_JIT_PYTHON_PLUGINS)
        if prefer_aot and prefer_jit:
            raise ValueError("Both NetworkDefinitionCreationFlag.PREFER_AOT_PYTHON_PLUGINS and "
                             "PREFER_JIT_PYTHON_PLUGINS cannot be specified at the same time.")
        if prefer_aot:
            return Q.PREFER_AOT
        if prefer_jit:
            return Q.PREFER_JIT
        return Q.UNKNOWN

