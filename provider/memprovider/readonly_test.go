package memprovider_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/pipestate/pipestate/internal/readcheck"
	"github.com/pipestate/pipestate/internal/testkit/fakeclock"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/memprovider"
	"github.com/pipestate/pipestate/types"
)

// TestReadOnlyHandle: a WithReadOnly handle reads what a writer's handle reads,
// and refuses every write with ErrReadOnly, changing nothing.
func TestReadOnlyHandle(t *testing.T) {
	ctx := context.Background()
	clock := fakeclock.New(readcheck.At)
	writer, err := memprovider.New(memprovider.WithClock(clock.Now))
	if err != nil {
		t.Fatal(err)
	}
	readcheck.Seed(t, writer, 5, func() { clock.Advance(2 * time.Minute) })
	reader, err := writer.NewHandle(memprovider.WithClock(clock.Now), memprovider.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	if !reader.ReadOnly() || writer.ReadOnly() {
		t.Fatalf("ReadOnly(): reader %v, writer %v", reader.ReadOnly(), writer.ReadOnly())
	}
	want := readcheck.Read(t, writer)
	if got := readcheck.Read(t, reader); !reflect.DeepEqual(got, want) {
		t.Errorf("the read-only handle reads\n%v\nwant\n%v", got, want)
	}
	for _, w := range readcheck.Writes(reader) {
		if err := w.Do(ctx); !errors.Is(err, provider.ErrReadOnly) {
			t.Errorf("%s: %v, want an error wrapping ErrReadOnly", w.Name, err)
		}
	}
	if got := readcheck.Read(t, writer); !reflect.DeepEqual(got, want) {
		t.Errorf("the refused writes changed the data:\n%v\nwant\n%v", got, want)
	}
	_ = reader.Stop(ctx)
	if err := reader.AppendEvent(ctx, types.Event{PipelineID: "orders", Kind: "K"}); !errors.Is(err, provider.ErrClosed) {
		t.Errorf("a write after Stop: %v, want ErrClosed", err)
	}
}
