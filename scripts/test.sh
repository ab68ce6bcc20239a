#!/usr/bin/env bash
# The test command (README, CI): install, start real Kafka + Redis, lint, check the rules, test.
# Services are stopped on exit unless they were already running or are external.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"

bash scripts/install.sh

started_here=0
if [[ -z "${KAFKA_BOOTSTRAP_SERVERS:-}" || -z "${REDIS_URL:-}" ]]; then
  if ! bash scripts/services.sh status >/dev/null 2>&1; then started_here=1; fi
  eval "$(bash scripts/services.sh start)"
fi
cleanup() { if [[ "$started_here" == 1 ]]; then bash scripts/services.sh stop >&2 || true; fi; }
trap cleanup EXIT

echo "[test] ruff" >&2
"$PYTHON" -m ruff check streams extractors correlator sinks tests
echo "[test] faultstream rules check" >&2
faultstream rules check
echo "[test] pytest" >&2
"$PYTHON" -m pytest "$@"
