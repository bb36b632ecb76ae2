// Package redisx holds the Redis plumbing shared by pipestate's Redis backends
// (provider/redisprovider, state/redisstate and state/tiered's Redis tier), one copy of each
// rule:
//
//   - [Script] and [Runner]: a Lua script run with EVALSHA, sent again with EVAL
//     when the server answers NOSCRIPT (its script cache is empty: first use, a
//     restart, a failover, SCRIPT FLUSH), which also caches it, with a hook that
//     records each reload; a read script runs with EVALSHA_RO and EVAL_RO, which a
//     user whose ACL allows reads only may call and which the server refuses to
//     let write, and falls back to EVALSHA and EVAL on a server without them
//     (before Redis 7.0) from its first "unknown command" answer on;
//   - [Millis], the rule that turns a TTL into the milliseconds of PX and PEXPIRE
//     so that a key is gone when the contract says it expired;
//   - [CheckPrefix], the rule of a key prefix.
//
// The package is internal: its API may change with its users.
package redisx
