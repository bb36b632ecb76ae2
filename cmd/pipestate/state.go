package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/monoid/sketch/bloom"
	"github.com/pipestate/pipestate/monoid/sketch/hll"
	"github.com/pipestate/pipestate/monoid/sketch/topk"
	"github.com/pipestate/pipestate/state"
)

// Store kinds: the stores of package state's backends.
const (
	storeInt64Sum   = "int64sum"   // Int64SumStore
	storeFloat64Sum = "float64sum" // Float64SumStore
	storeInt64Max   = "int64max"   // Int64MaxStore
	storeHLL        = "hll"        // BytesStore of an hll.Monoid
	storeTopK       = "topk"       // BytesStore of a topk.Monoid
	storeBloom      = "bloom"      // BytesStore of a bloom.Monoid
)

var storeKinds = []string{storeInt64Sum, storeFloat64Sum, storeInt64Max, storeHLL, storeTopK, storeBloom}

var stateGetCmd = &spec{
	name:    "state get",
	args:    "KIND",
	summary: "a counter or sketch value (" + strings.Join(storeKinds, ", ") + ")",
	about: "Reads one value of a state store of kind KIND (" + strings.Join(storeKinds, ", ") + "),\n" +
		"named by its key prefix on Redis (--prefix) or its table on DynamoDB (--table): the value\n" +
		"of --entity (in --bucket, 0 for an un-windowed value), or with --window the values of the\n" +
		"entity's Tumbling buckets overlapping [--from, --to) merged in time order, as state.ReadRange\n" +
		"merges them. It prints a number, an HLL's estimate, a top-k's items with their error bound,\n" +
		"or a Bloom filter's answers for --contains. No stored value exits 3.\n" +
		"Merging sketches needs the store's monoid: --precision (hll), --capacity (topk), --bits and\n" +
		"--hashes (bloom). Times are RFC 3339, YYYY-MM-DD[THH:MM] (UTC), 'now', or -DURATION before now.\n" +
		"--json prints one object: kind, entity, bucket or window/from/to, buckets, found, and value,\n" +
		"estimate, items or contains.",
	example: "pipestate state get int64sum --redis localhost:6379 --prefix app:views --entity page:/home\n" +
		"pipestate state get hll --redis localhost:6379 --prefix app:visitors --entity site --window 1h --from -24h --to now\n" +
		"pipestate state get topk --table top-pages --entity pages --window 1h --from 2026-11-21 --to 2026-11-22 --capacity 100\n" +
		"pipestate state get bloom --dynamodb http://localhost:8000 --table seen --entity urls --contains /a --contains /b",
	conn: connStore,
	define: func(in *inv, fs *flag.FlagSet) action {
		var q query
		fs.StringVar(&q.entity, "entity", "", "the key's entity (required)")
		fs.Int64Var(&q.bucket, "bucket", 0, "the key's bucket (0: the un-windowed value)")
		fs.DurationVar(&q.window, "window", 0, "the store's Tumbling window size, e.g. 1h: merge the buckets of --from..--to")
		from := fs.String("from", "", "with --window: the range's start (inclusive)")
		to := fs.String("to", "", "with --window: the range's end (exclusive)")
		precision := fs.Uint("precision", hll.DefaultPrecision, "hll: the sketches' precision, to merge a range")
		capacity := fs.Int("capacity", 0, "topk: the summaries' capacity, to merge a range")
		bits := fs.Uint("bits", 0, "bloom: the filters' number of bits, to merge a range")
		hashes := fs.Uint("hashes", 0, "bloom: the filters' number of hash functions, to merge a range")
		fs.Var((*listFlag)(&q.contains), "contains", "bloom: an item to test (repeatable)")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "KIND")
			if err != nil {
				return err
			}
			q.kind = a[0]
			if !slices.Contains(storeKinds, q.kind) {
				return usagef("unknown store kind %q: want one of %s", q.kind, strings.Join(storeKinds, ", "))
			}
			if err := q.check(fs, in.now(), *from, *to); err != nil {
				return err
			}
			b, err := in.connect(ctx)
			if err != nil {
				return err
			}
			switch q.kind {
			case storeInt64Sum, storeInt64Max:
				s, err := b.int64Store(q.kind)
				if err != nil {
					return err
				}
				var m monoid.Monoid[int64] = monoid.Sum[int64]{}
				if q.kind == storeInt64Max {
					m = monoid.Max[int64]{}
				}
				return printValue(ctx, in, q, s, m, func(r *stateResult, v int64) { r.Value = v })
			case storeFloat64Sum:
				s, err := b.float64Store()
				if err != nil {
					return err
				}
				return printValue(ctx, in, q, s, monoid.Sum[float64]{}, func(r *stateResult, v float64) { r.Value = v })
			}
			m, err := q.sketch(fs, *precision, *capacity, *bits, *hashes)
			if err != nil {
				return err
			}
			s, err := b.bytesStore(m)
			if err != nil {
				return err
			}
			return printValue(ctx, in, q, s, m, q.decode)
		}
	},
}

// query is what state get reads.
type query struct {
	kind, entity string
	bucket       int64
	window       time.Duration
	from, to     time.Time
	contains     []string
}

// check validates the flags of q and parses --from and --to against now.
func (q *query) check(fs *flag.FlagSet, now time.Time, from, to string) error {
	if q.entity == "" {
		return usagef("missing --entity: the entity of the key to read")
	}
	if len(q.contains) > 0 && q.kind != storeBloom {
		return usagef("--contains is for bloom filters")
	}
	if q.window == 0 {
		if from != "" || to != "" {
			return usagef("--from and --to need --window, the store's window size")
		}
		return nil
	}
	if isSet(fs, "bucket") {
		return usagef("give --bucket or --window, not both")
	}
	if from == "" || to == "" {
		return usagef("--window needs --from and --to")
	}
	var err error
	if q.from, err = parseTime(from, now); err != nil {
		return usagef("--from: %v", err)
	}
	if q.to, err = parseTime(to, now); err != nil {
		return usagef("--to: %v", err)
	}
	return nil
}

// sketch returns the monoid of q's sketch kind from the shape flags. Reading one
// key does not decode the value, so only a range needs the store's real shape.
func (q *query) sketch(fs *flag.FlagSet, precision uint, capacity int, bits, hashes uint) (monoid.Monoid[[]byte], error) {
	ranged := q.window != 0
	for _, f := range []struct{ name, kind string }{{"precision", storeHLL}, {"capacity", storeTopK}, {"bits", storeBloom}, {"hashes", storeBloom}} {
		if isSet(fs, f.name) && q.kind != f.kind {
			return nil, usagef("--%s is for %s", f.name, f.kind)
		}
	}
	var (
		m   monoid.Monoid[[]byte]
		err error
	)
	switch q.kind {
	case storeHLL:
		if precision > hll.MaxPrecision {
			return nil, usagef("--precision %d is above %d", precision, hll.MaxPrecision)
		}
		m, err = hll.New(uint8(precision))
	case storeTopK:
		switch {
		case ranged && capacity == 0:
			return nil, usagef("merging top-k summaries needs --capacity, the capacity the store's topk.New was given")
		case capacity == 0:
			capacity = 1
		}
		m, err = topk.New(capacity)
	default:
		switch {
		case ranged && (bits == 0 || hashes == 0):
			return nil, usagef("merging Bloom filters needs --bits and --hashes, the shape of the store's bloom.Monoid")
		case bits == 0 || hashes == 0:
			bits, hashes = 1, 1
		}
		m, err = bloom.New(bits, hashes)
	}
	if err != nil {
		return nil, usagef("%v", err)
	}
	return m, nil
}

// decode fills r from a sketch value.
func (q *query) decode(r *stateResult, v []byte) {
	switch q.kind {
	case storeHLL:
		n, err := hll.Estimate(v)
		r.Estimate, r.err = &n, err
	case storeTopK:
		items, err := topk.Top(v)
		r.err = err
		for _, it := range items {
			r.Items = append(r.Items, topItem{it.Value, it.Count, it.Error})
		}
	default:
		r.Contains = map[string]bool{}
		for _, item := range q.contains {
			r.Contains[item], r.err = bloom.Contains(v, item)
			if r.err != nil {
				break
			}
		}
		n := len(v)
		r.Bytes = &n
	}
}

// stateResult is what state get prints; --json prints it as is.
type stateResult struct {
	Kind     string          `json:"kind"`
	Entity   string          `json:"entity"`
	Bucket   int64           `json:"bucket,omitempty"`
	Window   string          `json:"window,omitempty"`
	From     *time.Time      `json:"from,omitempty"`
	To       *time.Time      `json:"to,omitempty"`
	Buckets  int             `json:"buckets"` // keys read
	Found    int             `json:"found"`   // keys with a value
	Value    any             `json:"value,omitempty"`
	Estimate *uint64         `json:"estimate,omitempty"`
	Items    []topItem       `json:"items,omitempty"`
	Bytes    *int            `json:"bytes,omitempty"`
	Contains map[string]bool `json:"contains,omitempty"`
	err      error           // from decoding the value
}

// topItem is one counter of a top-k summary.
type topItem struct {
	Value string `json:"value"`
	Count uint64 `json:"count"`
	Error uint64 `json:"error"`
}

// counting is a store that counts the keys GetMany reads and finds.
type counting[V any] struct {
	state.Store[V]
	keys, found int
}

func (c *counting[V]) GetMany(ctx context.Context, ks []state.Key) ([]V, []bool, error) {
	vs, found, err := c.Store.GetMany(ctx, ks)
	c.keys += len(ks)
	for _, f := range found {
		if f {
			c.found++
		}
	}
	return vs, found, err
}

// printValue reads q from s, merging a range with m, and prints it; fill puts the
// value into the result.
func printValue[V any](ctx context.Context, in *inv, q query, s state.Store[V], m monoid.Monoid[V], fill func(*stateResult, V)) error {
	defer s.Close()
	r := stateResult{Kind: q.kind, Entity: q.entity, Bucket: q.bucket}
	c := &counting[V]{Store: s}
	var (
		v   V
		err error
	)
	if q.window == 0 {
		var vs []V
		if vs, _, err = c.GetMany(ctx, []state.Key{{Entity: q.entity, Bucket: q.bucket}}); err == nil {
			v = vs[0]
		}
	} else {
		r.Window, r.From, r.To = dur(q.window), &q.from, &q.to
		v, err = state.ReadRange(ctx, c, m, q.entity, state.Tumbling(q.window), q.from, q.to)
		if errors.Is(err, monoid.ErrIncompatible) {
			return usagef("%v: the stored sketches do not match the shape flags; pass the store's --precision, --capacity, or --bits and --hashes", err)
		}
	}
	if err != nil {
		return err
	}
	r.Buckets, r.Found = c.keys, c.found
	if r.Found == 0 {
		return notFoundf("no %s value of entity %q %s", q.kind, q.entity, r.where())
	}
	if fill(&r, v); r.err != nil {
		return fmt.Errorf("entity %q: the stored value is not a valid %s: %w", q.entity, q.kind, r.err)
	}
	if in.json {
		return in.emit(r)
	}
	kv := []string{"kind", r.Kind, "entity", r.Entity}
	if r.Window == "" {
		kv = append(kv, "bucket", strconv.FormatInt(r.Bucket, 10))
	} else {
		kv = append(kv, "range", fmt.Sprintf("%s to %s, window %s (%d buckets, %d with a value)",
			r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339), r.Window, r.Buckets, r.Found))
	}
	switch {
	case r.Value != nil:
		kv = append(kv, "value", fmt.Sprint(r.Value))
	case r.Estimate != nil:
		kv = append(kv, "estimate", strconv.FormatUint(*r.Estimate, 10))
	case r.Bytes != nil:
		kv = append(kv, "filter", fmt.Sprintf("%d bytes", *r.Bytes))
	case len(r.Items) == 0:
		kv = append(kv, "items", "none")
	}
	if err := in.fields(kv...); err != nil {
		return err
	}
	if len(r.Items) > 0 {
		in.say("")
		t := in.table("ITEM", "COUNT", "ERROR")
		for _, it := range r.Items {
			t.row(it.Value, strconv.FormatUint(it.Count, 10), "+"+strconv.FormatUint(it.Error, 10))
		}
		return t.flush()
	}
	if len(q.contains) > 0 {
		in.say("")
		t := in.table("ITEM", "CONTAINED")
		for _, item := range q.contains {
			answer := "no"
			if r.Contains[item] {
				answer = "maybe"
			}
			t.row(item, answer)
		}
		return t.flush()
	}
	return nil
}

// where says which keys a result read.
func (r *stateResult) where() string {
	if r.Window == "" {
		return fmt.Sprintf("in bucket %d", r.Bucket)
	}
	return fmt.Sprintf("in %d buckets of %s from %s to %s", r.Buckets, r.Window,
		r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
}

// parseTime parses a --from or --to: RFC 3339, YYYY-MM-DDTHH:MM or YYYY-MM-DD (UTC),
// "now", or -DURATION before now.
func parseTime(s string, now time.Time) (time.Time, error) {
	if s == "now" {
		return now, nil
	}
	if strings.HasPrefix(s, "-") {
		d, err := time.ParseDuration(s)
		if err != nil {
			return time.Time{}, err
		}
		return now.Add(d), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not RFC 3339, YYYY-MM-DD[THH:MM], now or -DURATION", s)
}

// listFlag is a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }

func (l *listFlag) Set(s string) error {
	*l = append(*l, s)
	return nil
}
