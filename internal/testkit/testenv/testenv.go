package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Environment variables read by this package.
const (
	// EnvRedisAddr is the host:port of a standalone Redis server.
	EnvRedisAddr = "REDIS_ADDR"
	// EnvRedisClusterAddrs is a comma-separated list of host:port seed nodes of a
	// Redis Cluster.
	EnvRedisClusterAddrs = "REDIS_CLUSTER_ADDRS"
	// EnvDynamoDBEndpoint is the base URL of DynamoDB Local, e.g. http://127.0.0.1:8000.
	EnvDynamoDBEndpoint = "DYNAMODB_ENDPOINT"
	// EnvRequireServers, when "1", turns every missing server into a test failure.
	EnvRequireServers = "PIPESTATE_REQUIRE_SERVERS"
)

// plan is what a lookup does once the environment has been inspected.
type plan int

const (
	planEnv       plan = iota // use the address from the environment
	planContainer             // start (or reuse) a Docker container
	planSkip                  // skip the test
	planFatal                 // fail the test: a server is required but missing
)

func (p plan) String() string {
	switch p {
	case planEnv:
		return "env"
	case planContainer:
		return "container"
	case planSkip:
		return "skip"
	case planFatal:
		return "fatal"
	}
	return fmt.Sprintf("plan(%d)", int(p))
}

// choose decides how to obtain a server. env is the environment value (trimmed);
// dockerUp reports whether a Docker engine answers and is nil when the server has no
// container fallback. dockerUp is only called when env is empty.
func choose(env string, require bool, dockerUp func() bool) plan {
	switch {
	case env != "":
		return planEnv
	case dockerUp != nil && dockerUp():
		return planContainer
	case require:
		return planFatal
	default:
		return planSkip
	}
}

// requireServers reports whether PIPESTATE_REQUIRE_SERVERS=1.
func requireServers() bool {
	return strings.TrimSpace(os.Getenv(EnvRequireServers)) == "1"
}

// howTo is appended to every skip or failure message.
const howTo = "run `make test` (installs and starts real servers), or set %s"

// missing skips t, or fails it when servers are required. what names the server,
// envVar its variable, and reason says why no server was found.
func missing(t testing.TB, what, envVar, reason string) {
	t.Helper()
	msg := fmt.Sprintf("testenv: no %s: %s; "+howTo, what, reason, envVar)
	if requireServers() {
		t.Fatalf("%s (%s=1 forbids skipping)", msg, EnvRequireServers)
		return
	}
	t.Skip(msg)
}

// lookup resolves one server: the environment variable, else a container from start
// (nil when there is no container fallback), else skip/fatal.
func lookup(t testing.TB, what, envVar string, start func() (string, error)) string {
	t.Helper()
	env := strings.TrimSpace(os.Getenv(envVar))
	var dockerUp func() bool
	if start != nil {
		dockerUp = func() bool { return dockerAvailable() == nil }
	}
	switch choose(env, requireServers(), dockerUp) {
	case planEnv:
		return env
	case planContainer:
		addr, err := start()
		if err != nil {
			missing(t, what, envVar, fmt.Sprintf("%s unset and the Docker container failed to start: %v", envVar, err))
			return ""
		}
		return addr
	}
	reason := envVar + " unset and no container fallback exists"
	if start != nil {
		reason = fmt.Sprintf("%s unset and no Docker engine answers (%v)", envVar, dockerAvailable())
	}
	missing(t, what, envVar, reason)
	return ""
}
