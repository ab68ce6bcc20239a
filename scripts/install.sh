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
