"""``faultstream run | worker extractor | worker correlator | load``: the live pipeline."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from pathlib import Path

__all__ = ["add_parsers"]

log = logging.getLogger("faultstream")


def add_parsers(commands: argparse._SubParsersAction) -> None:
    run = commands.add_parser("run", help="every stage in one process (one machine)")
    _common(run)
    _metrics_option(run)
    run.set_defaults(handler=_run_all)
    worker = commands.add_parser("worker", help="one stage; start several to scale out")
    worker.add_argument("stage", choices=("extractor", "correlator"))
    _common(worker)
    _metrics_option(worker)
    worker.set_defaults(handler=_run_worker)
    load = commands.add_parser("load", help="publish a recording to the ingest topics")
    load.add_argument("recordings", type=Path, nargs="+")
    load.add_argument(
        "--speed",
        type=float,
        default=None,
        help="keep the recording's relative timing, X times faster (default: as fast as possible)",
    )
    _common(load)
    load.set_defaults(handler=_run_load)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", type=Path, default=None, help="YAML config file (docs/operations.md)")
    parser.add_argument("--rules", type=Path, default=None, help="rules directory (default: bundled)")
    parser.add_argument("--log-level", default="INFO")


def _metrics_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--metrics-port",
        type=int,
        default=None,
        help="serve Prometheus metrics on this port (default: metrics_port setting; unset: off)",
    )


def _serve_metrics(settings) -> None:
    if settings.metrics_port is not None:
        from streams.cli import UsageError
        from streams.metrics import serve

        try:
            serve(settings.metrics_port, settings.metrics_host)
        except OSError as exc:
            where = f"{settings.metrics_host}:{settings.metrics_port}"
            raise UsageError(f"cannot serve metrics on {where}: {exc.strerror or exc}") from exc
        log.info("Prometheus metrics on http://%s:%d/metrics", settings.metrics_host, settings.metrics_port)


def _settings(args: argparse.Namespace):
    from streams.settings import load_settings

    logging.basicConfig(
        level=args.log_level.upper(),
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    return load_settings(args.config, rules_dir=args.rules, metrics_port=getattr(args, "metrics_port", None))


def _run_worker(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _serve_metrics(settings)
    if args.stage == "extractor":
        return asyncio.run(_extractor_main(settings))
    return _correlator_main(settings, with_extractor=False)


def _run_all(args: argparse.Namespace) -> int:
    settings = _settings(args)
    _serve_metrics(settings)
    return _correlator_main(settings, with_extractor=True)


async def _extractor_main(settings) -> int:
    from extractors.loader import load_ruleset
    from streams.admin import ensure_topics
    from streams.extract_worker import ExtractorWorker, run_until_stopped
    from streams.topics import Topics

    await ensure_topics(settings)
    ruleset = load_ruleset(settings.rules_dir)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stopping.set)
    log.info("extractor started on %s", ", ".join(Topics.from_settings(settings).ingest))
    stats = await run_until_stopped(lambda: ExtractorWorker(settings, ruleset), stopping)
    log.info("extractor stopped: %s", stats)
    return 0


def _correlator_main(settings, with_extractor: bool) -> int:
    import faust

    from extractors.loader import load_ruleset
    from streams.admin import ensure_topics
    from streams.commit_retry import retry_commits_the_broker_refuses
    from streams.correlator_app import build_correlator_app
    from streams.correlator_metrics import instrument_correlator
    from streams.redis_rebuild import verdict_sink

    asyncio.run(ensure_topics(settings))
    ruleset = load_ruleset(settings.rules_dir)
    switch_ports = _switch_ports(settings.fleet_switch_ports)
    sink = verdict_sink(settings, switch_ports)
    app = build_correlator_app(settings, ruleset, [sink])
    instrument_correlator(app, settings)
    retry_commits_the_broker_refuses()  # a broker restarting or out of disk must not hang the worker
    if settings.redis_check_interval_s > 0:
        _attach_redis_watch(app, settings, sink, switch_ports)
    if with_extractor:
        _attach_extractor(app, settings, ruleset)
    worker = faust.Worker(
        app, loglevel=logging.getLevelName(log.getEffectiveLevel()).lower(), override_logging=False
    )
    worker.execute_from_commandline()
    return 0


def _switch_ports(path: Path | None) -> dict[str, str]:
    """The cabling map for the fleet view: one YAML mapping of host port to switch port."""
    if path is None:
        return {}
    import yaml

    loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    if not isinstance(loaded, dict):
        raise ValueError(f"{path}: fleet_switch_ports holds one mapping of host port: switch port")
    return {str(host): str(switch) for host, switch in loaded.items()}


def _attach_redis_watch(app, settings, sink, switch_ports: dict[str, str]) -> None:
    from streams.redis_rebuild import RedisWatch

    watch = RedisWatch(settings, sink, switch_ports)

    @app.task
    async def redis_watch() -> None:
        await watch.run()  # a Redis that lost the verdicts is rebuilt from the topic


def _attach_extractor(app, settings, ruleset) -> None:
    from streams.extract_worker import ExtractorWorker, run_until_stopped

    @app.task
    async def extractor_task() -> None:
        # cancelled at shutdown (run() closes its clients on the way out); a lost broker starts a
        # fresh extractor instead of leaving the worker running without one
        await run_until_stopped(lambda: ExtractorWorker(settings, ruleset), asyncio.Event())


def _run_load(args: argparse.Namespace) -> int:
    from streams.publish import publish_recordings

    settings = _settings(args)
    for path in args.recordings:
        if not path.is_file():
            from streams.cli import UsageError

            raise UsageError(f"recording not found: {path}")
    counts = asyncio.run(publish_recordings(settings, args.recordings, args.speed))
    print(
        f"published {counts['records']} records ({counts['skipped']} unusable recording lines)", file=sys.stderr
    )
    return 0
