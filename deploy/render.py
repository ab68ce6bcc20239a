#!/usr/bin/env python3
"""Fill the @NAME@ placeholders of a deploy/ template (rsyslog, Slurm, Fluent Bit, Vector).

    python3 deploy/render.py deploy/rsyslog/faultstream.conf /etc/rsyslog.d/60-faultstream.conf \
        BROKERS=kafka-1:9092,kafka-2:9092 TOPIC_PREFIX= WORKDIR=/var/spool/rsyslog ...

Every placeholder in the template must get a value and every value must name a placeholder, so a
typo never ships a config that still says @BROKERS@. Values end up inside quoted strings of
several config languages (rsyslog, YAML, TOML, Python): quotes, backslashes and line breaks are
refused rather than escaped, so a value can never change a config's structure.
Standard library only: it runs on a log host or a Slurm controller without Faultstream.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

PLACEHOLDER = re.compile(r"@([A-Z][A-Z0-9_]*)@")
FORBIDDEN = set("\"'\\\n\r`$")


class RenderError(ValueError):
    """A template and its values do not fit together."""


def placeholders(template: str) -> set[str]:
    return set(PLACEHOLDER.findall(template))


def render(template: str, values: dict[str, str]) -> str:
    wanted = placeholders(template)
    if missing := sorted(wanted - set(values)):
        raise RenderError(f"no value for {', '.join(missing)}")
    if unknown := sorted(set(values) - wanted):
        raise RenderError(f"the template has no placeholder {', '.join(unknown)}")
    for name, value in values.items():
        if bad := sorted(FORBIDDEN & set(value)):
            raise RenderError(f"{name}: characters {bad!r} are not allowed in a value")
    return PLACEHOLDER.sub(lambda match: values[match.group(1)], template)


def render_file(source: Path, target: Path, values: dict[str, str]) -> None:
    text = render(source.read_text(), values)
    target.write_text(text)
    if os.access(source, os.X_OK):  # a rendered script stays executable
        target.chmod(0o755)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    source, target, *pairs = argv
    values = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            print(f"render: expected NAME=VALUE, got {pair!r}", file=sys.stderr)
            return 2
        values[name] = value
    try:
        render_file(Path(source), Path(target), values)
    except (RenderError, OSError) as error:
        print(f"render: {source}: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
