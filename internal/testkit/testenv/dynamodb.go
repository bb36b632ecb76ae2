package testenv

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDBEndpoint returns the base URL of DynamoDB Local (e.g. http://127.0.0.1:8000):
// DYNAMODB_ENDPOINT if set, else a shared amazon/dynamodb-local container when a
// Docker engine answers, else it skips t (fails it under PIPESTATE_REQUIRE_SERVERS=1).
// DynamoDB Local runs with -sharedDb: every client sees the same tables whatever its
// region or credentials, so isolate data in a table named by UniqueName(t).
func DynamoDBEndpoint(t testing.TB) string {
	t.Helper()
	return lookup(t, "DynamoDB Local", EnvDynamoDBEndpoint, dynamodbContainer.get)
}

// DynamoDBClient returns an aws-sdk-go-v2 DynamoDB client for DynamoDBEndpoint(t),
// built without reading the machine's shared AWS config or credential files: region
// us-east-1, static credentials, BaseEndpoint set to the endpoint. optFns are applied
// last, e.g. to install the http.Client of CountingHTTPClient:
//
//	hc, n := testenv.CountingHTTPClient()
//	c := testenv.DynamoDBClient(t, func(o *dynamodb.Options) { o.HTTPClient = hc })
//
// It skips or fails t exactly like DynamoDBEndpoint.
func DynamoDBClient(t testing.TB, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	t.Helper()
	return newDynamoDBClient(DynamoDBEndpoint(t), optFns...)
}

// newDynamoDBClient is DynamoDBClient for an endpoint.
func newDynamoDBClient(endpoint string, optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	return dynamodb.New(dynamodb.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("pipestate", "pipestate", ""),
	}, optFns...)
}

// CountingHTTPClient returns an http.Client and the Counter of the requests it sends.
// Every HTTP request is one round trip, except the SDK's retries of a failed
// request (see SDKRetry): the count is the calls the code chose to make, not
// how often a loaded DynamoDB Local answered one with a lock timeout. Its
// transport is a clone of http.DefaultTransport (proxy settings from the
// environment, keep-alives), not shared with other clients.
func CountingHTTPClient() (*http.Client, *Counter) {
	n := new(Counter)
	base := http.DefaultTransport.(*http.Transport).Clone()
	return &http.Client{Transport: countingTransport{base: base, n: n}}, n
}

// countingTransport is an http.RoundTripper that counts requests, less SDK retries.
type countingTransport struct {
	base http.RoundTripper
	n    *Counter
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if !SDKRetry(r) {
		c.n.add()
	}
	return c.base.RoundTrip(r)
}

// SDKRetry reports whether r is the AWS SDK's retry of a request whose earlier
// attempt failed: its amz-sdk-request header names an attempt after the first
// ("attempt=2; max=3").
func SDKRetry(r *http.Request) bool {
	attempt, _, _ := strings.Cut(r.Header.Get("Amz-Sdk-Request"), ";")
	n, ok := strings.CutPrefix(strings.TrimSpace(attempt), "attempt=")
	return ok && n != "1"
}
