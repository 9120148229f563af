#!/usr/bin/env bash
# Host prerequisites from Debian's packages, idempotent; run as root (CI and these machines are).
#   - Chromium (browser tests, leaderboard page check), its headless shell (what the web envs drive: several
#     times faster to open pages than the full browser), make, and Java 17 (ScienceWorld's simulator).
#   - Docker (docker.io) and debootstrap for the sandboxes; dockerd is started when it is not answering.
#   - The sandbox base image, built from Debian packages when its content-hash tag is missing
#     (sandboxes/base/build.sh; no registry is reachable, so nothing is ever pulled).
# A second run does nothing but check. ENVGYM_SKIP_DOCKER=1 skips the Docker part.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -x /usr/lib/chromium/chromium-headless-shell ] || need+=(chromium-headless-shell)
command -v make >/dev/null 2>&1 || need+=(make)
command -v java >/dev/null 2>&1 || need+=(openjdk-17-jre-headless)  # ScienceWorld's simulator runs on the JVM
if [ "${ENVGYM_SKIP_DOCKER:-0}" != 1 ]; then
  command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
  command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
fi
# The desktop image's Debian packages are resolved by the host's apt: it needs bookworm's package lists.
if [ "${ENVGYM_SKIP_DOCKER:-0}" != 1 ] && ! ls /var/lib/apt/lists/*_Packages >/dev/null 2>&1; then
  apt-get update -qq
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "host-setup: installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "host-setup: chromium at $(command -v chromium), headless shell at /usr/lib/chromium/chromium-headless-shell"
[ "${ENVGYM_SKIP_DOCKER:-0}" = 1 ] && exit 0

if ! docker info >/dev/null 2>&1; then
  log=/var/log/envgym-dockerd.log
  echo "host-setup: starting dockerd (log: $log)"
  # setsid: the daemon outlives this script and the make that called it.
  setsid dockerd >"$log" 2>&1 < /dev/null &
  for _ in $(seq 1 120); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  if ! docker info >/dev/null 2>&1; then
    echo "host-setup: dockerd did not answer within 60 s; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
  fi
fi
echo "host-setup: docker $(docker version --format '{{.Server.Version}}') answering"
bash "$here/base/build.sh"
