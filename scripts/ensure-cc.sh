#!/usr/bin/env bash
# ensure-cc.sh: `go test -race` needs cgo and a C toolchain. Install Debian's gcc
# (with libc6-dev) when the compiler go would use is missing, then check that cgo
# is on. The order matters: a Go with no C compiler on PATH (a release tarball on a
# bare machine) reports CGO_ENABLED=0 by default, so cgo is judged only once the
# compiler is there. Only CGO_ENABLED=0 set on purpose (in the environment or with
# go env -w) stops the script before it installs anything. Idempotent: with the
# compiler present and cgo on, it changes nothing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

[[ $(go env -changed CGO_ENABLED) != *"'0'"* ]] ||
	die "go test -race needs cgo, but CGO_ENABLED=0 is set (environment or go env -w)"
cc=$(go env CC)
if ! command -v "${cc%% *}" >/dev/null; then
	apt_install gcc libc6-dev
	command -v "${cc%% *}" >/dev/null || die "C compiler $cc still missing after installing gcc"
fi
[[ $(go env CGO_ENABLED) == 1 ]] ||
	die "go test -race needs cgo: CGO_ENABLED is $(go env CGO_ENABLED) with C compiler $cc"
