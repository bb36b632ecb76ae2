package faults

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// Error types that Reject and SetRandom inject, as DynamoDB names them.
const (
	Throttled           = "ProvisionedThroughputExceededException"
	TransactionConflict = "TransactionConflictException"
	InternalError       = "InternalServerError"
)

// Transport is an http.RoundTripper for the AWS SDK that drops responses and
// injects errors. Set it as the HTTP client of the SDK's config.
type Transport struct {
	base http.RoundTripper

	mu       sync.Mutex
	dropNext func(op string, body []byte) bool
	dropThen func()
	rejects  []reject
	rate     float64
	dropped  int
	rejected int
	requests int
}

type reject struct {
	n       int
	match   func(op string, body []byte) bool
	errType string
}

// NewTransport returns a Transport over a clone of http.DefaultTransport with
// nothing armed.
func NewTransport() *Transport {
	return &Transport{base: http.DefaultTransport.(*http.Transport).Clone()}
}

// Op returns a matcher for requests of one DynamoDB operation (e.g. "PutItem",
// "TransactWriteItems") whose JSON body contains every one of parts.
func Op(op string, parts ...string) func(string, []byte) bool {
	return func(o string, body []byte) bool {
		if o != op {
			return false
		}
		for _, p := range parts {
			if !bytes.Contains(body, []byte(p)) {
				return false
			}
		}
		return true
	}
}

// DynamoDBOptions routes a DynamoDB client through t, with the SDK making at
// most attempts tries per request, 5 ms of backoff and no retry quota, so that
// injected faults are retried quickly and a test's rejections are used up
// exactly.
func (t *Transport) DynamoDBOptions(attempts int) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.HTTPClient = &http.Client{Transport: t}
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = attempts
			so.MaxBackoff = 5 * time.Millisecond
			so.RateLimiter = ratelimit.None
		})
	}
}

// DropReply arms a one-shot fault: the next request for which match returns true is
// sent and applied by the server, its response is discarded, and the SDK sees a
// connection reset (which it retries). A later DropReply replaces one that has not
// fired.
func (t *Transport) DropReply(match func(op string, body []byte) bool) {
	t.DropReplyThen(match, nil)
}

// DropReplyThen is DropReply that also runs then (when not nil) after the server
// applied the request and before the SDK sees the error and retries: a test runs
// there what another client does in between, e.g. takes a lock the call released.
func (t *Transport) DropReplyThen(match func(op string, body []byte) bool, then func()) {
	t.mu.Lock()
	t.dropNext, t.dropThen = match, then
	t.mu.Unlock()
}

// Reject makes the next n requests for which match returns true fail with an error
// response of errType (Throttled, TransactionConflict, InternalError) without
// reaching the server.
func (t *Transport) Reject(n int, match func(op string, body []byte) bool, errType string) {
	t.mu.Lock()
	t.rejects = append(t.rejects, reject{n: n, match: match, errType: errType})
	t.mu.Unlock()
}

// StopRejecting cancels what is left of every Reject.
func (t *Transport) StopRejecting() {
	t.mu.Lock()
	t.rejects = nil
	t.mu.Unlock()
}

// SetRandom gives every request a chance of rate to meet a fault chosen at random:
// throttled, transaction conflict or internal error without reaching the server, a
// connection reset before it is sent, or a response lost after it was applied.
// 0 turns random faults off.
func (t *Transport) SetRandom(rate float64) {
	t.mu.Lock()
	t.rate = rate
	t.mu.Unlock()
}

// Dropped reports how many responses have been dropped after the server applied
// the request.
func (t *Transport) Dropped() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// Rejected reports how many requests have been failed without reaching the server.
func (t *Transport) Rejected() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.rejected
}

// Requests reports how many requests the SDK handed to the Transport, whatever
// happened to them.
func (t *Transport) Requests() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requests
}

// fault is what happens to one request.
type fault int

const (
	pass fault = iota
	dropAfter
	dropBefore
	rejectWith
)

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	op := r.Header.Get("X-Amz-Target")
	if i := strings.LastIndexByte(op, '.'); i >= 0 {
		op = op[i+1:]
	}
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(r.Body); err != nil {
			return nil, err
		}
		r.Body.Close()
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	f, errType, then := t.decide(op, body)
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	switch f {
	case rejectWith:
		return errorResponse(r, errType), nil
	case dropBefore:
		return nil, reset
	case dropAfter:
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if then != nil {
			then()
		}
		return nil, reset
	}
	return t.base.RoundTrip(r)
}

func (t *Transport) decide(op string, body []byte) (fault, string, func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.requests++
	if t.dropNext != nil && t.dropNext(op, body) {
		then := t.dropThen
		t.dropNext, t.dropThen = nil, nil
		t.dropped++
		return dropAfter, "", then
	}
	for i := range t.rejects {
		rj := &t.rejects[i]
		if rj.n > 0 && rj.match(op, body) {
			rj.n--
			t.rejected++
			return rejectWith, rj.errType, nil
		}
	}
	if t.rate == 0 || rand.Float64() >= t.rate {
		return pass, "", nil
	}
	switch rand.IntN(5) {
	case 0:
		t.rejected++
		return rejectWith, Throttled, nil
	case 1:
		t.rejected++
		return rejectWith, TransactionConflict, nil
	case 2:
		t.rejected++
		return rejectWith, InternalError, nil
	case 3:
		t.rejected++
		return dropBefore, "", nil
	default:
		t.dropped++
		return dropAfter, "", nil
	}
}

// errorResponse is the response DynamoDB sends for an error of errType.
func errorResponse(r *http.Request, errType string) *http.Response {
	status := http.StatusBadRequest
	if errType == InternalError {
		status = http.StatusInternalServerError
	}
	body := fmt.Sprintf(`{"__type":"com.amazonaws.dynamodb.v20120810#%s","message":"injected fault"}`, errType)
	h := http.Header{}
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amzn-Errortype", errType)
	h.Set("X-Amzn-Requestid", "fault-"+strconv.Itoa(rand.Int()))
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: io.NopCloser(strings.NewReader(body)), ContentLength: int64(len(body)), Request: r,
	}
}
