package main

import (
	"context"
	"errors"
	"flag"
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
