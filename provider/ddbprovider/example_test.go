package ddbprovider_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/types"
)

// Open a provider on a table, creating the table first if needed (production
// deployments usually create it with CloudFormation or Terraform; see the package
// doc).
func ExampleNew() {
	ctx := context.Background()
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		log.Fatal(err)
	}
	client := ddb.NewFromConfig(cfg)
	if err := ddbprovider.CreateTable(ctx, client, "pipestate"); err != nil {
		log.Fatal(err)
	}
	p, err := ddbprovider.New(client, "pipestate", ddbprovider.WithEventRetention(30*24*time.Hour))
	if err != nil {
		log.Fatal(err)
	}
	defer p.Stop(ctx)

	run := types.RunState{RunID: "run-1", PipelineID: "orders", Status: types.RunPending}
	if err := p.PutRunState(ctx, run); err != nil {
		log.Fatal(err)
	}
	run.Status = types.RunRunning
	ok, err := p.CompareAndSwapRunState(ctx, "run-1", 0, run)
	fmt.Println(ok, err)
}
