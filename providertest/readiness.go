package providertest

import (
	"context"
	"strconv"
	"testing"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunReadiness tests PutReadiness and GetReadiness: round trip, replace, expiry
// after Harness.ReadinessTTL (default 5 minutes), pipelines kept apart, aliasing,
// bad input and cancellation.
func RunReadiness(t *testing.T, h Harness) {
	t.Helper()
	group(t, "Readiness", h, func(t *testing.T, s *suite) {
		s.run(t, "put_get_round_trip", testReadinessPutGetRoundTrip)
		s.run(t, "get_missing", testReadinessGetMissing)
		s.run(t, "put_replaces", testReadinessPutReplaces)
		s.run(t, "kept_within_readiness_ttl", testReadinessKeptWithinReadinessTTL)
		s.run(t, "expires_after_readiness_ttl", testReadinessExpiresAfterReadinessTTL)
		s.run(t, "expired_at_exact_readiness_ttl", testReadinessExpiredAtExactReadinessTTL)
		testReadinessSizes(t, s)
		s.run(t, "adversarial_pipeline_ids", testReadinessAdversarialPipelineIDs)
		s.run(t, "no_aliasing", testReadinessNoAliasing)
		testReadinessBadInputAndCancelled(t, s)
	})
}

// testReadinessSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the Readiness group.
func testReadinessSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			r := newReadiness(k.pipeline)
			r.Traits[0].Value["payload"] = payload
			return p.PutReadiness(ctx, r)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetReadiness(t.Context(), k.pipeline)
			noErr(t, err, "GetReadiness")
			if got == nil || len(got.Traits) == 0 {
				return "", got != nil
			}
			return payloadOf(got.Traits[0].Value), true
		},
	})
}

// testReadinessBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the Readiness group.
func testReadinessBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				r := newReadiness(b.id)
				return p.PutReadiness(ctx, r)
			}},
			badCase{name: "get_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetReadiness(ctx, b.id)
				return err
			}})
	}
	bad = append(bad, badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
		r := newReadiness(k.pipeline)
		r.Status = "MAYBE"
		return p.PutReadiness(ctx, r)
	}})
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		got, err := p.GetReadiness(t.Context(), k.pipeline)
		wantNil(t, got, err, "GetReadiness after a rejected call")
	})
	s.checkCancelled(t, []call{
		{"PutReadiness", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutReadiness(ctx, newReadiness(k.pipeline))
		}},
		{"GetReadiness", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetReadiness(ctx, k.pipeline)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		got, err := p.GetReadiness(t.Context(), k.pipeline)
		wantNil(t, got, err, "GetReadiness after a cancelled PutReadiness")
	})
}

func testReadinessPutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newReadiness(k.pipeline)
	noErr(t, p.PutReadiness(t.Context(), r), "PutReadiness")
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	same(t, "GetReadiness", jsonRoundTrip(t, r), mustGet(t, got, err, "GetReadiness"))
}

func testReadinessGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	wantNil(t, got, err, "GetReadiness of a missing result")
}

func testReadinessPutReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReadiness(t.Context(), newReadiness(k.pipeline)), "PutReadiness")
	r := types.ReadinessResult{PipelineID: k.pipeline, Status: types.Ready, EvaluatedAt: at(1)}
	noErr(t, p.PutReadiness(t.Context(), r), "PutReadiness again")
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	same(t, "GetReadiness after replace", jsonRoundTrip(t, r), mustGet(t, got, err, "GetReadiness"))
}

func testReadinessKeptWithinReadinessTTL(t *testing.T, s *suite) {
	if s.h.Sleep == nil {
		t.Skip("Harness.Sleep is nil: on real time, a result halfway through its TTL is too close to expiry to assert reliably")
	}
	ttl := s.readinessTTL()
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReadiness(t.Context(), newReadiness(k.pipeline)), "PutReadiness")
	s.sleep(t, ttl/2)
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	mustGet(t, got, err, "GetReadiness halfway through the readiness TTL")
}

func testReadinessExpiresAfterReadinessTTL(t *testing.T, s *suite) {
	p, q, k := s.open(t), s.open(t), newIDs(t)
	noErr(t, p.PutReadiness(t.Context(), newReadiness(k.pipeline)), "PutReadiness")
	noErr(t, p.PutReadiness(t.Context(), newReadiness(k.other)), "PutReadiness")
	s.sleep(t, s.readinessTTL()+expireWait-shortTTL)
	for _, inst := range []provider.Provider{q, p} {
		got, err := inst.GetReadiness(t.Context(), k.pipeline)
		wantNil(t, got, err, "GetReadiness after the readiness TTL")
	}
	got, err := p.GetReadiness(t.Context(), k.other)
	wantNil(t, got, err, "GetReadiness after the readiness TTL")
}

func testReadinessExpiredAtExactReadinessTTL(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutReadiness(t.Context(), newReadiness(k.pipeline)), "PutReadiness")
	s.sleepToExpiry(t, s.readinessTTL()) // expired when now >= the expiry
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	wantNil(t, got, err, "GetReadiness exactly at the readiness TTL")
}

func testReadinessAdversarialPipelineIDs(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, singles(adversarialIDs(k.pipeline)),
		func(key []string, tag int) error {
			return p.PutReadiness(t.Context(), types.ReadinessResult{PipelineID: key[0], Status: types.Ready,
				Blocking: []string{strconv.Itoa(tag)}})
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetReadiness(t.Context(), key[0])
			if err != nil || got == nil || len(got.Blocking) != 1 {
				return 0, false, err
			}
			tag, err := strconv.Atoi(got.Blocking[0])
			return tag, true, err
		})
}

func testReadinessNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	r := newReadiness(k.pipeline)
	want := jsonRoundTrip(t, r)
	noErr(t, p.PutReadiness(t.Context(), r), "PutReadiness")
	mutateReadiness(&r)
	got, err := p.GetReadiness(t.Context(), k.pipeline)
	first := mustGet(t, got, err, "GetReadiness")
	same(t, "GetReadiness after mutating the put value", want, first)
	mutateReadiness(&first)
	got, err = p.GetReadiness(t.Context(), k.pipeline)
	same(t, "GetReadiness after mutating a returned value", want, mustGet(t, got, err, "GetReadiness"))
}

func mutateReadiness(r *types.ReadinessResult) {
	r.Blocking[0] = "mutated"
	r.Traits[0].Value["rows"] = -1
	*r.Traits[0].ExpiresAt = at(999)
	r.Traits[1].Reason = "mutated"
}
