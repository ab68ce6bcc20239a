"""What one batch of extracted lines contributes, collapsed before it travels.

Both the offline engine and the live extractor worker call these, so a batch of ten thousand
identical NCCL lines reaches the correlator as one :class:`EvidenceGroup` per node and minute,
and per-node line counts as one number per node and minute.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from correlator.evidence import SLOT_MS, EvidenceGroup, group_key
from correlator.peers import SELF_ADDRESS_CAPTURE
from correlator.records import LogLine
from extractors.symptom import Symptom
from extractors.vocabulary import Role

__all__ = ["BatchContribution", "collapse_batch"]


@dataclass
class BatchContribution:
    node_groups: list[EvidenceGroup] = field(default_factory=list)
    direct_groups: list[EvidenceGroup] = field(default_factory=list)
    unplaced: list[Symptom] = field(default_factory=list)
    #: (node, slot start ms) → (line count, latest event time)
    node_lines: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)
    workload_lines: dict[str, int] = field(default_factory=dict)


def _collapse(symptoms: list[Symptom], by_workload: bool) -> list[EvidenceGroup]:
    groups: dict[tuple, EvidenceGroup] = {}
    for symptom in symptoms:
        # a workload's lines apart per claiming host: correlator/claims.py judges each host
        key = (symptom.workload_id, symptom.claimed_from) if by_workload else (None, None)
        key = (*key, *group_key(symptom))
        group = groups.get(key)
        if group is None:
            groups[key] = EvidenceGroup.start(symptom)
        else:
            group.add(symptom)
    return list(groups.values())


def _count_lines(lines: Sequence[LogLine], out: BatchContribution) -> None:
    node_lines: dict[tuple[str, int], list[int]] = {}
    for line in lines:
        if line.workload_id:
            out.workload_lines[line.workload_id] = out.workload_lines.get(line.workload_id, 0) + 1
        elif line.host:  # every line of a batch passes here: one key, no max() call
            time_ms = line.time_ms
            key = (line.host, time_ms // SLOT_MS)
            entry = node_lines.get(key)
            if entry is None:
                node_lines[key] = [1, time_ms]
            else:
                entry[0] += 1
                if time_ms > entry[1]:
                    entry[1] = time_ms
    out.node_lines = {(node, slot * SLOT_MS): (c, t) for (node, slot), (c, t) in node_lines.items()}


def _worth_keeping(symptom: Symptom) -> bool:
    """Benign symptoms are matched only to be ignored, and no decision reads them, except the
    node addresses NCCL prints (``own_ip``: the peer map of correlator/peers.py). Dropping the
    rest here keeps a storm of healthy ``Link is up`` lines out of every node's state."""
    return symptom.role != Role.BENIGN or SELF_ADDRESS_CAPTURE in symptom.captures


def collapse_batch(lines: Sequence[LogLine], symptoms: list[Symptom]) -> BatchContribution:
    out = BatchContribution()
    _count_lines(lines, out)
    symptoms = [s for s in symptoms if _worth_keeping(s)]
    direct = [s for s in symptoms if s.workload_id]
    on_nodes = [s for s in symptoms if not s.workload_id and s.node]
    out.unplaced = [s for s in symptoms if not s.workload_id and not s.node]
    out.node_groups = _collapse(on_nodes, by_workload=False)
    out.direct_groups = _collapse(direct, by_workload=True)
    return out
