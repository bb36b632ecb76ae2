package observe

import (
	"context"
	"reflect"
	"time"

	"github.com/pipestate/pipestate/internal/nilcheck"
	"github.com/pipestate/pipestate/state"
)

//go:generate go run github.com/pipestate/pipestate/internal/capwrap -pkg observe -out restrict_store.go -func restrictStore -base state.Store[V] -opt onceMethods[V],batchMethods[V],revisionMethods[V] -import github.com/pipestate/pipestate/state -tparams "V any" -targs V

// onceMethods is what state.OnceStore adds to state.Store.
type onceMethods[V any] interface {
	MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (applied bool, err error)
}

// batchMethods is what state.BatchStore adds to state.Store.
type batchMethods[V any] interface {
	MergeMany(ctx context.Context, updates []state.Update[V]) error
}

// revisionMethods is what state.RevisionStore adds to state.Store.
type revisionMethods[V any] interface {
	GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[V], error)
}

var storeCounters = map[string]instrument{
	"MergeUpdateOnce": {name: "pipestate.merge.once", unit: "{call}",
		desc: "Exactly-once merges by outcome.", outcomes: []string{OutcomeApplied, OutcomeDuplicate}},
}

var deduperCounters = map[string]instrument{
	"MarkSeen": {name: "pipestate.dedup.claims", unit: "{call}",
		desc: "Deduper claims by outcome.", outcomes: []string{OutcomeFirst, OutcomeDuplicate}},
}

// Store returns s decorated with a span and a duration measurement per call and the
// pipestate.merge.once counter. The result implements state.OnceStore,
// state.BatchStore and state.RevisionStore exactly when s does. It fails only on a nil s or a bad option (ErrInvalidArgument).
func Store[V any](s state.Store[V], opts ...Option) (state.Store[V], error) {
	if nilcheck.IsNil(s) {
		return nil, invalidf("Store: nil store")
	}
	t, err := newTelemetry(s, reflect.TypeFor[restrictStoreFull[V]](), opts, storeCounters)
	if err != nil {
		return nil, err
	}
	return restrictStore(s, &observedStore[V]{s: s, t: t}), nil
}

type observedStore[V any] struct {
	s state.Store[V]
	t *telemetry
}

func (o *observedStore[V]) start(ctx context.Context, op string, id ids) (context.Context, call) {
	return o.t.start(ctx, op, id)
}

// Get implements state.Store.
func (o *observedStore[V]) Get(ctx context.Context, k state.Key) (V, bool, error) {
	ctx, c := o.start(ctx, "Get", ids{entity: k.Entity})
	v, ok, err := o.s.Get(ctx, k)
	return v, ok, c.done(err)
}

// GetMany implements state.Store.
func (o *observedStore[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	ctx, c := o.start(ctx, "GetMany", ids{keys: len(ks)})
	v, ok, err := o.s.GetMany(ctx, ks)
	return v, ok, c.done(err)
}

// MergeUpdate implements state.Store.
func (o *observedStore[V]) MergeUpdate(ctx context.Context, k state.Key, delta V, ttl time.Duration) error {
	ctx, c := o.start(ctx, "MergeUpdate", ids{entity: k.Entity})
	return c.done(o.s.MergeUpdate(ctx, k, delta, ttl))
}

// MergeUpdateOnce implements state.OnceStore.
func (o *observedStore[V]) MergeUpdateOnce(ctx context.Context, eventID string, k state.Key, delta V, ttl time.Duration) (bool, error) {
	ctx, c := o.start(ctx, "MergeUpdateOnce", ids{entity: k.Entity, eventID: eventID})
	ok, err := o.s.(onceMethods[V]).MergeUpdateOnce(ctx, eventID, k, delta, ttl)
	return ok, c.end(outcome(err, ok, OutcomeApplied, OutcomeDuplicate), err)
}

// MergeMany implements state.BatchStore: one span and duration per call, with the
// number of updates (pipestate.keys).
func (o *observedStore[V]) MergeMany(ctx context.Context, updates []state.Update[V]) error {
	ctx, c := o.start(ctx, "MergeMany", ids{keys: len(updates)})
	return c.done(o.s.(batchMethods[V]).MergeMany(ctx, updates))
}

// GetRevisions implements state.RevisionStore, with the number of keys
// (pipestate.keys).
func (o *observedStore[V]) GetRevisions(ctx context.Context, ks []state.Key) ([]state.Revision[V], error) {
	ctx, c := o.start(ctx, "GetRevisions", ids{keys: len(ks)})
	revs, err := o.s.(revisionMethods[V]).GetRevisions(ctx, ks)
	return revs, c.done(err)
}

// Close implements state.Store.
func (o *observedStore[V]) Close() error {
	_, c := o.start(context.Background(), "Close", ids{})
	return c.done(o.s.Close())
}

// Deduper returns d decorated with a span and a duration measurement per call and
// the pipestate.dedup.claims counter. It fails only on a nil d or a bad option.
func Deduper(d state.Deduper, opts ...Option) (state.Deduper, error) {
	if nilcheck.IsNil(d) {
		return nil, invalidf("Deduper: nil deduper")
	}
	t, err := newTelemetry(d, reflect.TypeFor[state.Deduper](), opts, deduperCounters)
	if err != nil {
		return nil, err
	}
	return &observedDeduper{d: d, t: t}, nil
}

type observedDeduper struct {
	d state.Deduper
	t *telemetry
}

// MarkSeen implements state.Deduper.
func (o *observedDeduper) MarkSeen(ctx context.Context, eventID string) (bool, error) {
	ctx, c := o.t.start(ctx, "MarkSeen", ids{eventID: eventID})
	first, err := o.d.MarkSeen(ctx, eventID)
	return first, c.end(outcome(err, first, OutcomeFirst, OutcomeDuplicate), err)
}

// Release implements state.Deduper.
func (o *observedDeduper) Release(ctx context.Context, eventID string) error {
	ctx, c := o.t.start(ctx, "Release", ids{eventID: eventID})
	return c.done(o.d.Release(ctx, eventID))
}

// Close implements state.Deduper.
func (o *observedDeduper) Close() error {
	_, c := o.t.start(context.Background(), "Close", ids{})
	return c.done(o.d.Close())
}
