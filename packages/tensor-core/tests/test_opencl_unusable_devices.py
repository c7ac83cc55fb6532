"""A device an OpenCL driver lists but cannot compile for is left out: is_available()
is False where it is the only one, and naming it raises the driver's build log (PoCL 3's
LLVM 14 on a CPU it cannot name). Needs pyopencl, not a working device."""
import pytest

cl = pytest.importorskip("pyopencl")

from ember.backends import opencl as ocl  # noqa: E402


class _Device:
    name = " Broken CPU "


def test_a_device_that_cannot_build_programs_is_left_out(monkeypatch):
    def failing_build(self):
        raise RuntimeError("clBuildProgram failed: error: unknown target CPU 'generic'")

    class Program:
        def __init__(self, context, source):
            assert "ember_probe" in source

        build = failing_build

    monkeypatch.setattr(ocl.cl, "Context", lambda devices: object())
    monkeypatch.setattr(ocl.cl, "Program", Program)
    monkeypatch.setattr(ocl, "UNUSABLE", [])
    assert not ocl._builds_programs(_Device())
    assert ocl.UNUSABLE == [("Broken CPU", "clBuildProgram failed: error: unknown target "
                                           "CPU 'generic'")]

    class Platform:
        def get_devices(self):
            return [_Device()]

    monkeypatch.setattr(ocl, "_platforms", lambda: [Platform()])
    assert ocl.enumerate_devices() == []


def test_a_device_that_builds_programs_is_kept(monkeypatch):
    class Program:
        def __init__(self, context, source):
            pass

        def build(self):
            return self

    monkeypatch.setattr(ocl.cl, "Context", lambda devices: object())
    monkeypatch.setattr(ocl.cl, "Program", Program)
    monkeypatch.setattr(ocl, "UNUSABLE", [])
    assert ocl._builds_programs(_Device()) and ocl.UNUSABLE == []
