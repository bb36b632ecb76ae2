#!/usr/bin/env bash
# with-servers.sh CMD [ARGS...]: start the test servers (servers.sh) in a fresh
# temporary directory, run CMD with REDIS_ADDR, REDIS_CLUSTER_ADDRS, DYNAMODB_ENDPOINT
# and PIPESTATE_REQUIRE_SERVERS=1 exported, stop every server however CMD ends
# (including on Ctrl-C), and exit with CMD's status.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"

(($# > 0)) || die "usage: with-servers.sh CMD [ARGS...]"

dir=$(mktemp -d "${TMPDIR:-/tmp}/pipestate-servers.XXXXXX")
trap '"$here/servers.sh" stop "$dir"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

"$here/servers.sh" start "$dir"
set -a
# shellcheck source=/dev/null
source "$dir/env"
set +a
export PIPESTATE_REQUIRE_SERVERS=1

rc=0
"$@" || rc=$?
exit "$rc"
