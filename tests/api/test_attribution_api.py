"""The NVIDIA Attribution v2 API against a running ``faultstream api`` on real Redis (issue 12)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import aiohttp
import pytest

from tests.api.conftest import RunningApi, delete_prefix, on

pytestmark = pytest.mark.services

KUEUE_PYTORCH_JOB = {
    "id": "train-llm-7",
    "type": "kueue",
    "job_start_time": "2025-03-01T10:00:00Z",
    "job_end_time": "2025-03-01T11:00:00Z",
    "interest_start_time": "2025-03-01T10:00:00Z",
    "interest_end_time": "2025-03-01T11:00:00Z",
    "timezone": "UTC",
    "status": "failed",
    "nodes": {"node-a": [0, 1]},
    "name": "pretrain",
    "username": "alice",
    "framework": "pytorch",
}
METADATA = {"cluster": "c1", "agent": "faultstream-tests", "tenant": "research", "ruleset": "default"}
TWO_NODE_SLURM_JOB = {
    "id": 4242,
    "type": "slurm",
    "job_start_time": "2025-03-01T10:00:00Z",
    "job_end_time": "2025-03-01T11:01:00Z",
    "status": "FAILED",
    "nodes": {"node-a": [0, 1], "node-b": [0, 1]},
    "username": "bob",
}
UUID = "GPU-5e2d8c1a-1b2c-4d3e-8f90-123456789abc"
XID_79 = "[3012.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=2211, name=python, GPU has fallen off the bus."


def test_the_walkthrough_step_for_step(api: RunningApi):
    attributor = api.create(KUEUE_PYTORCH_JOB, METADATA)
    assert isinstance(attributor, int)

    observation = api.observe(
        attributor,
        "applog",
        [on("node-a", "[rank 0] RuntimeError: CUDA out of memory")],
        start="2025-03-01T10:00:00Z",
        end="2025-03-01T11:00:00Z",
    )
    answer = api.attribution(attributor)

    verdict = answer["verdict"]
    assert verdict["attribution_outcome"] == "Fail User"
    assert verdict["failure_domains"] == ["User"]
    assert verdict["terminal_states"] == ["Fail"]
    assert verdict["root_symptom"]["source"] == {
        "observation_id": observation,
        "source": "applog",
        "pos": 1,
        "line": "[rank 0] RuntimeError: CUDA out of memory",
        "rule": "app.cuda.oom",
        "time": "2025-03-01T11:00:00.000Z",  # an undated line sits at the interval's end
    }
    assert answer["symptoms"]["gpu_out_of_memory"][0]["node"] == "node-a"
    assert answer["observation_context"] == [observation]
    assert answer["collectors"]["recovery_actions"] == "NA"  # not an Xid: the catalog says nothing

    assert api.call("DELETE", f"/v2/attributor/{attributor}")[0] == 200
    status, error = api.call("GET", f"/v2/attributor/{attributor}/attribution")
    assert (status, error["detail"]) == (404, f"unknown attributor {attributor}")


def _hardware_story(api: RunningApi) -> tuple[int, int]:
    """Xid 79 on node-b; node-a's NCCL loses its peer and its watchdog fires later."""
    attributor = api.create(TWO_NODE_SLURM_JOB)
    kernel = api.observe(
        attributor,
        "dmesg",
        [
            on("node-b", f"[  12.5] NVRM: GPU at PCI:0000:3b:00: {UUID}", "2025-03-01T10:00:05Z"),
            on("node-b", f"GPU 0: NVIDIA H100 80GB HBM3 (UUID: {UUID})", "2025-03-01T10:00:06Z"),
            on("node-b", XID_79, "2025-03-01T10:50:00Z"),
        ],
    )
    api.observe(
        attributor,
        "applog",
        [
            on("node-a", "node-a:1234:1300 [0] NCCL INFO NCCL version 2.18.5+cuda12.2", "2025-03-01T10:00:10Z"),
            on(
                "node-a",
                "node-a:1234:1300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
                "2025-03-01T10:00:10Z",
            ),
            on(
                "node-b",
                "node-b:2211:2300 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.2<0>",
                "2025-03-01T10:00:10Z",
            ),
            on(
                "node-a",
                "node-a:1234:1301 [0] transport/net_ib.cc:1295 NCCL WARN NET/IB : Got completion from peer "
                "10.0.0.2<50066> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
                "2025-03-01T10:50:30Z",
            ),
            on(
                "node-a",
                "[rank 0]:[E ProcessGroupNCCL.cpp:563] [Rank 0] Watchdog caught collective operation timeout: "
                "WorkNCCL(SeqNum=1234, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for "
                "600012 milliseconds before timing out.",
                "2025-03-01T11:00:30Z",
            ),
        ],
    )
    return attributor, kernel


def test_a_gpu_fallen_off_the_bus_is_hardware_and_the_collectors_read_the_logs(api: RunningApi):
    attributor, kernel = _hardware_story(api)
    answer = api.attribution(attributor)

    assert answer["verdict"]["attribution_outcome"] == "Fail Hardware"
    assert answer["verdict"]["failure_domains"] == ["Hardware"]
    root = answer["verdict"]["root_symptom"]
    assert (root["symptom"], root["catalog_id"]) == ("gpu_fallen_off_bus", "XID-79")
    assert (root["source"]["observation_id"], root["source"]["pos"], root["source"]["line"]) == (
        kernel,
        3,
        XID_79,
    )
    assert [(s["node"], s["status"]) for s in answer["symptoms"]["gpu_fallen_off_bus"]] == [("node-b", "bad")]
    assert answer["collectors"] == {
        "nccl_version": "2.18.5+cuda12.2",
        "cuda_version": "12.2",
        "watchdog_error_time": "2025-03-01T11:00:30.000Z",
        "watchdog_timeout_seconds": 600.0,
        "bad_pairs": [{"node": "node-a", "peer": "node-b"}],  # the peer's address is node-b's own
        "xid_pci_mappings": {"0000:3b:00": {"gpu_index": "0", "uuid": UUID}},
        "recovery_actions": ["RESTART_BM"],
        "investigatory_actions": "NA",
    }


def test_the_attribution_is_what_faultstream_backtest_says_on_the_same_evidence(api: RunningApi, tmp_path):
    attributor, _ = _hardware_story(api)
    answer = api.attribution(attributor)

    status, recording = api.raw("GET", f"/v2/attributor/{attributor}/recording")
    assert status == 200
    (tmp_path / "evidence.jsonl").write_bytes(recording)
    backtest = subprocess.run(
        [sys.executable, "-m", "streams", "backtest", "-i", str(tmp_path / "evidence.jsonl")],
        capture_output=True,
        text=True,
        check=True,
    )
    [offline] = [json.loads(line) for line in backtest.stdout.splitlines() if line.strip()]
    assert answer["faultstream"] == offline


def test_two_independent_causes_in_two_domains_are_ambiguous(api: RunningApi):
    attributor = api.create({**TWO_NODE_SLURM_JOB, "id": "4243"})
    api.observe(attributor, "dmesg", [on("node-b", XID_79, "2025-03-01T10:50:00Z")])
    api.observe(
        attributor,
        "applog",
        [on("node-a", "[rank 0] RuntimeError: CUDA out of memory", "2025-03-01T10:20:00Z")],
    )

    verdict = api.attribution(attributor)["verdict"]

    assert verdict["attribution_outcome"] == "Fail Ambiguous"
    assert sorted(verdict["failure_domains"]) == ["Hardware", "User"]
    assert verdict["uncertainty_type"] == "competing_domains"


def test_an_observation_after_a_get_gives_a_new_answer(api: RunningApi):
    attributor = api.create({**TWO_NODE_SLURM_JOB, "id": "4244"})
    assert api.attribution(attributor)["verdict"]["attribution_outcome"] == "Fail Unattributed"

    api.observe(attributor, "dmesg", [on("node-b", XID_79, "2025-03-01T10:50:00Z")])
    assert api.attribution(attributor)["verdict"]["attribution_outcome"] == "Fail Hardware"

    api.observe(
        attributor,
        "applog",
        [on("node-a", "[rank 0] RuntimeError: CUDA out of memory", "2025-03-01T10:20:00Z")],
    )
    assert api.attribution(attributor)["verdict"]["attribution_outcome"] == "Fail Ambiguous"


def test_a_thousand_concurrent_observations_are_all_in_the_next_attribution(api: RunningApi):
    attributor = api.create({**TWO_NODE_SLURM_JOB, "id": "4245"})
    healthy = [
        on("node-a", f"[rank 0] iteration {n}/5000 | loss 2.1", "2025-03-01T10:10:00Z") for n in range(1000)
    ]
    healthy[637] = on("node-b", XID_79, "2025-03-01T10:50:00Z")

    async def post_all() -> list[int]:
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200)) as session:

            async def post(line: dict) -> int:
                body = {"context": {"source": "dmesg"}, "body": json.dumps([line])}
                async with session.post(
                    f"{api.base}/v2/attributor/{attributor}/observation", json=body
                ) as answer:
                    assert answer.status == 200, await answer.text()
                    return (await answer.json())["observation_id"]

            return await asyncio.gather(*(post(line) for line in healthy))

    started = time.monotonic()
    ids = asyncio.run(post_all())
    posted_s = time.monotonic() - started
    answer = api.attribution(attributor)

    assert len(set(ids)) == 1000
    assert sorted(answer["observation_context"]) == sorted(ids)
    assert answer["verdict"]["attribution_outcome"] == "Fail Hardware"
    assert answer["verdict"]["root_symptom"]["source"]["observation_id"] == ids[637]
    assert answer["faultstream"]["lines_seen"] >= 1000
    assert posted_s < 60, f"1,000 observations took {posted_s:.1f} s"


def test_bad_input_is_a_4xx_with_a_json_reason(api: RunningApi):
    attributor = api.create(KUEUE_PYTORCH_JOB)
    observation = f"/v2/attributor/{attributor}/observation"
    cases = {
        "unknown attributor": (
            "POST",
            "/v2/attributor/1999999999999/observation",
            b'{"context":{},"body":"[]"}',
        ),
        "unknown attribution": ("GET", "/v2/attributor/1999999999999/attribution", None),
        "unknown delete": ("DELETE", "/v2/attributor/1999999999999", None),
        "request not JSON": ("POST", "/v2/attributor", b"{workload"),
        "no workload": ("POST", "/v2/attributor", b'{"metadata": {}}'),
        "unknown status": (
            "POST",
            "/v2/attributor",
            json.dumps({"workload": {"id": 1, "status": "exploded"}}).encode(),
        ),
        "body string not JSON": ("POST", observation, json.dumps({"context": {}, "body": "[{oops"}).encode()),
        "body not a list of lines": (
            "POST",
            observation,
            json.dumps({"context": {}, "body": '{"body": "x"}'}).encode(),
        ),
        "line without body": (
            "POST",
            observation,
            json.dumps({"context": {}, "body": '[{"resources": []}]'}).encode(),
        ),
        "oversize": ("POST", observation, b'{"context": {}, "body": "' + b"x" * (9 << 20) + b'"}'),
        "bad page": ("GET", "/v2/attributor?limit=0", None),
    }
    expected = {
        "unknown attributor": 404,
        "unknown attribution": 404,
        "unknown delete": 404,
        "request not JSON": 400,
        "no workload": 422,
        "unknown status": 422,
        "body string not JSON": 400,
        "body not a list of lines": 400,
        "line without body": 400,
        "oversize": 413,
        "bad page": 400,
    }
    for name, (method, path, data) in cases.items():
        status, raw = api.raw(method, path, data)
        error = json.loads(raw)
        assert (name, status) == (name, expected[name]), error
        assert error["status"] == status and error["detail"], name
    assert (
        api.call("GET", f"/v2/attributor/{attributor}")[1]["observation_context"] == []
    )  # nothing half-stored


def test_attributors_are_listed_page_by_page(api: RunningApi):
    _, first = api.call("GET", "/v2/attributor?limit=500")
    mine = [api.create({**KUEUE_PYTORCH_JOB, "id": f"page-{n}"}) for n in range(3)]
    start = first["total"]

    status, page = api.call("GET", f"/v2/attributor?offset={start}&limit=2")
    assert status == 200
    assert [a["attributor_id"] for a in page["attributors"]] == mine[:2]
    assert page["next_offset"] == start + 2
    _, rest = api.call("GET", f"/v2/attributor?offset={page['next_offset']}&limit=2")
    assert [a["attributor_id"] for a in rest["attributors"]] == mine[2:]
    assert rest["next_offset"] is None
    assert rest["attributors"][0]["workload"]["id"] == "page-2"


def test_a_restarted_api_keeps_its_attributors_and_their_evidence(services, tmp_path):
    first = RunningApi(services.redis, f"fsapi:restart:{time.time_ns()}:", tmp_path)
    first.start()
    try:
        attributor = first.create(KUEUE_PYTORCH_JOB)
        first.observe(attributor, "applog", [on("node-a", "[rank 0] RuntimeError: CUDA out of memory")])
        first.stop()
        first.start()
        assert first.attribution(attributor)["verdict"]["attribution_outcome"] == "Fail User"
    finally:
        first.stop()
        delete_prefix(services.redis, first.prefix)


def test_the_running_api_serves_the_openapi_document_of_the_docs(api: RunningApi):
    from streams.api.openapi import OPENAPI

    assert api.call("GET", "/v2/openapi.json") == (200, OPENAPI)


def test_times_without_a_zone_are_in_the_workloads_timezone(api: RunningApi):
    paris = {**TWO_NODE_SLURM_JOB, "id": "4246", "timezone": "Europe/Paris"}
    paris.update(job_start_time="2025-03-01T11:00:00", job_end_time="2025-03-01T12:01:00")  # 10:00Z .. 11:01Z
    attributor = api.create(paris)
    api.observe(attributor, "dmesg", [on("node-b", XID_79, "2025-03-01T11:50:00")])

    answer = api.attribution(attributor)

    assert answer["verdict"]["root_symptom"]["source"]["time"] == "2025-03-01T10:50:00.000Z"
    assert answer["faultstream"]["job"]["start"] == "2025-03-01T10:00:00.000Z"
    status, error = api.call("POST", "/v2/attributor", {"workload": {**paris, "timezone": "Mars/Olympus"}})
    assert status == 422 and "timezone" in error["detail"]


def test_a_workload_that_has_not_ended_has_no_attribution_yet(api: RunningApi):
    running = {**KUEUE_PYTORCH_JOB, "id": "still-running", "status": "running", "job_end_time": None}
    attributor = api.create(running)
    api.observe(attributor, "applog", [on("node-a", "[rank 0] RuntimeError: CUDA out of memory")])

    status, error = api.call("GET", f"/v2/attributor/{attributor}/attribution")

    assert status == 409
    assert error["detail"] == "the workload has not ended: set job_end_time and a terminal status"
