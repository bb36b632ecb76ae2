// Command pipestate is the on-call engineer's view of the state the pipestate
// library keeps in Redis, a Redis Cluster or DynamoDB: pipelines, runs with their
// versions and statuses, the event log (paged by cursor or followed live), run
// logs, reruns, replays, late arrivals, cascade markers, traits, cached readiness,
// who holds a lock or lease, and the values of the state stores (counters, HLL
// estimates, top-k items, Bloom filter answers), without writing Go or knowing the
// key schema.
//
//	go install github.com/pipestate/pipestate/cmd/pipestate@latest
//
// Reads:
//
//	pipestate pipelines list | pipelines show PIPELINE
//	pipestate runs PIPELINE [--status S] [--limit N]
//	pipestate run RUN
//	pipestate events PIPELINE [--since CURSOR] [--limit N] [--follow]
//	pipestate runlogs PIPELINE [--date D [--schedule S]] [--limit N]
//	pipestate reruns PIPELINE | --all
//	pipestate replays [PIPELINE [--date D [--schedule S]]]
//	pipestate late PIPELINE --date D [--schedule S]
//	pipestate markers PIPELINE
//	pipestate traits PIPELINE
//	pipestate readiness PIPELINE
//	pipestate lock show KEY | lock KEY
//	pipestate state get KIND --entity E [--bucket B | --window W --from T --to T]
//
// Writes, which do nothing without --yes and print what they changed:
//
//	pipestate run fail RUN --version N --yes       (a compare-and-swap on version N)
//	pipestate lock release KEY --owner O --yes     (as owner O's ReleaseLock would)
//	pipestate admin create-tables --table T [--store-tables A,B] [--dedup-tables D] --yes
//
// 'pipestate help' lists the commands and 'pipestate COMMAND --help' shows a
// command's flags and an example. Flags and arguments may come in any order.
//
// # Connecting
//
// --redis ADDR (host:port or a redis:// URL), --redis-cluster A,B,C, or
// --dynamodb URL with --table T; --table T alone reaches DynamoDB through the AWS
// default config (environment, shared files, instance role). --prefix is the
// provider's Redis key prefix (default "pipestate"). Each has an environment
// variable, used when no flag of the command line names a backend:
// PIPESTATE_REDIS, PIPESTATE_REDIS_CLUSTER, PIPESTATE_DYNAMODB, PIPESTATE_TABLE,
// PIPESTATE_PREFIX. A loopback --dynamodb endpoint (DynamoDB Local) gets dummy
// credentials unless AWS_ACCESS_KEY_ID is set, and region us-east-1 unless one is
// configured. For state get, --prefix and --table name the store, and the two
// variables are not read (they name the provider's).
//
// # Output
//
// Aligned tables with times relative to now ("3m ago", "in 30m"), preceded by a
// line naming the backend; --json prints one JSON object per line instead (the
// library's types, e.g. types.RunState, with absolute times). Exit status: 0 found
// (or done), 1 error, 2 usage (bad flags or arguments, with a message saying how
// to fix them), 3 not found. PIPESTATE_NOW, an RFC 3339 time, fixes the clock of
// relative times and of the provider, for reproducible output.
//
// lock show reads the key through provider.LockInspector, which every built-in
// backend implements: a lock's owner or a lease's token and fence, and its expiry.
// A key nothing holds exits 3, like anything else not found.
package main
