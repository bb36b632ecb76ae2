package ddbprovider_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/types"
)

// TestListCopyHints moves a marker's and a run's list copy from two instances
// in turn, so that each instance's hint of where the copy is (the one it last
// wrote) is stale when it writes again: every write must still leave exactly
// one list copy, the newest, whichever instance made it. A hinted first
// attempt that skipped its condition, or deleted the hinted copy without
// moving the real one, leaves two.
func TestListCopyHints(t *testing.T) {
	e := testEnv(t)
	a, b := openOn(t, e.client, e), openOn(t, e.client, e)
	ctx := context.Background()
	writers := []struct {
		name string
		p    interface {
			WriteCascadeMarker(ctx context.Context, pipelineID, scheduleID, date, source string) error
			PutRunState(ctx context.Context, run types.RunState) error
		}
	}{{"a", a}, {"a", a}, {"b", b}, {"a", a}, {"b", b}, {"b", b}, {"a", a}}

	t.Run("marker", func(t *testing.T) {
		for i, w := range writers {
			e.clock.Advance(time.Second)
			if err := w.p.WriteCascadeMarker(ctx, "hp", "", "2026-01-01", w.name); err != nil {
				t.Fatalf("write %d by %s: %v", i, w.name, err)
			}
			got, err := a.ListCascadeMarkers(ctx, "hp", 10)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(listCopies(t, e, "MARKER#hp", "#BYTIME#")); n != 1 || len(got) != 1 || !got[0].WrittenAt.Equal(e.clock.Now()) || got[0].Source != w.name {
				t.Fatalf("after write %d by %s: %d list copies, ListCascadeMarkers = %+v; want one, written now by %s", i, w.name, n, got, w.name)
			}
		}
	})
	t.Run("run", func(t *testing.T) {
		for i, w := range writers {
			e.clock.Advance(time.Second)
			run := types.RunState{RunID: "hr", PipelineID: "hp", Status: types.RunPending, CreatedAt: e.clock.Now()}
			if err := w.p.PutRunState(ctx, run); err != nil {
				t.Fatalf("put %d by %s: %v", i, w.name, err)
			}
			got, err := b.ListRuns(ctx, "hp", 10)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(listCopies(t, e, "PIPELINE#hp", "RUN#")); n != 1 || len(got) != 1 || !got[0].CreatedAt.Equal(e.clock.Now()) {
				t.Fatalf("after put %d by %s: %d list copies, ListRuns = %+v; want one, created now", i, w.name, n, got)
			}
		}
	})
}

// listCopies returns the sort keys of the items of partition pk whose sort key
// starts with prefix, expired ones included.
func listCopies(t *testing.T, e *env, pk, prefix string) []string {
	t.Helper()
	out, err := e.client.Query(context.Background(), &ddb.QueryInput{
		TableName: &e.table, ConsistentRead: aws.Bool(true),
		KeyConditionExpression:   aws.String("#pk = :pk AND begins_with(#sk, :pre)"),
		ExpressionAttributeNames: map[string]string{"#pk": "PK", "#sk": "SK"},
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{
			":pk": &ddbtypes.AttributeValueMemberS{Value: pk}, ":pre": &ddbtypes.AttributeValueMemberS{Value: prefix}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sks []string
	for _, it := range out.Items {
		sks = append(sks, it["SK"].(*ddbtypes.AttributeValueMemberS).Value)
	}
	return sks
}
