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
    count: int, seed: int = 7, symptom_rate: float = 0.001, nodes: int = 256, hosts: list[str] | None = None
) -> Iterator[tuple[str, str, str]]:
    """(text, source, host) tuples; hosts ``gpu0000``… unless ``hosts`` names them."""
    rng = random.Random(seed)
    symptoms = symptom_lines() if symptom_rate else []
    sources = ("applog", "applog", "applog", "syslog", "dmesg")
    for index in range(count):
        host = hosts[rng.randrange(len(hosts))] if hosts else f"gpu{rng.randrange(nodes):04d}"
        if symptoms and rng.random() < symptom_rate:
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


def shipper_record(text: str, source: str, host: str, ms: int) -> dict:
    """A recording record as Vector (applog) or Fluent Bit (dmesg, syslog) ships the line."""
    if source == "applog":
        value = {
            "host": host,
            "message": text,
            "source_type": "file",
            "timestamp": iso(ms),
            "file": "/var/log/train/rank0.log",
        }
        return {"topic": "logs.applog", "value": value, "key": None, "timestamp": ms + 50}
    if source == "dmesg":
        value = {"@timestamp": ms / 1000, "log": f"[ 8123.123456] {text}", "hostname": host}
        return {"topic": "logs.dmesg", "value": value, "key": None, "timestamp": ms + 50}
    value = {"@timestamp": ms / 1000, "MESSAGE": text, "_HOSTNAME": host, "SYSLOG_IDENTIFIER": "kernel"}
    return {"topic": "logs.syslog", "value": value, "key": None, "timestamp": ms + 50}


def jobcomp_record(jobid: int, start: int, end: int, nodes: str, state: str = "FAILED") -> dict:
    """A Slurm jobcomp/kafka record of a job's end (``nodes`` as a Slurm hostlist)."""
    value = {
        "jobid": jobid,
        "username": "alice",
        "user_id": 1001,
        "@start": iso(start)[:19],
        "@end": iso(end)[:19],
        "nodes": nodes,
        "state": state,
        "exit_code": "1:0",
        "partition": "gpu",
        "job_name": "bench",
    }
    return {"topic": "events.scheduler", "value": value, "key": str(jobid), "timestamp": end + 100}


# --- a failure at scale: one GPU falls off the bus, every other rank loses its peer ------------

XID_79 = "NVRM: Xid (PCI:0000:e4:00): 79, pid=4242, name=python, GPU has fallen off the bus."
PEER_CLOSED = (
    "{h}:{p}:{p} [{d}] misc/socket.cc:49 NCCL WARN socketProgress: "
    "Connection closed by remote peer {peer}<{port}>"
)
STORM_JOB = 7001
#: Event time the storm run spans; the storm is its last tenth (well inside the transport
#: refiner's 900 s window after the Xid).
STORM_RUN_MS = 30 * 60_000


def storm_hosts(nodes: int) -> list[str]:
    return [f"gpu{n:05d}" for n in range(nodes)]


def storm_xid_node(nodes: int) -> str:
    return storm_hosts(nodes)[nodes // 3]


def storm_records(
    nodes: int,
    count: int,
    t0_ms: int = 1_714_557_600_000,
    seed: int = 7,
    storm_share: float = 0.1,
    after_s: int = 0,
) -> Iterator[dict]:
    """One job on ``nodes`` nodes (8 GPUs each), ``count`` log lines, in time order: healthy
    training and system lines for nine tenths of the run, then one node's Xid 79, then an NCCL
    "Connection closed by remote peer <that node>" storm from every node for the last tenth,
    then the job's end (Slurm jobcomp, FAILED), then ``after_s`` seconds of the cluster's
    healthy lines (:func:`after_the_end`). The right verdict: hardware, the Xid node, root
    gpu_fallen_off_bus."""
    hosts = storm_hosts(nodes)
    xid_node = storm_xid_node(nodes)
    storm = max(int(count * storm_share), nodes)  # every node takes part in the storm
    healthy = max(0, count - storm - 1)
    step = STORM_RUN_MS / count
    index = 0
    for text, source, host in lines(healthy, seed=seed, symptom_rate=0, hosts=hosts):
        yield shipper_record(text, source, host, t0_ms + int(index * step))
        index += 1
    yield shipper_record(XID_79, "dmesg", xid_node, t0_ms + int(index * step))
    index += 1
    for n in range(storm):
        host = hosts[n % nodes]
        values = {"h": host, "p": 1000 + n % 60000, "d": n % 8, "peer": xid_node, "port": 40000 + n % 20000}
        yield shipper_record(PEER_CLOSED.format(**values), "applog", host, t0_ms + int(index * step))
        index += 1
    end_ms = t0_ms + int(index * step) + 1_000
    yield jobcomp_record(STORM_JOB, t0_ms, end_ms, f"gpu[00000-{nodes - 1:05d}]")
    yield from after_the_end(hosts, end_ms, after_s)


AFTER_PER_SECOND = 64


def after_the_end(
    hosts: list[str], end_ms: int, seconds: int, per_second: int = AFTER_PER_SECOND
) -> Iterator[dict]:
    """The cluster goes on logging after the job's end, as a live one does: ``per_second`` healthy
    lines a second (hosts and sources in turn, so every ingest partition hears them) for
    ``seconds``. Without them the event time stops at the job's end, and a live verdict can only
    come once the input partitions count as idle (``idle_partition_s``)."""
    sources = ("applog", "syslog", "dmesg")
    for second in range(1, seconds + 1):
        for n in range(per_second):
            text = HEALTHY[n % len(HEALTHY)].format(
                r=n, i=n, s=second, l=n, g=n, h=hosts[n % len(hosts)], p=1000 + n, d=n % 8, c=second % 60, n=n
            )
            host = hosts[(second * per_second + n) % len(hosts)]
            yield shipper_record(text, sources[n % 3], host, end_ms + second * 1000 + n)


def write_storm_recording(
    path, nodes: int, count: int, t0_ms: int = 1_714_557_600_000, storm_share: float = 0.1, after_s: int = 0
) -> int:
    """Write :func:`storm_records` as a recording (JSON Lines); returns the number of log lines."""
    import orjson

    with open(path, "wb") as out:
        for record in storm_records(nodes, count, t0_ms, storm_share=storm_share, after_s=after_s):
            out.write(orjson.dumps(record) + b"\n")
    return count
