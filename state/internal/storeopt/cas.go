package storeopt

import (
	"context"
	"errors"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state"
)

// MergeOp is the operation name a merge's signals carry: "MergeUpdateOnce" when once,
// else "MergeUpdate".
func MergeOp(once bool) string {
	if once {
		return "MergeUpdateOnce"
	}
	return "MergeUpdate"
}

// RetryCAS is state.RetryCASPolicy under p (its OnRetry replaced) that records on
// sig, for operation op, each lost race it retries and, when it returns
// state.ErrContention, the give-up. reason returns the signal reason (a
// signal.Reason*) of the race just lost; it is called after write reported the loss.
func RetryCAS[V, Ver any](ctx context.Context, sig *signal.Recorder, op string, reason func() string, p state.CASPolicy, m monoid.Monoid[V], delta V, read state.CASRead[V, Ver], write state.CASWrite[V, Ver]) (retries int, err error) {
	p.OnRetry = func(ctx context.Context, retry int) { sig.Retry(ctx, op, reason(), retry) }
	retries, err = state.RetryCASPolicy(ctx, m, delta, p, read, write)
	if errors.Is(err, state.ErrContention) {
		sig.GiveUp(ctx, op, reason(), retries, err)
	}
	return retries, err
}
