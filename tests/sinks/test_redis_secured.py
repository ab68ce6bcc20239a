"""The verdict sink and the CLI on a Redis that wants TLS and an ACL user (issue 11).

A second ``redis-server`` of its own (the shared one on :6379 is left alone): TLS only, no
plain port, the ``default`` user off, one user ``faultstream`` allowed only its own key prefix
and channel. The sink writes a verdict over ``rediss://`` and ``faultstream verdicts`` reads it
back; without credentials, with a wrong password, or in plain text it is refused — and the
password appears in no message.
"""

from __future__ import annotations

import logging
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
import redis

from sinks import SinkError
from sinks.redis_verdicts import RedisVerdictSink
from streams.cli import main
from tests.secured import Certificates, free_port, make_certificates
from tests.sinks.verdicts import make_verdict, run

pytestmark = pytest.mark.slow

PREFIX = "faultstream:"


@dataclass(frozen=True)
class SecuredRedis:
    port: int
    password: str
    certificates: Certificates

    def url(self, credentials: str | None = None, tls: bool = True, port: int | None = None) -> str:
        userinfo = f"{credentials}@" if credentials else ""
        where = f"{userinfo}127.0.0.1:{port or self.port}/0"
        return f"rediss://{where}?ssl_ca_certs={self.certificates.ca}" if tls else f"redis://{where}"

    @property
    def good_url(self) -> str:
        return self.url(f"faultstream:{self.password}")


@pytest.fixture(scope="module")
def secured_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed (scripts/redis.sh installs it)")
    root = tmp_path_factory.mktemp("redis-tls")
    certificates = make_certificates(root / "certs")
    server = SecuredRedis(free_port(), secrets.token_urlsafe(18), certificates)
    config = root / "redis.conf"
    config.write_text(
        f"""port 0
bind 127.0.0.1
tls-port {server.port}
tls-cert-file {certificates.server_cert}
tls-key-file {certificates.server_key}
tls-ca-cert-file {certificates.ca}
tls-auth-clients no
dir {root}
save ""
appendonly no
user default off
user faultstream on >{server.password} ~{PREFIX}* &{PREFIX}* +@all -@dangerous
""",
        encoding="utf-8",
    )
    process = subprocess.Popen(
        ["redis-server", str(config)], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    try:
        _wait_until_it_answers(server)
        yield server
    finally:
        process.terminate()
        process.wait(timeout=10)


def _wait_until_it_answers(server: SecuredRedis, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        client = redis.Redis(
            port=server.port, username="faultstream", password=server.password, ssl=True,
            ssl_ca_certs=str(server.certificates.ca), socket_connect_timeout=1,
        )  # fmt: skip
        try:
            if client.ping():
                return
        except redis.RedisError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
        finally:
            client.close()


async def _write(url: str, prefix: str = PREFIX, retry_for_s: float = 0.5) -> RedisVerdictSink:
    sink = RedisVerdictSink(url, prefix, retry_for_s=retry_for_s)
    try:
        await sink.add(make_verdict("job-tls", nodes=["gpu001"]))
        await sink.flush()
    finally:
        await sink.close()
    return sink


def test_the_sink_writes_over_tls_as_its_acl_user_and_the_cli_reads_it_back(secured_redis, capsys):
    sink = run(_write(secured_redis.good_url))
    assert sink.applied == 1
    assert main(["verdicts", "--redis-url", secured_redis.good_url, "--prefix", PREFIX]) == 0
    out = capsys.readouterr().out
    assert "job-tls" in out and "Fail Hardware" in out


@pytest.mark.parametrize(
    "credentials",
    [None, "faultstream:not-the-password", "default:"],
    ids=["no credentials", "wrong password", "the default user"],
)
def test_a_client_without_the_users_password_is_refused(secured_redis, credentials, caplog):
    url = secured_redis.url(credentials)
    refusal = r"invalid username-password|NOAUTH|Authentication required"
    with caplog.at_level(logging.DEBUG), pytest.raises(SinkError, match=refusal) as refused:
        run(_write(url))
    assert "not-the-password" not in str(refused.value) + caplog.text


def test_plain_text_to_the_tls_port_is_refused(secured_redis):
    with pytest.raises(SinkError, match="gave up"):  # the server hangs up: no reply ever comes
        run(_write(secured_redis.url(f"faultstream:{secured_redis.password}", tls=False)))


def test_a_server_certificate_from_another_ca_is_refused(secured_redis, tmp_path):
    other = make_certificates(tmp_path / "other")
    url = secured_redis.good_url.replace(str(secured_redis.certificates.ca), str(other.ca))
    with pytest.raises(SinkError, match=r"(?i)certificate"):
        run(_write(url))


def test_the_acl_user_cannot_write_outside_its_prefix(secured_redis):
    with pytest.raises(SinkError, match="no permissions"):
        run(_write(secured_redis.good_url, prefix="someone-else:"))


def test_the_password_is_never_in_a_message_or_log(secured_redis, caplog):
    with caplog.at_level(logging.DEBUG), pytest.raises(SinkError) as refused:
        run(_write(secured_redis.good_url, prefix="someone-else:"))
    assert secured_redis.password not in str(refused.value) + caplog.text
    assert "faultstream:***@" in str(refused.value)


def test_help_and_usage_errors_never_show_the_password(secured_redis, capsys, monkeypatch):
    monkeypatch.setenv("REDIS_URL", secured_redis.good_url)
    with pytest.raises(SystemExit):
        main(["verdicts", "--help"])
    assert secured_redis.password not in capsys.readouterr().out
    nobody_there = secured_redis.url(f"faultstream:{secured_redis.password}", port=free_port())
    assert main(["verdicts", "--redis-url", nobody_there, "--prefix", PREFIX]) != 0
    assert secured_redis.password not in capsys.readouterr().err
