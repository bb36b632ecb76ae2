// Package breaker stops a service from hammering a backend that cannot serve:
// after a run of failed requests (throttled, unreachable, refusing service) a
// circuit breaker opens, every request fails at once with an error wrapping
// pipestate.ErrUnavailable, unsent, and after an open period a probe tells
// whether the backend is back. It is the backpressure half of the state-store
// design: without it, a throttled DynamoDB table or a failed-over Redis is
// retried by every caller until each gives up.
//
//	b, err := breaker.New("orders-redis")        // 5 failures in a row open it for 10s
//	rdb.AddHook(b.RedisHook())                    // Redis: standalone or cluster
//	client := dynamodb.NewFromConfig(cfg, b.DynamoDB()) // DynamoDB
//
// The breaker is built on github.com/sony/gobreaker/v2 (its two-step breaker).
//
// # Where it sits, and why there
//
// A Breaker guards a client, not a provider or a store: it is attached to the
// go-redis client (a hook) or the DynamoDB client (a middleware), and every
// provider and store built on that client share it. So one breaker covers one
// endpoint, as the endpoint's health is what it measures; it sees every request
// (followers, watchers, keep-alives, the Coalescer's flushes included); it sees
// the client's own errors, so it tells a throttle from a failed condition
// without unwrapping what the backends made of them; and it composes with
// package observe and package state/cache in any order, keeping every optional
// interface, as it wraps none of them. A backend of your own can guard its calls
// with Do.
//
// # What counts
//
// IsFailure decides (WithFailure replaces it): network errors, timeouts and
// deadlines, go-redis's pool timeout, Redis's LOADING, BUSY, CLUSTERDOWN,
// MASTERDOWN, TRYAGAIN, READONLY and OOM, DynamoDB's throttling errors (also
// inside a cancelled transaction) and HTTP 5xx answers. Everything else is the
// backend answering and ends a run of failures: successes, misses, failed
// conditions and CAS conflicts, transaction conflicts, held locks, bad input,
// script and permission errors. A caller's cancellation is ignored.
//
// Counting is per request as the client sends it: on Redis one outcome per
// command or pipeline after go-redis's own retries (the connection handshake
// inside a request is part of it); on DynamoDB one per attempt, inside the
// SDK's retry loop, so a call the SDK tries three times against a throttling
// table is three failures, and an attempt the breaker refuses ends the call
// (the SDK does not retry it).
//
// A lost reply is one failure (the connection broke), and the retry that then
// succeeds ends the run: lost replies and CAS conflicts do not open a breaker
// unless the backend keeps failing. A refused retry of a write whose first
// attempt lost its reply leaves that write's outcome unknown, as any error of
// that retry would (see pipestate.ErrUnavailable).
//
// # States
//
//   - Closed: requests go through. WithFailures failures in a row (default 5)
//     open it.
//   - Open: every request fails at once with an error wrapping
//     pipestate.ErrUnavailable (and gobreaker.ErrOpenState), costing no
//     request. After WithOpenFor (default 10s) it is half-open.
//   - Half-open: WithProbes requests (default 1) go through at once, others fail
//     fast (gobreaker.ErrTooManyRequests, also wrapped with ErrUnavailable);
//     that many successes in a row close it, one failure opens it again.
//
// Each change is a log record (WithLogger; Warn when it opens, Info otherwise)
// and the gauge pipestate.breaker.state (WithMeterProvider; 0 closed, 1
// half-open, 2 open, attribute pipestate.breaker.name).
//
// # Throttling on DynamoDB
//
// The SDK's adaptive retry mode is the recommended client setting under a
// breaker: it rate-limits this client's requests on the client side while
// DynamoDB throttles, so a short burst of throttling slows callers down rather
// than failing them, and the breaker opens only when throttling outlasts it:
//
//	client := dynamodb.NewFromConfig(cfg, b.DynamoDB(), func(o *dynamodb.Options) {
//		o.Retryer = retry.NewAdaptiveMode()
//	})
//
// The backends' throttle counter (pipestate.retries with reason throttled, see
// package observe) counts each throttled attempt the SDK retried, whether or not
// a breaker is attached; the breaker counts the same attempts toward opening,
// and once open, no attempt is sent, so the counter stops rising too.
//
// # go-redis's log while the breaker is open
//
// The breaker stops calls, not go-redis's own log: the failed dials before it
// opens, and those of its probes, each print a line through go-redis's
// process-wide logger. Route them with goredis.SetLogger or silence them with
// logging.Disable() (package github.com/redis/go-redis/v9/logging), as
// provider/redisprovider's doc ("go-redis's own log") shows.
//
// # Across processes
//
// Each process has its own breakers: a breaker measures what its process sees of
// the endpoint. A fleet of N processes probes a recovering backend with up to N
// requests per open period.
package breaker
