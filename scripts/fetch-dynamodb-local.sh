#!/usr/bin/env bash
# fetch-dynamodb-local.sh: print the directory holding DynamoDBLocal.jar and
# DynamoDBLocal_lib, fetching it first when it is not cached.
#
# The official DynamoDB Local ships inside the npm package amplify-dynamodb-simulator
# (version pinned in lib.sh). The tarball comes from `npm pack`, its sha1 and sha512
# are checked against the pinned values, and package/emulator is unpacked into
# $PIPESTATE_CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/pipestate).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

dir=$PIPESTATE_CACHE_DIR/dynamodb-local-$DDB_NPM_VERSION
if [[ -f $dir/DynamoDBLocal.jar && -d $dir/DynamoDBLocal_lib ]]; then
	echo "$dir"
	exit 0
fi

# verify FILE: the pinned sha1 and sha512 both match.
verify() {
	local sha1 sha512 want512
	sha1=$(sha1sum "$1" | cut -d' ' -f1)
	sha512=$(sha512sum "$1" | cut -d' ' -f1)
	want512=$(printf %s "${DDB_NPM_INTEGRITY#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
	if [[ $sha1 != "$DDB_NPM_SHA1" || $sha512 != "$want512" ]]; then
		log "checksum mismatch for $1: sha1 $sha1 (want $DDB_NPM_SHA1), sha512 $sha512 (want $want512)"
		return 1
	fi
}

mkdir -p "$PIPESTATE_CACHE_DIR"
tmp=$(mktemp -d "$PIPESTATE_CACHE_DIR/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

tgz=$PIPESTATE_CACHE_DIR/$DDB_NPM_PKG-$DDB_NPM_VERSION.tgz
if [[ ! -f $tgz ]] || ! verify "$tgz"; then
	command -v npm >/dev/null || die "npm is needed to fetch DynamoDB Local (or set DYNAMODB_ENDPOINT)"
	log "fetching DynamoDB Local: npm pack $DDB_NPM_PKG@$DDB_NPM_VERSION"
	(cd "$tmp" && npm pack --silent "$DDB_NPM_PKG@$DDB_NPM_VERSION" </dev/null >/dev/null) ||
		die "npm pack $DDB_NPM_PKG@$DDB_NPM_VERSION failed"
	verify "$tmp/$DDB_NPM_PKG-$DDB_NPM_VERSION.tgz" || die "refusing the downloaded DynamoDB Local"
	mv -f "$tmp/$DDB_NPM_PKG-$DDB_NPM_VERSION.tgz" "$tgz"
fi

tar -xzf "$tgz" -C "$tmp" package/emulator
[[ -f $tmp/package/emulator/DynamoDBLocal.jar ]] || die "DynamoDBLocal.jar missing from $tgz"
# Another run may have unpacked it meanwhile; either copy is the same.
mv -T "$tmp/package/emulator" "$dir" 2>/dev/null || [[ -f $dir/DynamoDBLocal.jar ]] ||
	die "cannot move DynamoDB Local into $dir"
log "DynamoDB Local $DDB_NPM_VERSION unpacked into $dir"
echo "$dir"
