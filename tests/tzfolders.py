"""The zone folders of benchmarks/tzzones.py, built by `zic`, as the tests use them."""

from benchmarks.tzzones import ZONES, build, zic

__all__ = ["ZONES", "build", "zic"]
