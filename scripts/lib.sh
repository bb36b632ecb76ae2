# shellcheck shell=bash
# Shared helpers for the pipestate scripts. Source it; do not run it.

# Pinned DynamoDB Local: the official jar shipped inside this npm package.
# shellcheck disable=SC2034 # used by the scripts that source this file
DDB_NPM_PKG=amplify-dynamodb-simulator
DDB_NPM_VERSION=2.9.30
DDB_NPM_SHA1=a7ec81c475dc309aa15d047d8d03679c8be49189
DDB_NPM_INTEGRITY=sha512-xTeeRLvzEfqyd5lh3bH4c0kHvSHHmmhD5ZDsHFKAQ5g2Zl6JqlFdutaQhCLHzxEp6Ry1o7TB6niIoXuQAnSewQ==

# Where downloads are cached, outside the repository.
PIPESTATE_CACHE_DIR=${PIPESTATE_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/pipestate}

# How long to wait for a server to answer, in seconds.
PIPESTATE_SERVER_WAIT=${PIPESTATE_SERVER_WAIT:-90}

log() { printf 'pipestate: %s\n' "$*" >&2; }
die() { printf 'pipestate: error: %s\n' "$*" >&2; exit 1; }

# used_ports prints " P1 P2 ... " : every local TCP port in use (any state), in
# decimal, read from /proc/net/tcp{,6} in one pass (portable awk: no strtonum).
used_ports() {
	local f files=()
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] && files+=("$f")
	done
	((${#files[@]})) || { echo " "; return; }
	awk '
		BEGIN { for (i = 0; i < 16; i++) hex[substr("0123456789ABCDEF", i + 1, 1)] = i; printf " " }
		FNR > 1 {
			n = split($2, a, ":"); h = toupper(a[n]); v = 0
			if (length(h) != 4) next
			for (i = 1; i <= 4; i++) v = v * 16 + hex[substr(h, i, 1)]
			if (!(v in seen)) { seen[v] = 1; printf "%d ", v }
		}' "${files[@]}"
}

# owns_port PID PORT: process PID holds the socket listening on PORT (matched by
# socket inode between /proc/net/tcp{,6} and /proc/PID/fd).
owns_port() {
	local pid=$1 hex inode fd
	printf -v hex '%04X' "$2"
	# shellcheck disable=SC2013 # inodes are single words
	for inode in $(awk -v h=":$hex" '$4 == "0A" && substr($2, length($2) - 4) == h { print $10 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null); do
		for fd in /proc/"$pid"/fd/*; do
			[[ $(readlink "$fd" 2>/dev/null) == "socket:[$inode]" ]] && return 0
		done
	done
	return 1
}

# port_in_use PORT [USED]: true when PORT is in USED (from used_ports; read afresh
# when omitted) or something answers on it.
port_in_use() {
	local p=$1 used=${2:-$(used_ports)}
	[[ $used == *" $p "* ]] && return 0
	(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null
}

# free_port sets FREE_PORT to a currently unused loopback port P such that P+10000 (the Redis
# Cluster bus port) is unused too, both below the kernel's ephemeral range so that no
# outgoing connection can grab them. Ports handed out earlier in this shell are never
# repeated (call it directly, not in $(...), so that the shell remembers them).
_PIPESTATE_TAKEN=" "
free_port() {
	local p i lo=32768 span used
	if [[ -r /proc/sys/net/ipv4/ip_local_port_range ]]; then
		read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
	fi
	span=$((lo - 10000 - 10000))
	((span >= 1000)) || span=10000 # odd kernel setting: fall back to [10000, 20000)
	used=$(used_ports)
	for ((i = 0; i < 200; i++)); do
		p=$((10000 + (RANDOM * 32768 + RANDOM) % span))
		[[ $_PIPESTATE_TAKEN == *" $p "* ]] && continue
		port_in_use "$p" "$used" && continue
		port_in_use $((p + 10000)) "$used" && continue
		_PIPESTATE_TAKEN+="$p "
		# shellcheck disable=SC2034 # the result, read by the caller
		FREE_PORT=$p
		return 0
	done
	die "no free loopback port found"
}

# wait_until SECONDS DESCRIPTION PID COMMAND...: polls COMMAND every 0.2s until it
# succeeds; fails when PID exits or SECONDS elapse.
wait_until() {
	local secs=$1 what=$2 pid=$3
	shift 3
	local deadline=$((SECONDS + secs))
	until "$@" >/dev/null 2>&1; do
		if ! kill -0 "$pid" 2>/dev/null; then
			log "$what exited before answering"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			log "$what did not answer within ${secs}s"
			return 1
		fi
		sleep 0.2
	done
}

# apt_install PKG...: install Debian packages with apt-get (as root, or through
# sudo -n), without starting any service they ship: a policy-rc.d that denies
# service starts is in place for the duration when none exists.
apt_install() {
	local sudo=() policy=/usr/sbin/policy-rc.d created=0 rc=0
	command -v apt-get >/dev/null || die "apt-get unavailable: install $* yourself and retry"
	if ((EUID != 0)); then
		command -v sudo >/dev/null || die "need root (or sudo) to run: apt-get install -y $*"
		sudo=(sudo -n)
	fi
	if [[ ! -e $policy ]]; then
		printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
		"${sudo[@]}" chmod 0755 "$policy"
		created=1
	fi
	log "apt-get install $*"
	{
		"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q &&
			"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
	} </dev/null >&2 || rc=$?
	if ((created)); then
		"${sudo[@]}" rm -f "$policy"
	fi
	((rc == 0)) || die "apt-get install $* failed (exit $rc)"
}
