"""The fleet view (issue 8): a node or a pair that fails under many jobs is one finding.

Real Redis, through the verdict sink's script; read back with sinks.fleet_reader and the CLI.
"""

from __future__ import annotations

import orjson
import pytest

from sinks.fleet_reader import node_finding, worst_nodes, worst_pairs
from sinks.redis_verdicts import RedisVerdictSink
from streams.cli import main
from streams.cli_pipeline import _switch_ports
from tests.sinks.verdicts import make_verdict, run


def _not_responding(workload_id: str, node: str, end: str, revision: int = 1) -> dict:
    verdict = make_verdict(workload_id, sub_domain="infrastructure", nodes=[node], end=end, revision=revision)
    verdict["root_symptom"] = _root("slurm_node_not_responding", node, {"node": node})
    return verdict


def _root(symptom: str, node: str, captures: dict[str, str]) -> dict:
    return {
        "symptom": symptom,
        "rule_id": f"test.{symptom}",
        "catalog_id": None,
        "domain": "infrastructure",
        "node": node,
        "time": "2026-03-01T11:59:00.000Z",
        "time_ms": 0,
        "source": "syslog",
        "origin": "t:0:0",
        "line": "...",
        "captures": captures,
    }


async def _apply(
    redis_url: str, prefix: str, *verdicts: dict, window_s: float = 7 * 86400, switch_ports: dict | None = None
) -> None:
    sink = RedisVerdictSink(redis_url, prefix=prefix, fleet_window_s=window_s, switch_ports=switch_ports)
    try:
        for verdict in verdicts:
            await sink.add(verdict)
        await sink.flush()
    finally:
        await sink.close()


def test_a_node_that_stops_responding_under_many_jobs_is_one_finding(redis_url, prefix, capsys):
    ends = ["2026-03-01T10:00:00Z", "2026-03-02T10:00:00Z", "2026-03-03T10:00:00Z"]
    verdicts = [_not_responding(f"job-{i}", "gpu004", end) for i, end in enumerate(ends)]
    verdicts.append(_not_responding("job-x", "gpu009", "2026-03-03T11:00:00Z"))
    run(_apply(redis_url, prefix, *verdicts))

    worst = run(worst_nodes(redis_url, prefix, top=10))
    assert [(f.node, f.workloads) for f in worst] == [("gpu004", 3), ("gpu009", 1)]
    assert worst[0].root_symptoms == {"slurm_node_not_responding": 3}
    assert [w for w, _, _ in worst[0].latest] == ["job-2", "job-1", "job-0"]  # latest job end first

    assert main(["nodes", "--redis-url", redis_url, "--prefix", prefix, "--top", "1"]) == 0
    table = capsys.readouterr().out.splitlines()
    assert table[0].startswith("NODE")
    assert table[1].split()[:3] == ["gpu004", "3", "slurm_node_not_responding"]
    assert len(table) == 2  # --top 1: one node, no pairs


def test_a_revision_that_blames_another_node_moves_the_workload_and_a_replay_changes_nothing(redis_url, prefix):
    first = _not_responding("job-1", "gpu001", "2026-03-01T10:00:00Z")
    second = _not_responding("job-1", "gpu002", "2026-03-01T10:00:00Z", revision=2)
    run(_apply(redis_url, prefix, first, second, first))  # the replay of revision 1 is stale
    assert [f.node for f in run(worst_nodes(redis_url, prefix, top=10))] == ["gpu002"]
    assert run(node_finding(redis_url, prefix, "gpu001")) is None


def test_peers_named_by_survivors_and_the_failing_host_port_are_aggregated_across_jobs(
    redis_url, prefix, capsys
):
    verdicts = []
    for i in range(2):
        verdict = make_verdict(f"job-{i}", nodes=["gpu007"], end=f"2026-03-0{i + 1}T10:00:00Z")
        verdict["root_symptom"] = _root("nic_link_down", "gpu007", {"device": "mlx5_0", "port": "1"})
        verdict["chain"] = [
            {
                "symptom": "nccl_remote_peer_closed",
                "rule_id": "network.nccl.remote-peer-closed",
                "domain": "infrastructure",
                "role": "downstream",
                "nodes": ["gpu001", "gpu002"],
                "first": "2026-03-01T09:59:00.000Z",
                "last": "2026-03-01T09:59:30.000Z",
                "count": 40,
                "explained_by": "named peer <- network.link.down@gpu007",
            }
        ]
        verdicts.append(verdict)
    run(_apply(redis_url, prefix, *verdicts))

    peers = run(worst_pairs(redis_url, prefix, "peer", top=10))
    assert sorted((p.left, p.right, p.workloads) for p in peers) == [
        ("gpu001", "gpu007", 2),
        ("gpu002", "gpu007", 2),
    ]
    ports = run(worst_pairs(redis_url, prefix, "port", top=10, node="gpu007"))
    assert [(p.left, p.right, p.workloads) for p in ports] == [("gpu007/mlx5_0:1", "unknown", 2)]

    assert main(["nodes", "--redis-url", redis_url, "--prefix", prefix, "--node", "gpu007", "--json"]) == 0
    report = orjson.loads(capsys.readouterr().out)
    assert report["nodes"][0]["workloads"] == 2
    assert {(p["left"], p["right"]) for p in report["peers"]} == {("gpu001", "gpu007"), ("gpu002", "gpu007")}


def test_the_cabling_map_names_the_switch_port_a_line_does_not(redis_url, prefix):
    verdict = make_verdict("job-1", nodes=["gpu003"])
    verdict["root_symptom"] = _root("nic_link_down", "gpu003", {"device": "mlx5_0", "port": "1"})
    named = make_verdict("job-2", nodes=["gpu004"])
    named["root_symptom"] = _root("nic_link_down", "gpu004", {"device": "ib0", "switch_port": "leaf-2/5"})
    cabling = {"gpu003/mlx5_0:1": "leaf-07/17", "gpu004/ib0": "leaf-9/9"}
    run(_apply(redis_url, prefix, verdict, named, switch_ports=cabling))
    ports = run(worst_pairs(redis_url, prefix, "port", top=10))
    assert sorted((p.left, p.right) for p in ports) == [
        ("gpu003/mlx5_0:1", "leaf-07/17"),
        ("gpu004/ib0", "leaf-2/5"),
    ]


def test_verdicts_older_than_the_window_drop_out_and_the_sets_expire(redis_url, prefix, db):
    old = _not_responding("job-old", "gpu004", "2026-03-01T10:00:00Z")
    new = _not_responding("job-new", "gpu004", "2026-03-01T12:00:00Z")
    run(_apply(redis_url, prefix, old, new, window_s=3600))  # two hours apart, a one-hour window
    finding = run(node_finding(redis_url, prefix, "gpu004"))
    assert finding is not None and [w for w, _, _ in finding.latest] == ["job-new"]
    assert db.hkeys(f"{prefix}fleet:node:gpu004:roots") == ["job-new"]
    assert 0 < db.ttl(f"{prefix}fleet:node:gpu004") <= 3600


def test_success_and_nodeless_verdicts_add_nothing(redis_url, prefix, db):
    run(
        _apply(redis_url, prefix, make_verdict("ok", terminal_state="success", sub_domain=None, nodes=["gpu1"]))
    )
    run(_apply(redis_url, prefix, make_verdict("user", sub_domain="user", nodes=[])))
    assert db.keys(f"{prefix}fleet:*") == []


def test_nodes_says_in_one_line_when_redis_does_not_answer(capsys):
    assert main(["nodes", "--redis-url", "redis://127.0.0.1:1/0"]) == 2
    assert capsys.readouterr().err.startswith("faultstream: cannot reach Redis at redis://127.0.0.1:1/0")


def test_the_cabling_map_is_one_yaml_mapping_and_anything_else_is_refused(tmp_path):
    cabling = tmp_path / "cabling.yaml"
    cabling.write_text("gpu003/mlx5_0:1: leaf-07/17\ngpu003/mlx5_1:1: leaf-08/17\n", encoding="utf-8")
    assert _switch_ports(cabling) == {"gpu003/mlx5_0:1": "leaf-07/17", "gpu003/mlx5_1:1": "leaf-08/17"}
    cabling.write_text("- gpu003\n", encoding="utf-8")
    with pytest.raises(ValueError, match="one mapping of host port: switch port"):
        _switch_ports(cabling)


def test_a_node_name_with_a_bar_cannot_merge_two_peer_pairs():
    from sinks.fleet import pair_member, pair_sides

    one, other = pair_member("a|b", "c"), pair_member("a", "b|c")
    assert one != other
    assert (pair_sides(one), pair_sides(other)) == (("a|b", "c"), ("a", "b|c"))
    assert pair_sides(pair_member("gpu%7C1", "gpu002")) == ("gpu%7C1", "gpu002")  # escapes survive too
    assert pair_member("gpu001", "gpu007") == "gpu001|gpu007"  # plain names keep the stored form
