"""Kafka security comes from settings alone and reaches every client (issue 11): the aiokafka
consumers, producers and admin clients take ``Settings.aiokafka_options()``, the faust app its
broker credentials. tests/pipeline/test_secured_kafka.py runs them against a real broker."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import faust
import pytest
from faust.transport.drivers.aiokafka import credentials_to_aiokafka_auth

from streams.correlator_app import _credentials
from streams.settings import ENV_ALIASES, load_settings
from tests.secured import make_certificates

PASSWORD = "s3cret-not-in-any-repr"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.upper().startswith("FAULTSTREAM_") or name.upper() in ENV_ALIASES.values():
            monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_certificates(tmp_path_factory.mktemp("certs")).ca


def _sasl_ssl(monkeypatch: pytest.MonkeyPatch, ca: Path) -> None:
    """The plain names other Kafka clients use: KAFKA_SECURITY_PROTOCOL, KAFKA_SASL_*, KAFKA_SSL_*."""
    for name, value in {
        "KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
        "KAFKA_SASL_USERNAME": "faultstream", "KAFKA_SASL_PASSWORD": PASSWORD, "KAFKA_SSL_CAFILE": str(ca),
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)


def test_sasl_ssl_from_the_environment_reaches_aiokafka(monkeypatch, ca):
    _sasl_ssl(monkeypatch, ca)
    options = load_settings().aiokafka_options()
    assert options["security_protocol"] == "SASL_SSL"
    assert (options["sasl_mechanism"], options["sasl_plain_username"]) == ("SCRAM-SHA-512", "faultstream")
    assert options["sasl_plain_password"] == PASSWORD
    context = options["ssl_context"]
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_sasl_ssl_from_the_environment_reaches_the_faust_app_the_same_way(monkeypatch, ca):
    _sasl_ssl(monkeypatch, ca)
    settings = load_settings()
    credentials = _credentials(settings)
    assert isinstance(credentials, faust.SASLCredentials)
    given_to_aiokafka = credentials_to_aiokafka_auth(credentials)
    expected = settings.aiokafka_options()
    for name in ("security_protocol", "sasl_mechanism", "sasl_plain_username", "sasl_plain_password"):
        assert given_to_aiokafka[name] == expected[name], name
    assert given_to_aiokafka["ssl_context"] is not None


def test_ssl_with_a_client_certificate_reaches_both(monkeypatch, tmp_path):
    certificates = make_certificates(tmp_path)
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("KAFKA_SSL_CAFILE", str(certificates.ca))
    monkeypatch.setenv("KAFKA_SSL_CERTFILE", str(certificates.client_cert))
    monkeypatch.setenv("KAFKA_SSL_KEYFILE", str(certificates.client_key))
    settings = load_settings()
    assert settings.aiokafka_options()["security_protocol"] == "SSL"
    credentials = _credentials(settings)
    assert isinstance(credentials, faust.SSLCredentials)
    assert credentials_to_aiokafka_auth(credentials)["security_protocol"] == "SSL"


def test_the_password_never_shows_in_the_settings(monkeypatch, ca):
    _sasl_ssl(monkeypatch, ca)
    settings = load_settings()
    assert PASSWORD not in repr(settings) + str(settings) + str(settings.model_dump())
