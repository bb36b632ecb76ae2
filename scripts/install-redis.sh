#!/usr/bin/env bash
# install-redis.sh: make sure redis-server and redis-cli are on PATH, installing
# Debian's redis-server package (which depends on redis-tools, i.e. redis-cli) when
# either is absent. The package's own service is not started.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
	exit 0
fi
apt_install redis-server
command -v redis-server >/dev/null || die "apt-get installed redis-server but it is not on PATH"
command -v redis-cli >/dev/null || die "redis-cli missing after installing redis-server (package redis-tools)"
log "installed $(redis-server --version)"
