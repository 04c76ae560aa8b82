"""The eager side: what runs when torch calls an op's CUDA kernel.

``driver`` loads kernel images and packs parameters through cuda.bindings; ``fastpath`` generates the Python
launcher from a :class:`~trt_kernels.recipe.LaunchRecipe`; ``compiled_launcher`` and ``native`` are the two
extension modules (built by ``build`` from ``_claunch.c`` and ``_cnative.cpp``): the C function the Python
launcher calls, and the op kernel torch's dispatcher calls without Python; ``dispatcher`` is the function torch
calls, swapped in place per op.
"""
