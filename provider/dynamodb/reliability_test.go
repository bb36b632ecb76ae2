package dynamodb_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/dynamodb"
	"github.com/pipestate/pipestate/types"
)

// TestCreateTableConcurrent calls CreateTable on one new table from many goroutines
// released at once: every call succeeds and the table is usable.
func TestCreateTableConcurrent(t *testing.T) {
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	t.Cleanup(func() { _, _ = client.DeleteTable(context.Background(), &ddb.DeleteTableInput{TableName: &table}) })
	errs := make([]error, 12)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = dynamodb.CreateTable(context.Background(), client, table)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("CreateTable %d: %v", i, err)
		}
	}
	p, err := dynamodb.New(client, table)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := p.RegisterPipeline(ctx, types.PipelineConfig{ID: "p"}); err != nil {
		t.Fatalf("table unusable: %v", err)
	}
}

// TestNilClient passes typed-nil clients: New and CreateTable refuse them with
// ErrInvalidArgument instead of panicking later.
func TestNilClient(t *testing.T) {
	var c *ddb.Client
	if _, err := dynamodb.New(c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if _, err := dynamodb.New(nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("New(nil): err %v, want ErrInvalidArgument", err)
	}
	if err := dynamodb.CreateTable(context.Background(), c, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(typed nil): err %v, want ErrInvalidArgument", err)
	}
	if err := dynamodb.CreateTable(context.Background(), nil, "t"); !errors.Is(err, provider.ErrInvalidArgument) {
		t.Errorf("CreateTable(nil): err %v, want ErrInvalidArgument", err)
	}
}
