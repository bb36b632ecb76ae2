package redisstate_test

import (
	"fmt"
	"testing"

	"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redisstate"
)

// TestGetManyMGET: a GetMany of more keys than one MGET reads (several per hash
// slot and entity, duplicates, missing keys) answers what Get answers for each.
func TestGetManyMGET(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := t.Context()
		c := b.client(t)
		s, err := redisstate.NewInt64SumStore(c, prefixFor(t))
		if err != nil {
			t.Fatal(err)
		}
		var ks []state.Key
		for i := range 2500 {
			k := state.Key{Entity: fmt.Sprint("e", i%7), Bucket: int64(i % 1100)} // 1,100 keys per entity at most
			if i%5 == 0 {
				k.Entity = fmt.Sprint("x", i)
			}
			ks = append(ks, k)
			if i%3 != 0 {
				if err := s.MergeUpdate(ctx, k, int64(i), 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		vals, found, err := s.GetMany(ctx, ks)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range ks {
			v, ok, err := s.Get(ctx, k)
			if err != nil {
				t.Fatal(err)
			}
			if v != vals[i] || ok != found[i] {
				t.Fatalf("GetMany[%d] (%+v) = %d, %v; Get = %d, %v", i, k, vals[i], found[i], v, ok)
			}
		}
	})
}
