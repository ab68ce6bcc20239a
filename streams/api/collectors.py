"""``collectors``: what the attributor's log lines say beyond the verdict, "NA" where they are silent.

Read from the lines themselves (not the rules): versions from NCCL's and the driver's banners,
the PyTorch watchdog's time and timeout, node/peer pairs from NCCL / InfiniBand errors, and PCI
address -> GPU index / UUID from NVRM and nvidia-smi lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from correlator.timefmt import iso
from streams.api.xid_resolution import resolution_for

__all__ = ["EvidenceLine", "collect"]

NA = "NA"
NCCL_VERSION = re.compile(r"NCCL version:? *v?(\d+\.\d+\.\d+[^\s,]*)")
CUDA_VERSION = (
    re.compile(r"\+cuda(\d+\.\d+)"),  # NCCL's banner: "NCCL version 2.18.5+cuda12.2"
    re.compile(r"CUDA Version:? *(\d+\.\d+)", re.IGNORECASE),  # nvidia-smi, torch.version prints
    re.compile(r"\bCUDA (?:runtime|driver) version:? *(\d+\.\d+)", re.IGNORECASE),
)
WATCHDOG = re.compile(r"Watchdog caught collective operation timeout")
WATCHDOG_TIMEOUT = (
    re.compile(r"Timeout\(ms\)=(\d+)"),
    re.compile(r"ran for (\d+) milliseconds"),
)
PEER = (
    re.compile(r"Got completion from peer (?P<peer>[0-9A-Za-z.:\-]+?)(?:<\d+>)? with"),
    re.compile(r"Connection closed by (?:remote )?peer (?P<peer>[0-9A-Za-z.\-]+?)(?:<\d+>)?(?:\s|$|[,;])"),
    re.compile(r"NET/IB ?: .*(?:peer|remote) (?P<peer>\d+\.\d+\.\d+\.\d+)"),
)
OWN_ADDRESS = re.compile(r"(?:OOB|Bootstrap ?: Using) \w+:(?P<ip>\d+\.\d+\.\d+\.\d+)<")
PCI = r"(?:PCI:)?(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})(?:\.[0-9a-fA-F])?"
PCI_UUID = re.compile(rf"NVRM: GPU at {PCI}: (?P<uuid>GPU-[0-9a-fA-F-]{{36}})")
XID_PCI = re.compile(rf"Xid \({PCI}")
INDEX_UUID = re.compile(r"\bGPU (?P<index>\d+): .*\(UUID: (?P<uuid>GPU-[0-9a-fA-F-]{36})\)")
INDEX_PCI = re.compile(
    r"\bGPU (?P<index>\d+)\b.*\b(?:Bus Id|busId|PCI) *[:=]? *"
    r"(?P<pci>[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})"
)


@dataclass(frozen=True)
class EvidenceLine:
    text: str
    host: str | None
    time_ms: int


def _first(patterns: tuple[re.Pattern, ...] | re.Pattern, lines: list[EvidenceLine]) -> str:
    patterns = patterns if isinstance(patterns, tuple) else (patterns,)
    for line in lines:
        for pattern in patterns:
            found = pattern.search(line.text)
            if found:
                return found.group(1)
    return NA


def _watchdog(lines: list[EvidenceLine]) -> tuple[str, Any]:
    hits = [line for line in lines if WATCHDOG.search(line.text)]
    if not hits:
        return NA, NA
    first = min(hits, key=lambda line: line.time_ms)
    timeout = _first(WATCHDOG_TIMEOUT, hits)
    return iso(first.time_ms) or NA, NA if timeout == NA else int(timeout) / 1000


def _bad_pairs(lines: list[EvidenceLine]) -> list[dict[str, str]] | str:
    # a peer named by its address is shown by node when NCCL's own banner tells whose it is
    owner = {m["ip"]: line.host for line in lines if line.host and (m := OWN_ADDRESS.search(line.text))}
    pairs: list[dict[str, str]] = []
    for line in lines:
        for pattern in PEER:
            found = pattern.search(line.text)
            if found and line.host:
                pair = {"node": line.host, "peer": owner.get(found["peer"], found["peer"])}
                if pair not in pairs:
                    pairs.append(pair)
                break
    return pairs or NA


def _xid_pci_mappings(lines: list[EvidenceLine]) -> dict[str, dict[str, str]] | str:
    uuid_of_pci: dict[str, str] = {}
    index_of_uuid: dict[str, str] = {}
    index_of_pci: dict[str, str] = {}
    xid_pcis: list[str] = []
    for line in lines:
        if m := PCI_UUID.search(line.text):
            uuid_of_pci[m["pci"].lower()] = m["uuid"]
        if m := INDEX_UUID.search(line.text):
            index_of_uuid[m["uuid"]] = m["index"]
        if m := INDEX_PCI.search(line.text):
            index_of_pci[m["pci"].lower()] = m["index"]
        if m := XID_PCI.search(line.text):
            xid_pcis.append(m["pci"].lower())
    mappings = {}
    for pci in dict.fromkeys([*xid_pcis, *uuid_of_pci, *index_of_pci]):
        uuid = uuid_of_pci.get(pci, NA)
        index = index_of_pci.get(pci) or index_of_uuid.get(uuid, NA)
        mappings[pci] = {"gpu_index": index, "uuid": uuid}
    return mappings or NA


def collect(lines: list[EvidenceLine], root_catalog_id: str | None) -> dict[str, Any]:
    ordered = sorted(lines, key=lambda line: line.time_ms)
    watchdog_time, watchdog_timeout = _watchdog(ordered)
    recovery, investigatory = resolution_for(root_catalog_id)
    return {
        "nccl_version": _first(NCCL_VERSION, ordered),
        "cuda_version": _first(CUDA_VERSION, ordered),
        "watchdog_error_time": watchdog_time,
        "watchdog_timeout_seconds": watchdog_timeout,
        "bad_pairs": _bad_pairs(ordered),
        "xid_pci_mappings": _xid_pci_mappings(ordered),
        "recovery_actions": recovery,
        "investigatory_actions": investigatory,
    }
