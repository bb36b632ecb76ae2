#!/usr/bin/env bash
# lint.sh [PKGS...]: gofmt (no file may need formatting), go vet, staticcheck (the
# pinned version, installed into the cache when the one on PATH differs or is
# missing) over the given package patterns (default: the library and the examples,
# the two modules of the workspace in go.work), and shellcheck over the scripts
# when shellcheck is installed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$(dirname "${BASH_SOURCE[0]}")/.." # package patterns are relative to the repository root

STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}

(($# > 0)) || set -- ./... ./examples/...

dirs=()
for p in "$@"; do
	d=${p%/...}
	[[ $d == ... ]] && d=.
	dirs+=("$d")
done
unformatted=$(gofmt -l "${dirs[@]}")
if [[ -n $unformatted ]]; then
	log "gofmt -l reports files that need formatting:"
	printf '%s\n' "$unformatted" >&2
	exit 1
fi

go vet "$@"

# staticcheck -version prints e.g. "staticcheck 2026.2.2 (0.8.2)".
has_pinned() { "$1" -version 2>/dev/null | grep -qF "(${STATICCHECK_VERSION#v})"; }
sc=""
for cand in "$(command -v staticcheck || true)" "$(go env GOPATH)/bin/staticcheck" "$PIPESTATE_CACHE_DIR/bin/staticcheck"; do
	if [[ -n $cand && -x $cand ]] && has_pinned "$cand"; then
		sc=$cand
		break
	fi
done
if [[ -z $sc ]]; then
	log "installing staticcheck $STATICCHECK_VERSION into $PIPESTATE_CACHE_DIR/bin"
	GOBIN=$PIPESTATE_CACHE_DIR/bin go install "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION"
	sc=$PIPESTATE_CACHE_DIR/bin/staticcheck
fi
"$sc" "$@"

# Shell scripts, when shellcheck is installed (it is optional).
if command -v shellcheck >/dev/null; then
	shellcheck -x -P scripts scripts/*.sh .ci/run
fi
