#!/usr/bin/env bash
# Host prerequisites from Debian's packages, idempotent: Chromium for the browser tests and the
# leaderboard page check. Run as root (CI and these machines are). Later families add what they need here.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v make >/dev/null 2>&1 || need+=(make)
if [ ${#need[@]} -gt 0 ]; then
  echo "host-setup: installing ${need[*]} from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "host-setup: chromium at $(command -v chromium)"
