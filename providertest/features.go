package providertest

import (
	"fmt"
	"reflect"
	"strings"
	"text/tabwriter"
)

// Feature is one optional Harness field: the subtests it turns on and what else
// it changes. Harness.Features lists them all.
type Feature struct {
	// Field is the name of the Harness field.
	Field string
	// Set reports whether the harness sets the field (not nil, not zero).
	Set bool
	// Enables are the subtests that skip without the field, as Group/subtest;
	// a trailing "/*" stands for every subtest below it (every kind, the whole
	// group).
	Enables []string
	// Effect says what the field changes besides, and what the suite does
	// without it.
	Effect string
}

// Features is what a harness turns on; its String is a table, one field a line.
type Features []Feature

// features are the optional Harness fields, in the order of the struct.
// TestFeaturesDocumented fails when a field of Harness is missing here, and
// when a subtest named in Enables does not exist.
var features = []Feature{
	{Field: "OpenOwner",
		Enables: []string{"Locker/owner_prefix_cannot_release", "LockInspector/owner_identity"},
		Effect:  "owners that are prefixes of each other; nil skips"},
	{Field: "Sleep",
		Enables: []string{"Readiness/kept_within_readiness_ttl", "Expiry/re_put_mid_ttl/*", "Retention/*"},
		Effect: "moves the test's clock; nil sleeps for real (ttls of 2 s and more), and the sub-second ttl " +
			"tests check only expiry, not the live part"},
	{Field: "ReadinessTTL",
		Effect: "the readiness ttl the providers were opened with, which the Readiness and Expiry readiness tests wait for; zero: 5 minutes"},
	{Field: "Now",
		Effect: "the clock the fill checks (CreatedAt, Timestamp, WrittenAt, ExpiresAt...) compare with; nil reads it through a write of the group's own store"},
	{Field: "ListPage",
		Effect: "Lists/long/* build lists of 2*ListPage+10 items, three pages or more; zero: 300 items"},
	{Field: "ExpireEvents",
		Enables: []string{"EventStore/retention_drops_old_events", "EventStore/retention_old_cursor_expired",
			"EventFollower/expired_cursor_fails"},
		Effect: "drops the events appended so far by the backend's retention; nil skips"},
	{Field: "OpenMaxEvents",
		Enables: []string{"EventStore/retention_by_count_expires_old_cursor", "EventFollower/count_retention_expires_old_cursor"},
		Effect:  "an event log kept by count; nil skips"},
	{Field: "ExpireMarkers",
		Enables: []string{"MarkerWatcher/expired_cursor_fails", "MarkerWatcher/expired_cursor_fails_before_next_write"},
		Effect:  "drops the marker writes made so far by the backend's retention; nil skips"},
	{Field: "Corrupt",
		Enables: []string{"Corrupt/*"},
		Effect:  "makes a stored record undecodable; nil skips the Corrupt group"},
	{Field: "MaxMarkerWrites",
		Enables: []string{"MarkerWatcher/count_retention_expires_old_cursor"},
		Effect:  "a marker log kept by count (a few hundred writes at most); zero skips"},
	{Field: "Retention",
		Enables: []string{"Retention/*"},
		Effect:  "each record kind with a positive retention; needs Sleep; zero skips the Retention group"},
	{Field: "OpenReadOnly",
		Enables: []string{"ReadOnly/*"},
		Effect:  "a read-only handle (the backend's WithReadOnly); nil skips the ReadOnly group"},
	{Field: "DropActiveEntry",
		Enables: []string{"ActiveRunLister/reindex_restores_lost_entry"},
		Effect:  "removes one run's active-runs entry by hand; nil skips the test that ReindexRun restores it"},
}

// Features lists every optional field of the harness: whether h sets it, the
// subtests it enables (they skip, with the field named in the reason, when it
// is not set) and what else it changes. It is the one place that says which
// behaviours a harness turns on:
//
//	t.Log(h.Features())
func (h Harness) Features() Features {
	v := reflect.ValueOf(h)
	out := make(Features, len(features))
	for i, f := range features {
		f.Set = !v.FieldByName(f.Field).IsZero()
		f.Enables = append([]string(nil), f.Enables...)
		out[i] = f
	}
	return out
}

// String renders fs as a table: field, set or not, the subtests it enables.
func (fs Features) String() string {
	var b strings.Builder
	w := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "FIELD\tSET\tENABLES")
	for _, f := range fs {
		set := "no"
		if f.Set {
			set = "yes"
		}
		enables := strings.Join(f.Enables, ", ")
		if enables == "" {
			enables = "(sharpens: " + f.Effect + ")"
		}
		fmt.Fprintf(w, "%s\t%s\t%s\n", f.Field, set, enables)
	}
	_ = w.Flush()
	return b.String()
}
