"""Certificates for the TLS tests: a throwaway CA, a server certificate for 127.0.0.1 and a
client certificate, made with the machine's ``openssl`` (PEM files, no passwords)."""

from __future__ import annotations

import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Certificates", "free_port", "make_certificates"]


@dataclass(frozen=True)
class Certificates:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    #: the server's key and certificate chain in one PEM file (Kafka's ``ssl.keystore.type=PEM``)
    server_bundle: Path


def make_certificates(root: Path) -> Certificates:
    root.mkdir(parents=True, exist_ok=True)
    ca_key, ca = root / "ca.key", root / "ca.pem"
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=faultstream-test-ca",
             "-keyout", ca_key, "-out", ca)  # fmt: skip
    server_cert, server_key = _signed(root, "server", ca, ca_key, "subjectAltName=IP:127.0.0.1,DNS:localhost")
    client_cert, client_key = _signed(root, "client", ca, ca_key, "extendedKeyUsage=clientAuth")
    bundle = root / "server-bundle.pem"
    bundle.write_bytes(server_key.read_bytes() + server_cert.read_bytes() + ca.read_bytes())
    return Certificates(ca, server_cert, server_key, client_cert, client_key, bundle)


def _signed(root: Path, name: str, ca: Path, ca_key: Path, extension: str) -> tuple[Path, Path]:
    key, request, cert = root / f"{name}.key", root / f"{name}.csr", root / f"{name}.pem"
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}", "-keyout", key, "-out", request)
    extensions = root / f"{name}.ext"
    extensions.write_text(extension + "\n", encoding="utf-8")
    _openssl("x509", "-req", "-in", request, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
             "-extfile", extensions, "-out", cert)  # fmt: skip
    key.chmod(0o600)
    return cert, key


def _openssl(*args: object) -> None:
    subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, stdin=subprocess.DEVNULL)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
