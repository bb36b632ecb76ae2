package main

import (
	"flag"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/pipestate/pipestate/provider/redisprovider"
)

// Environment variables of the connection flags.
const (
	envRedis        = "PIPESTATE_REDIS"
	envRedisCluster = "PIPESTATE_REDIS_CLUSTER"
	envDynamoDB     = "PIPESTATE_DYNAMODB"
	envTable        = "PIPESTATE_TABLE"
	envPrefix       = "PIPESTATE_PREFIX"
	// The Redis credentials (an ACL user and its password), used where the
	// Redis URL carries none: environment variables only, as a password on the
	// command line shows in the process list.
	envRedisUser     = "PIPESTATE_REDIS_USERNAME"
	envRedisPassword = "PIPESTATE_REDIS_PASSWORD"
)

// connUse says what a command connects to, which decides its connection flags.
type connUse int

const (
	connProvider connUse = iota // the provider: --prefix and --table name the provider
	connStore                   // a state store: --prefix and --table name the store
	connTables                  // DynamoDB table administration
	connNone                    // no backend (version)
)

// Backend kinds of a target.
const (
	kindRedis        = "redis"
	kindRedisCluster = "redis-cluster"
	kindDynamoDB     = "dynamodb" // an explicit endpoint
	kindAWS          = "aws"      // the AWS default config
)

// connFlags are the connection flags of one command.
type connFlags struct {
	fs                                      *flag.FlagSet
	use                                     connUse
	redis, cluster, endpoint, table, prefix string
	timeout                                 timeoutFlag
}

// register adds the connection flags of use to fs.
func (f *connFlags) register(fs *flag.FlagSet, use connUse) {
	f.fs, f.use = fs, use
	if use == connNone {
		return
	}
	f.timeout = timeoutFlag(defaultTimeout)
	fs.Var(&f.timeout, "timeout", "a call to the backend, connecting included, that gets no answer within this `duration` fails (env "+envTimeout+"); --follow bounds each read, not the follow")
	fs.StringVar(&f.endpoint, "dynamodb", "", "DynamoDB endpoint URL, e.g. http://localhost:8000 for DynamoDB Local (env "+envDynamoDB+"); without it DynamoDB is reached through the AWS default config")
	switch use {
	case connTables:
		fs.StringVar(&f.table, "table", "", "the provider's table to create (env "+envTable+")")
		return
	case connStore:
		fs.StringVar(&f.table, "table", "", "the store's DynamoDB table (what NewInt64SumStore etc. were given; "+envTable+" is not read: it names the provider's)")
		fs.StringVar(&f.prefix, "prefix", "", "the store's Redis key prefix (what NewInt64SumStore etc. were given; "+envPrefix+" is not read: it names the provider's)")
	default:
		fs.StringVar(&f.table, "table", "", "the provider's DynamoDB table (env "+envTable+"); alone, it selects DynamoDB with the AWS default config")
		fs.StringVar(&f.prefix, "prefix", "", "the provider's Redis key prefix (env "+envPrefix+"; default "+redisprovider.DefaultKeyPrefix+")")
	}
	fs.StringVar(&f.redis, "redis", "", "Redis server: host:port or a redis:// or rediss:// URL, redis://USER:PASSWORD@host:port for an ACL user (env "+envRedis+"; or "+envRedisUser+" and "+envRedisPassword+")")
	fs.StringVar(&f.cluster, "redis-cluster", "", "Redis Cluster seed addresses, comma-separated host:port, or a URL redis://USER:PASSWORD@host:port?addr=host2:port2 (env "+envRedisCluster+"; or "+envRedisUser+" and "+envRedisPassword+")")
}

// target is a resolved backend: where to connect and what it is called there.
type target struct {
	kind   string
	addr   string // the Redis address or URL, the cluster seeds, or the DynamoDB endpoint
	table  string
	prefix string
	// user and password are the Redis credentials of the environment (the URL's
	// win); never shown.
	user, password string
	from           []string      // the flags and variables that chose it, for hints
	timeout        time.Duration // the bound of each backend call
	timeoutFrom    string        // what set it: --timeout or PIPESTATE_TIMEOUT
}

// setting is one resolved connection value and where it came from.
type setting struct{ value, from string }

// resolve picks the backend and the timeout from the flags and, for what no flag
// sets, the environment (getenv).
func (f *connFlags) resolve(getenv func(string) string) (target, error) {
	timeout, from := time.Duration(f.timeout), "--timeout"
	if !isSet(f.fs, "timeout") {
		if v := getenv(envTimeout); v != "" {
			d, err := parseTimeout(v)
			if err != nil {
				return target{}, usagef("%s=%q: %v", envTimeout, v, err)
			}
			timeout, from = d, envTimeout
		}
	}
	t, err := f.resolveBackend(getenv)
	if err != nil {
		return target{}, err
	}
	t.timeout, t.timeoutFrom = timeout, from
	return t, nil
}

// resolveBackend picks the backend from the flags and, for what no flag sets, the
// environment (getenv). A backend flag on the command line wins over every
// backend variable of another backend.
func (f *connFlags) resolveBackend(getenv func(string) string) (target, error) {
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	pick := func(name string, value *string, env string) setting {
		switch {
		case set[name]:
			return setting{*value, "--" + name}
		case env != "" && getenv(env) != "":
			return setting{getenv(env), env}
		}
		return setting{}
	}
	redisSide := set["redis"] || set["redis-cluster"]
	ddbSide := set["dynamodb"] || set["table"]
	envIf := func(ok bool, env string) string {
		if ok {
			return env
		}
		return ""
	}
	storeNames := f.use == connStore
	var (
		redis    = pick("redis", &f.redis, envIf(!ddbSide, envRedis))
		cluster  = pick("redis-cluster", &f.cluster, envIf(!ddbSide, envRedisCluster))
		endpoint = pick("dynamodb", &f.endpoint, envIf(!redisSide, envDynamoDB))
		table    = pick("table", &f.table, envIf(!redisSide && !storeNames, envTable))
		prefix   = pick("prefix", &f.prefix, envIf(!ddbSide && !storeNames, envPrefix))
	)
	if f.use == connTables {
		t := target{kind: kindAWS, table: table.value, from: froms(endpoint, table)}
		if endpoint.value != "" {
			t.kind, t.addr = kindDynamoDB, endpoint.value
		}
		return t, nil
	}
	redisLike := redis.value != "" || cluster.value != ""
	ddbLike := endpoint.value != "" || table.value != ""
	switch {
	case redis.value != "" && cluster.value != "":
		return target{}, usagef("%s and %s both name a Redis backend: keep one", redis.from, cluster.from)
	case redisLike && ddbLike:
		return target{}, usagef("%s and %s name two backends: keep one", firstFrom(redis, cluster), firstFrom(endpoint, table))
	case redisLike:
		t := target{kind: kindRedis, addr: redis.value, prefix: prefix.value, from: froms(redis, cluster, prefix),
			user: getenv(envRedisUser), password: getenv(envRedisPassword)}
		if cluster.value != "" {
			t.kind, t.addr = kindRedisCluster, cluster.value
		}
		if t.prefix == "" {
			if storeNames {
				return target{}, usagef("missing --prefix: a store on Redis is named by its key prefix (what NewInt64SumStore etc. were given)")
			}
			t.prefix = redisprovider.DefaultKeyPrefix
		}
		return t, nil
	case ddbLike:
		if prefix.value != "" {
			return target{}, usagef("%s is a Redis key prefix; on DynamoDB the %s is named by --table", prefix.from, what(storeNames))
		}
		if table.value == "" {
			if storeNames {
				return target{}, usagef("missing --table: a store on DynamoDB is named by its table")
			}
			return target{}, usagef("%s needs the provider's table: add --table T (or set %s)", endpoint.from, envTable)
		}
		t := target{kind: kindAWS, table: table.value, from: froms(endpoint, table)}
		if endpoint.value != "" {
			t.kind, t.addr = kindDynamoDB, endpoint.value
		}
		return t, nil
	}
	if storeNames {
		return target{}, usagef("no backend: pass --redis ADDR (or --redis-cluster A,B,C) with --prefix P, or --table T with --dynamodb URL or the AWS default config; or set %s, %s or %s", envRedis, envRedisCluster, envDynamoDB)
	}
	return target{}, usagef("no backend: pass --redis ADDR, --redis-cluster A,B,C, --dynamodb URL --table T, or --table T alone for the AWS default config; or set %s, %s, or %s and %s", envRedis, envRedisCluster, envDynamoDB, envTable)
}

func what(store bool) string {
	if store {
		return "store"
	}
	return "provider"
}

func firstFrom(ss ...setting) string {
	for _, s := range ss {
		if s.value != "" {
			return s.from
		}
	}
	return ""
}

func froms(ss ...setting) []string {
	var out []string
	for _, s := range ss {
		if s.value != "" {
			out = append(out, s.from)
		}
	}
	return out
}

// String describes the target in one line, without a password.
func (t target) String() string {
	switch t.kind {
	case kindRedis, kindRedisCluster:
		return fmt.Sprintf("%s %s, prefix %s", t.kind, redact(t.addr), t.prefix)
	}
	s := "dynamodb (AWS default config)"
	if t.kind == kindDynamoDB {
		s = "dynamodb " + t.addr
	}
	if t.table != "" {
		s += ", table " + t.table
	}
	return s
}

// endpoint names where the target connects, for an error about it: "redis
// 127.0.0.1:6379", "dynamodb http://localhost:8000".
func (t target) endpoint() string {
	switch t.kind {
	case kindRedis, kindRedisCluster, kindDynamoDB:
		return t.kind + " " + redact(t.addr)
	}
	return "dynamodb (AWS default config)"
}

// hint says which flags or variables chose the target.
func (t target) hint() string {
	if len(t.from) == 0 {
		return "no connection flag or variable was set"
	}
	return "chosen by " + strings.Join(t.from, ", ")
}

// redact hides the password of a Redis URL.
func redact(addr string) string {
	if !strings.Contains(addr, "://") {
		return addr
	}
	u, err := url.Parse(addr)
	if err != nil {
		return "(a malformed URL)"
	}
	return u.Redacted()
}
