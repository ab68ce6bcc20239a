#!/usr/bin/env bash
# The main job on the local stack, from a fresh machine: install, start Kafka + Redis, start the
# pipeline (extractor + correlator in one process), publish the bundled sample recordings,
# wait for their verdicts and print them as a table. See README.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
EXPECTED=$(ls tests/golden/recordings/*.jsonl | wc -l)
RUN_ID="demo$(date +%s)"
LOG="${FAULTSTREAM_STATE:-$HOME/.cache/faultstream/state}/$RUN_ID.log"

bash scripts/install.sh
eval "$(bash scripts/services.sh start)"

# A fresh namespace per run: its own topics, consumer groups and Redis keys.
export FAULTSTREAM_NAMESPACE="$RUN_ID." FAULTSTREAM_REDIS_PREFIX="$RUN_ID:" FAULTSTREAM_GRACE_S=5 FAULTSTREAM_TAIL_S=5
mkdir -p "$(dirname "$LOG")"
(cd "$(dirname "$LOG")" && exec faultstream run --log-level INFO) >"$LOG" 2>&1 &
PIPELINE=$!
trap 'kill "$PIPELINE" 2>/dev/null || true; wait "$PIPELINE" 2>/dev/null || true' EXIT
echo "[demo] pipeline started (pid $PIPELINE, log $LOG)" >&2

faultstream load tests/golden/recordings/*.jsonl
echo "[demo] waiting for $EXPECTED verdicts (grace period ${FAULTSTREAM_GRACE_S}s)..." >&2
for _ in $(seq 1 120); do
  count=$(faultstream verdicts --json --limit 1000 2>/dev/null | wc -l || true)
  [[ "$count" -ge "$EXPECTED" ]] && break
  if ! kill -0 "$PIPELINE" 2>/dev/null; then echo "[demo] the pipeline stopped:" >&2; tail -30 "$LOG" >&2; exit 1; fi
  sleep 1
done
faultstream verdicts --limit 1000
echo "[demo] $count of $EXPECTED verdicts. Details: faultstream verdicts --json --prefix $FAULTSTREAM_REDIS_PREFIX" >&2
echo "[demo] Kafka and Redis keep running; stop them with: bash scripts/services.sh stop" >&2
[[ "$count" -ge "$EXPECTED" ]]
