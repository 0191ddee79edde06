"""GPU probe: the real pynvml where it can answer, a small fake NVML for boxes we lack.

The fake implements only pynvml functions that exist under the same name in
the real binding (checked below), returning what NVML returns (ints from the
nvml.h enums, objects with ``.total`` / ``.busId``) and raising
``NVMLError_NotSupported`` where a PCIe card does (NVLink queries).
"""

from __future__ import annotations

import ctypes
import importlib
import json
import re
from types import SimpleNamespace

import pytest

from dsparkctl import gpus

# nvml.h enum values, as the real library returns them.
PIX, PXB, PHB, NODE, SYS = 10, 20, 30, 40, 50
P2P_OK, P2P_CHIPSET_NOT_SUPPORTED = 0, 1
NVLINK_GPU, NVLINK_SWITCH = 0, 2


def _nvml_loadable() -> bool:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        return False
    return True


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # named as in pynvml
    pass


class NVMLError_InvalidArgument(NVMLError):
    pass


class NVMLError_DriverNotLoaded(NVMLError):
    pass


class NVMLError_Unknown(NVMLError):
    pass


class FakeNvml:
    """A box described by per-GPU facts plus pairwise NVML answers."""

    NVML_NVLINK_MAX_LINKS = 18

    def __init__(self, names: list[str], cc: tuple[int, int], mem: int | None,
                 levels: list[list[int]] | None = None, p2p: list[list[int]] | None = None,
                 nvlinks: dict[int, list[tuple[int, int | None]]] | None = None,
                 init_error: Exception | None = None,
                 failing: dict[str, Exception] | None = None) -> None:
        self.names = names
        self.cc = cc
        self.mem = mem
        self.levels = levels
        self.p2p = p2p
        self.nvlinks = nvlinks  # gpu -> [(remote device type, remote gpu or None)] per link
        self.init_error = init_error
        self.failing = failing or {}
        self.initialised = False
        self.shutdown_calls = 0

    def _maybe_fail(self, fn: str) -> None:
        if fn in self.failing:
            raise self.failing[fn]

    def _bus(self, i: int) -> str:
        return f"00000000:{0x18 + 0x20 * i:02X}:00.0"

    def nvmlInit(self) -> None:
        if self.init_error is not None:
            raise self.init_error
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.shutdown_calls += 1

    def nvmlSystemGetDriverVersion(self) -> str:
        return "580.95.05"

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 13000

    def nvmlDeviceGetCount(self) -> int:
        self._maybe_fail("nvmlDeviceGetCount")
        return len(self.names)

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        assert self.initialised
        return i

    def nvmlDeviceGetName(self, h: int) -> str:
        return self.names[h]

    def nvmlDeviceGetUUID(self, h: int) -> str:
        return f"GPU-0000000{h}-fake"

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return self.cc

    def nvmlDeviceGetMemoryInfo(self, h: int) -> SimpleNamespace:
        self._maybe_fail("nvmlDeviceGetMemoryInfo")
        if self.mem is None:  # GB10: unified memory, no framebuffer figure
            raise NVMLError_NotSupported("Not Supported")
        return SimpleNamespace(total=self.mem, free=self.mem, used=0)

    def nvmlDeviceGetPciInfo(self, h: int) -> SimpleNamespace:
        return SimpleNamespace(busId=self._bus(h))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: int) -> int:
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: int) -> int:
        return 16 if h else 8  # GPU 0 trained at x8

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: int) -> int:
        return 16

    def nvmlDeviceGetNvLinkState(self, h: int, link: int) -> int:
        if not self.nvlinks:
            raise NVMLError_NotSupported("Not Supported")
        if link >= len(self.nvlinks[h]):
            raise NVMLError_InvalidArgument("Invalid Argument")
        return 1

    def nvmlDeviceGetNvLinkRemoteDeviceType(self, h: int, link: int) -> int:
        assert self.nvlinks
        return self.nvlinks[h][link][0]

    def nvmlDeviceGetNvLinkRemotePciInfo(self, h: int, link: int) -> SimpleNamespace:
        assert self.nvlinks
        _kind, peer = self.nvlinks[h][link]
        return SimpleNamespace(busId=self._bus(peer) if peer is not None else "00000000:C0:00.0")

    def nvmlDeviceGetTopologyCommonAncestor(self, a: int, b: int) -> int:
        assert self.levels is not None
        return self.levels[a][b]

    def nvmlDeviceGetP2PStatus(self, a: int, b: int, index: int) -> int:
        assert index == 0  # NVML_P2P_CAPS_INDEX_READ
        assert self.p2p is not None
        return self.p2p[a][b]


def test_fake_only_uses_real_pynvml_names() -> None:
    pynvml = importlib.import_module("pynvml")
    for name in dir(FakeNvml):
        if name.startswith("nvml"):
            assert hasattr(pynvml, name), name
    for name in ("NVMLError_NotSupported", "NVMLError_InvalidArgument",
                 "NVMLError_DriverNotLoaded", "NVMLError_Unknown"):
        assert hasattr(pynvml, name)
    assert pynvml.NVML_TOPOLOGY_HOSTBRIDGE == PHB and pynvml.NVML_TOPOLOGY_SYSTEM == SYS
    assert pynvml.NVML_TOPOLOGY_SINGLE == PIX and pynvml.NVML_TOPOLOGY_NODE == NODE
    assert pynvml.NVML_P2P_STATUS_OK == P2P_OK
    assert pynvml.NVML_NVLINK_DEVICE_TYPE_SWITCH == NVLINK_SWITCH


def _two_socket_pcie_box() -> FakeNvml:
    # GPUs 0,1 under CPU 0's host bridges, 2,3 under CPU 1's.
    levels = [[0, PHB, SYS, SYS], [PHB, 0, SYS, SYS], [SYS, SYS, 0, PHB], [SYS, SYS, PHB, 0]]
    p2p = [[P2P_OK if (a < 2) == (b < 2) else P2P_CHIPSET_NOT_SUPPORTED for b in range(4)]
           for a in range(4)]
    return FakeNvml(["NVIDIA RTX PRO 6000 Blackwell Workstation Edition"] * 4, (12, 0),
                    97_887_256_576, levels=levels, p2p=p2p)


def test_four_gpu_pcie_box_topology() -> None:
    nvml = _two_socket_pcie_box()
    report = gpus.probe_gpus(nvml)
    assert report.note is None and report.errors == []
    assert report.topology == [["X", "PHB", "SYS", "SYS"],
                               ["PHB", "X", "SYS", "SYS"],
                               ["SYS", "SYS", "X", "PHB"],
                               ["SYS", "SYS", "PHB", "X"]]
    assert report.p2p == [[None, True, False, False],
                          [True, None, False, False],
                          [False, False, None, True],
                          [False, False, True, None]]
    assert report.pcie_only is True
    assert [(i, j) for i, j, _ in report.host_bridge_pairs] == [
        (0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert report.driver_version == "580.95.05"
    assert report.cuda_driver_version == "13.0"
    assert nvml.shutdown_calls == 1
    g0 = report.gpus[0].to_json()
    assert g0["compute_capability"] == "12.0"
    assert g0["memory_total_bytes"] == 97_887_256_576
    assert g0["driver_version"] == "580.95.05"
    assert g0["name"].startswith("NVIDIA RTX PRO 6000")
    assert (g0["pcie_gen_current"], g0["pcie_width_current"], g0["pcie_width_max"]) == (5, 8, 16)
    json.dumps(report.to_json())


def test_direct_nvlink_pair_counts_links() -> None:
    links = {0: [(NVLINK_GPU, 1)] * 4, 1: [(NVLINK_GPU, 0)] * 4}
    nvml = FakeNvml(["A"] * 2, (9, 0), 1 << 30, levels=[[0, SYS], [SYS, 0]],
                    p2p=[[0, 0], [0, 0]], nvlinks=links)
    report = gpus.probe_gpus(nvml)
    assert report.topology == [["X", "NV4"], ["NV4", "X"]]
    assert report.pcie_only is False
    assert report.errors == []


def test_nvswitch_box_is_all_nvlink() -> None:
    links = {i: [(NVLINK_SWITCH, None)] * 18 for i in range(8)}
    nvml = FakeNvml(["NVIDIA H200"] * 8, (9, 0), 150_754_820_096,
                    levels=[[SYS] * 8 for _ in range(8)], p2p=[[0] * 8 for _ in range(8)],
                    nvlinks=links)
    report = gpus.probe_gpus(nvml)
    assert all(report.topology[i][j] == ("X" if i == j else "NV18")
               for i in range(8) for j in range(8))
    assert report.pcie_only is False
    assert report.host_bridge_pairs == []


def test_single_gb10_without_memory_figure() -> None:
    report = gpus.probe_gpus(FakeNvml(["NVIDIA GB10"], (12, 1), None,
                                      levels=[[0]], p2p=[[0]]))
    assert report.errors == []  # NotSupported is an answer, not an error
    assert report.gpus[0].compute_capability == "12.1"
    assert report.gpus[0].memory_total_bytes is None
    assert report.topology == [["X"]] and report.p2p == [[None]]
    assert report.pcie_only is None


def test_driver_not_loaded_is_a_note() -> None:
    report = gpus.probe_gpus(FakeNvml([], (0, 0), 0, init_error=NVMLError_DriverNotLoaded()))
    assert report.gpus == []
    assert report.note == "NVML not available: the NVIDIA kernel driver is not loaded"


def test_failing_calls_are_recorded_not_raised() -> None:
    nvml = _two_socket_pcie_box()
    nvml.failing["nvmlDeviceGetMemoryInfo"] = NVMLError_Unknown("Unknown Error")
    report = gpus.probe_gpus(nvml)
    assert len(report.gpus) == 4 and report.gpus[0].memory_total_bytes is None
    assert report.topology[0][2] == "SYS"
    assert len(report.errors) == 4 and "nvmlDeviceGetMemoryInfo" in report.errors[0]
    nvml.failing["nvmlDeviceGetCount"] = NVMLError_Unknown("Unknown Error")
    report = gpus.probe_gpus(nvml)
    assert report.gpus == [] and report.note == "NVML found no GPU"
    assert report.errors and "nvmlDeviceGetCount" in report.errors[0]


def test_minimal_binding_missing_functions() -> None:
    """An old binding without PCIe or topology calls: those fields are None, no crash."""

    class Old:
        def nvmlInit(self) -> None: ...
        def nvmlShutdown(self) -> None: ...
        def nvmlDeviceGetCount(self) -> int: return 2
        def nvmlDeviceGetHandleByIndex(self, i: int) -> int: return i
        def nvmlDeviceGetName(self, h: int) -> bytes: return b"Tesla V100"

    report = gpus.probe_gpus(Old())
    assert [g.name for g in report.gpus] == ["Tesla V100"] * 2
    assert report.gpus[0].compute_capability is None
    assert report.topology == [["X", "?"], ["?", "X"]]


def test_bus_id_spellings_match() -> None:
    assert gpus._bus_id(SimpleNamespace(busId=b"0000:3b:00.0")) == "00000000:3B:00.0"
    assert gpus._bus_id(SimpleNamespace(busId="00000000:3B:00.0")) == "00000000:3B:00.0"


def test_cuda_version_string() -> None:
    assert gpus.cuda_version_string(12080) == "12.8"
    assert gpus.cuda_version_string(13010) == "13.1"
    assert gpus.cuda_version_string(None) is None


@pytest.mark.skipif(_nvml_loadable(), reason="this machine has an NVIDIA driver")
def test_no_nvml_here_gives_clean_note() -> None:
    report = gpus.probe_gpus()
    assert report.gpus == [] and report.topology == []
    assert report.note is not None and "libnvidia-ml.so.1 not found" in report.note


@pytest.mark.skipif(_nvml_loadable(), reason="this machine has an NVIDIA driver")
def test_real_pynvml_without_library_gives_clean_note() -> None:
    """Through the real binding's own nvmlInit, not our ctypes pre-check."""
    pynvml = importlib.import_module("pynvml")
    report = gpus.probe_gpus(pynvml)
    assert report.gpus == []
    assert report.note == ("NVML not available: libnvidia-ml.so.1 not found (no NVIDIA driver "
                           "here, or a container started without GPU access)")


@pytest.mark.gpu
def test_real_gpus() -> None:
    report = gpus.probe_gpus()
    assert report.note is None, report.note
    assert report.gpus
    n = len(report.gpus)
    for g in report.gpus:
        assert g.compute_capability and re.fullmatch(r"\d+\.\d+", g.compute_capability)
        assert g.name and g.driver_version
    assert report.cuda_driver_version and re.fullmatch(r"\d+\.\d+", report.cuda_driver_version)
    assert len(report.topology) == n and all(len(r) == n for r in report.topology)
    assert all(report.topology[i][i] == "X" for i in range(n))
    valid = re.compile(r"X|NV\d+|PIX|PXB|PHB|NODE|SYS")
    assert all(valid.fullmatch(label) for row in report.topology for label in row)


def test_empty_report() -> None:
    report = gpus.GpuReport.empty("GPU probe skipped")
    assert report.to_json()["note"] == "GPU probe skipped"
    assert report.gpus == [] and report.pcie_only is None
