#!/usr/bin/env bash
# Debian packages some tests and faults need, installed only when missing:
#   nftables  network-partition fault (rules inside a network namespace the run creates)
#   chromium  renders report.html headless in the report test
# Needs root and apt-get; otherwise it says what is missing and carries on (the tests that
# need a missing tool skip and say why).
set -u
want=()
command -v nft >/dev/null 2>&1 || want+=(nftables)
command -v chromium >/dev/null 2>&1 || want+=(chromium)
[ ${#want[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: missing ${want[*]} (install them yourself; needs root and apt-get)" >&2
  exit 0
fi
echo "system-deps: installing ${want[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null \
  || echo "system-deps: apt-get install ${want[*]} failed; the tests that need them will skip" >&2
exit 0
