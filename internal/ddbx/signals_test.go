package ddbx

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"
	"go.opentelemetry.io/otel/attribute"

	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/internal/signal/signaltest"
	"github.com/pipestate/pipestate/internal/testkit/faults"
)

// TestThrottleSignals sends GetItem calls through a fault transport to a server that
// answers every request that reaches it, with an SDK retryer of 3 attempts, and
// checks what ThrottleSignals records: each retried throttle a retry, a call that
// ends throttled a give-up, anything else nothing.
func TestThrottleSignals(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	ft := faults.NewTransport()
	client := ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(srv.URL),
		Credentials:  credentials.NewStaticCredentialsProvider("pipestate", "pipestate", ""),
		HTTPClient:   &http.Client{Transport: ft},
		Retryer: retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts, o.MaxBackoff, o.RateLimiter = 3, time.Millisecond, ratelimit.None
		}),
	})
	sig := signaltest.NewSignals()
	rec := signal.New(sig.Meter, sig.Log, "aws.dynamodb")
	in := &ddb.GetItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "k"}}}
	count := func(name string) int64 {
		return sig.Collect(t, name, attribute.String("db.operation.name", "Get"), signal.AttrReason.String(signal.ReasonThrottled)).Value
	}
	for _, tc := range []struct {
		name             string
		rejects          int
		errType          string
		retries, giveUps int64
		fails            bool
	}{
		{name: "clean", retries: 0, giveUps: 0},
		{name: "throttled twice", rejects: 2, errType: faults.Throttled, retries: 2, giveUps: 0},
		{name: "throttled out", rejects: 3, errType: faults.Throttled, retries: 2, giveUps: 1, fails: true},
		{name: "conflict", rejects: 1, errType: faults.TransactionConflict, fails: true},
		{name: "server error retried", rejects: 1, errType: faults.InternalError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retries, giveUps := count("pipestate.retries"), count("pipestate.giveups")
			if tc.rejects > 0 {
				ft.Reject(tc.rejects, faults.Op("GetItem"), tc.errType)
			}
			_, err := client.GetItem(context.Background(), in, ThrottleSignals(rec, "Get"))
			if (err != nil) != tc.fails {
				t.Fatalf("err = %v, want failure %v", err, tc.fails)
			}
			if got := count("pipestate.retries") - retries; got != tc.retries {
				t.Errorf("%d throttle retries recorded, want %d", got, tc.retries)
			}
			if got := count("pipestate.giveups") - giveUps; got != tc.giveUps {
				t.Errorf("%d throttle give-ups recorded, want %d", got, tc.giveUps)
			}
		})
	}
	if n := sig.Logs(slog.LevelDebug, "pipestate: retry"); n != 4 {
		t.Errorf("%d retry records logged, want 4:\n%s", n, sig.LogText())
	}
}

// TestThrottleSignalsWithoutRetryMiddleware: a client whose stack has no retry
// middleware still runs calls, and a throttle is a give-up.
func TestThrottleSignalsWithoutRetryMiddleware(t *testing.T) {
	ft := faults.NewTransport()
	ft.Reject(1, faults.Op("GetItem"), faults.Throttled)
	client := ddb.New(ddb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials:  credentials.NewStaticCredentialsProvider("pipestate", "pipestate", ""),
		HTTPClient:   &http.Client{Transport: ft},
		APIOptions: []func(*middleware.Stack) error{func(s *middleware.Stack) error {
			_, err := s.Finalize.Remove("Retry")
			return err
		}},
	})
	sig := signaltest.NewSignals()
	in := &ddb.GetItemInput{TableName: aws.String("t"), Key: map[string]ddbtypes.AttributeValue{"PK": &ddbtypes.AttributeValueMemberS{Value: "k"}}}
	if _, err := client.GetItem(context.Background(), in, ThrottleSignals(signal.New(sig.Meter, nil, "aws.dynamodb"), "Get")); !isThrottleException(err) {
		t.Fatalf("err = %v, want the throttle", err)
	}
	if got := sig.Collect(t, "pipestate.giveups", signal.AttrReason.String(signal.ReasonThrottled)).Value; got != 1 {
		t.Errorf("%d give-ups recorded, want 1", got)
	}
}
