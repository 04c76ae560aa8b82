"""Every gallery kernel declared as ``gallery::<name>`` when this file is imported, for the command line:

    trt-kernels status examples/gallery/ops.py
    trt-kernels inspect examples/gallery/ops.py --arch sm_90
    trt-kernels compile examples/gallery/ops.py --arch sm_90

(``declare.py`` declares nothing on import; its ``main()`` and the tests declare what they use.) The Triton
kernels are left out where triton is not installed.
"""

import importlib.util
import pathlib
import sys

_NAME = "_ttk_gallery_declare"
if _NAME not in sys.modules:
    _spec = importlib.util.spec_from_file_location(_NAME, pathlib.Path(__file__).resolve().parent / "declare.py")
    sys.modules[_NAME] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(sys.modules[_NAME])
gallery = sys.modules[_NAME]

OPS = gallery.declare_all()
