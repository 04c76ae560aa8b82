"""One TensorRT route protocol (issue 29, item 3): the QDP route and the ONNX route go through one
lifecycle, hooked into the registry once by trt_kernels.plugins; the version pairing lives in
trt_kernels.plugins.pairing; the ONNX route's plugin version is onnx_export's."""

import pytest

import trt_kernels as ttk
from kernels import scale_spec, unique
from trt_kernels import onnx_export, plugins
from trt_kernels.plugins import pairing, v3one
from trt_kernels.plugins.qdp_route import QdpRoute
from trt_kernels.plugins.route import Route


def test_the_pairing_is_reexported_unchanged():
    for name in ("PAIRINGS", "pairings_text", "qdp_usable", "pairing_problem"):
        assert getattr(plugins, name) is getattr(pairing, name), name


def test_the_onnx_route_writes_the_version_onnx_export_names():
    assert v3one.PLUGIN_VERSION is onnx_export.PLUGIN_VERSION


def test_the_routes_follow_the_protocol():
    assert plugins.ROUTES == (plugins.QDP, v3one.ROUTE)
    assert isinstance(plugins.QDP, QdpRoute) and [r.name for r in plugins.ROUTES] == ["qdp", "onnx"]
    for route in plugins.ROUTES:
        for method in ("check", "register", "forget", "status"):
            assert callable(getattr(route, method)), (route.name, method)
    assert set(Route.__dict__) >= {"check", "register", "forget", "status"}


class Recording:
    """A route that records what the registry hooks hand it."""

    name = "recording"

    def __init__(self):
        self.calls = []

    def check(self, kop, old):
        self.calls.append(("check", kop.op_name, old is not None))

    def register(self, kop):
        self.calls.append(("register", kop.op_name))

    def forget(self, kop):
        self.calls.append(("forget", kop.op_name))

    def status(self, kop):
        return f"{len(self.calls)} calls"


def test_one_lifecycle_for_every_route(monkeypatch):
    """Declaring, re-declaring and unregistering reach each route through the same hooks, in order."""
    rec = Recording()
    monkeypatch.setattr(plugins, "ROUTES", plugins.ROUTES + (rec,))
    name = unique("ttk_route")
    ttk.cuda_kernel_op(name, scale_spec())
    ttk.cuda_kernel_op(name, scale_spec())
    ttk.unregister(name)
    mine = [c for c in rec.calls if c[1] == name]
    assert mine == [("check", name, False), ("register", name), ("check", name, True), ("register", name),
                    ("forget", name)]


def test_route_status_names_every_route():
    name = unique("ttk_route")
    ttk.cuda_kernel_op(name, scale_spec())
    st = plugins.route_status(name)
    assert set(st) == {"qdp", "onnx"}
    assert st["qdp"].startswith("plugin: ") and "converter: " in st["qdp"]
    if not v3one.ROUTE.status(ttk.registry.get(name)).startswith("IPluginV3One"):
        assert "v3one.register(trt)" in st["onnx"]
    with pytest.raises(KeyError, match="was not registered"):
        plugins.route_status(unique("ttk_route"))


def _fake_trt():
    """Just what the ONNX route's classes and its registration need of a ``tensorrt`` module."""
    import enum
    import types

    class Base:
        def __init__(self, *a):
            pass

    names = ("IPluginV3", "IPluginV3OneCore", "IPluginV3OneBuild", "IPluginV3OneRuntime", "IPluginCreatorV3One")
    registered = []
    registry = types.SimpleNamespace(register_creator=lambda creator, ns: registered.append((creator.name, ns)) or True)
    trt = types.SimpleNamespace(**{n: type(n, (Base,), {}) for n in names}, __name__="fake_tensorrt",
                                PluginFieldType=enum.Enum("PluginFieldType", "FLOAT32 INT32"),
                                PluginField=lambda *a: a, PluginFieldCollection=list,
                                get_plugin_registry=lambda: registry)
    return trt, registered


def test_v3one_register_follows_later_declarations_through_the_one_lifecycle(monkeypatch):
    route = v3one.OnnxRoute()
    monkeypatch.setattr(v3one, "ROUTE", route)
    monkeypatch.setattr(plugins, "ROUTES", (plugins.QDP, route))
    trt, registered = _fake_trt()
    before = unique("ttk_route")
    ttk.cuda_kernel_op(before, scale_spec())
    assert before in v3one.register(trt)
    after = unique("ttk_route")
    ttk.cuda_kernel_op(after, scale_spec())  # registered by the registry hook, not by register()
    ttk.cuda_kernel_op(after, scale_spec())  # a re-declaration: the creator registered serves it
    assert [n for n, _ in registered if n in (before.split("::")[1], after.split("::")[1])] == \
        [before.split("::")[1], after.split("::")[1]]
    assert v3one.register(trt) == []
    assert route.status(ttk.registry.get(after)) == f"IPluginV3One creator, version {onnx_export.PLUGIN_VERSION}, " \
                                                    "registered in fake_tensorrt"
