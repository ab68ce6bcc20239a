"""Runtime settings: environment variables (``FAULTSTREAM_*``, ``KAFKA_BOOTSTRAP_SERVERS``,
``REDIS_URL``) over an optional YAML config file (``FAULTSTREAM_CONFIG`` or ``--config``).

Built once at start-up and passed down; nothing deeper reads ``os.environ``. docs/operations.md
lists every setting.
"""

from __future__ import annotations

import os
import ssl
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from correlator.settings import CorrelatorSettings
from streams.records import DEFAULT_TOPICS

__all__ = ["DEFAULT_MATCHER_CACHE_DIR", "Settings", "load_settings"]


#: Settings also read from the environment under their plain names, as other Kafka and Redis
#: clients name them (the ``FAULTSTREAM_`` spelling works too).
ENV_ALIASES = {
    name: name.upper()
    for name in (
        "kafka_bootstrap_servers", "redis_url", "kafka_security_protocol", "kafka_sasl_mechanism",
        "kafka_sasl_username", "kafka_sasl_password", "kafka_ssl_cafile", "kafka_ssl_certfile",
        "kafka_ssl_keyfile",
    )
}  # fmt: skip


def default_matcher_cache_dir() -> Path:
    # where the database has always been cached: under the scripts' cache root (FAULTSTREAM_CACHE,
    # which also holds the Kafka jars), so a machine keeps one cache directory
    root = os.environ.get("FAULTSTREAM_CACHE") or Path.home() / ".cache" / "faultstream"
    return Path(root) / "hsdb"


#: The compiled Hyperscan database's cache when no setting names one.
DEFAULT_MATCHER_CACHE_DIR = default_matcher_cache_dir()


def _aliased(name: str) -> AliasChoices:
    return AliasChoices(ENV_ALIASES[name], f"FAULTSTREAM_{ENV_ALIASES[name]}", name)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="FAULTSTREAM_", frozen=True, extra="forbid")

    kafka_bootstrap_servers: str = Field("127.0.0.1:9092", validation_alias=_aliased("kafka_bootstrap_servers"))
    kafka_security_protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = Field(
        "PLAINTEXT", validation_alias=_aliased("kafka_security_protocol")
    )
    kafka_sasl_mechanism: str = Field("PLAIN", validation_alias=_aliased("kafka_sasl_mechanism"))
    kafka_sasl_username: str | None = Field(None, validation_alias=_aliased("kafka_sasl_username"))
    kafka_sasl_password: SecretStr | None = Field(None, validation_alias=_aliased("kafka_sasl_password"))
    kafka_ssl_cafile: str | None = Field(None, validation_alias=_aliased("kafka_ssl_cafile"))
    kafka_ssl_certfile: str | None = Field(None, validation_alias=_aliased("kafka_ssl_certfile"))
    kafka_ssl_keyfile: str | None = Field(None, validation_alias=_aliased("kafka_ssl_keyfile"))

    redis_url: str = Field("redis://127.0.0.1:6379/0", validation_alias=_aliased("redis_url"))
    redis_prefix: str = "faultstream:"
    #: Correlator: how often it checks that Redis still holds the verdicts (and right after an
    #: outage); a Redis that lost them is rebuilt from the verdicts topic. 0 turns the check off.
    redis_check_interval_s: float = Field(30.0, ge=0)

    #: Prefix of every topic, consumer group and faust app id (isolates tests and tenants).
    namespace: str = ""
    topic_syslog: str = "logs.syslog"
    topic_dmesg: str = "logs.dmesg"
    topic_applog: str = "logs.applog"
    topic_scheduler: str = "events.scheduler"
    partitions: int = 4

    rules_dir: Path | None = None
    #: Where every process keeps the compiled Hyperscan database (one file per ruleset digest),
    #: so a start loads it instead of compiling for seconds. The adapters hand it to the matcher.
    matcher_cache_dir: Path = Field(default_factory=default_matcher_cache_dir)
    grace_s: float = 30.0
    tail_s: float = 30.0
    #: How long (event time) after its verdict late evidence may still revise it (correlator/settings.py).
    revision_horizon_s: float = Field(3600.0, gt=0)
    lookback_s: float = 300.0
    #: Hosts whose log lines may name any job in their text: the scheduler's own (slurmctld's
    #: host). Other lines name a job only from its nodes (correlator/claims.py). Comma-separated
    #: in the environment.
    scheduler_hosts: Annotated[tuple[str, ...] | None, NoDecode] = None
    #: Extractor: records per fetch and the longest wait for a batch to fill.
    batch_max_records: int = 5000
    batch_timeout_ms: int = 200
    #: Extractor: this instance's name, stable across its restarts and unique among running
    #: extractors; its Kafka transactional id is made of it. A restarted extractor aborts the batch
    #: its predecessor left open; of two sharing a name the older is fenced off. Default: host name.
    extractor_id: str | None = None
    #: Extractor: hold each batch's transaction open this long before committing it. 0 in
    #: production; tests use it to kill an extractor in the middle of a batch.
    extractor_commit_delay_ms: int = Field(0, ge=0)
    #: Extractor: an input partition without a record for this long (wall time) no longer holds
    #: the event-time watermark back (streams/watermarks.py); the correlator likewise stops
    #: waiting for an extractor it has not heard from for this long.
    idle_partition_s: float = Field(10.0, gt=0)
    #: Correlator: how often it ticks (advances idle partitions by wall-clock time).
    tick_interval_s: float = 0.5
    #: Kafka consumer-group session timeout of the correlator: how soon a crashed worker's
    #: partitions move to the others.
    session_timeout_s: float = 30.0
    #: Correlator: restart the worker when an assigned partition has had no event for this long
    #: outside a rebalance (streams/stall_watch.py); 0 turns the watch off.
    stall_restart_s: float = 60.0
    #: Serve Prometheus metrics on this port (``/metrics``); unset: not served (still counted).
    metrics_port: int | None = Field(None, ge=0, le=65535)
    metrics_host: str = "0.0.0.0"
    #: Fleet view (verdict sink): a node's or pair's verdicts older than this (by job end, relative
    #: to its newest) drop out, and its keys expire after this long without a new verdict.
    fleet_window_s: float = Field(7 * 86400.0, gt=0)
    #: Fleet view: a YAML file of host port -> switch port (``gpu003/mlx5_0:1: leaf-07/17``), for
    #: the (host port, switch port) pairs when the log line names no switch port itself.
    fleet_switch_ports: Path | None = None

    @field_validator("scheduler_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: Any) -> Any:
        if isinstance(value, str):
            return tuple(host.strip() for host in value.split(",") if host.strip())
        return value

    def topic(self, name: str) -> str:
        return f"{self.namespace}{name}"

    def configured_topics(self) -> dict[str, str]:
        """Default ingest topic name (what recordings name) → the configured one, with namespace.

        The one map of ingest topics is ``DEFAULT_TOPICS`` (name → source); each source's topic
        is configured by the field ``topic_<source>``."""
        return {name: self.topic(getattr(self, f"topic_{source}")) for name, source in DEFAULT_TOPICS.items()}

    def ingest_topics(self) -> dict[str, str]:
        """Full topic name → the source its lines carry."""
        return {topic: DEFAULT_TOPICS[name] for name, topic in self.configured_topics().items()}

    def correlator_settings(self) -> CorrelatorSettings:
        return CorrelatorSettings(
            lookback_s=self.lookback_s,
            tail_s=self.tail_s,
            grace_s=self.grace_s,
            revision_horizon_s=self.revision_horizon_s,
            scheduler_hosts=frozenset(self.scheduler_hosts or ()),
        )

    def ssl_context(self) -> ssl.SSLContext | None:
        if "SSL" not in self.kafka_security_protocol:
            return None
        context = ssl.create_default_context(cafile=self.kafka_ssl_cafile)
        if self.kafka_ssl_certfile:
            context.load_cert_chain(self.kafka_ssl_certfile, self.kafka_ssl_keyfile)
        return context

    def aiokafka_options(self) -> dict[str, Any]:
        """Connection and security options for aiokafka clients."""
        options: dict[str, Any] = {
            "bootstrap_servers": self.kafka_bootstrap_servers,
            "security_protocol": self.kafka_security_protocol,
        }
        if self.kafka_security_protocol.startswith("SASL"):
            options.update(
                sasl_mechanism=self.kafka_sasl_mechanism,
                sasl_plain_username=self.kafka_sasl_username,
                sasl_plain_password=self.kafka_sasl_password.get_secret_value()
                if self.kafka_sasl_password
                else None,
            )
        if self.ssl_context() is not None:
            options["ssl_context"] = self.ssl_context()
        return options


def load_settings(config: Path | None = None, **overrides: Any) -> Settings:
    """Environment over the config file over defaults; ``overrides`` (from the CLI) over all."""
    path = config or (Path(os.environ["FAULTSTREAM_CONFIG"]) if os.environ.get("FAULTSTREAM_CONFIG") else None)
    file_values: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if not isinstance(loaded, dict):
            msg = f"{path}: a config file holds one mapping of setting: value"
            raise ValueError(msg)
        file_values = {_field_name(k): v for k, v in loaded.items()}
    env_set = {name for name in Settings.model_fields if _from_env(name)}
    merged = {k: v for k, v in file_values.items() if k not in env_set}
    merged.update({k: v for k, v in overrides.items() if v is not None})
    return Settings(**merged)


def _field_name(key: str) -> str:
    """A config-file key as the field it sets (``KAFKA_BOOTSTRAP_SERVERS`` → ``kafka_bootstrap_servers``)."""
    return {alias: name for name, alias in ENV_ALIASES.items()}.get(key, key)


def _from_env(name: str) -> bool:
    return f"FAULTSTREAM_{name.upper()}" in os.environ or ENV_ALIASES.get(name, "") in os.environ
