package redis_test

import (
	"context"
	"math"
	"testing"
	"time"

		"github.com/pipestate/pipestate/state"
	"github.com/pipestate/pipestate/state/redis"
)

func TestSanity(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		c := b.client(t)
		p := redis.WithKeyPrefix(prefixFor(t))
		sum, err := redis.NewInt64SumStore(c, p)
		if err != nil {
			t.Fatal(err)
		}
		k := state.Key{Entity: "a{b}c:}", Bucket: -3}
		for i := 0; i < 3; i++ {
			if err := sum.MergeUpdate(ctx, k, 2, time.Second); err != nil {
				t.Fatal(err)
			}
		}
		ok, err := sum.MergeUpdateOnce(ctx, "ev{1}", k, 5, 0)
		if err != nil || !ok {
			t.Fatal(ok, err)
		}
		ok, err = sum.MergeUpdateOnce(ctx, "ev{1}", k, 5, 0)
		if err != nil || ok {
			t.Fatal(ok, err)
		}
		v, found, err := sum.Get(ctx, k)
		t.Log(v, found, err)
		mx, _ := redis.NewInt64MaxStore(c, p)
		for _, d := range []int64{-5, math.MinInt64 + 1, 1 << 60, (1 << 60) - 1, 7} {
			if err := mx.MergeUpdate(ctx, k, d, 0); err != nil {
				t.Fatal(err)
			}
		}
		vs, fs, err := mx.GetMany(ctx, []state.Key{k, {Entity: "x"}, k})
		t.Log(vs, fs, err)
		fl, _ := redis.NewFloat64SumStore(c, p)
		_ = fl.MergeUpdate(ctx, k, 0.5, 0)
		_ = fl.MergeUpdate(ctx, k, 1e-3, 0)
		t.Log(fl.Get(ctx, k))
		t.Log(fl.MergeUpdate(ctx, k, math.Inf(1), 0))
		bs, err := redis.NewBytesStore(c, concat{}, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{"a", "b", "c"} {
			if ok, err := bs.MergeUpdateOnce(ctx, "e"+d, k, []byte(d), time.Minute); err != nil || !ok {
				t.Fatal(ok, err)
			}
		}
		t.Log(bs.MergeUpdateOnce(ctx, "ea", k, []byte("zz"), time.Minute))
		bv, bf, err := bs.Get(ctx, k)
		t.Log(string(bv), bf, err)
	})
}
