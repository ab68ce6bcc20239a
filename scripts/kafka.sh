#!/usr/bin/env bash
# Run a real, single-node Apache Kafka 4.x broker (KRaft combined mode) on
# this machine without Docker.
#
# Why this shape: no Docker engine runs here and only package registries are
# reachable, so the broker is assembled from the official Apache Kafka jars on
# Maven Central (org.apache.kafka:kafka_2.13 + runtime deps) with the machine's
# own `mvn`, cached outside the repo, and launched with plain `java`.
#
# Usage: scripts/kafka.sh {start|wait [timeout_s]|stop|wipe|status|logs [n]}
#
# Environment (all optional):
#   KAFKA_PORT               broker PLAINTEXT port        (default 9092)
#   KAFKA_CONTROLLER_PORT    KRaft controller port        (default 9093)
#   KAFKA_VERSION            pin one version, e.g. 4.1.1  (default: first of
#                            KAFKA_VERSION_CANDIDATES already cached, else the
#                            first that resolves from Maven Central)
#   KAFKA_VERSION_CANDIDATES space-separated preference list
#   KAFKA_JAVA_OPTS          extra JVM flags appended to the defaults
#   FAULTSTREAM_CACHE        jar cache root  (default ~/.cache/faultstream)
#   FAULTSTREAM_STATE        state root      (default ~/.cache/faultstream/state)
#   PYTHON                   interpreter used for the aiokafka readiness probe
#
# Secured broker (docs/operations.md, "Security"): with KAFKA_SECURE=1 the client port speaks
# SASL_SSL (SCRAM-SHA-512) instead of PLAINTEXT, and KAFKA_SSL_PORT (if set) adds an SSL
# listener that requires a client certificate. Run it as a second instance: its own
# FAULTSTREAM_STATE and ports.
#   KAFKA_SECURE             1 to secure the listeners             (default: off)
#   KAFKA_TLS_DIR            ca.pem + server-bundle.pem (key, certificate, CA; PEM); made
#                            with openssl when missing             (default $STATE_DIR/tls)
#   KAFKA_SCRAM_USER         the clients' SCRAM user                (default faultstream)
#   KAFKA_SCRAM_PASSWORD     its password (required with KAFKA_SECURE=1; never logged)
#   KAFKA_SSL_PORT           port of the client-certificate listener (default: none)
set -euo pipefail

# CI strips parts of the environment; never let an unset HOME break paths.
: "${HOME:=$(getent passwd "$(id -u)" | cut -d: -f6)}"

KAFKA_PORT="${KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${KAFKA_CONTROLLER_PORT:-9093}"
# Newest first. 4.4.0 is the newest 4.x on Central at the time of writing and
# was verified end to end (aiokafka 0.14.0 produce/consume); older ones are
# fallbacks in case a version ever stops resolving.
KAFKA_VERSION_CANDIDATES="${KAFKA_VERSION_CANDIDATES:-4.4.0 4.3.1 4.2.2 4.1.2 4.1.1 4.1.0 4.0.2}"
# Pinned so resolution does not depend on Maven 3.8's ancient default (2.8).
DEP_PLUGIN="org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

CACHE_ROOT="${FAULTSTREAM_CACHE:-$HOME/.cache/faultstream}"
STATE_ROOT="${FAULTSTREAM_STATE:-$HOME/.cache/faultstream/state}"
STATE_DIR="$STATE_ROOT/kafka"
DATA_DIR="$STATE_DIR/data"
LOG_DIR="$STATE_DIR/logs"
PID_FILE="$STATE_DIR/kafka.pid"
CONF_FILE="$STATE_DIR/server.properties"
LOG4J_FILE="$STATE_DIR/log4j2.properties"
OUT_FILE="$LOG_DIR/kafka.out"     # JVM stdout/stderr (crashes, early errors)
SERVER_LOG="$LOG_DIR/server.log"  # broker log written by log4j2
PYTHON="${PYTHON:-python3}"

log() { echo "[kafka] $*" >&2; }
die() { echo "[kafka] ERROR: $*" >&2; exit 1; }

# --------------------------------------------------------------------------
# Jar resolution (Maven Central -> cache)
# --------------------------------------------------------------------------

libs_dir() { echo "$CACHE_ROOT/kafka-$1/libs"; }

# A cache entry counts only once the marker exists: resolution happens in a
# temp dir and is moved into place, so a killed run never leaves half a cache.
is_cached() { [[ -f "$(libs_dir "$1")/.complete" ]]; }

write_resolve_pom() { # $1=dir $2=version
  # kafka-tools is added *without* its transitive deps (they drag in Connect,
  # Jetty, Jersey...) only so that TopicCommand is available as a readiness
  # probe when aiokafka is not importable; it needs nothing the broker lacks.
  cat >"$1/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>local.faultstream</groupId>
  <artifactId>kafka-broker-resolve</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka_2.13</artifactId>
      <version>$2</version>
    </dependency>
    <dependency>
      <groupId>org.apache.kafka</groupId>
      <artifactId>kafka-tools</artifactId>
      <version>$2</version>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
  </dependencies>
</project>
EOF
}

# The kafka_2.13 POM brings log4j-core/api and slf4j-api but no slf4j binding
# (the binary distribution adds one). Without it the broker logs nothing, so
# add the log4j binding matching the resolved slf4j major and log4j version.
add_slf4j_binding() { # $1=work dir
  local libs="$1/libs" core="" ver artifact
  core="$(compgen -G "$libs/log4j-core-*.jar" | head -n1)"; core="${core##*/}"
  [[ -n "$core" ]] || { log "warning: no log4j-core in resolved jars; broker logs may be missing"; return 0; }
  ver="${core#log4j-core-}"; ver="${ver%.jar}"
  if compgen -G "$libs/slf4j-api-1.*.jar" >/dev/null; then
    artifact="log4j-slf4j-impl"    # slf4j 1.x binding
  else
    artifact="log4j-slf4j2-impl"   # slf4j 2.x provider
  fi
  (cd "$1" && mvn -B -q -Dstyle.color=never "$DEP_PLUGIN:copy" \
      "-Dartifact=org.apache.logging.log4j:$artifact:$ver" \
      "-DoutputDirectory=$libs") >>"$1/mvn.log" 2>&1
}

resolve_version() { # $1=version; 0 if it is (now) in the cache
  local v="$1" dest work
  is_cached "$v" && return 0
  command -v mvn >/dev/null || die "mvn not found; it is needed once to fetch Kafka $v from Maven Central"
  dest="$CACHE_ROOT/kafka-$v"
  mkdir -p "$CACHE_ROOT"
  rm -rf "$CACHE_ROOT/.resolve-$v."*   # leftovers of earlier failed tries
  work="$(mktemp -d "$CACHE_ROOT/.resolve-$v.XXXXXX")"
  write_resolve_pom "$work" "$v"
  log "resolving org.apache.kafka:kafka_2.13:$v + runtime deps from Maven Central..."
  if (cd "$work" && mvn -B -q -Dstyle.color=never "$DEP_PLUGIN:copy-dependencies" \
        -DincludeScope=runtime "-DoutputDirectory=$work/libs") >"$work/mvn.log" 2>&1 \
     && [[ -f "$work/libs/kafka_2.13-$v.jar" ]] \
     && add_slf4j_binding "$work"; then
    date -u +%FT%TZ >"$work/libs/.complete"
    rm -rf "$dest"; mkdir -p "$dest"
    mv "$work/libs" "$dest/libs"; mv "$work/pom.xml" "$work/mvn.log" "$dest/"
    rm -rf "$work"
    log "cached $(compgen -G "$dest/libs/*.jar" | wc -l) jars in $dest/libs"
    return 0
  fi
  log "Kafka $v did not resolve (last Maven output below; full log kept in $work/mvn.log)"
  sed 's/\x1b\[[0-9;]*m//g' "$work/mvn.log" | tail -n 15 >&2 || true
  return 1
}

# Prints the version to use. Serialised with flock so two concurrent starts
# do not both download into the cache.
pick_version() {
  local v
  mkdir -p "$CACHE_ROOT"
  exec 8>"$CACHE_ROOT/.kafka-resolve.lock"
  flock -w 600 8 || die "timed out waiting for another Kafka resolution (lock $CACHE_ROOT/.kafka-resolve.lock)"
  if [[ -n "${KAFKA_VERSION:-}" ]]; then
    resolve_version "$KAFKA_VERSION" || die "could not resolve Kafka $KAFKA_VERSION from Maven Central"
    echo "$KAFKA_VERSION"; return
  fi
  # Reuse any cached candidate first: a warm start must not touch Maven.
  for v in $KAFKA_VERSION_CANDIDATES; do
    is_cached "$v" && { echo "$v"; return; }
  done
  for v in $KAFKA_VERSION_CANDIDATES; do
    resolve_version "$v" && { echo "$v"; return; }
  done
  die "none of Kafka [$KAFKA_VERSION_CANDIDATES] resolved from Maven Central (network/proxy? see mvn.log under $CACHE_ROOT/.resolve-*)"
}

# --------------------------------------------------------------------------
# Process helpers
# --------------------------------------------------------------------------

port_open() { timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null; }

# Pid of *our* broker, or nothing. Checks the cmdline so a recycled pid that
# now belongs to something else is never reported (or killed) as Kafka.
running_pid() {
  local pid
  [[ -f "$PID_FILE" ]] || return 1
  pid="$(cat "$PID_FILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 1
  kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q 'kafka\.Kafka' || return 1
  echo "$pid"
}

tail_logs() { # $1=lines
  local n="${1:-40}" f
  for f in "$SERVER_LOG" "$OUT_FILE"; do  # JVM-level fatal errors last
    [[ -s "$f" ]] || continue
    echo "----- last $n lines of $f -----" >&2
    tail -n "$n" "$f" >&2
  done
}

# --------------------------------------------------------------------------
# Config and storage
# --------------------------------------------------------------------------

# Regenerated on every start so port overrides always take effect. Static
# controller.quorum.voters (not --standalone dynamic quorum) is used because
# the voter endpoint is then read from config, not frozen into the metadata
# log at format time: changing KAFKA_CONTROLLER_PORT later keeps working.
write_server_properties() {
  if [[ "${KAFKA_SECURE:-0}" == 1 ]]; then
    write_secure_server_properties
    return
  fi
  cat >"$CONF_FILE" <<EOF
# Generated by scripts/kafka.sh - edits are overwritten on every start.
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=PLAINTEXT://127.0.0.1:$KAFKA_PORT
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
$(single_node_properties)
EOF
}

# What every broker this script starts shares, plain or secure: one node, small and quick.
single_node_properties() {
  cat <<EOF
log.dirs=$DATA_DIR
num.partitions=4
auto.create.topics.enable=true
delete.topic.enable=true
# Single node: every internal topic must live with one replica.
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
# Tests want consumers to join immediately.
group.initial.rebalance.delay.ms=0
# Fewer internal partitions: faster first group/transaction use on 2 cores.
offsets.topic.num.partitions=8
transaction.state.log.num.partitions=8
# Modest thread pools for a 2-core machine.
num.network.threads=2
num.io.threads=4
EOF
}

# Kafka 4 logs through log4j2; everything goes to a file in the state dir so
# the broker never chatters on the caller's stdout.
write_log4j_config() {
  cat >"$LOG4J_FILE" <<'EOF'
# Generated by scripts/kafka.sh
status = warn
appender.file.type = RollingFile
appender.file.name = FILE
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.filePattern = ${sys:kafka.logs.dir}/server.log.%i
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
appender.file.policies.type = Policies
appender.file.policies.size.type = SizeBasedTriggeringPolicy
appender.file.policies.size.size = 50MB
appender.file.strategy.type = DefaultRolloverStrategy
appender.file.strategy.max = 3
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = FILE
# Per-request and state-change chatter is noise for a test broker.
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.statechange.name = state.change.logger
logger.statechange.level = WARN
EOF
}

# Fills the global JAVA_ARGS array (an array, not a string, so the "libs/*"
# classpath wildcard reaches java unexpanded). $1=server|tool $2=version,
# rest = main class + args.
build_java_args() {
  local kind="$1" libs; libs="$(libs_dir "$2")"; shift 2
  local -a extra=()
  # shellcheck disable=SC2206  # KAFKA_JAVA_OPTS is intentionally word-split
  [[ -n "${KAFKA_JAVA_OPTS:-}" ]] && extra=(${KAFKA_JAVA_OPTS})
  if [[ "$kind" == server ]]; then
    # Small heap + SerialGC + C1 only: the machine has 2 cores, and a test
    # broker gains more from a fast, light JVM than from peak throughput.
    JAVA_ARGS=(-Xms128m -Xmx1g -XX:+ExitOnOutOfMemoryError)
  else
    JAVA_ARGS=(-Xmx256m)
  fi
  JAVA_ARGS+=(-XX:+UseSerialGC -XX:TieredStopAtLevel=1
    -Djava.awt.headless=true -Djava.net.preferIPv4Stack=true
    "-Dkafka.logs.dir=$LOG_DIR" "-Dlog4j2.configurationFile=$LOG4J_FILE"
    "${extra[@]}" -cp "$libs/*" "$@")
}

# 22-char base64url UUID, the format KRaft cluster ids use. Done in the shell
# so formatting does not pay for an extra JVM start (StorageTool random-uuid).
random_cluster_id() {
  local id
  while :; do
    id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
    [[ "$id" != -* ]] && { echo "$id"; return; }
  done
}

# Format once; an existing meta.properties means the data dir is ready.
format_storage() { # $1=version
  [[ -f "$DATA_DIR/meta.properties" ]] && return 0
  local id; id="$(random_cluster_id)"
  log "formatting KRaft storage in $DATA_DIR (cluster id $id)"
  local -a scram=()
  mapfile -t scram < <(scram_format_args)
  build_java_args tool "$1" kafka.tools.StorageTool format -t "$id" -c "$CONF_FILE" "${scram[@]}"
  if ! java "${JAVA_ARGS[@]}" >"$LOG_DIR/format.log" 2>&1; then
    cat "$LOG_DIR/format.log" >&2
    die "kafka.tools.StorageTool format failed (see $LOG_DIR/format.log)"
  fi
}

# --------------------------------------------------------------------------
# Readiness probe: the port answering is not enough (the broker listens
# before the metadata quorum is ready), so ask for the topic list.
# --------------------------------------------------------------------------

# --------------------------------------------------------------------------
# Secured listeners (KAFKA_SECURE=1): SASL_SSL with SCRAM, optionally SSL with
# client certificates. The broker talks to itself over SASL_SSL as "admin", a
# SCRAM user created with the storage (kafka-storage format --add-scram).
# --------------------------------------------------------------------------

TLS_DIR="${KAFKA_TLS_DIR:-$STATE_DIR/tls}"
ADMIN_SECRET_FILE="$STATE_DIR/admin.secret"

make_tls_files() { # a CA and a broker certificate for 127.0.0.1, unless given
  [[ -f "$TLS_DIR/ca.pem" && -f "$TLS_DIR/server-bundle.pem" ]] && return 0
  command -v openssl >/dev/null || die "openssl not found (needed to make the broker's certificate)"
  mkdir -p "$TLS_DIR"
  log "making a CA and a broker certificate in $TLS_DIR"
  (
    cd "$TLS_DIR"
    openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj /CN=faultstream-local-ca \
      -keyout ca.key -out ca.pem
    openssl req -newkey rsa:2048 -nodes -subj /CN=kafka -keyout server.key -out server.csr
    echo "subjectAltName=IP:127.0.0.1,DNS:localhost" >server.ext
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 365 \
      -extfile server.ext -out server.pem
    cat server.key server.pem ca.pem >server-bundle.pem
    chmod 600 ca.key server.key server-bundle.pem
  ) >"$LOG_DIR/openssl.log" 2>&1 || { cat "$LOG_DIR/openssl.log" >&2; die "openssl failed"; }
}

admin_secret() {
  [[ -s "$ADMIN_SECRET_FILE" ]] || (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=\n' >"$ADMIN_SECRET_FILE")
  cat "$ADMIN_SECRET_FILE"
}

write_secure_server_properties() {
  [[ -n "${KAFKA_SCRAM_PASSWORD:-}" ]] || die "KAFKA_SECURE=1 needs KAFKA_SCRAM_PASSWORD (the clients' SCRAM password)"
  make_tls_files
  local listeners="SASL_SSL://127.0.0.1:$KAFKA_PORT" map="CONTROLLER:PLAINTEXT,SASL_SSL:SASL_SSL"
  if [[ -n "${KAFKA_SSL_PORT:-}" ]]; then
    listeners+=",SSL://127.0.0.1:$KAFKA_SSL_PORT"; map+=",SSL:SSL"
  fi
  (umask 077; cat >"$CONF_FILE" <<EOF
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$KAFKA_CONTROLLER_PORT
listeners=$listeners,CONTROLLER://127.0.0.1:$KAFKA_CONTROLLER_PORT
advertised.listeners=$listeners
controller.listener.names=CONTROLLER
inter.broker.listener.name=SASL_SSL
listener.security.protocol.map=$map
sasl.enabled.mechanisms=SCRAM-SHA-512
sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512
listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required username="admin" password="$(admin_secret)";
ssl.keystore.type=PEM
ssl.keystore.location=$TLS_DIR/server-bundle.pem
ssl.truststore.type=PEM
ssl.truststore.location=$TLS_DIR/ca.pem
listener.name.ssl.ssl.client.auth=required
$(single_node_properties)
EOF
  )
}

# SCRAM credentials are part of the storage format: given to the format tool
# on its command line only, never echoed.
scram_format_args() {
  [[ "${KAFKA_SECURE:-0}" == 1 ]] || return 0
  printf '%s\n' --add-scram "SCRAM-SHA-512=[name=admin,password=$(admin_secret)]" \
    --add-scram "SCRAM-SHA-512=[name=${KAFKA_SCRAM_USER:-faultstream},password=$KAFKA_SCRAM_PASSWORD]"
}

probe_aiokafka() {
  timeout 20 "$PYTHON" - "127.0.0.1:$KAFKA_PORT" <<'EOF' >/dev/null 2>&1
import asyncio, sys
from aiokafka.admin import AIOKafkaAdminClient

async def main():
    admin = AIOKafkaAdminClient(bootstrap_servers=sys.argv[1], request_timeout_ms=5000)
    await admin.start()
    try:
        await admin.list_topics()
    finally:
        await admin.close()

asyncio.run(main())
EOF
}

probe_topic_command() { # $1=version
  build_java_args tool "$1" org.apache.kafka.tools.TopicCommand \
    --bootstrap-server "127.0.0.1:$KAFKA_PORT" --list
  timeout 30 java "${JAVA_ARGS[@]}" >/dev/null 2>&1
}

broker_ready() { # $1=version or ""
  port_open "$KAFKA_PORT" || return 1
  if [[ "${KAFKA_SECURE:-0}" == 1 ]]; then  # the plain-text probes cannot log in
    grep -q 'Kafka Server started' "$SERVER_LOG" 2>/dev/null
  elif "$PYTHON" -c 'import aiokafka' >/dev/null 2>&1; then
    probe_aiokafka
  elif [[ -n "$1" ]] && compgen -G "$(libs_dir "$1")/kafka-tools-*.jar" >/dev/null; then
    probe_topic_command "$1"
  else
    grep -q 'Kafka Server started' "$SERVER_LOG" 2>/dev/null
  fi
}

running_version() { # version of the broker our pid runs, from its classpath
  local pid="$1"
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -o 'kafka-[0-9][^/]*/libs' | head -n1 \
    | sed 's#kafka-##; s#/libs##'
}

# --------------------------------------------------------------------------
# Subcommands
# --------------------------------------------------------------------------

cmd_start() {
  local pid v
  if pid="$(running_pid)"; then
    log "already running (pid $pid, 127.0.0.1:$KAFKA_PORT)"
    return 0
  fi
  if port_open "$KAFKA_PORT" || port_open "$KAFKA_CONTROLLER_PORT"; then
    die "port $KAFKA_PORT or $KAFKA_CONTROLLER_PORT is already in use by a process this script did not start; stop it, or set KAFKA_PORT/KAFKA_CONTROLLER_PORT, or set KAFKA_BOOTSTRAP_SERVERS to use it as an external cluster"
  fi
  command -v java >/dev/null || die "java not found (Kafka 4 needs Java 17+)"
  v="$(pick_version)"
  mkdir -p "$DATA_DIR" "$LOG_DIR"
  write_server_properties
  write_log4j_config
  format_storage "$v"
  rm -f "$PID_FILE"
  # Keep one previous run's log aside so a failure tail shows only this run.
  [[ -f "$SERVER_LOG" ]] && mv -f "$SERVER_LOG" "$SERVER_LOG.prev"
  log "starting Kafka $v on 127.0.0.1:$KAFKA_PORT (controller :$KAFKA_CONTROLLER_PORT, logs $LOG_DIR)"
  # setsid + nohup: the broker survives the calling shell/CI step ending its
  # session. The wrapper writes its own pid and then execs java, so the pid
  # file holds exactly the JVM's pid.
  build_java_args server "$v" kafka.Kafka "$CONF_FILE"
  # shellcheck disable=SC2016  # $$/$1/$@ belong to the inner bash
  nohup setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' _ "$PID_FILE" \
    java "${JAVA_ARGS[@]}" >"$OUT_FILE" 2>&1 </dev/null &
  # Give the wrapper a moment to write the pid file, then sanity check.
  for _ in 1 2 3 4 5 6 7 8 9 10; do [[ -s "$PID_FILE" ]] && break; sleep 0.2; done
  sleep 0.5
  running_pid >/dev/null || { tail_logs 40; die "broker exited right after launch"; }
}

cmd_wait() {
  local timeout_s="${1:-120}" start pid v=""
  [[ "$timeout_s" =~ ^[0-9]+$ ]] || die "wait: timeout must be whole seconds, got '$timeout_s'"
  start=$SECONDS
  pid="$(running_pid)" || { tail_logs 40; die "broker is not running (run: $0 start)"; }
  v="$(running_version "$pid")"
  until broker_ready "$v"; do
    if ! running_pid >/dev/null; then
      tail_logs 60; die "broker process exited while starting"
    fi
    if (( SECONDS - start >= timeout_s )); then
      tail_logs 60; die "broker not ready on 127.0.0.1:$KAFKA_PORT after ${timeout_s}s"
    fi
    sleep 1
  done
  log "ready on 127.0.0.1:$KAFKA_PORT (Kafka ${v:-?}, waited $((SECONDS - start))s)"
}

cmd_stop() {
  local pid i
  if ! pid="$(running_pid)"; then
    rm -f "$PID_FILE"
    log "not running"
    return 0
  fi
  log "stopping pid $pid (TERM; KILL after 20s)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 40; i++)); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.5
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after 20s, sending KILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.5
  fi
  rm -f "$PID_FILE"
  log "stopped"
}

cmd_wipe() {
  cmd_stop
  rm -rf "$STATE_DIR"
  log "wiped $STATE_DIR (jar cache in $CACHE_ROOT kept)"
}

# Exit code follows the LSB convention: 0 running, 3 stopped.
cmd_status() {
  local pid
  if pid="$(running_pid)"; then
    echo "kafka: running (pid $pid, Kafka $(running_version "$pid"), 127.0.0.1:$KAFKA_PORT)"
    return 0
  fi
  echo "kafka: stopped"
  return 3
}

main() {
  local cmd="${1:-}"; shift || true
  case "$cmd" in
    start)  cmd_start ;;
    wait)   cmd_wait "$@" ;;
    stop)   cmd_stop ;;
    wipe)   cmd_wipe ;;
    status) cmd_status ;;
    logs)   tail_logs "${1:-60}" 2>&1 ;;
    *) echo "usage: $0 {start|wait [timeout_s]|stop|wipe|status|logs [n]}" >&2; exit 2 ;;
  esac
}

main "$@"
