package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	ddbprovider "github.com/pipestate/pipestate/provider/dynamodb"
	ddbstate "github.com/pipestate/pipestate/state/dynamodb"
)

var lockReleaseCmd = &spec{
	name:    "lock release",
	args:    "KEY --owner OWNER",
	summary: "release a lock that owner OWNER holds",
	about: "Releases lock KEY (a Locker lock) if owner OWNER holds it, exactly as that owner's\n" +
		"ReleaseLock would: OWNER is the identity the holding process gave WithOwner. A lock that\n" +
		"is free, expired or held by another owner is left alone and the command exits 3. Leases\n" +
		"(AcquireLease) are not released by this command. --json prints {key, owner, released}.",
	example: "pipestate lock release eval:orders:daily --owner worker-7 --yes --redis localhost:6379",
	write:   true,
	define: func(in *inv, fs *flag.FlagSet) action {
		owner := fs.String("owner", "", "the owner identity that holds the lock (required)")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "KEY")
			if err != nil {
				return err
			}
			switch {
			case *owner == "":
				return usagef("missing --owner: the owner identity that holds the lock (its process's WithOwner)")
			case !in.yes:
				return usagef("this writes: add --yes to release lock %q if owner %s holds it", a[0], *owner)
			}
			p, err := in.providerOf(ctx, *owner)
			if err != nil {
				return err
			}
			err = p.ReleaseLock(ctx, a[0])
			switch {
			case errors.Is(err, provider.ErrLockNotHeld):
				return notFoundf("lock %q is not held by owner %s (it is free, expired or held by another owner): nothing changed", a[0], *owner)
			case err != nil:
				return err
			case in.json:
				return in.emit(struct {
					Key      string `json:"key"`
					Owner    string `json:"owner"`
					Released bool   `json:"released"`
				}{a[0], *owner, true})
			}
			in.say("released lock %q held by owner %s", a[0], *owner)
			return nil
		}
	},
}

var createTablesCmd = &spec{
	name:    "admin create-tables",
	summary: "create the DynamoDB tables, provider's and stores' (idempotent)",
	about: "Creates on DynamoDB the provider's table (--table, as provider/dynamodb.CreateTable makes\n" +
		"it), value tables of state stores (--store-tables, state/dynamodb.CreateStoreTable) and\n" +
		"dedup tables (--dedup-tables, CreateDedupTable), and waits until each is ACTIVE. A table\n" +
		"that exists with the right key schema is left as it is (\"exists\"); one with another\n" +
		"schema is an error. --json prints one {table, purpose, result} per table.",
	example: "pipestate admin create-tables --dynamodb http://localhost:8000 --table pipestate --store-tables app-counts,app-sketches --dedup-tables app-dedup --yes",
	conn:    connTables,
	write:   true,
	define: func(in *inv, fs *flag.FlagSet) action {
		stores := fs.String("store-tables", "", "comma-separated value tables of state stores to create")
		dedups := fs.String("dedup-tables", "", "comma-separated dedup tables of state stores to create")
		return func(ctx context.Context, pos []string) error {
			if _, err := args(pos); err != nil {
				return err
			}
			b, err := in.connect(ctx)
			if err != nil {
				return err
			}
			var todo []tableJob
			if in.target.table != "" {
				todo = append(todo, tableJob{Table: in.target.table, Purpose: "provider", create: ddbprovider.CreateTable})
			}
			todo = appendJobs(todo, *stores, "store", ddbstate.CreateStoreTable)
			todo = appendJobs(todo, *dedups, "dedup", ddbstate.CreateDedupTable)
			if len(todo) == 0 {
				return usagef("nothing to create: give --table, --store-tables or --dedup-tables")
			}
			if !in.yes {
				names := make([]string, len(todo))
				for i, j := range todo {
					names[i] = j.Table + " (" + j.Purpose + ")"
				}
				return usagef("this writes: add --yes to create (or keep) the tables %s", strings.Join(names, ", "))
			}
			d, ok := b.(*dynamoBackend)
			if !ok {
				return usagef("admin create-tables is for DynamoDB")
			}
			var t *table
			if !in.json {
				t = in.table("TABLE", "PURPOSE", "RESULT")
			}
			for i := range todo {
				j := &todo[i]
				if err := j.run(ctx, d.c); err != nil {
					if t != nil {
						_ = t.flush()
					}
					return err
				}
				if t == nil {
					if err := in.emit(j); err != nil {
						return err
					}
					continue
				}
				t.row(j.Table, j.Purpose, j.Result)
			}
			if t != nil {
				return t.flush()
			}
			return nil
		}
	},
}

// tableJob is one table admin create-tables creates; --json prints it.
type tableJob struct {
	Table   string `json:"table"`
	Purpose string `json:"purpose"` // provider, store or dedup
	Result  string `json:"result"`  // created or exists
	create  func(context.Context, ddbprovider.TableAPI, string) error
}

func appendJobs(jobs []tableJob, names, purpose string, create func(context.Context, ddbprovider.TableAPI, string) error) []tableJob {
	for n := range strings.SplitSeq(names, ",") {
		if n = strings.TrimSpace(n); n != "" {
			jobs = append(jobs, tableJob{Table: n, Purpose: purpose, create: create})
		}
	}
	return jobs
}

// run creates the table, noting whether it existed before.
func (j *tableJob) run(ctx context.Context, c *ddb.Client) error {
	j.Result = "exists"
	_, err := c.DescribeTable(ctx, &ddb.DescribeTableInput{TableName: &j.Table})
	var missing *ddbtypes.ResourceNotFoundException
	switch {
	case errors.As(err, &missing):
		j.Result = "created"
	case err != nil:
		return fmt.Errorf("table %s: %w", j.Table, err)
	}
	if err := j.create(ctx, c, j.Table); err != nil {
		return fmt.Errorf("table %s (%s): %w", j.Table, j.Purpose, err)
	}
	return nil
}
