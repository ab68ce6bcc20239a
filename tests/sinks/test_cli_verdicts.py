"""``faultstream verdicts``: what an operator sees on the terminal."""

from __future__ import annotations

import argparse

import orjson
import pytest

from sinks.redis_verdicts import RedisVerdictSink
from streams import cli_verdicts
from streams.cli import UsageError
from tests.sinks.conftest import free_port
from tests.sinks.verdicts import make_verdict, run


def verdicts_command(argv: list[str]) -> int:
    """The subcommand on its own parser, so it is tested whether or not streams.cli wires it."""
    parser = argparse.ArgumentParser(prog="faultstream")
    cli_verdicts.add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["verdicts", *argv])
    return args.handler(args)


async def _write(url: str, prefix: str, *verdicts: dict) -> None:
    sink = RedisVerdictSink(url, prefix)
    try:
        for verdict in verdicts:
            await sink.add(verdict)
        await sink.flush()
    finally:
        await sink.close()


@pytest.fixture
def three_verdicts(redis_url, prefix) -> list[dict]:
    """Three jobs ended at 10:00, 11:00 and 12:00; returned latest first."""
    verdicts = [
        make_verdict(f"job-{hour}", nodes=[f"node-{hour}"], end=f"2026-03-01T{hour}:00:00.000Z")
        for hour in (11, 10, 12)
    ]
    run(_write(redis_url, prefix, *verdicts))
    return sorted(verdicts, key=lambda v: v["job"]["end"], reverse=True)


def test_verdicts_json_prints_one_verdict_per_line_latest_first(redis_url, prefix, three_verdicts, capsys):
    code = verdicts_command(["--redis-url", redis_url, "--prefix", prefix, "--json", "--limit", "2"])

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [orjson.loads(line) for line in lines] == three_verdicts[:2]


def test_verdicts_table_shows_a_header_and_one_row_per_verdict(redis_url, prefix, three_verdicts, capsys):
    verdicts_command(["--redis-url", redis_url, "--prefix", prefix])

    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split()[:2] == ["WORKLOAD", "END"]
    assert [row.split()[0] for row in rows] == ["job-12", "job-11", "job-10"]
    assert "Fail Hardware" in rows[0] and "node-12" in rows[0]


def test_verdicts_reads_redis_url_from_the_environment(redis_url, prefix, three_verdicts, capsys, monkeypatch):
    monkeypatch.setenv("REDIS_URL", redis_url)

    verdicts_command(["--prefix", prefix, "--json", "--limit", "1"])

    assert orjson.loads(capsys.readouterr().out) == three_verdicts[0]


def test_a_redis_that_does_not_answer_is_a_one_line_usage_error():
    nobody_there = f"redis://:secret@127.0.0.1:{free_port()}/0"

    with pytest.raises(UsageError, match="cannot reach Redis at") as caught:
        verdicts_command(["--redis-url", nobody_there])

    assert "secret" not in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_malformed_redis_url_is_a_usage_error():
    with pytest.raises(UsageError, match="not a Redis URL"):
        verdicts_command(["--redis-url", "http://127.0.0.1:6379"])


def test_tls_options_on_a_plain_redis_url_are_a_usage_error_naming_them():
    with pytest.raises(UsageError, match="ssl_ca_certs need") as caught:
        verdicts_command(["--redis-url", "redis://:secret@127.0.0.1:6379/0?ssl_ca_certs=/etc/ca.pem"])

    assert "rediss://" in str(caught.value) and "secret" not in str(caught.value)


def test_faultstream_verdicts_json_through_the_cli(redis_url, prefix, three_verdicts, capsys):
    from streams.cli import main

    code = main(["verdicts", "--redis-url", redis_url, "--prefix", prefix, "--json"])

    lines = capsys.readouterr().out.splitlines()
    assert code == 0
    assert [orjson.loads(line) for line in lines] == three_verdicts


def test_faultstream_verdicts_exits_2_with_one_line_when_redis_is_away(capsys):
    from streams.cli import main

    code = main(["verdicts", "--redis-url", f"redis://127.0.0.1:{free_port()}/0"])

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("faultstream: cannot reach Redis at redis://127.0.0.1:")
    assert err.count("\n") == 1
