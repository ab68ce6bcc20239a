#!/usr/bin/env bash
# Start/stop every local service Faultstream's tests, CI and demo need
# (Kafka + Redis), without Docker. See docs/services.md.
#
# Usage: scripts/services.sh {start|stop|wipe|status}
#
#   start   start both, then wait until both answer. On success prints
#           `export KAFKA_BOOTSTRAP_SERVERS=...` / `export REDIS_URL=...` on
#           stdout (all progress goes to stderr), so
#           `eval "$(scripts/services.sh start)"` works.
#   stop    stop both (state kept)
#   wipe    stop both and delete their state (the Kafka jar cache is kept)
#   status  print each service's state; exit 0 only if all are running
#
# Environment:
#   KAFKA_BOOTSTRAP_SERVERS  set = use that external cluster, manage no Kafka
#   REDIS_URL                set = use that external Redis, manage no Redis
#   KAFKA_WAIT_TIMEOUT       seconds to wait for Kafka   (default 180)
#   REDIS_WAIT_TIMEOUT       seconds to wait for Redis   (default 30)
#   plus everything scripts/kafka.sh and scripts/redis.sh accept
set -euo pipefail

# CI strips parts of the environment; never let an unset HOME break paths.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"

# Resolve our own directory so the script works from any cwd.
SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE_ROOT="${FAULTSTREAM_STATE:-$HOME/.cache/faultstream/state}"

log() { echo "[services] $*" >&2; }

# Services this invocation manages, honouring the "external" overrides.
managed_services() {
  local svcs=()
  if [[ -n "${KAFKA_BOOTSTRAP_SERVERS:-}" ]]; then
    log "KAFKA_BOOTSTRAP_SERVERS=$KAFKA_BOOTSTRAP_SERVERS is set: using that cluster, not managing a local Kafka"
  else
    svcs+=(kafka)
  fi
  if [[ -n "${REDIS_URL:-}" ]]; then
    log "REDIS_URL=$REDIS_URL is set: using that Redis, not managing a local one"
  else
    svcs+=(redis)
  fi
  echo "${svcs[*]:-}"
}

svc() { bash "$SCRIPT_DIR/$1.sh" "${@:2}"; }

wait_timeout() {
  case "$1" in
    kafka) echo "${KAFKA_WAIT_TIMEOUT:-180}" ;;
    redis) echo "${REDIS_WAIT_TIMEOUT:-30}" ;;
  esac
}

print_exports() {
  echo "export KAFKA_BOOTSTRAP_SERVERS=${KAFKA_BOOTSTRAP_SERVERS:-127.0.0.1:${KAFKA_PORT:-9092}}"
  echo "export REDIS_URL=${REDIS_URL:-redis://127.0.0.1:${REDIS_PORT:-6379}/0}"
}

# Launch everything first and only then wait, so Kafka's JVM warm-up and the
# Redis start overlap. Every failure is collected so one run reports all.
cmd_start() {
  local s failed=() started=() t0=$SECONDS
  read -r -a services <<<"$(managed_services)"
  for s in "${services[@]}"; do
    if svc "$s" start; then started+=("$s"); else failed+=("$s"); fi
  done
  for s in "${started[@]}"; do
    svc "$s" wait "$(wait_timeout "$s")" || failed+=("$s")
  done
  if ((${#failed[@]})); then
    log "FAILED to start: ${failed[*]} (log tail printed above; full logs under $STATE_ROOT/<service>)"
    log "hint: 'bash $SCRIPT_DIR/services.sh wipe' resets their state; the jar cache is kept"
    exit 1
  fi
  log "all up in $((SECONDS - t0))s: ${services[*]:-nothing to start}"
  print_exports
}

cmd_each() { # stop|wipe: do all, fail at the end if any failed
  local s rc=0
  read -r -a services <<<"$(managed_services)"
  for s in "${services[@]}"; do svc "$s" "$1" || rc=1; done
  return "$rc"
}

cmd_status() {
  local s rc=0
  read -r -a services <<<"$(managed_services)"
  for s in "${services[@]}"; do svc "$s" status || rc=3; done
  return "$rc"
}

case "${1:-}" in
  start)     cmd_start ;;
  stop|wipe) cmd_each "$1" ;;
  status)    cmd_status ;;
  *) echo "usage: $0 {start|stop|wipe|status}" >&2; exit 2 ;;
esac
