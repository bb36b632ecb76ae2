#!/usr/bin/env bash
# install-redis.sh: make sure redis-server and redis-cli are on PATH, installing
# Debian's redis-server package (which brings redis-tools, i.e. redis-cli) when absent.
# The package's service is not started: a policy-rc.d denies it during the install.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	exit 0
fi

command -v apt-get >/dev/null ||
	die "redis-server/redis-cli missing and apt-get unavailable: install Redis and retry, or set REDIS_ADDR"

sudo=()
if ((EUID != 0)); then
	command -v sudo >/dev/null || die "redis-server missing: run as root or install it: apt-get install -y redis-server"
	sudo=(sudo -n)
fi

policy=/usr/sbin/policy-rc.d
created_policy=0
cleanup() {
	if ((created_policy)); then
		"${sudo[@]}" rm -f "$policy"
	fi
}
trap cleanup EXIT
if [[ ! -e $policy ]]; then
	# Keep the package from starting a system-wide redis on port 6379.
	printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
	"${sudo[@]}" chmod 0755 "$policy"
	created_policy=1
fi

log "installing redis-server with apt-get"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q </dev/null >&2
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends redis-server </dev/null >&2

command -v redis-server >/dev/null || die "apt-get installed redis-server but it is not on PATH"
command -v redis-cli >/dev/null || die "redis-cli missing after installing redis-server (package redis-tools)"
log "installed $(redis-server --version)"
