#!/usr/bin/env bash
# The real programs the integration tests drive (docs/integrations.md): rsyslog with omkafka,
# kcat, and a single-node Slurm with munge. Debian packages; idempotent: nothing is fetched when
# every package is already installed, and `apt-get update` runs at most once.
# Without root, apt-get or the network it only says what is missing (those tests then skip,
# naming it).
set -euo pipefail
PACKAGES=(rsyslog rsyslog-kafka kcat slurmctld slurmd slurm-client munge)

missing=()
for package in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
  echo "[install] not installed (needs root and apt-get): ${missing[*]}" >&2
  exit 0
fi
echo "[install] apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt_install() { apt-get install -y -q --no-install-recommends "${missing[@]}" >&2; }
# Only the integration tests need these: a failed install is reported, not fatal.
if ! apt_install && ! { apt-get update -q >&2 && apt_install; }; then
  echo "[install] WARNING: could not install ${missing[*]}; their tests will skip" >&2
fi
