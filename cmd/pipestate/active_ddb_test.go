package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// TestRunsAllWithoutActiveIndex: on a DynamoDB table made before the index
// ACTIVE, runs --all --status scans instead (the run is found) and says why
// on stderr, rather than failing with ErrNoActiveRunIndex.
func TestRunsAllWithoutActiveIndex(t *testing.T) {
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	testenv.DynamoDBTable(t, client, table, func(ctx context.Context, name string) error {
		in := ddbprovider.TableInput(name)
		in.GlobalSecondaryIndexes = slices.DeleteFunc(in.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndex) bool {
			return aws.ToString(g.IndexName) == "ACTIVE"
		})
		in.AttributeDefinitions = slices.DeleteFunc(in.AttributeDefinitions, func(a ddbtypes.AttributeDefinition) bool {
			return strings.HasPrefix(aws.ToString(a.AttributeName), "active")
		})
		_, err := client.CreateTable(ctx, in)
		return err
	})
	b := &dynamoBackend{t: target{kind: kindDynamoDB, table: table}, c: client, now: func() time.Time { return now }}
	p := must(b.provider("", true))
	if err := p.RegisterPipeline(t.Context(), types.PipelineConfig{ID: "orders"}); err != nil {
		t.Fatal(err)
	}
	if err := p.PutRunState(t.Context(), types.RunState{RunID: "r-stuck", PipelineID: "orders", Status: types.RunRunning}); err != nil {
		t.Fatal(err)
	}
	c := &cli{stdout: new(strings.Builder), stderr: new(strings.Builder), now: func() time.Time { return now }, getenv: getenv([]string{envDynamoDB + "=http://local", envTable + "=" + table}),
		dial: func(context.Context, target, func() time.Time) (backend, error) { return keepOpen{b}, nil }}
	code := c.main(context.Background(), words("runs --all --status RUNNING"))
	stdout, stderr := c.stdout.(*strings.Builder).String(), c.stderr.(*strings.Builder).String()
	if code != exitOK || !strings.Contains(stdout, "r-stuck") || !strings.Contains(stderr, "index ACTIVE is missing") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s\nwant the run found by a scan, and why on stderr", code, stdout, stderr)
	}
}
