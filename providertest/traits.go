package providertest

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

// RunTraitStore tests provider.TraitStore: round trip with the filled PipelineID
// and ExpiresAt, TTL expiry, ordering by TraitType, replace, missing entities,
// aliasing, sizes, adversarial keys, bad input and cancellation.
func RunTraitStore(t *testing.T, h Harness) {
	t.Helper()
	group(t, "TraitStore", h, func(t *testing.T, s *suite) {
		s.probe = probeTraits
		s.run(t, "put_get_round_trip", testTraitStorePutGetRoundTrip)
		s.run(t, "get_missing", testTraitStoreGetMissing)
		s.run(t, "get_traits_empty", testTraitStoreGetTraitsEmpty)
		s.run(t, "put_sets_pipeline_id", testTraitStorePutSetsPipelineID)
		s.run(t, "pipeline_id_mismatch", testTraitStorePipelineIDMismatch)
		s.run(t, "put_sets_expires_at", testTraitStorePutSetsExpiresAt)
		s.run(t, "ttl_zero_never_expires", testTraitStoreTTLZeroNeverExpires)
		s.run(t, "ttl_expiry", testTraitStoreTTLExpiry)
		s.run(t, "expired_at_exact_ttl", testTraitStoreExpiredAtExactTTL)
		s.run(t, "put_again_resets_ttl", testTraitStorePutAgainResetsTTL)
		s.run(t, "put_identical_twice", testTraitStorePutIdenticalTwice)
		s.run(t, "put_again_sets_new_expires_at", testTraitStorePutAgainSetsNewExpiresAt)
		s.run(t, "put_replaces", testTraitStorePutReplaces)
		s.run(t, "get_traits_sorted_by_trait_type", testTraitStoreGetTraitsSortedByTraitType)
		s.run(t, "pipelines_independent", testTraitStorePipelinesIndependent)
		s.run(t, "no_aliasing", testTraitStoreNoAliasing)
		testTraitStoreSizes(t, s)
		s.run(t, "adversarial_keys", testTraitStoreAdversarialKeys)
		testTraitStoreBadInputAndCancelled(t, s)
	})
}

// testTraitStoreSizes runs the size subtests (large_value_round_trips, huge_value_too_large_or_stored, huge_update_keeps_old_value) of the TraitStore group.
func testTraitStoreSizes(t *testing.T, s *suite) {
	s.checkSizes(t, sizeCheck{
		put: func(ctx context.Context, p provider.Provider, k ids, payload string) error {
			tr := newTrait(k.trait)
			tr.Value["payload"] = payload
			return p.PutTrait(ctx, k.pipeline, tr, 0)
		},
		read: func(t *testing.T, p provider.Provider, k ids) (string, bool) {
			got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
			noErr(t, err, "GetTrait")
			if got == nil {
				return "", false
			}
			return payloadOf(got.Value), true
		},
	})
}

// testTraitStoreBadInputAndCancelled runs the bad-input table (bad_input/...) and the cancelled-context subtest of the TraitStore group.
func testTraitStoreBadInputAndCancelled(t *testing.T, s *suite) {
	var bad []badCase
	for _, b := range badIDs {
		bad = append(bad,
			badCase{name: "put_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutTrait(ctx, b.id, newTrait(k.trait), 0)
			}},
			badCase{name: "put_trait_type_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				return p.PutTrait(ctx, k.pipeline, newTrait(b.id), 0)
			}},
			badCase{name: "get_traits_pipeline_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetTraits(ctx, b.id)
				return err
			}},
			badCase{name: "get_trait_type_" + b.name, call: func(ctx context.Context, p provider.Provider, k ids) error {
				_, err := p.GetTrait(ctx, k.pipeline, b.id)
				return err
			}})
	}
	bad = append(bad,
		badCase{name: "put_bad_status", call: func(ctx context.Context, p provider.Provider, k ids) error {
			tr := newTrait(k.trait)
			tr.Status = "MAYBE"
			return p.PutTrait(ctx, k.pipeline, tr, 0)
		}},
		badCase{name: "put_negative_ttl", call: func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutTrait(ctx, k.pipeline, newTrait(k.trait), -time.Second)
		}},
		badCase{name: "put_other_pipeline_id", call: func(ctx context.Context, p provider.Provider, k ids) error {
			tr := newTrait(k.trait)
			tr.PipelineID = k.other
			return p.PutTrait(ctx, k.pipeline, tr, 0)
		}},
	)
	s.checkBadInput(t, bad, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		for _, pid := range []string{k.pipeline, k.other} {
			list, err := p.GetTraits(t.Context(), pid)
			wantLen(t, list, err, 0, "GetTraits after a rejected call")
		}
	})
	s.checkCancelled(t, []call{
		{"PutTrait", func(ctx context.Context, p provider.Provider, k ids) error {
			return p.PutTrait(ctx, k.pipeline, newTrait(k.trait), 0)
		}},
		{"GetTraits", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetTraits(ctx, k.pipeline)
			return err
		}},
		{"GetTrait", func(ctx context.Context, p provider.Provider, k ids) error {
			_, err := p.GetTrait(ctx, k.pipeline, k.trait)
			return err
		}},
	}, nil, func(t *testing.T, p provider.Provider, k ids) {
		t.Helper()
		list, err := p.GetTraits(t.Context(), k.pipeline)
		wantLen(t, list, err, 0, "GetTraits after a cancelled PutTrait")
	})
}

func testTraitStorePutGetRoundTrip(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	tr := newTrait(k.trait)
	tr.PipelineID = k.pipeline
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait")
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	same(t, "GetTrait", jsonRoundTrip(t, tr), mustGet(t, got, err, "GetTrait"))
	list, err := p.GetTraits(t.Context(), k.pipeline)
	noErr(t, err, "GetTraits")
	same(t, "GetTraits", []types.TraitEvaluation{jsonRoundTrip(t, tr)}, list)
}

func testTraitStoreGetMissing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait("other"), 0), "PutTrait")
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	wantNil(t, got, err, "GetTrait of a missing trait type")
	got, err = p.GetTrait(t.Context(), k.other, "other")
	wantNil(t, got, err, "GetTrait of a missing pipeline")
}

func testTraitStoreGetTraitsEmpty(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	list, err := p.GetTraits(t.Context(), k.pipeline)
	wantLen(t, list, err, 0, "GetTraits of a pipeline without traits")
}

func testTraitStorePutSetsPipelineID(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), 0), "PutTrait with an empty PipelineID")
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	if g := mustGet(t, got, err, "GetTrait"); g.PipelineID != k.pipeline {
		t.Errorf("PipelineID = %q, want %q (filled from the argument)", g.PipelineID, k.pipeline)
	}
}

func testTraitStorePipelineIDMismatch(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	tr := newTrait(k.trait)
	tr.PipelineID = k.other
	wantErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), provider.ErrInvalidArgument, "PutTrait with another PipelineID")
	for _, pid := range []string{k.pipeline, k.other} {
		list, err := p.GetTraits(t.Context(), pid)
		wantLen(t, list, err, 0, "GetTraits after a rejected PutTrait")
	}
}

func testTraitStorePutSetsExpiresAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	before := s.now(t, p)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), longTTL), "PutTrait")
	after := s.now(t, p)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	g := mustGet(t, got, err, "GetTrait")
	if g.ExpiresAt == nil {
		t.Fatal("ExpiresAt is nil after PutTrait with a ttl")
	}
	wantWithin(t, "ExpiresAt", *g.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
}

func testTraitStoreTTLZeroNeverExpires(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	tr := newTrait(k.trait)
	exp := t0
	tr.ExpiresAt = &exp // the caller's ExpiresAt is ignored: PutTrait sets it
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait")
	s.sleep(t, expireWait)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	if g := mustGet(t, got, err, "GetTrait after a sleep"); g.ExpiresAt != nil {
		t.Errorf("ExpiresAt = %v, want nil for ttl 0", *g.ExpiresAt)
	}
}

func testTraitStoreTTLExpiry(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait("short"), shortTTL), "PutTrait short")
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait("long"), longTTL), "PutTrait long")
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait("forever"), 0), "PutTrait forever")
	got, err := p.GetTrait(t.Context(), k.pipeline, "long")
	mustGet(t, got, err, "GetTrait long right after the put")
	s.sleep(t, expireWait)
	got, err = p.GetTrait(t.Context(), k.pipeline, "short")
	wantNil(t, got, err, "GetTrait of an expired trait")
	list, err := p.GetTraits(t.Context(), k.pipeline)
	noErr(t, err, "GetTraits")
	if tt := traitTypes(list); !same(t, "GetTraits trait types after expiry", []string{"forever", "long"}, tt) {
		t.Log("an expired trait must be invisible to every read")
	}
}

func testTraitStoreExpiredAtExactTTL(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), shortTTL), "PutTrait")
	s.sleepToExpiry(t, shortTTL) // expired when now >= the expiry
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	wantNil(t, got, err, "GetTrait exactly at ExpiresAt")
	list, err := p.GetTraits(t.Context(), k.pipeline)
	wantLen(t, list, err, 0, "GetTraits exactly at ExpiresAt")
}

func testTraitStorePutAgainResetsTTL(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), shortTTL), "PutTrait with a ttl")
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), 0), "PutTrait again without one")
	s.sleep(t, expireWait)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	if g := mustGet(t, got, err, "GetTrait after the first ttl passed"); g.ExpiresAt != nil {
		t.Errorf("ExpiresAt = %v, want nil", *g.ExpiresAt)
	}
}

func testTraitStorePutIdenticalTwice(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	tr := newTrait(k.trait)
	tr.PipelineID = k.pipeline
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait")
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait of the same trait again")
	list, err := p.GetTraits(t.Context(), k.pipeline)
	noErr(t, err, "GetTraits")
	same(t, "GetTraits after putting one trait twice", []types.TraitEvaluation{jsonRoundTrip(t, tr)}, list)
}

func testTraitStorePutAgainSetsNewExpiresAt(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), longTTL), "PutTrait")
	s.sleep(t, expireWait)
	before := s.now(t, p)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), longTTL), "PutTrait again later")
	after := s.now(t, p)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	g := mustGet(t, got, err, "GetTrait")
	if g.ExpiresAt == nil {
		t.Fatal("ExpiresAt is nil after PutTrait with a ttl")
	}
	wantWithin(t, "ExpiresAt after a later put (its time + ttl)", *g.ExpiresAt, before.Add(longTTL), after.Add(longTTL))
}

func testTraitStorePutReplaces(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(k.trait), 0), "PutTrait")
	tr := newTrait(k.trait)
	tr.PipelineID = k.pipeline
	tr.Status, tr.Reason, tr.Value = types.TraitFail, "stale", map[string]any{"rows": 0}
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait again")
	list, err := p.GetTraits(t.Context(), k.pipeline)
	noErr(t, err, "GetTraits")
	same(t, "GetTraits after replace", []types.TraitEvaluation{jsonRoundTrip(t, tr)}, list)
}

func testTraitStoreGetTraitsSortedByTraitType(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	in := []string{"volume", "B", "freshness", "a.b", "a", "Z_", "10", "9", "a-b"}
	for _, tt := range in {
		noErr(t, p.PutTrait(t.Context(), k.pipeline, newTrait(tt), 0), "PutTrait "+tt)
	}
	list, err := p.GetTraits(t.Context(), k.pipeline)
	noErr(t, err, "GetTraits")
	same(t, "GetTraits order", sortedCopy(in), traitTypes(list))
}

func testTraitStorePipelinesIndependent(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	a, b := newTrait(k.trait), newTrait(k.trait)
	a.Reason, b.Reason = "a", "b"
	noErr(t, p.PutTrait(t.Context(), k.pipeline, a, 0), "PutTrait a")
	noErr(t, p.PutTrait(t.Context(), k.other, b, 0), "PutTrait b")
	for pid, want := range map[string]string{k.pipeline: "a", k.other: "b"} {
		list, err := p.GetTraits(t.Context(), pid)
		wantLen(t, list, err, 1, "GetTraits")
		if list[0].Reason != want {
			t.Errorf("pipeline %s has the trait of another pipeline: %+v", pid, list[0])
		}
	}
}

func testTraitStoreNoAliasing(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	tr := newTrait(k.trait)
	tr.PipelineID = k.pipeline
	want := jsonRoundTrip(t, tr)
	noErr(t, p.PutTrait(t.Context(), k.pipeline, tr, 0), "PutTrait")
	mutateTrait(&tr)
	got, err := p.GetTrait(t.Context(), k.pipeline, k.trait)
	first := mustGet(t, got, err, "GetTrait")
	same(t, "GetTrait after mutating the put value", want, first)
	mutateTrait(&first)
	list, err := p.GetTraits(t.Context(), k.pipeline)
	wantLen(t, list, err, 1, "GetTraits")
	mutateTrait(&list[0])
	got, err = p.GetTrait(t.Context(), k.pipeline, k.trait)
	same(t, "GetTrait after mutating returned values", want, mustGet(t, got, err, "GetTrait"))
}

func testTraitStoreAdversarialKeys(t *testing.T, s *suite) {
	p, k := s.open(t), newIDs(t)
	checkDistinct(t, adversarialTuples(k.pipeline, 2),
		func(key []string, tag int) error {
			tr := newTrait(key[1])
			tr.Reason = strconv.Itoa(tag)
			return p.PutTrait(t.Context(), key[0], tr, 0)
		},
		func(key []string) (int, bool, error) {
			got, err := p.GetTrait(t.Context(), key[0], key[1])
			if err != nil || got == nil {
				return 0, false, err
			}
			tag, err := strconv.Atoi(got.Reason)
			return tag, true, err
		})
}

func traitTypes(list []types.TraitEvaluation) []string {
	out := make([]string, len(list))
	for i, tr := range list {
		out[i] = tr.TraitType
	}
	return out
}

func mutateTrait(tr *types.TraitEvaluation) {
	tr.Value["rows"] = -1
	tr.Value["parts"].([]any)[0] = "mutated"
	tr.Reason = "mutated"
}
