#!/usr/bin/env bash
# Install Faultstream and its Python dependencies (editable, with the streaming and dev extras).
# Idempotent: a second run only checks. Uses the machine's python3 (>= 3.11).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"

"$PYTHON" - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"Faultstream needs Python >= 3.11, found {sys.version.split()[0]}")
PY
echo "[install] pip install -e '$ROOT[stream,dev]'" >&2
"$PYTHON" -m pip install --disable-pip-version-check -q -e "$ROOT[stream,dev]" >&2
# rsyslog + omkafka, kcat, Slurm + munge for the integration tests (Debian packages, as root)
bash "$ROOT/scripts/install-integrations.sh"
# Prometheus + promtool (Debian's `prometheus`) for the observability tests: the alert rules
# are checked with promtool and a real Prometheus scrapes a running pipeline (tests/deploy).
if ! command -v prometheus >/dev/null 2>&1 || ! command -v promtool >/dev/null 2>&1; then
  echo "[install] apt-get install prometheus" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >&2
fi
# Chromium (Debian's `chromium`) for the dashboard test: headless, it loads the page `faultstream
# api` serves and keeps a screenshot (tests/api/test_stream_and_dashboard.py).
if ! command -v chromium >/dev/null 2>&1; then
  echo "[install] apt-get install chromium" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium >&2
fi
