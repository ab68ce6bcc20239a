"""Realistic benchmark input: mostly healthy lines, about 0.1 % symptoms, from many nodes.

Healthy lines are what GPU nodes print all day (training progress, NCCL INFO, systemd, kernel
chatter); symptom lines are the bundled rules' own ``match`` examples, so every family of rules
is exercised. Deterministic for a given seed.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime

from extractors.loader import load_ruleset

HEALTHY = [
    "[rank {r}] iteration {i:6d}/500000 | consumed samples: {s} | elapsed time per iteration (ms): 412.3 | "
    "learning rate: 3.000E-04 | global batch size: 1024 | lm loss: 2.{l:04d} | grad norm: 0.{g:03d} | "
    "number of skipped iterations: 0",
    "{h}:{p}:{p} [{d}] NCCL INFO Channel {c:02d}/0 : {r}[{d}] -> {n}[{d}] [send] via NET/IB/{d}/GDRDMA",
    "{h}:{p}:{p} [{d}] NCCL INFO comm 0x55d3c4e0 rank {r} nranks 256 cudaDev {d} busId 3b000 - Init COMPLETE",
    "systemd[1]: Started Session {i} of user alice.",
    "kernel: [ {s}.{p}] IPv6: ADDRCONF(NETDEV_CHANGE): ib{d}: link becomes ready",
    "sshd[{p}]: Accepted publickey for alice from 10.1.{d}.{c} port {p} ssh2: ED25519 SHA256:abc",
    "dataloader: worker {d} prefetched batch {i} in {g} ms",
    "kernel: [ {s}.{p}] EXT4-fs (nvme0n1p1): re-mounted. Opts: (null)",
    "slurmd[{p}]: launch task StepId={i}.0 request from UID:1001 GID:1000 HOST:10.0.0.{c} PORT:{p}",
    "[2024-05-01 10:{c:02d}:{d:02d},123] INFO checkpoint: saved step {i} to /lustre/ckpt in {g}.2 s",
]


def symptom_lines() -> list[tuple[str, str]]:
    """(line, source) for every match example of the bundled rules."""
    ruleset = load_ruleset()
    return [
        (ex.line, ex.source or rule.sources[0]) for rule in ruleset.symptom_rules for ex in rule.examples.match
    ]


def lines(
    count: int, seed: int = 7, symptom_rate: float = 0.001, nodes: int = 256
) -> Iterator[tuple[str, str, str]]:
    """(text, source, host) tuples."""
    rng = random.Random(seed)
    symptoms = symptom_lines()
    sources = ("applog", "applog", "applog", "syslog", "dmesg")
    for index in range(count):
        host = f"gpu{rng.randrange(nodes):04d}"
        if rng.random() < symptom_rate:
            text, source = rng.choice(symptoms)
            yield text, source, host
            continue
        template = HEALTHY[index % len(HEALTHY)]
        values = {
            "r": index % 256,
            "i": index,
            "s": index * 7,
            "l": index % 9999,
            "g": index % 997,
            "h": host,
            "p": 1000 + index % 60000,
            "d": index % 8,
            "c": index % 60,
            "n": (index + 1) % 256,
        }
        yield template.format(**values), sources[index % len(sources)], host


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
