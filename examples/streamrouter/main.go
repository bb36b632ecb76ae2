// Command streamrouter is the stream-router Lambda of pipestate's serverless
// path on AWS (see docs/aws-lambda.md): a DynamoDB stream on the pipestate
// table feeds it batches of records; it decodes them with package ddbstream,
// and for each cascade marker written (an upstream pipeline finished, and its
// downstream pipeline needs evaluating for a date) starts the downstream's
// work exactly once, as the long-running router of examples/orchestrator does
// over WatchCascadeMarkers: it creates the run routing.RunID names, once,
// through provider.RunCreator (RunStarter), or starts a Step Functions
// execution of that name (see Starter).
//
// Environment: PIPESTATE_TABLE, the table's name. The function's role needs,
// on the table's stream ARN, dynamodb:DescribeStream, GetRecords,
// GetShardIterator and ListStreams (the event source mapping reads the stream
// with it), and on the table GetItem (GetPipeline) and PutItem and UpdateItem
// (CreateRunState's transaction); docs/aws-lambda.md has the policy.
//
// Build for the provided.al2023 runtime:
//
//	GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -o bootstrap ./examples/streamrouter
package main

import (
	"context"
	"log"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/provider/ddbprovider/ddbstream"
)

func main() {
	r, err := newRouter(context.Background(), os.Getenv("PIPESTATE_TABLE"))
	if err != nil {
		log.Fatal(err)
	}
	lambda.Start(r.Handle)
}

// newRouter opens the provider on table with the default AWS configuration of
// the function (its role, its region) and returns its Router.
func newRouter(ctx context.Context, table string) (*Router, error) {
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return nil, err
	}
	return routerOn(ddb.NewFromConfig(cfg), table)
}

// routerOn is the Router of table through client, starting runs (RunStarter).
func routerOn(client ddbprovider.API, table string) (*Router, error) {
	p, err := ddbprovider.New(client, table)
	if err != nil {
		return nil, err
	}
	d, err := ddbstream.New(table)
	if err != nil {
		return nil, err
	}
	return &Router{Decoder: d, Starter: RunStarter{Store: p}}, nil
}
