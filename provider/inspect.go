package provider

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pipestate/pipestate/types"
)

// LockInspector is an optional interface for reading what holds a lock or lease
// key, for operators (cmd/pipestate's lock show) and tests. It takes, extends and
// frees nothing, and what it reports may change as soon as it returns.
type LockInspector interface {
	// GetLockInfo returns what holds key now: the lock's owner identity, or the
	// lease's token and fence, and the expiry. A key that nothing holds (never
	// taken, released, or expired by the rule AcquireLock applies: now >= its
	// expiry) is (nil, nil), like every Get* of a missing entity; so a key
	// GetLockInfo reports free is one AcquireLock would have taken at that
	// instant. A bad key is an error wrapping ErrInvalidArgument. ExpiresAt is by
	// the backend's clock, to the precision the backend keeps (see each backend's
	// GetLockInfo).
	GetLockInfo(ctx context.Context, key string) (*types.LockInfo, error)
}

// Holders, as the built-in backends store who holds a lock key: LockHolder(owner)
// for a lock, LeaseHolder(token) for a lease. A third-party backend may store
// holders any way it likes.
const (
	lockHolderPrefix  = "lock:"
	leaseHolderPrefix = "lease:"
)

// LockHolder is the stored holder of a lock taken by the instance with owner
// identity owner.
func LockHolder(owner string) string { return lockHolderPrefix + owner }

// LeaseHolder is the stored holder of the lease with token token.
func LeaseHolder(token string) string { return leaseHolderPrefix + token }

// HolderInfo is the LockInfo of key held by holder (a LockHolder or LeaseHolder
// value), where fence is the key's fence counter (the current lease's fence; unused
// for a lock) and expires the holding's expiry (zero: none). A holder of neither
// form is not one a built-in backend writes: the error is a *CorruptError (kind
// KindLock, ID key, Key "" for the backend to fill in).
func HolderInfo(key, holder string, fence int64, expires time.Time) (*types.LockInfo, error) {
	info := &types.LockInfo{Key: key}
	if owner, ok := strings.CutPrefix(holder, lockHolderPrefix); ok {
		info.Owner = owner
	} else if token, ok := strings.CutPrefix(holder, leaseHolderPrefix); ok && token != "" {
		info.Token, info.Fence = token, fence
	} else {
		return nil, &CorruptError{Kind: KindLock, ID: key,
			Err: fmt.Errorf("stored holder %q is neither a lock's nor a lease's", holder)}
	}
	if !expires.IsZero() {
		info.ExpiresAt = &expires
	}
	return info, nil
}
