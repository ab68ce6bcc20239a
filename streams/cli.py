"""The ``faultstream`` command line. Bad arguments or files: one clear message, exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from extractors.loader import RuleError

__all__ = ["main"]


class UsageError(Exception):
    """A problem the user can fix: printed as one line, no traceback."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="faultstream", description="GPU cluster failure attribution")
    commands = parser.add_subparsers(dest="command", required=True)
    rules = commands.add_parser("rules", help="check or explain the ruleset").add_subparsers(
        dest="rules_command", required=True
    )
    check = rules.add_parser("check", help="validate the rules and run every rule's examples")
    check.add_argument("dir", nargs="?", type=Path, default=None)
    explain = rules.add_parser("explain", help="which rules match a line")
    explain.add_argument("line")
    explain.add_argument("--rules", type=Path, default=None)
    explain.add_argument("--source", default=None, help="dmesg, syslog, applog, k8s or scheduler")
    _add_more_commands(commands)
    return parser


def _add_more_commands(commands: argparse._SubParsersAction) -> None:
    from streams import (
        cli_api,
        cli_backtest,
        cli_eval,
        cli_forward,
        cli_nodes,
        cli_pipeline,
        cli_remediate,
        cli_replay,
        cli_verdicts,
    )

    cli_backtest.add_parser(commands)
    cli_eval.add_parser(commands)
    cli_replay.add_parsers(commands)
    cli_pipeline.add_parsers(commands)
    cli_verdicts.add_parser(commands)
    cli_remediate.add_parser(commands)
    cli_forward.add_parser(commands)
    cli_nodes.add_parser(commands)
    cli_api.add_parser(commands)


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "rules":
        from streams.cli_rules import rules_check, rules_explain

        if args.rules_command == "check":
            return rules_check(args.dir)
        return rules_explain(args.rules, args.line, args.source)
    return args.handler(args)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _dispatch(args)
    except RuleError as exc:
        print(f"faultstream: invalid ruleset:\n{exc}", file=sys.stderr)
        return 2
    except (UsageError, ConnectionError, OSError, ValueError) as exc:
        print(f"faultstream: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
