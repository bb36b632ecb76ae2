package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"

	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider"
	"github.com/pipestate/pipestate/state/ddbstate"
	"github.com/pipestate/pipestate/types"
)

var lockReleaseCmd = &spec{
	name:    "lock release",
	args:    "KEY (--owner OWNER | --token TOKEN) --reason TEXT",
	summary: "release a lock that owner OWNER holds, or the lease with token TOKEN, recording why",
	about: "Releases lock KEY (a Locker lock) if owner OWNER holds it, exactly as that owner's\n" +
		"ReleaseLock would (OWNER is the identity the holding process gave WithOwner), or with\n" +
		"--token the lease of KEY whose token is TOKEN, exactly as its holder's ReleaseLease would\n" +
		"('pipestate lock KEY' and 'pipestate locks list' show it): so the lease of a dead holder\n" +
		"frees now instead of at its expiry, and its holder, if it lives, can no longer renew it.\n" +
		"A key that is free, expired or held by another owner or lease is left alone and the\n" +
		"command exits 3. After the release, an " + auditKind + " event records it in the log of\n" +
		"the pipeline whose work the lock guards: --pipeline, or when it is not given the one\n" +
		"registered pipeline that a part of KEY names (KEY split at ':' and '/': eval:orders:daily\n" +
		"names orders); a KEY that names none, or several, needs --pipeline. The event records the\n" +
		"key, the owner or token and fence released, operator (--as) and reason (--reason,\n" +
		"required); 'pipestate events PIPELINE' shows it ('run history' shows a run's events, and\n" +
		"a release names no run). The release comes first: a crash between the two leaves it\n" +
		"unrecorded, and an append that fails is an error (exit 1) that says the lock was released.\n" +
		"--json prints {key, owner or token, fence, released, pipeline}.",
	example: "pipestate lock release eval:orders:daily --owner worker-7 --reason 'worker-7 is gone' --yes --redis localhost:6379\n" +
		"pipestate lock release sched:orders --token 3f2a... --pipeline orders --reason 'holder OOM-killed, INC-123' --yes --redis localhost:6379",
	write:   true,
	audited: true,
	define: func(in *inv, fs *flag.FlagSet) action {
		owner := fs.String("owner", "", "the owner identity that holds the lock (or --token)")
		token := fs.String("token", "", "the token of the lease to release (or --owner)")
		pipeline := fs.String("pipeline", "", "the pipeline whose event log records the release (default: the one KEY names)")
		return func(ctx context.Context, pos []string) error {
			a, err := args(pos, "KEY")
			if err != nil {
				return err
			}
			key := a[0]
			holder, what := "owner "+*owner, "lock"
			switch {
			case *owner == "" && *token == "":
				return usagef("missing --owner OWNER (a lock's, its process's WithOwner) or --token TOKEN (a lease's, as 'pipestate lock %s' shows it)", key)
			case *owner != "" && *token != "":
				return usagef("give --owner (a lock) or --token (a lease), not both")
			case *token != "":
				holder, what = "token "+*token, "lease"
			}
			if isSet(fs, "pipeline") {
				if err := types.ValidateID("--pipeline", *pipeline); err != nil {
					return usagef("%v", err)
				}
			}
			if err := in.audit.check("release " + key); err != nil {
				return err
			}
			if !in.yes {
				return usagef("this writes: add --yes to release %s %q if %s holds it", what, key, holder)
			}
			p, err := in.providerOf(ctx, *owner)
			if err != nil {
				return err
			}
			if !isSet(fs, "pipeline") {
				if *pipeline, err = lockPipeline(ctx, p, key); err != nil {
					return err
				}
			}
			if _, err := auditEvent(*pipeline, "", "RELEASED", in.record("lock release", nil, nil)); err != nil {
				return err
			}
			released := map[string]any{"key": key}
			if *token == "" {
				released["owner"] = *owner
				err = p.ReleaseLock(ctx, key)
			} else {
				err = releaseLease(ctx, p, key, *token, released)
			}
			switch {
			case errors.Is(err, provider.ErrLockNotHeld):
				return notFoundf("%s %q is not held by %s (it is free, expired or held by another): nothing changed", what, key, holder)
			case err != nil:
				return err
			}
			rec := in.record("lock release", released, map[string]any{"key": key, "free": true})
			ev, err := auditEvent(*pipeline, "", "RELEASED", rec)
			if err == nil { // it is: the same event without the lock's details passed before the release
				err = appendAudit(ctx, p, ev, fmt.Sprintf("%s %q was released", what, key))
			}
			if err != nil {
				return err
			}
			if in.json {
				out := maps.Clone(released)
				out["released"], out["pipeline"] = true, *pipeline
				return in.emit(out)
			}
			if *token != "" {
				in.say("released lease %q with token %s (fence %v)", key, *token, released["fence"])
			} else {
				in.say("released lock %q held by owner %s", key, *owner)
			}
			in.say("recorded: %s by %s, reason %q (%s event in pipeline %s's log: pipestate events %s)",
				rec.Action, rec.Operator, rec.Reason, auditKind, *pipeline, *pipeline)
			return nil
		}
	},
}

// lockPipeline is the pipeline whose event log records the release of lock key
// when no --pipeline names it: the one registered pipeline whose ID is a part
// of key split at ':' and '/'. A key that names none or several is a usage
// error that asks for --pipeline.
func lockPipeline(ctx context.Context, p provider.Provider, key string) (string, error) {
	var named []string
	for part := range strings.FieldsFuncSeq(key, func(r rune) bool { return r == ':' || r == '/' }) {
		if slices.Contains(named, part) || types.ValidateID("pipeline", part) != nil {
			continue
		}
		cfg, err := p.GetPipeline(ctx, part)
		if err != nil {
			return "", fmt.Errorf("lock %q: reading pipeline %q to find whose lock it is: %w (give --pipeline PIPELINE, the pipeline whose work it guards, to skip this)", key, part, err)
		}
		if cfg != nil {
			named = append(named, part)
		}
	}
	switch len(named) {
	case 1:
		return named[0], nil
	case 0:
		return "", usagef("lock %q names no registered pipeline: give --pipeline PIPELINE, the pipeline whose work it guards, whose event log records the release", key)
	}
	return "", usagef("lock %q names pipelines %s: give --pipeline PIPELINE, the one whose event log records the release", key, strings.Join(named, " and "))
}

// releaseLease releases the lease of key with token as its holder would, and
// notes in released its token and, where the provider can tell, its fence.
func releaseLease(ctx context.Context, p provider.Provider, key, token string, released map[string]any) error {
	l, ok := p.(provider.Leaser)
	if !ok {
		return errors.New("this backend's provider has no leases: it does not implement provider.Leaser")
	}
	released["token"] = token
	lease := types.Lease{Key: key, Token: token}
	if li, ok := p.(provider.LockInspector); ok {
		info, err := li.GetLockInfo(ctx, key)
		if err != nil {
			return err
		}
		if info != nil && info.Token == token {
			lease.Fence = info.Fence
			released["fence"] = info.Fence
		}
	}
	return l.ReleaseLease(ctx, lease)
}

var createTablesCmd = &spec{
	name:    "admin create-tables",
	summary: "create the DynamoDB tables, provider's and stores' (idempotent)",
	about: "Creates on DynamoDB the provider's table (--table, as provider/ddbprovider.CreateTable makes\n" +
		"it), value tables of state stores (--store-tables, state/ddbstate.CreateStoreTable) and\n" +
		"dedup tables (--dedup-tables, CreateDedupTable), and waits until each is ACTIVE. A table\n" +
		"that exists with the right key schema is left as it is (\"exists\"); one with another\n" +
		"schema is an error. A provider table made before v0.2.0 gets the active-runs index\n" +
		"(provider/ddbprovider.EnsureActiveRunIndex), which DynamoDB then builds in the\n" +
		"background. --json prints one {table, purpose, result} per table.",
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
				todo = append(todo, tableJob{Table: in.target.table, Purpose: "provider", create: createProviderTable})
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

// createProviderTable creates the provider's table, or adds the active-runs index
// to one that lacks it (made before the index existed).
func createProviderTable(ctx context.Context, c ddbprovider.TableAPI, table string) error {
	if err := ddbprovider.CreateTable(ctx, c, table); err != nil {
		return err
	}
	ic, ok := c.(ddbprovider.IndexAPI)
	if !ok {
		return nil
	}
	return ddbprovider.EnsureActiveRunIndex(ctx, ic, table)
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
