#!/usr/bin/env bash
# api.sh write | check | release VERSION: the exported API snapshot (internal/apisnap).
#   write            api/current.txt: the exported API of the working tree, both modules
#   check            fails when api/current.txt is not the working tree's API, or when an
#                    identifier that differs from the last release's snapshot
#                    (the highest api/vX.Y.Z.txt) is not named in CHANGELOG.md's
#                    "## Unreleased" section
#   release VERSION  api/VERSION.txt from api/current.txt (at a release, with the
#                    CHANGELOG's Unreleased section renamed VERSION)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p api

case "${1:-}" in
write)
	go run ./internal/apisnap write api/current.txt
	;;
check)
	last=$(find api -maxdepth 1 -name 'v*.txt' | sort -V | tail -n 1)
	if [[ -z $last ]]; then
		echo "api.sh: no release snapshot api/vX.Y.Z.txt" >&2
		exit 1
	fi
	go run ./internal/apisnap check api/current.txt "$last" CHANGELOG.md
	echo "api: api/current.txt matches the code; every change since $last is named in CHANGELOG.md"
	;;
release)
	[[ ${2:-} =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] || {
		echo "usage: api.sh release vX.Y.Z" >&2
		exit 2
	}
	go run ./internal/apisnap write api/current.txt
	cp api/current.txt "api/$2.txt"
	;;
*)
	echo "usage: api.sh write | check | release vX.Y.Z" >&2
	exit 2
	;;
esac
