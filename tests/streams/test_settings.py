"""streams.settings: where each setting comes from, and what the Kafka clients are given.

Precedence (low to high): defaults < config file < environment < explicit overrides (the CLI).
Every test starts from an environment without Faultstream's variables, so a developer's or CI's
exports (scripts/services.sh prints KAFKA_BOOTSTRAP_SERVERS and REDIS_URL) change nothing.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest
from pydantic import ValidationError

from streams.settings import DEFAULT_MATCHER_CACHE_DIR, Settings, load_settings

ALIASES = ("KAFKA_BOOTSTRAP_SERVERS", "REDIS_URL")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    # pydantic-settings matches names case-insensitively, so lower-case spellings go too.
    for name in list(os.environ):
        if name.upper().startswith("FAULTSTREAM_") or name.upper() in ALIASES:
            monkeypatch.delenv(name)


def _config(tmp_path: Path, text: str, name: str = "faultstream.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# --- precedence -----------------------------------------------------------------------------


def test_defaults_without_file_or_environment() -> None:
    settings = load_settings()
    assert settings == Settings()
    assert settings.kafka_bootstrap_servers == "127.0.0.1:9092"
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.redis_prefix == "faultstream:"
    assert settings.namespace == ""
    assert settings.partitions == 4
    assert (settings.grace_s, settings.tail_s, settings.lookback_s) == (30.0, 30.0, 300.0)
    assert settings.kafka_security_protocol == "PLAINTEXT"
    assert settings.rules_dir is None
    assert settings.matcher_cache_dir == DEFAULT_MATCHER_CACHE_DIR


def test_the_matchers_cache_directory_is_a_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # the directory every adapter hands the Hyperscan matcher; the engine itself never picks one
    monkeypatch.setenv("FAULTSTREAM_MATCHER_CACHE_DIR", str(tmp_path / "hsdb"))
    assert load_settings().matcher_cache_dir == tmp_path / "hsdb"


def test_file_over_defaults_environment_over_file_overrides_over_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(
        tmp_path,
        "partitions: 8\ngrace_s: 45\nnamespace: file.\nredis_prefix: 'file:'\nrules_dir: /from/file\n",
    )
    monkeypatch.setenv("FAULTSTREAM_PARTITIONS", "6")
    monkeypatch.setenv("FAULTSTREAM_NAMESPACE", "env.")
    monkeypatch.setenv("FAULTSTREAM_RULES_DIR", "/from/env")

    settings = load_settings(path, namespace="cli.", rules_dir=None)

    assert settings.tail_s == 30.0  # nowhere: default
    assert settings.grace_s == 45.0  # file only: file over default
    assert settings.redis_prefix == "file:"
    assert settings.partitions == 6  # file and environment: environment wins
    assert settings.namespace == "cli."  # file, environment and override: override wins
    assert settings.rules_dir == Path("/from/env")  # an override of None means "not given"


def test_an_override_beats_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_RULES_DIR", "/from/env")
    assert load_settings(rules_dir=Path("/from/cli")).rules_dir == Path("/from/cli")


def test_config_file_named_by_faultstream_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_CONFIG", str(_config(tmp_path, "partitions: 12\n")))
    assert load_settings().partitions == 12


def test_an_explicit_config_path_beats_faultstream_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAULTSTREAM_CONFIG", str(_config(tmp_path, "partitions: 12\n", "env.yaml")))
    assert load_settings(_config(tmp_path, "partitions: 16\n", "cli.yaml")).partitions == 16


def test_an_empty_config_file_means_defaults(tmp_path: Path) -> None:
    assert load_settings(_config(tmp_path, "# nothing set yet\n")) == Settings()


def test_values_from_the_environment_are_parsed_to_their_types(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_GRACE_S", "60")
    monkeypatch.setenv("FAULTSTREAM_TAIL_S", "12.5")
    monkeypatch.setenv("FAULTSTREAM_BATCH_MAX_RECORDS", "100")
    settings = load_settings()
    assert (settings.grace_s, settings.tail_s, settings.batch_max_records) == (60.0, 12.5, 100)


# --- the two well-known variables --------------------------------------------------------------


def test_kafka_bootstrap_servers_and_redis_url_are_read_without_prefix(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka-1:9092,kafka-2:9092")
    monkeypatch.setenv("REDIS_URL", "redis://redis:6379/2")
    settings = load_settings()
    assert settings.kafka_bootstrap_servers == "kafka-1:9092,kafka-2:9092"
    assert settings.redis_url == "redis://redis:6379/2"


def test_the_prefixed_spellings_work_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_KAFKA_BOOTSTRAP_SERVERS", "kafka-3:9092")
    monkeypatch.setenv("FAULTSTREAM_REDIS_URL", "redis://redis:6379/3")
    settings = load_settings()
    assert settings.kafka_bootstrap_servers == "kafka-3:9092"
    assert settings.redis_url == "redis://redis:6379/3"


def test_the_unprefixed_name_wins_when_both_are_set(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "plain:9092")
    monkeypatch.setenv("FAULTSTREAM_KAFKA_BOOTSTRAP_SERVERS", "prefixed:9092")
    assert load_settings().kafka_bootstrap_servers == "plain:9092"


def test_the_aliases_beat_the_config_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _config(tmp_path, "kafka_bootstrap_servers: file:9092\nredis_url: redis://file:6379/0\n")
    assert load_settings(path).kafka_bootstrap_servers == "file:9092"
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    monkeypatch.setenv("REDIS_URL", "redis://env:6379/0")
    settings = load_settings(path)
    assert settings.kafka_bootstrap_servers == "env:9092"
    assert settings.redis_url == "redis://env:6379/0"


def test_the_environment_beats_an_alias_spelled_key_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _config(tmp_path, "KAFKA_BOOTSTRAP_SERVERS: file:9092\n")
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "env:9092")
    assert load_settings(path).kafka_bootstrap_servers == "env:9092"


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["- partitions\n- 8\n", "just a string\n", "42\n"])
def test_a_config_file_that_is_not_a_mapping_is_refused(tmp_path: Path, text: str) -> None:
    path = _config(tmp_path, text)
    with pytest.raises(ValueError, match="one mapping of setting: value") as caught:
        load_settings(path)
    assert str(path) in str(caught.value)


def test_a_missing_config_file_is_an_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_settings(tmp_path / "absent.yaml")


def test_unknown_keys_in_the_config_file_are_refused(tmp_path: Path) -> None:
    path = _config(tmp_path, "partitions: 8\npartition_count: 8\n")
    with pytest.raises(ValidationError, match="partition_count") as caught:
        load_settings(path)
    assert isinstance(caught.value, ValueError)  # so the CLI prints it as one message, exit 2


def test_environment_variable_names_are_not_config_file_keys(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="FAULTSTREAM_PARTITIONS"):
        load_settings(_config(tmp_path, "FAULTSTREAM_PARTITIONS: 8\n"))


def test_unknown_overrides_are_refused() -> None:
    with pytest.raises(ValidationError, match="grace"):
        load_settings(grace=10)


def test_unknown_faultstream_variables_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    # The scripts read FAULTSTREAM_STATE and FAULTSTREAM_CACHE; settings must not trip on them.
    monkeypatch.setenv("FAULTSTREAM_STATE", "/tmp/state")
    monkeypatch.setenv("FAULTSTREAM_CACHE", "/tmp/cache")
    assert load_settings() == Settings()


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("FAULTSTREAM_PARTITIONS", "many"),
        ("FAULTSTREAM_GRACE_S", "soon"),
        ("FAULTSTREAM_KAFKA_SECURITY_PROTOCOL", "TLS"),
    ],
)
def test_malformed_values_are_refused(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError):
        load_settings()


def test_settings_are_frozen() -> None:
    settings = load_settings()
    with pytest.raises(ValidationError):
        settings.partitions = 8  # type: ignore[misc]


# --- Kafka client options ----------------------------------------------------------------------


def test_plaintext_gives_only_the_servers_and_the_protocol(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092")
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SASL_USERNAME", "ignored")
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SASL_PASSWORD", "ignored")
    settings = load_settings()
    assert settings.aiokafka_options() == {"bootstrap_servers": "kafka:9092", "security_protocol": "PLAINTEXT"}
    assert settings.ssl_context() is None


def test_sasl_ssl_gives_credentials_and_a_tls_context(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _config(
        tmp_path,
        "kafka_security_protocol: SASL_SSL\nkafka_sasl_mechanism: SCRAM-SHA-512\n"
        "kafka_sasl_username: faultstream\n",
    )
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SASL_PASSWORD", "s3cret")
    settings = load_settings(path)

    options = settings.aiokafka_options()

    assert options["security_protocol"] == "SASL_SSL"
    assert options["sasl_mechanism"] == "SCRAM-SHA-512"
    assert options["sasl_plain_username"] == "faultstream"
    assert options["sasl_plain_password"] == "s3cret"
    assert isinstance(options["ssl_context"], ssl.SSLContext)
    assert options["ssl_context"].verify_mode == ssl.CERT_REQUIRED
    assert "s3cret" not in repr(settings)  # a SecretStr: never in logs or tracebacks


def test_sasl_without_a_password_passes_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SECURITY_PROTOCOL", "SASL_PLAINTEXT")
    options = load_settings().aiokafka_options()
    assert options["sasl_mechanism"] == "PLAIN"
    assert options["sasl_plain_username"] is None
    assert options["sasl_plain_password"] is None
    assert "ssl_context" not in options  # SASL_PLAINTEXT: no TLS


def test_ssl_alone_gives_a_tls_context_and_no_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SECURITY_PROTOCOL", "SSL")
    monkeypatch.setenv("FAULTSTREAM_KAFKA_SASL_PASSWORD", "unused")
    options = load_settings().aiokafka_options()
    assert set(options) == {"bootstrap_servers", "security_protocol", "ssl_context"}
    assert isinstance(options["ssl_context"], ssl.SSLContext)


# --- topics and derived settings ---------------------------------------------------------------


def test_ingest_topics_without_a_namespace() -> None:
    assert load_settings().ingest_topics() == {
        "logs.syslog": "syslog",
        "logs.dmesg": "dmesg",
        "logs.applog": "applog",
        "events.scheduler": "scheduler",
    }


def test_ingest_topics_carry_the_namespace(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_NAMESPACE", "tenant-a.")
    monkeypatch.setenv("FAULTSTREAM_TOPIC_SYSLOG", "fluentbit.syslog")
    settings = load_settings()
    assert settings.ingest_topics() == {
        "tenant-a.fluentbit.syslog": "syslog",
        "tenant-a.logs.dmesg": "dmesg",
        "tenant-a.logs.applog": "applog",
        "tenant-a.events.scheduler": "scheduler",
    }
    assert settings.topic("faultstream.verdicts") == "tenant-a.faultstream.verdicts"


def test_correlator_settings_take_the_time_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAULTSTREAM_GRACE_S", "60")
    monkeypatch.setenv("FAULTSTREAM_TAIL_S", "20")
    monkeypatch.setenv("FAULTSTREAM_LOOKBACK_S", "600")
    windows = load_settings().correlator_settings()
    assert (windows.grace_s, windows.tail_s, windows.lookback_s) == (60.0, 20.0, 600.0)


def test_a_grace_shorter_than_the_tail_loads_but_the_correlator_refuses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAULTSTREAM_GRACE_S", "10")  # tail_s stays 30
    settings = load_settings()  # not checked here...
    with pytest.raises(ValueError, match="tail_s must not exceed grace_s"):
        settings.correlator_settings()  # ...but when the correlator starts


# --- docs/operations.md stays true --------------------------------------------------------------

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def _documented_settings() -> dict[str, tuple[str, str]]:
    """``setting -> (environment cell, default cell)`` from the settings table."""
    rows = {}
    for line in OPERATIONS.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0].startswith("`") and cells[0].strip("`") in Settings.model_fields:
            rows[cells[0].strip("`")] = (cells[1], cells[2])
    return rows


def _as_documented(default: object) -> str:
    if isinstance(default, Path):  # a directory under the home directory, as a reader writes it
        return f"`{default.as_posix().replace(Path.home().as_posix(), '~', 1)}`"
    if default is None:
        return "none"
    if default == "":
        return '`""` (empty)'
    if isinstance(default, float) and default.is_integer():
        default = int(default)
    return f"`{default}`"


def test_operations_md_lists_every_setting_with_its_variable_and_default() -> None:
    documented = _documented_settings()
    assert set(documented) == set(Settings.model_fields)
    for name, field in Settings.model_fields.items():
        variables, default = documented[name]
        assert f"`FAULTSTREAM_{name.upper()}`" in variables, name
        assert default == _as_documented(field.get_default(call_default_factory=True)), name
    for name, alias in zip(("kafka_bootstrap_servers", "redis_url"), ALIASES, strict=True):
        assert f"`{alias}`" in documented[name][0]


def test_the_config_file_example_in_operations_md_loads(tmp_path: Path) -> None:
    text = OPERATIONS.read_text(encoding="utf-8")
    example = text.split("```yaml\n", 1)[1].split("```", 1)[0]
    settings = load_settings(_config(tmp_path, example))
    assert settings.kafka_security_protocol == "SASL_SSL"
    assert settings.partitions == 12
