"""The command line: results on stdout, one clear message and a non-zero exit on bad input."""

from __future__ import annotations

import orjson
import pytest

from streams.cli import main
from tests.conftest import REPO
from tests.golden.stories import RECORDINGS


def test_backtest_prints_one_verdict_per_line_and_a_summary(capsys):
    assert main(["backtest", "-i", str(RECORDINGS / "xid79_one_of_sixteen.jsonl"), "--workers", "1"]) == 0
    out, err = capsys.readouterr()
    verdicts = [orjson.loads(line) for line in out.splitlines()]
    assert [(v["workload_id"], v["verdict"]["attribution_outcome"]) for v in verdicts] == [
        ("4101", "Fail Hardware")
    ]
    assert "3719 records" in err and "Fail Hardware 1" in err


def test_backtest_table_and_output_file(tmp_path, capsys):
    out_file = tmp_path / "verdicts.jsonl"
    recording = str(RECORDINGS / "time_limit.jsonl")
    assert main(["backtest", "-i", recording, "-o", str(out_file), "--format", "table"]) == 0
    assert "Timeout User" in out_file.read_text()


def test_missing_recording_is_one_line_and_exit_2(capsys):
    assert main(["backtest", "-i", "/nonexistent/rec.jsonl"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "faultstream: recording not found: /nonexistent/rec.jsonl"


def test_broken_ruleset_names_file_and_rule(tmp_path, capsys):
    bad = tmp_path / "rules" / "symptoms" / "x"
    bad.mkdir(parents=True)
    (bad / "x.bad.yaml").write_text("schema: symptom-rule/v1\nid: x.bad\ntitle: t\n")
    assert main(["rules", "check", str(tmp_path / "rules")]) == 2
    err = capsys.readouterr().err
    assert "invalid ruleset" in err and "x.bad.yaml" in err and "[x.bad]" in err and "Traceback" not in err


def test_rules_check_passes_on_the_bundled_rules(capsys):
    assert main(["rules", "check"]) == 0
    assert "0 failed" in capsys.readouterr().out


def test_rules_explain_shows_rule_and_captures(capsys):
    line = "NVRM: Xid (PCI:0000:3b:00): 79, pid=48213, name=python, GPU has fallen off the bus."
    assert main(["rules", "explain", line]) == 0
    hits = [orjson.loads(row) for row in capsys.readouterr().out.splitlines()]
    assert [(h["rule_id"], h["captures"]["pci"]) for h in hits] == [("gpu.xid.79", "0000:3b:00")]


def test_unknown_command_is_a_usage_error():
    with pytest.raises(SystemExit) as exit_info:
        main(["frobnicate"])
    assert exit_info.value.code == 2


def test_bundled_rules_dir_is_found_from_anywhere(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["rules", "check", str(REPO / "rules")]) == 0
