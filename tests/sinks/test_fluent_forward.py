"""Verdicts reach a Fluentd / Fluent Bit ``forward`` input.

Neither program installs here, so the far end is a receiver written from the Forward protocol
specification (fluent/fluentd wiki, "Forward Protocol Specification v1"): a TCP stream of msgpack
entries, each ``[tag, time, record]`` (Message mode), ``time`` an integer or the EventTime
extension (type 0: seconds and nanoseconds, big-endian 32-bit each).
"""

from __future__ import annotations

import socket
import struct
import threading
import time

import msgpack
import pytest

from sinks.fluent_forward import VerdictForwarder


class ForwardReceiver:
    """Accepts connections and decodes Message-mode entries until closed."""

    def __init__(self, port: int = 0) -> None:
        self.server = socket.create_server(("127.0.0.1", port))
        self.port = self.server.getsockname()[1]
        self.events: list[tuple[str, float, dict]] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @staticmethod
    def _ext(code: int, data: bytes):
        if code == 0:  # EventTime
            seconds, nanos = struct.unpack(">II", data)
            return seconds + nanos / 1e9
        return msgpack.ExtType(code, data)

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._read, args=(connection,), daemon=True).start()

    def _read(self, connection: socket.socket) -> None:
        unpacker = msgpack.Unpacker(ext_hook=self._ext, raw=False)
        with connection:
            while chunk := connection.recv(65536):
                unpacker.feed(chunk)
                for tag, when, record in unpacker:
                    self.events.append((tag, when, record))

    def wait_for(self, count: int, timeout_s: float = 30) -> list:
        deadline = time.monotonic() + timeout_s
        while len(self.events) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.events

    def close(self) -> None:
        self.server.close()


VERDICT = {
    "workload_id": "4101",
    "sub_domain": "hardware",
    "responsible_nodes": ["gpu007"],
    "job": {"end": "2024-05-01T11:00:10Z"},
    "verdict": {"attribution_outcome": "Fail Hardware"},
}


@pytest.fixture
def receiver():
    r = ForwardReceiver()
    yield r
    r.close()


def test_a_verdict_arrives_tagged_by_domain_and_stamped_with_the_jobs_end(receiver):
    forwarder = VerdictForwarder("127.0.0.1", receiver.port)
    assert forwarder.send(VERDICT)
    forwarder.close()
    [(tag, when, record)] = receiver.wait_for(1)
    assert tag == "faultstream.verdict.hardware"
    assert when == pytest.approx(1714561210.0)
    assert record == VERDICT


def test_verdicts_sent_while_the_endpoint_is_away_arrive_once_it_is_back():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]  # nothing listens here yet
    forwarder = VerdictForwarder("127.0.0.1", port, timeout_s=0.5)
    assert not forwarder.send(VERDICT)
    assert not forwarder.flush()
    receiver = ForwardReceiver(port)
    try:
        assert forwarder.flush()
        assert forwarder.send({**VERDICT, "workload_id": "4102", "sub_domain": "user"})
        forwarder.close()
        events = receiver.wait_for(2)
        assert [(tag, record["workload_id"]) for tag, _, record in events] == [
            ("faultstream.verdict.hardware", "4101"),
            ("faultstream.verdict.user", "4102"),
        ]
    finally:
        receiver.close()
