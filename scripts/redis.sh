#!/usr/bin/env bash
# Run a throwaway local Redis for tests/CI/demo without Docker.
#
# Why this shape: Debian's redis-server package is reachable through apt (the
# only way to get a real Redis here), but its system service is not what we
# want: tests need a private, non-persistent instance whose data, pid and log
# live in our state dir and that we can wipe at will.
#
# Usage: scripts/redis.sh {start|wait [timeout_s]|stop|wipe|status|logs [n]}
#
# Environment (all optional):
#   REDIS_PORT         port on 127.0.0.1          (default 6379)
#   FAULTSTREAM_STATE  state root (default ~/.cache/faultstream/state)
set -euo pipefail

# CI strips parts of the environment; never let an unset HOME break paths.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"

REDIS_PORT="${REDIS_PORT:-6379}"
STATE_ROOT="${FAULTSTREAM_STATE:-$HOME/.cache/faultstream/state}"
STATE_DIR="$STATE_ROOT/redis"
PID_FILE="$STATE_DIR/redis.pid"
LOG_FILE="$STATE_DIR/redis.log"

log() { echo "[redis] $*" >&2; }
die() { echo "[redis] ERROR: $*" >&2; exit 1; }

# --------------------------------------------------------------------------
# Installation
# --------------------------------------------------------------------------

# Debian's postinst would start the packaged system-wide redis on 6379 and
# collide with ours. Docker-style images already ship a policy-rc.d that
# forbids that; if this machine has none, add one just for the install.
with_no_service_autostart() {
  local policy=/usr/sbin/policy-rc.d rc=0
  if [[ -e "$policy" ]]; then "$@"; return; fi
  printf '#!/bin/sh\n# temporary, from faultstream scripts/redis.sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  "$@" || rc=$?
  rm -f "$policy"
  return "$rc"
}

apt_install_redis() {
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server </dev/null
}

# Install only when missing; refresh the package lists only if the plain
# install fails (stale or empty lists), to keep the common path fast.
ensure_installed() {
  command -v redis-server >/dev/null && command -v redis-cli >/dev/null && return 0
  command -v apt-get >/dev/null || die "redis-server not found and apt-get unavailable; install Redis 7 yourself or set REDIS_URL"
  [[ "$(id -u)" == 0 ]] || die "redis-server not found; install it with: sudo apt-get install -y redis-server (or set REDIS_URL)"
  log "redis-server not found; installing Debian's redis-server package..."
  if ! with_no_service_autostart apt_install_redis >"$STATE_ROOT/redis-apt.log" 2>&1; then
    log "install failed, running apt-get update and retrying..."
    if ! { apt-get update -q && with_no_service_autostart apt_install_redis; } >>"$STATE_ROOT/redis-apt.log" 2>&1; then
      tail -n 20 "$STATE_ROOT/redis-apt.log" >&2
      die "apt-get install redis-server failed (full log: $STATE_ROOT/redis-apt.log)"
    fi
  fi
  command -v redis-server >/dev/null || die "redis-server still missing after install"
  log "installed $(redis-server --version | head -n1)"
}

# --------------------------------------------------------------------------
# Process helpers
# --------------------------------------------------------------------------

redis_ping() { [[ "$(timeout 3 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null)" == PONG ]]; }

# Pid of *our* redis, or nothing; the comm check guards against pid reuse.
running_pid() {
  local pid
  [[ -f "$PID_FILE" ]] || return 1
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == redis-server* ]] || return 1
  echo "$pid"
}

tail_log() {
  [[ -s "$LOG_FILE" ]] || return 0
  echo "----- last ${1:-30} lines of $LOG_FILE -----" >&2
  tail -n "${1:-30}" "$LOG_FILE" >&2
}

# --------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------

cmd_start() {
  local pid
  mkdir -p "$STATE_DIR"
  if pid="$(running_pid)"; then
    log "already running (pid $pid, 127.0.0.1:$REDIS_PORT)"
    return 0
  fi
  ensure_installed
  if redis_ping; then
    die "something this script did not start already answers on port $REDIS_PORT; stop it, set REDIS_PORT, or set REDIS_URL to use it"
  fi
  rm -f "$PID_FILE"
  log "starting $(redis-server --version | awk '{print $3}') on 127.0.0.1:$REDIS_PORT (state $STATE_DIR)"
  # Non-persistent on purpose (save "" / appendonly no): tests must start
  # clean and never pay for disk writes. Config is passed as arguments so
  # nothing needs stdin (CI has none). redis daemonizes itself and writes
  # the pid file.
  if ! redis-server --bind 127.0.0.1 --port "$REDIS_PORT" \
        --protected-mode no --daemonize yes \
        --pidfile "$PID_FILE" --logfile "$LOG_FILE" --dir "$STATE_DIR" \
        --save "" --appendonly no </dev/null >/dev/null 2>"$STATE_DIR/start.err"; then
    cat "$STATE_DIR/start.err" >&2; tail_log
    die "redis-server failed to launch"
  fi
}

cmd_wait() {
  local timeout_s="${1:-30}" start=$SECONDS
  [[ "$timeout_s" =~ ^[0-9]+$ ]] || die "wait: timeout must be whole seconds, got '$timeout_s'"
  command -v redis-cli >/dev/null || die "redis-cli not found (run: $0 start)"
  until redis_ping; do
    if (( SECONDS - start >= timeout_s )); then
      tail_log; die "no PONG from 127.0.0.1:$REDIS_PORT after ${timeout_s}s"
    fi
    sleep 0.3
  done
  log "ready on 127.0.0.1:$REDIS_PORT"
}

cmd_stop() {
  local pid i
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE"; log "not running"; return 0
  fi
  log "stopping pid $pid"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.25
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after 10s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$PID_FILE"
  log "stopped"
}

cmd_wipe() {
  cmd_stop
  rm -rf "$STATE_DIR"
  log "wiped $STATE_DIR"
}

# Exit code follows the LSB convention: 0 running, 3 stopped.
cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "redis: running (pid $pid, 127.0.0.1:$REDIS_PORT)"
    return 0
  fi
  echo "redis: stopped"
  return 3
}

main() {
  local cmd="${1:-}"; shift || true
  mkdir -p "$STATE_ROOT"
  case "$cmd" in
    start)  cmd_start ;;
    wait)   cmd_wait "$@" ;;
    stop)   cmd_stop ;;
    wipe)   cmd_wipe ;;
    status) cmd_status ;;
    logs)   tail_log "${1:-60}" 2>&1 ;;
    *) echo "usage: $0 {start|wait [timeout_s]|stop|wipe|status|logs [n]}" >&2; exit 2 ;;
  esac
}

main "$@"
