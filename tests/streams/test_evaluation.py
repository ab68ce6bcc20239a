"""``faultstream eval``: labelled lines become one-line failed workloads judged by the real engine."""

from __future__ import annotations

import json

import pytest

from streams.cli import main
from streams.evaluation import LabelError, LabelledLine, _survivors, evaluate, load_labels, split_of

XID79 = "[ 812.1] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python, GPU has fallen off the bus."
OOM = "[rank 0] RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB"
NCCL_INFO = "gpu01:1234:1234 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.0.0.1<0>"


def row(id_: str, line: str, label: str = "symptom", domain: str | None = "hardware", **extra) -> dict:
    base = {"id": id_, "family": "t", "line": line, "source_url": f"https://example.org/{id_}", "label": label}
    return base | ({"domain": domain} if domain else {}) | extra


def write(tmp_path, rows: list[dict], name: str = "labels.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_an_xid79_line_is_recognized_as_hardware_on_the_node_that_logged_it(bundled_ruleset):
    rows = [LabelledLine.model_validate(row("x", XID79, source="dmesg"))]
    [outcome] = evaluate(rows, bundled_ruleset).outcomes
    assert outcome.recognized and outcome.right_domain and outcome.domain == "hardware"
    assert "gpu_fallen_off_bus" in outcome.symptoms and not outcome.false_hardware


def test_a_cuda_oom_line_is_the_users_and_no_hardware_blame(bundled_ruleset):
    rows = [LabelledLine.model_validate(row("o", OOM, domain="user", source="applog"))]
    [outcome] = evaluate(rows, bundled_ruleset).outcomes
    assert (outcome.recognized, outcome.domain, outcome.false_hardware) == (True, "user", False)


def test_a_healthy_nccl_info_line_is_no_false_positive(bundled_ruleset):
    rows = [LabelledLine.model_validate(row("h", NCCL_INFO, label="benign", domain=None, source="applog"))]
    report = evaluate(rows, bundled_ruleset)
    assert report.total.healthy == 1 and report.total.benign_false_positives == 0
    assert report.outcomes[0].domain == "unattributed"


def test_a_line_that_names_its_slurm_job_is_judged_as_that_jobs_evidence(bundled_ruleset):
    text = "slurmstepd: error: *** JOB 4117 ON gpu003 CANCELLED AT 2024-05-17T10:00:00 DUE TO TIME LIMIT ***"
    rows = [LabelledLine.model_validate(row("t", text, domain="user", source="applog"))]
    [outcome] = evaluate(rows, bundled_ruleset).outcomes
    assert outcome.recognized and outcome.terminal_state == "timeout" and outcome.domain == "user"


def test_the_split_is_a_stable_function_of_the_source_and_about_thirty_percent_test():
    urls = [f"https://github.com/o/r/issues/{n}" for n in range(2000)]
    assert [split_of(u) for u in urls] == [split_of(u) for u in urls]
    share = sum(split_of(u) == "test" for u in urls) / len(urls)
    assert 0.25 < share < 0.35


def test_rows_filtered_by_split_and_family(bundled_ruleset):
    rows = [LabelledLine.model_validate(row(f"r{n}", XID79, source="dmesg")) for n in range(40)]
    test_rows = [r for r in rows if r.split == "test"]
    assert len(evaluate(rows, bundled_ruleset, split="test").outcomes) == len(test_rows)
    assert evaluate(rows, bundled_ruleset, families=["other"]).outcomes == []


def test_a_labels_file_with_problems_names_each_with_file_and_line(tmp_path):
    path = write(tmp_path, [row("a", XID79), row("a", XID79), row("b", XID79, domain=None), {"id": "c"}])
    with pytest.raises(LabelError) as error:
        load_labels([path])
    text = str(error.value)
    assert f"{path}:2: id 'a' already used at {path}:1" in text
    assert f"{path}:3: a symptom row needs a domain" in text
    assert f"{path}:4:" in text


def test_directories_are_searched_for_jsonl_files(tmp_path):
    write(tmp_path, [row("a", XID79)], "one.jsonl")
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub", [row("b", OOM, domain="user")], "two.jsonl")
    assert [r.id for r in load_labels([tmp_path])] == ["a", "b"]


def test_the_command_prints_figures_and_misses_as_json(tmp_path, capsys):
    path = write(tmp_path, [row("a", XID79, source="dmesg"), row("b", "nothing to see here", domain="user")])
    assert main(["eval", "--labels", str(path), "--json", "--misses"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["total"]["failures"] == 2 and data["total"]["recognized"] == 1
    assert [m["id"] for m in data["misses"]] == ["b"]


def test_the_command_refuses_a_missing_labels_file_with_one_line(tmp_path, capsys):
    assert main(["eval", "--labels", str(tmp_path / "nope.jsonl")]) == 2
    assert "labels file not found" in capsys.readouterr().err


def test_each_cascade_story_draws_the_same_survivors_whatever_order_the_labels_are_read(bundled_ruleset):
    """The figure once moved by 0.8 points with the order of the label files: survivors were drawn
    by position. A new noise line may change the stories that draw it, and no other."""
    from pathlib import Path

    corpus = load_labels([Path(__file__).parents[1] / "corpus" / "lines"])
    roots = [r for r in corpus if r.known_domain and r.family == "nvidia_driver" and r.split == "dev"][:20]
    noise = [r for r in corpus if r.label == "echo" and r.family == "nccl"][:40]

    def stories(rows: list[LabelledLine]) -> dict[str, tuple]:
        report = evaluate(rows, bundled_ruleset, split="dev", cascades=True)
        return {o.row.id: (o.domain, o.blamed_peer) for o in report.cascades}

    forward = stories(roots + noise)
    assert len(forward) == len(roots)
    assert stories(list(reversed(noise)) + list(reversed(roots))) == forward
    extra = LabelledLine.model_validate(row("n-extra", NCCL_INFO, label="echo", domain=None))
    for root in roots:  # one more noise line: a story's draw changes only to take that line in
        before, after = _survivors(noise, root), _survivors([*noise, extra], root)
        assert after == before or (extra in after and [r for r in after if r is not extra] == before[:-1])
