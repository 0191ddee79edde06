"""GPUs, driver and interconnect through NVML, without CUDA and without torch.

NVML answers in milliseconds and does not create a CUDA context, so the
doctor can report compute capability (SM 12.0 vs 12.1 decides the kernel
build), memory, driver / CUDA driver versions, the PCIe link (a card trained
at x4 or Gen1 is a common field problem) and the pairwise topology that
decides whether NCCL needs ``NCCL_P2P_DISABLE=1`` (PCIe-only PHB/SYS boxes
hang on the first all-reduce, KNOWLEDGE §5).

The NVML module is a parameter: tests drive the real ``pynvml`` (which on a
GPU-less machine must give a clean note) and a small fake for the multi-GPU
topologies no machine here has. A machine without a GPU, without the
driver's ``libnvidia-ml.so.1`` or with a failing NVML gives a report with a
``note``, never an exception: the rest of the doctor still runs.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

# nvmlGpuTopologyLevel_t values (nvml.h ABI) -> the labels of `nvidia-smi topo -m`.
# INTERNAL (two GPUs on one board) is reached through the board's own switch.
TOPOLOGY_LABELS: dict[int, str] = {
    0: "PIX",  # NVML_TOPOLOGY_INTERNAL
    10: "PIX",  # NVML_TOPOLOGY_SINGLE: one PCIe switch
    20: "PXB",  # NVML_TOPOLOGY_MULTIPLE: several PCIe switches, no host bridge
    30: "PHB",  # NVML_TOPOLOGY_HOSTBRIDGE: through a CPU host bridge
    40: "NODE",  # NVML_TOPOLOGY_NODE: host bridges within one NUMA node
    50: "SYS",  # NVML_TOPOLOGY_SYSTEM: across the CPU interconnect (QPI/UPI/xGMI)
}
# Labels through which NCCL's P2P transport is known to misbehave without
# NCCL_P2P_DISABLE=1 on consumer / workstation cards.
PCIE_HOST_LABELS = frozenset({"PHB", "NODE", "SYS"})

_P2P_CAPS_INDEX_READ = 0  # nvml.h; pynvml 13.x defines it as the tuple (0,) by mistake
_P2P_STATUS_OK = 0
_NVLINK_DEVICE_TYPE_SWITCH = 2  # nvmlIntNvLinkDeviceType_t
_NVLINK_MAX_LINKS = 18  # nvml.h of the Hopper/Blackwell era; a binding may say more

_LIB = "libnvidia-ml.so.1"


@dataclass
class GpuInfo:
    """One GPU as NVML reports it; fields NVML could not answer are ``None``."""

    index: int
    name: str | None
    compute_capability: str | None
    memory_total_bytes: int | None
    driver_version: str | None
    uuid: str | None = None
    pci_bus_id: str | None = None
    pcie_gen_current: int | None = None
    pcie_gen_max: int | None = None
    pcie_width_current: int | None = None
    pcie_width_max: int | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class GpuReport:
    """All GPUs plus the pairwise matrices (``topology[i][j]``, ``p2p[i][j]``)."""

    gpus: list[GpuInfo] = field(default_factory=list)
    driver_version: str | None = None
    cuda_driver_version: str | None = None
    topology: list[list[str]] = field(default_factory=list)
    p2p: list[list[bool | None]] = field(default_factory=list)
    note: str | None = None
    errors: list[str] = field(default_factory=list)

    @classmethod
    def empty(cls, note: str) -> GpuReport:
        """No GPU facts, and why (probe skipped, no NVML...)."""
        return cls(note=note)

    @property
    def pcie_only(self) -> bool | None:
        """True when no GPU pair has NVLink; ``None`` with fewer than two GPUs."""
        if len(self.gpus) < 2 or not self.topology:
            return None
        return not any(label.startswith("NV") for row in self.topology for label in row)

    @property
    def host_bridge_pairs(self) -> list[tuple[int, int, str]]:
        """GPU pairs that talk through a CPU host bridge or socket link (PHB/NODE/SYS)."""
        out = []
        for i, row in enumerate(self.topology):
            for j, label in enumerate(row):
                if i < j and label in PCIE_HOST_LABELS:
                    out.append((i, j, label))
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "gpus": [g.to_json() for g in self.gpus],
            "driver_version": self.driver_version,
            "cuda_driver_version": self.cuda_driver_version,
            "topology": self.topology,
            "p2p": self.p2p,
            "pcie_only": self.pcie_only,
            "note": self.note,
            "errors": self.errors,
        }


def _text(value: Any) -> str:
    """Older pynvml releases return ``bytes`` for strings."""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _describe(exc: BaseException) -> str:
    kind = type(exc).__name__
    if "LibraryNotFound" in kind:
        return f"{_LIB} not found (no NVIDIA driver here, or a container started without GPU access)"
    if "DriverNotLoaded" in kind:
        return "the NVIDIA kernel driver is not loaded"
    if "NoPermission" in kind:
        return "no permission to query the GPU (NVML_ERROR_NO_PERMISSION)"
    return f"{kind}: {exc}" if str(exc) else kind


def cuda_version_string(value: int | None) -> str | None:
    """NVML's CUDA driver version integer (``12080``) as ``"12.8"``."""
    if value is None:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _load_pynvml() -> tuple[Any | None, str | None]:
    """The real NVML binding, or why it cannot be used.

    Loading ``libnvidia-ml.so.1`` first, with ctypes alone, answers the
    GPU-less case without importing pynvml (tens of ms on a cold start).
    """
    if sys.platform.startswith("linux"):
        import ctypes

        try:
            ctypes.CDLL(_LIB)
        except OSError:
            return None, f"NVML not available: {_LIB} not found (no NVIDIA driver here, or a container started without GPU access)"
    try:
        import pynvml
    except ImportError:
        return None, "NVML not available: the nvidia-ml-py package (module pynvml) is not installed"
    return pynvml, None


class _Caller:
    """Calls NVML functions that may be missing (old bindings, fakes) or unsupported."""

    def __init__(self, nvml: Any, errors: list[str]) -> None:
        self.nvml = nvml
        self.errors = errors

    def __call__(self, fn_name: str, *args: Any, quiet: bool = False) -> Any:
        fn: Callable[..., Any] | None = getattr(self.nvml, fn_name, None)
        if fn is None:
            return None
        try:
            return fn(*args)
        except Exception as exc:
            # NotSupported is an answer (GB10 has no dedicated memory, PCIe
            # cards have no NVLink); anything else is worth a line.
            if not quiet and "NotSupported" not in type(exc).__name__:
                self.errors.append(f"{fn_name}: {_describe(exc)}")
            return None


@dataclass
class _NvLinks:
    peers: dict[str, int] = field(default_factory=dict)  # remote GPU bus id -> active links
    switch_links: int = 0  # active links into an NVSwitch (HGX boards)


def _nvlinks(call: _Caller, handle: Any) -> _NvLinks:
    """Active NVLinks, counted the way ``nvidia-smi topo -m`` prints NV#.

    Direct links name the peer GPU by PCI bus id; on NVSwitch systems every
    link ends at a switch and any two switch-attached GPUs are connected.
    """
    out = _NvLinks()
    for link in range(int(getattr(call.nvml, "NVML_NVLINK_MAX_LINKS", _NVLINK_MAX_LINKS))):
        state = call("nvmlDeviceGetNvLinkState", handle, link, quiet=True)
        if state is None:
            if link == 0:
                break  # no NVLink on this GPU (PCIe cards answer NotSupported)
            continue
        if not state:
            continue
        kind = call("nvmlDeviceGetNvLinkRemoteDeviceType", handle, link, quiet=True)
        if kind == _NVLINK_DEVICE_TYPE_SWITCH:
            out.switch_links += 1
            continue
        bus = _bus_id(call("nvmlDeviceGetNvLinkRemotePciInfo", handle, link, quiet=True))
        if bus:
            out.peers[bus] = out.peers.get(bus, 0) + 1
    return out


def _bus_id(pci: Any) -> str | None:
    if pci is None:
        return None
    bus = getattr(pci, "busId", None) or getattr(pci, "busIdLegacy", None)
    if bus is None:
        return None
    # Normalise "00000000:3B:00.0" and "0000:3b:00.0" to one spelling.
    parts = _text(bus).strip().upper().split(":")
    if len(parts) == 2:
        parts.insert(0, "0")
    if len(parts) != 3:
        return _text(bus).strip().upper() or None
    try:
        return f"{int(parts[0], 16):08X}:{parts[1]}:{parts[2]}"
    except ValueError:
        return ":".join(parts)


def probe_gpus(nvml: Any | None = None) -> GpuReport:
    """Everything NVML says about the GPUs; ``nvml`` defaults to the real ``pynvml``."""
    if nvml is None:
        nvml, why = _load_pynvml()
        if nvml is None:
            return GpuReport(note=why)
    try:
        nvml.nvmlInit()
    except Exception as exc:
        return GpuReport(note=f"NVML not available: {_describe(exc)}")
    report = GpuReport()
    try:
        _fill(nvml, report)
    except Exception as exc:  # a broken driver must not take the doctor down
        report.note = f"NVML query failed: {_describe(exc)}"
    finally:
        with contextlib.suppress(Exception):
            nvml.nvmlShutdown()
    return report


def _fill(nvml: Any, report: GpuReport) -> None:
    call = _Caller(nvml, report.errors)
    driver = call("nvmlSystemGetDriverVersion")
    report.driver_version = _text(driver) if driver is not None else None
    report.cuda_driver_version = cuda_version_string(
        call("nvmlSystemGetCudaDriverVersion_v2") or call("nvmlSystemGetCudaDriverVersion"))
    count = call("nvmlDeviceGetCount") or 0
    if count == 0:
        report.note = "NVML found no GPU"
        return
    handles = []
    for i in range(count):
        h = call("nvmlDeviceGetHandleByIndex", i)
        if h is None:
            continue
        handles.append(h)
        cc = call("nvmlDeviceGetCudaComputeCapability", h)
        mem = call("nvmlDeviceGetMemoryInfo", h)
        name = call("nvmlDeviceGetName", h)
        uuid = call("nvmlDeviceGetUUID", h)
        report.gpus.append(GpuInfo(
            index=i,
            name=_text(name) if name is not None else None,
            compute_capability=f"{cc[0]}.{cc[1]}" if cc else None,
            memory_total_bytes=int(mem.total) if mem is not None else None,
            driver_version=report.driver_version,
            uuid=_text(uuid) if uuid is not None else None,
            pci_bus_id=_bus_id(call("nvmlDeviceGetPciInfo", h)),
            pcie_gen_current=call("nvmlDeviceGetCurrPcieLinkGeneration", h),
            pcie_gen_max=call("nvmlDeviceGetMaxPcieLinkGeneration", h),
            pcie_width_current=call("nvmlDeviceGetCurrPcieLinkWidth", h),
            pcie_width_max=call("nvmlDeviceGetMaxPcieLinkWidth", h),
        ))
    report.topology, report.p2p = _pairwise(call, handles, report.gpus)


def _pairwise(call: _Caller, handles: list[Any],
              gpus: list[GpuInfo]) -> tuple[list[list[str]], list[list[bool | None]]]:
    n = len(handles)
    nvlinks = [_nvlinks(call, h) for h in handles]
    topo: list[list[str]] = [["X"] * n for _ in range(n)]
    p2p: list[list[bool | None]] = [[None] * n for _ in range(n)]
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            links = nvlinks[i].peers.get(gpus[j].pci_bus_id or "", 0)
            if not links and nvlinks[i].switch_links and nvlinks[j].switch_links:
                links = min(nvlinks[i].switch_links, nvlinks[j].switch_links)
            if links:
                topo[i][j] = f"NV{links}"
            else:
                level = call("nvmlDeviceGetTopologyCommonAncestor", handles[i], handles[j])
                topo[i][j] = TOPOLOGY_LABELS.get(int(level), "?") if level is not None else "?"
            status = call("nvmlDeviceGetP2PStatus", handles[i], handles[j], _P2P_CAPS_INDEX_READ)
            p2p[i][j] = None if status is None else int(status) == _P2P_STATUS_OK
    return topo, p2p
