#!/usr/bin/env bash
# sim.sh BACKEND DURATION: a long run of the simulation (package
# providertest/sim) on one backend: memory, miniredis, redis (redis-server),
# cluster (Redis Cluster), dynamodb, sqlite or toy (the third-party path's toy
# backend); or of the state stores' simulation (state/statetest/statesim):
# memstate, redisstate, ddbstate, tiered (tiered stores over DynamoDB) or
# statetoy. It prints the seeds it tries, the first
# failure shrunk, operations per second and how often each operation and fault
# kind ran. DynamoDB and the Redis servers use the servers of the environment
# (DYNAMODB_ENDPOINT, REDIS_ADDR, REDIS_CLUSTER_ADDRS), or start them
# (with-servers.sh) when none is set.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"

backend=${1:-memory}
duration=${2:-1m}
case "$backend" in
memory) dir=. pkg=./providertest/sim run='^TestSimMemory$' ;;
toy) dir=. pkg=./providertest/sim run='^TestSimCatchesToyExpiryBug$' ;;
miniredis) dir=. pkg=./provider/redisprovider run='^TestSim$' ;;
redis) dir=. pkg=./provider/redisprovider run='^TestSimServer$/^redis$' ;;
cluster) dir=. pkg=./provider/redisprovider run='^TestSimServer$/^cluster$' ;;
dynamodb) dir=. pkg=./provider/ddbprovider run='^TestSim$' ;;
memstate | redisstate | ddbstate | tiered) dir=. pkg=./state/$backend run='^TestSim$' ;;
statetoy) dir=. pkg=./state/statetest/statesim run='^TestSimCatchesToyExpiryBug$' ;;
sqlite) dir=examples pkg=./custombackend/... run='^TestSim$' ;;
*) die "sim.sh: unknown backend $backend (memory, miniredis, redis, cluster, dynamodb, sqlite, toy; state stores: memstate, redisstate, ddbstate, tiered, statetoy)" ;;
esac

cmd=(go test -count=1 -timeout 0 -v -run "$run" "$pkg")
export PIPESTATE_SIM_DURATION="$duration"
cd "$here/../$dir"
if [[ (($backend == dynamodb || $backend == ddbstate || $backend == tiered) && -z ${DYNAMODB_ENDPOINT:-}) || ($backend == redis && -z ${REDIS_ADDR:-}) ||
	($backend == cluster && -z ${REDIS_CLUSTER_ADDRS:-}) ]]; then
	exec bash "$here/with-servers.sh" "${cmd[@]}"
fi
"${cmd[@]}" | grep -v -e '^=== RUN' -e '^\s*--- PASS: .*/run'
