#!/usr/bin/env bash
# servers.sh: start or stop the real servers the tests run against.
#
#   servers.sh start DIR   install/fetch what is missing, start the servers on free
#                          loopback ports, write DIR/env (export lines) and DIR/pids;
#                          a no-op when DIR's servers are all still running
#   servers.sh stop DIR    stop every process listed in DIR/pids, remove DIR
#   servers.sh env DIR     print DIR/env
#
# Servers (PIPESTATE_SERVERS, default "redis cluster dynamodb"):
#   redis     one standalone redis-server            -> REDIS_ADDR
#   cluster   three masters joined as a Redis Cluster -> REDIS_CLUSTER_ADDRS
#   dynamodb  DynamoDB Local, in memory, shared DB    -> DYNAMODB_ENDPOINT
#
# Every server binds 127.0.0.1 and keeps no data on disk. A start that fails stops
# whatever it had started. PIPESTATE_SERVER_WAIT bounds each wait (seconds, default
# 90); PIPESTATE_JAVA_OPTS adds JVM options for DynamoDB Local.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"

usage() { die "usage: servers.sh start|stop|env DIR"; }

# alive PID: the process exists and is not a zombie.
alive() {
	local state
	kill -0 "$1" 2>/dev/null || return 1
	state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
	[[ $state != Z ]]
}

# stop_pid PID: TERM, wait up to 10s, then KILL.
stop_pid() {
	local pid=$1 i
	alive "$pid" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		alive "$pid" || return 0
		sleep 0.1
	done
	log "process $pid ignored SIGTERM; killing it"
	kill -KILL "$pid" 2>/dev/null || true
}

# all_alive DIR: every process listed in DIR/pids is running.
all_alive() {
	local pid
	[[ -s $1/pids ]] || return 1
	while read -r pid _; do
		alive "$pid" || return 1
	done <"$1/pids"
}

stop_all() {
	local dir=$1 pid
	if [[ -f $dir/pids ]]; then
		while read -r pid _; do
			[[ -n $pid ]] && stop_pid "$pid"
		done <"$dir/pids"
	fi
	rm -rf "$dir"
}

# spawn DIR NAME CMD...: start CMD in the background (stdin /dev/null, output to
# DIR/NAME.log), record its pid in DIR/pids and set SPAWNED_PID.
spawn() {
	local dir=$1 name=$2
	shift 2
	"$@" </dev/null >"$dir/$name.log" 2>&1 &
	SPAWNED_PID=$!
	echo "$SPAWNED_PID $name" >>"$dir/pids"
}

# redis_is PORT PID: the redis on PORT answers and is process PID (not a stranger
# that grabbed the port first).
redis_is() {
	redis-cli -h 127.0.0.1 -p "$1" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$2"
}

fail_log() {
	log "last lines of $1:"
	tail -n 20 "$1" >&2 || true
}

# start_redis DIR NAME [ARGS...]: start one redis-server on a free port (a few tries,
# in case a port is taken meanwhile) and set STARTED_PORT.
start_redis() {
	local dir=$1 name=$2 attempt port
	shift 2
	for attempt in 1 2 3; do
		free_port
		port=$FREE_PORT
		spawn "$dir" "$name-$port" redis-server --port "$port" --bind 127.0.0.1 \
			--save '' --appendonly no --dir "$dir" "$@"
		if wait_until "$PIPESTATE_SERVER_WAIT" "redis-server on port $port" "$SPAWNED_PID" redis_is "$port" "$SPAWNED_PID"; then
			STARTED_PORT=$port
			return 0
		fi
		fail_log "$dir/$name-$port.log"
		stop_pid "$SPAWNED_PID"
		log "retrying redis-server on another port (attempt $attempt failed)"
	done
	die "could not start redis-server"
}

cluster_ok() {
	local p
	for p in "$@"; do
		redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | tr -d '\r' | grep -qx 'cluster_state:ok' || return 1
	done
}

start_cluster() {
	local dir=$1 ports=() addrs=() i
	for i in 1 2 3; do
		start_redis "$dir" "cluster$i" --cluster-enabled yes \
			--cluster-config-file "$dir/nodes-$i.conf" --cluster-node-timeout 5000
		ports+=("$STARTED_PORT")
		addrs+=("127.0.0.1:$STARTED_PORT")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
		</dev/null >"$dir/cluster-create.log" 2>&1 || {
		fail_log "$dir/cluster-create.log"
		die "redis-cli --cluster create failed"
	}
	wait_until "$PIPESTATE_SERVER_WAIT" "Redis Cluster" "$SPAWNED_PID" cluster_ok "${ports[@]}" ||
		die "Redis Cluster on ports ${ports[*]} did not reach cluster_state:ok"
	CLUSTER_ADDRS=$(IFS=,; echo "${addrs[*]}")
}

# http_answers PORT: an HTTP server answers on PORT (any status) within 5s. A plain
# subshell, not timeout(1), so that Ctrl-C reaches it like every other child.
http_answers() {
	(
		exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
		printf 'GET / HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
		IFS= read -r -t 5 line <&3 && [[ $line == HTTP/* ]]
	) 2>/dev/null
}

# dynamodb_is PORT PID: DynamoDB Local process PID listens on PORT and answers HTTP.
dynamodb_is() {
	owns_port "$2" "$1" && http_answers "$1"
}

start_dynamodb() {
	local dir=$1 emu attempt port
	command -v java >/dev/null || die "java (17 or later) is needed for DynamoDB Local (or set DYNAMODB_ENDPOINT)"
	emu=$("$here/fetch-dynamodb-local.sh")
	for attempt in 1 2 3; do
		free_port
		port=$FREE_PORT
		# shellcheck disable=SC2086,SC2016 # PIPESTATE_JAVA_OPTS is a list of options; $1 is for the inner bash
		spawn "$dir" "dynamodb-$port" bash -c 'cd "$1" && shift && exec "$@"' _ "$emu" \
			java ${PIPESTATE_JAVA_OPTS:-} -Djava.library.path=./DynamoDBLocal_lib \
			-jar DynamoDBLocal.jar -inMemory -sharedDb -disableTelemetry -port "$port"
		if wait_until "$PIPESTATE_SERVER_WAIT" "DynamoDB Local on port $port" "$SPAWNED_PID" dynamodb_is "$port" "$SPAWNED_PID"; then
			DDB_PORT=$port
			return 0
		fi
		fail_log "$dir/dynamodb-$port.log"
		stop_pid "$SPAWNED_PID"
		log "retrying DynamoDB Local on another port (attempt $attempt failed)"
	done
	die "could not start DynamoDB Local"
}

start() {
	local dir=$1 want=" ${PIPESTATE_SERVERS:-redis cluster dynamodb} " env
	if [[ -f $dir/env ]]; then
		if all_alive "$dir"; then
			log "servers in $dir already running"
			return 0
		fi
		log "servers in $dir are partly gone; restarting them"
		stop_all "$dir"
	fi
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	STARTING_DIR=$dir
	# Whatever goes wrong from here on, stop what was started.
	trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping the servers started so far"; stop_all "$STARTING_DIR"; fi' EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM

	env=""
	if [[ $want == *" redis "* || $want == *" cluster "* ]]; then
		"$here/install-redis.sh"
	fi
	if [[ $want == *" redis "* ]]; then
		start_redis "$dir" redis
		env+="export REDIS_ADDR=127.0.0.1:$STARTED_PORT"$'\n'
		log "redis-server: 127.0.0.1:$STARTED_PORT"
	fi
	if [[ $want == *" cluster "* ]]; then
		start_cluster "$dir"
		env+="export REDIS_CLUSTER_ADDRS=$CLUSTER_ADDRS"$'\n'
		log "Redis Cluster: $CLUSTER_ADDRS"
	fi
	if [[ $want == *" dynamodb "* ]]; then
		start_dynamodb "$dir"
		env+="export DYNAMODB_ENDPOINT=http://127.0.0.1:$DDB_PORT"$'\n'
		log "DynamoDB Local: http://127.0.0.1:$DDB_PORT"
	fi
	printf '%s' "$env" >"$dir/env.tmp"
	mv "$dir/env.tmp" "$dir/env"
}

[[ $# -eq 2 ]] || usage
case $1 in
start) start "$2" ;;
stop) stop_all "$2" ;;
env) cat "$2/env" ;;
*) usage ;;
esac
