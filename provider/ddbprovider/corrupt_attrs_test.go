package ddbprovider_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// attrCorruption is one way to corrupt one attribute of a stored item.
type attrCorruption struct {
	attr string
	v    ddbtypes.AttributeValue
}

// logAttrCorruptions are the corruptions of every attribute an entry of a
// numbered log (an event, a marker-log entry) stores, the number, expiry and
// token included: each of another type, and the number disagreeing with its
// sort key.
var logAttrCorruptions = []attrCorruption{
	{"data", nAV(12)},
	{"exp", sAV("soon")},
	{"exp", &ddbtypes.AttributeValueMemberN{Value: "1.5"}},
	{"ttl", sAV("later")},
	{"seq", sAV("2")},
	{"seq", nAV(7)},
	{"seq", &ddbtypes.AttributeValueMemberN{Value: "1e30"}},
	{"tok", nAV(1)},
}

func (c attrCorruption) String() string {
	switch v := c.v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return fmt.Sprintf("%s=S:%s", c.attr, v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return fmt.Sprintf("%s=N:%s", c.attr, v.Value)
	}
	return c.attr
}

// reports counts the corrupt records reported to the handler of ctx.
func reports(ctx context.Context) (context.Context, func() []string) {
	var mu sync.Mutex
	var ids []string
	ctx = provider.OnCorrupt(ctx, func(e *provider.CorruptError) { mu.Lock(); ids = append(ids, e.ID); mu.Unlock() })
	return ctx, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(ids) }
}

// TestCorruptEventAttributes walks every attribute of an event: whichever is
// corrupt, only that event is skipped and reported (by its number, the sort
// key's), every reader moves its cursor past it, and no cursor looks expired.
// Before the decoders took the number from the sort key, a seq of another type
// read as 0: ReadEventsSince("") returned 1 event of 3 and ReadEventsSince("1")
// failed with a false ErrCursorExpired, reporting nothing.
func TestCorruptEventAttributes(t *testing.T) {
	for _, c := range logAttrCorruptions {
		t.Run(c.String(), func(t *testing.T) {
			e := testEnv(t)
			p := openOn(t, e.client, e, ddbprovider.WithEventRetention(time.Hour), ddbprovider.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
			ctx := t.Context()
			for i := range 3 {
				if err := p.AppendEvent(ctx, types.Event{Kind: "k", PipelineID: "p", Message: fmt.Sprint(i + 1)}); err != nil {
					t.Fatal(err)
				}
			}
			if err := setAttr(ctx, e, "PIPELINE#p", fmt.Sprintf("EVENT#%020d", 2), c.attr, c.v); err != nil {
				t.Fatal(err)
			}
			for _, cursor := range []string{"", "1"} {
				rctx, got := reports(ctx)
				recs, err := p.ReadEventsSince(rctx, "p", cursor, 10)
				var cursors []string
				for _, r := range recs {
					cursors = append(cursors, r.StreamID+":"+r.Event.Message)
				}
				want := []string{"1:1", "3:3"}
				if cursor == "1" {
					want = want[1:]
				}
				if err != nil || !slices.Equal(cursors, want) || !slices.Equal(got(), []string{"p:2"}) {
					t.Errorf("ReadEventsSince(%q) = %v, %v, reported %v; want %v, nil, [p:2]", cursor, cursors, err, got(), want)
				}
			}
			rctx, got := reports(ctx)
			list, err := p.ListEvents(rctx, "p", 10)
			if err != nil || len(list) != 2 || list[0].Message != "1" || list[1].Message != "3" || !slices.Equal(got(), []string{"p:2"}) {
				t.Errorf("ListEvents = %+v, %v, reported %v; want events 1 and 3, [p:2]", list, err, got())
			}
			fctx, cancel := context.WithTimeout(rctx, 10*time.Second)
			defer cancel()
			fctx, got = reports(fctx)
			for r, err := range p.FollowEvents(fctx, "p", "1") {
				if err != nil || r.StreamID != "3" {
					t.Errorf("FollowEvents(1) first yielded %+v, %v; want event 3", r, err)
				}
				break
			}
			if !slices.Equal(got(), []string{"p:2"}) {
				t.Errorf("FollowEvents(1) reported %v, want [p:2]", got())
			}
		})
	}
}

// TestCorruptMarkerLogAttributes is TestCorruptEventAttributes for the
// entries of the marker log, which WatchCascadeMarkers reads.
func TestCorruptMarkerLogAttributes(t *testing.T) {
	for _, c := range logAttrCorruptions {
		if c.attr == "tok" {
			continue // entries carry no token (their claim's is on the counter); an unknown attribute is ignored
		}
		t.Run(c.String(), func(t *testing.T) {
			e := testEnv(t)
			p := openOn(t, e.client, e, ddbprovider.WithPollInterval(5*time.Millisecond, 10*time.Millisecond))
			ctx := t.Context()
			for i := range 3 {
				if err := p.WriteCascadeMarker(ctx, "p", "", fmt.Sprintf("2026-03-0%d", i+1), "s"); err != nil {
					t.Fatal(err)
				}
			}
			if err := setAttr(ctx, e, "MARKERLOG", fmt.Sprintf("ENTRY#%020d", 2), c.attr, c.v); err != nil {
				t.Fatal(err)
			}
			for _, cursor := range []string{"", "1"} {
				wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				wctx, got := reports(wctx)
				var seen []string
				for r, err := range p.WatchCascadeMarkers(wctx, cursor) {
					if err != nil {
						t.Errorf("WatchCascadeMarkers(%q): %v after %v", cursor, err, seen)
						break
					}
					seen = append(seen, r.Cursor+":"+r.Marker.Date)
					if r.Cursor == "3" {
						break
					}
				}
				cancel()
				want := []string{"1:2026-03-01", "3:2026-03-03"}
				if cursor == "1" {
					want = want[1:]
				}
				if !slices.Equal(seen, want) || !slices.Equal(got(), []string{"2"}) {
					t.Errorf("WatchCascadeMarkers(%q) yielded %v, reported %v; want %v, [2]", cursor, seen, got(), want)
				}
				if errors.Is(wctx.Err(), context.DeadlineExceeded) {
					t.Errorf("WatchCascadeMarkers(%q) did not reach entry 3", cursor)
				}
			}
		})
	}
}
