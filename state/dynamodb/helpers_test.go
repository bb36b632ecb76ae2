package dynamodb_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/internal/fakeclock"
	"github.com/pipestate/pipestate/internal/testenv"
	"github.com/pipestate/pipestate/monoid"
	"github.com/pipestate/pipestate/state/dynamodb"
)

// env is the storage of one (sub)test: its tables and clock, shared by every store
// the test opens.
type env struct {
	values, bytes, dedup string
	clock                *fakeclock.Clock
}

var envs sync.Map // t.Name() -> *env

// envFor returns the tables and clock of t, creating them on first use. The clock
// starts at the current whole second, so that TTLs of whole seconds are exact.
func envFor(t testing.TB) *env {
	t.Helper()
	if e, ok := envs.Load(t.Name()); ok {
		return e.(*env)
	}
	c := testenv.DynamoDBClient(t)
	name := testenv.UniqueName(t)
	e := &env{values: name + "-v", bytes: name + "-b", dedup: name + "-d", clock: fakeclock.New(time.Now().Truncate(time.Second))}
	for _, create := range []struct {
		table string
		f     func() error
	}{
		{e.values, func() error { return dynamodb.CreateInt64Table(t.Context(), c, e.values) }},
		{e.bytes, func() error { return dynamodb.CreateBytesTable(t.Context(), c, e.bytes) }},
		{e.dedup, func() error { return dynamodb.CreateDedupTable(t.Context(), c, e.dedup) }},
	} {
		if err := create.f(); err != nil {
			t.Fatalf("create %s: %v", create.table, err)
		}
		table := create.table
		t.Cleanup(func() {
			_, _ = c.DeleteTable(t.Context(), &ddb.DeleteTableInput{TableName: &table})
		})
	}
	envs.Store(t.Name(), e)
	t.Cleanup(func() { envs.Delete(t.Name()) })
	return e
}

// counter is a fallible Monoid[[]byte]: an 8-byte big-endian int64 sum (nil is the
// identity); any other length is monoid.ErrIncompatible.
type counter struct{}

func (counter) of(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

func (counter) decode(b []byte) (int64, error) {
	switch len(b) {
	case 0:
		return 0, nil
	case 8:
		return int64(binary.BigEndian.Uint64(b)), nil
	}
	return 0, fmt.Errorf("%w: %d bytes", monoid.ErrIncompatible, len(b))
}

func (counter) Identity() []byte { return nil }
func (c counter) Combine(a, b []byte) []byte {
	v, err := c.TryCombine(a, b)
	if err != nil {
		panic(err)
	}
	return v
}
func (c counter) TryCombine(a, b []byte) ([]byte, error) {
	x, err := c.decode(a)
	if err != nil {
		return nil, err
	}
	y, err := c.decode(b)
	if err != nil {
		return nil, err
	}
	return c.of(x + y), nil
}
func (counter) Kind() monoid.Kind { return monoid.KindCustom }
func (counter) Commutative() bool { return true }
