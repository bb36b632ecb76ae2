#!/usr/bin/env bash
# ensure-cc.sh: `go test -race` needs cgo and a C toolchain; install Debian's gcc
# (with libc6-dev) when the compiler go would use is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $(go env CGO_ENABLED) == 1 ]] ||
	die "go test -race needs cgo: CGO_ENABLED is $(go env CGO_ENABLED)"
cc=$(go env CC)
if command -v "${cc%% *}" >/dev/null; then
	exit 0
fi
apt_install gcc libc6-dev
command -v "${cc%% *}" >/dev/null || die "C compiler $cc still missing after installing gcc"
