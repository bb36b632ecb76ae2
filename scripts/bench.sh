#!/usr/bin/env bash
# bench.sh: the paired benchmarks of the README's performance table (each library
# call beside the hand-written client code doing the same work; see
# internal/testkit/benchpair), on the servers of REDIS_ADDR and DYNAMODB_ENDPOINT. make bench
# runs it under with-servers.sh and prints the table.
#
#   COUNT=5 REDIS_BENCHTIME=3000x DYNAMODB_BENCHTIME=200x bash scripts/bench.sh
set -euo pipefail
go=${GO:-go}
count=${COUNT:-5}
hot='^Benchmark(CAS|CASCareful|GetRunState|Lock|LockCareful|AppendEvent|AppendEventCareful|ReadEventsSince100|GetTraits|Int64SumMergeUpdate|Float64SumMergeUpdate|Int64MaxMergeUpdate|Int64SumMergeUpdateOnce|GetMany1000|BytesMergeUpdate|BytesMergeUpdateCareful|MergeUpdate|MergeUpdateOnce)$'
# Redis: the real server only (the benchmarks also run on miniredis).
"$go" test -timeout 60m -run '^$' -bench "$hot/^redis$" -benchtime "${REDIS_BENCHTIME:-3000x}" -count "$count" ./provider/redisprovider/ ./state/redisstate/
# DynamoDB Local is a JVM: warm it first (output dropped), so that the first
# benchmark does not run on a cold server.
"$go" test -timeout 60m -run '^$' -bench '^Benchmark(CAS|MergeUpdate)$' -benchtime 100x ./provider/ddbprovider/ ./state/ddbstate/ > /dev/null
"$go" test -timeout 60m -run '^$' -bench "$hot" -benchtime "${DYNAMODB_BENCHTIME:-200x}" -count "$count" ./provider/ddbprovider/ ./state/ddbstate/
