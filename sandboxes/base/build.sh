#!/usr/bin/env bash
# Build the sandbox base image from Debian packages: debootstrap (minbase + packages.txt), then
# `docker import`. No registry is involved. The tag is envgym/base:<recipe hash>, the hash covering every
# file of this folder but README.md, so an unchanged recipe is never rebuilt.
#   build.sh              build when the tag is missing, print the tag
#   build.sh --print-tag  print the tag only
# MIRROR overrides the Debian mirror (default: deb.debian.org). Needs root.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# Same algorithm as envgym.sandbox.images.recipe_hash: sha256sum lines of the sorted files, hashed again.
hash="$(cd "$here" && find . -type f ! -name README.md -print0 | LC_ALL=C sort -z | xargs -0 sha256sum \
        | sha256sum | cut -c1-12)"
tag="envgym/base:$hash"
if [ "${1:-}" = "--print-tag" ]; then echo "$tag"; exit 0; fi
if docker image inspect "$tag" >/dev/null 2>&1; then
  echo "base image: $tag (up to date)"
  exit 0
fi
packages="$(grep -v -e '^#' -e '^[[:space:]]*$' "$here/packages.txt" | paste -sd, -)"
root="$(mktemp -d /var/tmp/envgym-base.XXXXXX)"
trap 'rm -rf "$root"' EXIT
echo "base image: building $tag (debootstrap minbase + $packages)"
start=$SECONDS
debootstrap --variant=minbase --include="$packages" bookworm "$root" "${MIRROR:-http://deb.debian.org/debian}" \
  >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; rm -f "$root.log"; exit 1; }
rm -f "$root.log"
# Nothing inside can reach a mirror (network none), so the package caches are dead weight.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/* \
       "$root"/usr/share/man/* "$root"/usr/share/info/* "$root"/var/log/*.log
tar -C "$root" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' \
  --change "LABEL envgym.image=base envgym.recipe=$hash" \
  - "$tag" >/dev/null
echo "base image: built $tag in $((SECONDS - start)) s"
