"""The seed's seven ops, declared without touching a GPU, for the start-up benchmark and tests.

The specs and kernels are ``trt_kernels.cli.seed_cases``' (the seed as data). Case 6 keeps the
override path (``meta_fn`` / ``eager_fn``) but its eager function is written with torch ops
instead of the seed's ``cuda.core`` launch, so that a first launch compiles nothing, and it
has no ``aot_fn`` (nothing here builds an engine).

``declare()`` declares all seven under the namespace ``kern_seed`` and returns their names;
``inputs(device)`` gives one call's arguments per op, for a first launch.
"""

import dataclasses

import torch

from trt_kernels.cli import seed_cases as _sc

CU_SIGMOID = _sc.CU_SIGMOID
NAMES = tuple(c.name for c in _sc.CASES)
NS = "kern_seed"


def _repeat2_eager(x: torch.Tensor) -> torch.Tensor:
    return x.reshape(-1).repeat_interleave(2)


def _cases():
    return [dataclasses.replace(c, overrides=dict(meta_fn=c.overrides["meta_fn"], eager_fn=_repeat2_eager))
            if c.overrides else c for c in _sc.CASES]


def declare(ns: str = NS):
    """Declare the seven seed ops under ``ns``; returns their op names in seed order."""
    return [c.op_name(ns) for c in _sc.declare(ns, _cases())]


def inputs(device):
    """One call's arguments per op (seed order), on ``device``."""
    x = torch.randn(4, 128, device=device)
    return [
        (x,),
        (torch.randn(256, device=device), torch.randn(256, device=device)),
        (x, 2.5),
        (torch.randn(33, 47, device=device),),
        (torch.randn(8, 256, device=device),),
        (torch.randn(1024, device=device),),
        (torch.randn(7, 31, device=device),),
    ]
