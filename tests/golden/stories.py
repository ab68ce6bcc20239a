"""The golden failure stories: each builds a realistic recording and states what must come out.

``python -m tests.golden.stories`` rewrites ``tests/golden/recordings/*.jsonl`` (deterministic).
Each story starts on its own day, so all recordings can also be replayed together (the demo and
the live end-to-end tests do) without one story's nodes leaking into another's window.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tests.golden import shapes as s

DAY_MS = 86_400_000
BASE_MS = 1_714_557_600_000  # 2024-05-01T10:00:00Z
RECORDINGS = Path(__file__).parent / "recordings"
#: The stories' Slurm controller: its lines may name any job (correlator/claims.py).
SCHEDULER_HOSTS = frozenset({"slurmctl01"})


@dataclass
class Story:
    name: str
    summary: str
    expect: dict[str, Any]
    records: list[dict[str, Any]] = field(default_factory=list)


STORIES: list[Callable[[int], Story]] = []


def story(fn: Callable[[int], Story]) -> Callable[[int], Story]:
    STORIES.append(fn)
    return fn


def nodes(prefix: str, count: int) -> list[str]:
    return [f"{prefix}{i:03d}" for i in range(1, count + 1)]


def healthy_noise(
    rng: random.Random, hosts: list[str], t0: int, t1: int, every_s: float = 20.0, job_id: str | None = None
) -> list[dict[str, Any]]:
    """Lines a healthy training job and its nodes print all the time (none should match a rule)."""
    out = []
    step = int(every_s * 1000)
    for rank, host in enumerate(hosts):
        for t in range(t0 + rng.randrange(step), t1, step):
            it = (t - t0) // 1000
            out.append(
                s.vector_applog(
                    host,
                    t,
                    f"[rank {rank}] iteration {it:6d}/500000 | loss "
                    f"{2.0 + rng.random():.4f} | lr 3.0E-04 | 402.1 TFLOP/s",
                    rank,
                    job_id,
                )
            )
            if rng.random() < 0.3:
                out.append(
                    s.vector_applog(
                        host,
                        t + 7,
                        f"{host}:{4000 + rank}:{4100 + rank} [{rank % 8}] "
                        f"NCCL INFO Channel 0{rank % 4}/0 : {rank}[{rank % 8}] -> "
                        f"{(rank + 1) % len(hosts)}[{(rank + 1) % 8}] via P2P/IPC",
                        rank,
                        job_id,
                    )
                )
            if rng.random() < 0.1:
                out.append(s.raw_syslog(host, t + 11, "systemd[1]", "Started Session 4211 of user alice."))
            if rng.random() < 0.05:
                out.append(s.fluentbit_dmesg(host, t + 13, "EXT4-fs (nvme0n1p1): re-mounted. Opts: (null)"))
    return out


def write_all(directory: Path = RECORDINGS) -> list[Story]:
    directory.mkdir(parents=True, exist_ok=True)
    built = []
    for index, make in enumerate(STORIES):
        built_story = make(BASE_MS + index * DAY_MS)
        records = sorted(built_story.records, key=lambda r: r["timestamp"])
        path = directory / f"{built_story.name}.jsonl"
        path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in records))
        built.append(built_story)
    return built


from tests.golden import story_book  # noqa: E402,F401  (registers the stories)

if __name__ == "__main__":
    from tests.golden.stories import write_all as write_registered  # the module story_book filled

    for written in write_registered():
        print(f"{written.name}: {len(written.records)} records")
