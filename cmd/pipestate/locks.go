package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

var lockShowCmd = &spec{
	name:    "lock show",
	args:    "KEY",
	summary: "what holds a lock or lease key: owner or token, fence, expiry",
	about: "Shows what holds lock or lease KEY now: a lock's owner (the identity the holding process\n" +
		"gave WithOwner) or a lease's token and fence, and when the holding expires, relative to\n" +
		"now (never, for a lock taken with ttl 0). A key nothing holds (never taken, released or\n" +
		"expired) exits 3. 'pipestate lock KEY' is the same command. --json prints one\n" +
		"types.LockInfo, with the absolute expiry, and its kind: \"lock\" or \"lease\".",
	example: "pipestate lock show eval:orders:daily --redis localhost:6379\npipestate lock sched:orders --json --table pipestate",
	define: func(in *inv, fs *flag.FlagSet) action {
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "KEY")
			if err != nil {
				return err
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			li, ok := p.(provider.LockInspector)
			if !ok {
				return errNoInspector
			}
			info, err := li.GetLockInfo(ctx, a[0])
			switch {
			case err != nil:
				return err
			case info == nil:
				return notFoundf("nothing holds lock %q: it was never taken, or was released, or expired", a[0])
			case in.json:
				return in.emit(lockJSON{LockInfo: *info, Kind: lockKind(*info)})
			}
			expires := "never"
			if info.ExpiresAt != nil {
				expires = in.ago(*info.ExpiresAt)
			}
			if lockKind(*info) == "lease" {
				return in.fields("key", info.Key, "kind", "lease", "token", info.Token,
					"fence", strconv.FormatInt(info.Fence, 10), "expires", expires)
			}
			return in.fields("key", info.Key, "kind", "lock", "owner", info.Owner, "expires", expires)
		}
	},
}

// errNoInspector is lock show's error on a provider that cannot tell who holds a
// key.
var errNoInspector = errors.New("this backend's provider cannot tell who holds a lock: it does not implement " +
	"provider.LockInspector (the built-in backends do)")

// lockJSON is what lock show --json prints: a types.LockInfo and its kind.
type lockJSON struct {
	types.LockInfo
	Kind string `json:"kind"` // "lock" or "lease"
}

// lockKind says what holds a key: "lock" or "lease".
func lockKind(info types.LockInfo) string {
	if info.IsLease() {
		return "lease"
	}
	return "lock"
}

var locksListCmd = &spec{
	name:    "locks list",
	summary: "every lock and lease held now: holder, fence, expiry (--match GLOB)",
	about: "Lists the locks and leases held now, in key order, at most --limit: a lock's owner, or a\n" +
		"lease's token and fence, and when the holding expires. --match keeps the keys that match a\n" +
		"glob: '*' any characters (':' and '/' too), '?' one, '\\' makes the next one literal.\n" +
		"It reads through provider.LockLister, which every built-in backend implements. Cost: Redis\n" +
		"SCANs the whole keyspace of every master (1 round trip per 1,000 keys), then reads the\n" +
		"locks in one MULTI (a Cluster: one per lock); DynamoDB Scans the whole table (1 request\n" +
		"per 1 MB). Measured at 1,000 pipelines with a lease each (go test ./cmd/pipestate -run\n" +
		"TestCost -cost -v): Redis 14 round trips (13,002 keys) in 22 ms, a 3-master Cluster\n" +
		"1,016 in 61 ms, DynamoDB Local 2 requests (8,000 items) in 0.2 s. --json prints one\n" +
		"types.LockInfo per line with its kind, as lock show --json does.",
	example: "pipestate locks list --redis localhost:6379\npipestate locks list --match 'sched:*' --table pipestate",
	define: func(in *inv, fs *flag.FlagSet) action {
		match := fs.String("match", "", "only the keys that match this glob ('*', '?', '\\' to escape)")
		limit := fs.Int("limit", 100, "the most locks to print")
		return func(ctx context.Context, pos []string) error {
			if _, err := args(pos); err != nil {
				return err
			}
			if err := checkLimit(*limit); err != nil {
				return err
			}
			if _, err := provider.ParseLockPattern(*match); err != nil {
				return fmt.Errorf("--match: %w", err)
			}
			p, err := in.provider(ctx)
			if err != nil {
				return err
			}
			ll, ok := p.(provider.LockLister)
			if !ok {
				return errNoLister
			}
			list, err := ll.ListLocks(ctx, *match, *limit)
			switch {
			case err != nil:
				return err
			case in.json:
				for _, info := range list {
					if err := in.emit(lockJSON{LockInfo: info, Kind: lockKind(info)}); err != nil {
						return err
					}
				}
				return nil
			case len(list) == 0 && *match != "":
				in.say("no lock or lease held matches %q", *match)
				return nil
			case len(list) == 0:
				in.say("no lock or lease is held")
				return nil
			}
			t := in.table("KEY", "KIND", "OWNER/TOKEN", "FENCE", "EXPIRES")
			for _, info := range list {
				expires := "never"
				if info.ExpiresAt != nil {
					expires = in.ago(*info.ExpiresAt)
				}
				if lockKind(info) == "lease" {
					t.row(info.Key, "lease", info.Token, strconv.FormatInt(info.Fence, 10), expires)
				} else {
					t.row(info.Key, "lock", info.Owner, "-", expires)
				}
			}
			return t.flush()
		}
	},
}

// errNoLister is locks list's error on a provider that cannot list lock keys.
var errNoLister = errors.New("this backend's provider cannot list locks: it does not implement " +
	"provider.LockLister (the built-in backends do)")
