#!/usr/bin/env bash
# Install Debian's OpenSSH server and client when they are missing (the ssh delivery tests
# start a private sshd on 127.0.0.1). Needs root (CI runs as root); does nothing when both
# are already installed. Exits 0 without installing when apt-get is unavailable or fails, so
# the tests skip with a reason instead of the suite failing.
set -uo pipefail
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh >/dev/null 2>&1 && command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1 || [ "$(id -u)" != 0 ]; then
  echo "install_sshd: cannot install ${need[*]} (needs root and apt-get); ssh tests will skip" >&2
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
# policy-rc.d keeps the package's own sshd service from starting: tests run a private one.
policy=/usr/sbin/policy-rc.d
made_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && made_policy=1
fi
{ apt-get update -qq && apt-get install -y -qq --no-install-recommends "${need[@]}"; } >/tmp/install_sshd.log 2>&1
rc=$?
[ "$made_policy" = 1 ] && rm -f "$policy"
if [ $rc -ne 0 ]; then
  echo "install_sshd: apt-get failed (see /tmp/install_sshd.log); ssh tests will skip" >&2
fi
exit 0
