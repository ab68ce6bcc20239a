"""Builds the Faultstream Grafana dashboard (grafana-foundation-sdk) as deploy/grafana/dashboards/.

    python deploy/grafana/dashboard.py          # rewrite faultstream.json
    python deploy/grafana/dashboard.py --check  # exit 1 if the committed JSON is out of date

Prometheus panels read the workers' metrics (docs/observability.md); the Redis panels read the
verdict sink's keys through the Redis data source (docs/sinks.md) in its CLI mode, for what
only Redis has: the latest verdicts with their root symptom, and the fleet view's worst nodes
and pairs. tests/deploy/test_observability_live.py runs every PromQL expression here against
a real Prometheus scraping a running pipeline.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grafana_foundation_sdk.builders import bargauge, stat, table, timeseries
from grafana_foundation_sdk.builders import dashboard as dash
from grafana_foundation_sdk.builders import prometheus as prom
from grafana_foundation_sdk.cog import builder as cogbuilder
from grafana_foundation_sdk.cog import variants as cogvariants
from grafana_foundation_sdk.cog.encoder import JSONEncoder
from grafana_foundation_sdk.models.dashboard import DataSourceRef

__all__ = ["OUTPUT", "PROMQL", "build", "dashboard_json"]

OUTPUT = Path(__file__).resolve().parent / "dashboards" / "faultstream.json"
PROMETHEUS = DataSourceRef(type_val="prometheus", uid="faultstream-prometheus")
REDIS = DataSourceRef(type_val="redis-datasource", uid="faultstream-redis")
KEY_PREFIX = "faultstream:"  # compose.yaml's redis_prefix

#: Every PromQL expression of the dashboard, in panel order (the live test runs each).
PROMQL: list[str] = []


class RedisCommand(cogvariants.Dataquery):
    """A Redis data source query in its CLI mode (redis-datasource 2.x: type "cli")."""

    def __init__(self, ref_id: str, command: str) -> None:
        self.ref_id, self.command = ref_id, command

    def to_json(self) -> dict[str, object]:
        return {
            "refId": self.ref_id,
            "datasource": {"type": REDIS.type_val, "uid": REDIS.uid},
            "type": "cli",
            "query": self.command,
        }


class RedisQuery(cogbuilder.Builder[RedisCommand]):
    def __init__(self, command: str, ref_id: str = "A") -> None:
        self._query = RedisCommand(ref_id, command)

    def build(self) -> RedisCommand:
        return self._query


def _promql(expr: str, legend: str, ref_id: str = "A", instant: bool = False) -> prom.Dataquery:
    PROMQL.append(expr)
    query = prom.Dataquery().expr(expr).legend_format(legend).ref_id(ref_id)
    return query.instant() if instant else query


def _verdicts_row() -> list:
    over_time = (
        timeseries.Panel()
        .title("Verdicts over time by domain")
        .description("First verdict of each terminated job, per failure domain (faultstream_verdicts_total).")
        .datasource(PROMETHEUS)
        .with_target(
            _promql("sum by (domain) (increase(faultstream_verdicts_total[$__rate_interval]))", "{{domain}}")
        )
        .unit("short")
        .span(16)
        .height(8)
    )
    outcomes = (
        bargauge.Panel()
        .title("Verdicts in range by domain and state")
        .datasource(PROMETHEUS)
        .with_target(
            _promql(
                "sum by (domain, state) (increase(faultstream_verdicts_total[$__range]))",
                "{{state}} {{domain}}",
                instant=True,
            )
        )
        .span(8)
        .height(8)
    )
    return [over_time, outcomes]


def _fleet_row() -> list:
    bad_nodes = (
        bargauge.Panel()
        .title("Top bad nodes")
        .description("Nodes blamed by the most bad verdicts in the range (faultstream_node_verdicts_total).")
        .datasource(PROMETHEUS)
        .with_target(
            _promql(
                "topk(10, sum by (node, domain) (increase(faultstream_node_verdicts_total[$__range])))",
                "{{node}} ({{domain}})",
                instant=True,
            )
        )
        .span(8)
        .height(9)
    )
    fleet_nodes = (
        table.Panel()
        .title("Fleet view: nodes across workloads (Redis)")
        .description(
            "The verdict sink's fleet view: each node and the number of workloads (within the fleet "
            "window) whose latest verdict blames it. `faultstream nodes --node NAME` for the detail."
        )
        .datasource(REDIS)
        .with_target(RedisQuery(f"ZREVRANGE {KEY_PREFIX}fleet:nodes 0 19 WITHSCORES"))
        .span(8)
        .height(9)
    )
    fleet_pairs = (
        table.Panel()
        .title("Fleet view: (node, peer) and (host port, switch port) pairs (Redis)")
        .datasource(REDIS)
        .with_target(RedisQuery(f"ZREVRANGE {KEY_PREFIX}fleet:peers 0 19 WITHSCORES", "A"))
        .with_target(RedisQuery(f"ZREVRANGE {KEY_PREFIX}fleet:ports 0 19 WITHSCORES", "B"))
        .span(8)
        .height(9)
    )
    return [bad_nodes, fleet_nodes, fleet_pairs]


def _symptoms_row() -> list:
    symptom_rates = (
        timeseries.Panel()
        .title("Symptom rates by rule")
        .description("Lines matched per second, per rule (faultstream_symptoms_total); the 15 busiest.")
        .datasource(PROMETHEUS)
        .with_target(
            _promql(
                "topk(15, sum by (rule, domain) (rate(faultstream_symptoms_total[$__rate_interval])))",
                "{{rule}}",
            )
        )
        .unit("ops")
        .span(12)
        .height(8)
    )
    roots = (
        bargauge.Panel()
        .title("Root symptoms of verdicts in range")
        .datasource(PROMETHEUS)
        .with_target(
            _promql(
                "topk(10, sum by (symptom, domain) (increase(faultstream_root_symptoms_total[$__range])))",
                "{{symptom}} ({{domain}})",
                instant=True,
            )
        )
        .span(12)
        .height(8)
    )
    return [symptom_rates, roots]


def _recent_row() -> list:
    recent = (
        table.Panel()
        .title("Recent verdicts with root cause (Redis)")
        .description("The newest verdict revisions from the sink's stream: outcome, nodes, root symptom.")
        .datasource(REDIS)
        .with_target(RedisQuery(f"XREVRANGE {KEY_PREFIX}verdicts:stream + - COUNT 50"))
        .span(24)
        .height(10)
    )
    return [recent]


def _health_row() -> list:
    def series(title: str, expr: str, legend: str, unit: str = "short", span: int = 8) -> timeseries.Panel:
        return (
            timeseries.Panel()
            .title(title)
            .datasource(PROMETHEUS)
            .with_target(_promql(expr, legend))
            .unit(unit)
            .span(span)
            .height(7)
        )

    workers = (
        stat.Panel()
        .title("Workers up")
        .datasource(PROMETHEUS)
        .with_target(_promql('sum by (job) (up{job=~"faultstream.*"})', "{{job}}", instant=True))
        .span(6)
        .height(7)
    )
    return [
        workers,
        series(
            "Lines read by topic",
            "sum by (topic) (rate(faultstream_lines_total[$__rate_interval]))",
            "{{topic}}",
            "ops",
            9,
        ),
        series(
            "Consumer lag by group",
            "sum by (group) (max by (group, topic, partition) (faultstream_consumer_lag))",
            "{{group}}",
            span=9,
        ),
        series(
            "Job end to first verdict (p95)",
            "histogram_quantile(0.95, sum by (le) "
            "(rate(faultstream_verdict_latency_seconds_bucket[$__rate_interval])))",
            "p95",
            "s",
        ),
        series(
            "Dead letters by stage and reason",
            "sum by (stage, reason) (increase(faultstream_dead_letters_total[$__rate_interval]))",
            "{{stage}}: {{reason}}",
        ),
        series(
            "Rebalances and stall restarts",
            "sum by (stage) (increase(faultstream_rebalances_total[$__rate_interval]))",
            "rebalances {{stage}}",
        ),
        series(
            "Redis sink writes",
            "sum by (result) (rate(faultstream_sink_verdicts_total[$__rate_interval]))",
            "{{result}}",
            "ops",
        ),
        series(
            "Extractor batch time (p95)",
            "histogram_quantile(0.95, sum by (le) "
            "(rate(faultstream_extractor_batch_seconds_bucket[$__rate_interval])))",
            "p95",
            "s",
        ),
        series(
            "Stall restarts",
            "sum(increase(faultstream_stall_restarts_total[$__rate_interval]))",
            "restarts",
        ),
    ]


def build() -> dash.Dashboard:
    PROMQL.clear()
    board = (
        dash.Dashboard("Faultstream")
        .uid("faultstream")
        .description("GPU cluster failure attribution: verdicts, bad nodes, symptoms, pipeline health")
        .tags(["faultstream"])
        .time("now-6h", "now")
        .refresh("30s")
        .timezone("utc")
    )
    rows = (
        ("Verdicts", _verdicts_row),
        ("Fleet: bad nodes and pairs across workloads", _fleet_row),
        ("Symptoms", _symptoms_row),
        ("Recent verdicts", _recent_row),
        ("Pipeline health", _health_row),
    )
    for title, panels in rows:
        board = board.with_row(dash.Row(title))
        for panel in panels():
            board = board.with_panel(panel)
    return board


def dashboard_json() -> str:
    model = json.loads(json.dumps(build().build(), cls=JSONEncoder))
    return json.dumps(_without_nulls(model), indent=2, sort_keys=True) + "\n"


def _without_nulls(value: object) -> object:
    """Unset options come out as null; Grafana wants them absent (it fills in the defaults)."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def main(argv: list[str]) -> int:
    text = dashboard_json()
    if "--check" in argv:
        current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else ""
        if current != text:
            print(f"{OUTPUT} is out of date: run python deploy/grafana/dashboard.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUTPUT} ({len(PROMQL)} PromQL expressions)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
