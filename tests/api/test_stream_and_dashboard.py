"""Verdicts the live pipeline decided, read through the v2 GET and seen on the dashboard in
headless Chromium (issue 12). The screenshots are kept under build/test-artifacts/."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.api.conftest import RunningApi, delete_prefix
from tests.conftest import REPO
from tests.golden.stories import RECORDINGS
from tests.pipeline.conftest import Pipeline
from tests.pipeline.results import expected_verdicts, wait_for_verdicts

pytestmark = [pytest.mark.services, pytest.mark.slow]

ARTIFACTS = Path(os.environ.get("FAULTSTREAM_TEST_ARTIFACTS", REPO / "build" / "test-artifacts"))
HOSTILE = '<script>document.title="pwned"</script><img src=x onerror=alert(1)>'
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _hostile_recording(path: Path) -> Path:
    """A failed job whose root line carries HTML and script, as any application may print."""
    records = [
        {
            "topic": "logs.applog",
            "value": {
                "host": "gpu101",
                "message": f"{HOSTILE} [rank 0] RuntimeError: CUDA out of memory",
                "source_type": "file",
                "timestamp": "2024-06-01T10:29:00Z",
                "job_id": "4990",
            },
            "key": None,
            "timestamp": 1717237740000,
        },
        {
            "topic": "events.scheduler",
            "value": {
                "jobid": 4990,
                "username": "eve",
                "@start": "2024-06-01T10:00:00",
                "@end": "2024-06-01T10:30:00",
                "nodes": "gpu[101-102]",
                "exit_code": "1:0",
                "state": "FAILED",
                "job_name": "xss",
            },
            "key": None,
            "timestamp": 1717237800000,
        },
    ]
    path.write_text("".join(json.dumps(record) + "\n" for record in records))
    return path


def _chromium(*args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="fs-chromium-") as profile:
        return subprocess.run(
            ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        )


@pytest.fixture(scope="module")
def decided(services, tmp_path_factory):
    """The pipeline's verdicts for a GPU that fell off the bus and the hostile job, in Redis."""
    workdir = tmp_path_factory.mktemp("stream")
    running = Pipeline(services, workdir, f"tapi{os.getpid()}.")
    recordings = [
        RECORDINGS / "xid79_one_of_sixteen.jsonl",
        RECORDINGS / "canonical_scheduler_nic_fatal.jsonl",  # a Kueue workload, kueue:ml/gpt-sft-7
        _hostile_recording(workdir / "hostile.jsonl"),
    ]
    expected = expected_verdicts(recordings, running.grace_s)
    running.extractor()
    running.correlator()
    try:
        running.load(*recordings)
        got = wait_for_verdicts(services.redis, running.prefix, expected)
        assert set(got) >= {"4101", "4990", "kueue:ml/gpt-sft-7"}, running.logs()
    finally:
        running.stop()
    api = RunningApi(services.redis, running.prefix, workdir)
    api.start()
    yield api, got
    api.stop()
    delete_prefix(services.redis, running.prefix)


def test_a_verdict_the_stream_decided_is_read_through_the_same_get_by_workload_id(decided):
    api, stored = decided
    answer = api.attribution("4101")

    assert answer["verdict"] == stored["4101"]["verdict"]
    assert answer["verdict"]["attribution_outcome"] == "Fail Hardware"
    assert answer["verdict"]["root_symptom"]["source"]["observation_id"].startswith("tapi")  # a Kafka record
    assert answer["collectors"]["recovery_actions"] == ["RESTART_BM"]
    assert api.call("GET", "/v2/attributor/123456789/attribution")[0] == 404  # neither attributor nor workload


def test_a_kueue_workload_the_stream_decided_is_read_by_its_id_with_the_slash_encoded(decided):
    api, stored = decided
    answer = api.attribution(quote("kueue:ml/gpt-sft-7", safe=""))

    assert answer["workload_id"] == "kueue:ml/gpt-sft-7"
    assert answer["verdict"] == stored["kueue:ml/gpt-sft-7"]["verdict"]


def test_the_dashboard_filters_by_domain_node_and_time(decided):
    api, _ = decided

    def rows(query: str) -> str:
        status, page = api.raw("GET", f"/?{query}", base=api.web)
        assert status == 200
        return page.decode()

    assert ">4101<" in rows("domain=hardware") and ">4990<" not in rows("domain=hardware")
    assert ">4990<" in rows("node=gpu101") and ">4101<" not in rows("node=gpu101")
    assert ">4990<" in rows("since=2024-06-01T00:00:00Z") and ">4101<" not in rows("since=2024-06-01T00:00:00Z")
    assert ">4101<" in rows("until=2024-05-31T00:00:00Z") and ">4990<" not in rows("until=2024-05-31T00:00:00Z")


def test_headless_chromium_shows_the_pipelines_verdicts_and_log_html_only_as_text(decided):
    api, _ = decided
    assert shutil.which("chromium"), "Debian chromium is missing: bash scripts/install.sh installs it"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    listing = _chromium("--dump-dom", f"{api.web}/").stdout
    assert "Fail Hardware" in listing and "gpu007" in listing  # the pipeline's verdict for 4101
    assert '&lt;script&gt;document.title="pwned"&lt;/script&gt;' in listing
    assert "<script" not in listing and "<img" not in listing  # the log's markup never became elements

    timeline = _chromium("--dump-dom", f"{api.web}/workload/{quote('4101')}").stdout
    assert "gpu_fallen_off_bus" in timeline and 'class="root"' in timeline and "downstream" in timeline
    hostile = _chromium("--dump-dom", f"{api.web}/workload/4990").stdout
    assert "<title>Workload 4990</title>" in hostile  # the script did not run: the title is ours
    assert "&lt;img src=x onerror=alert(1)&gt;" in hostile

    for name, path in (("dashboard.png", "/"), ("timeline-4101.png", "/workload/4101")):
        (ARTIFACTS / name).unlink(missing_ok=True)
        _chromium("--window-size=1400,900", f"--screenshot={ARTIFACTS / name}", f"{api.web}{path}")
        assert (ARTIFACTS / name).stat().st_size > 10_000, name
