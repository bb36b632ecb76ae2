package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/internal/testkit/testenv"
	"github.com/pipestate/pipestate/provider/ddbprovider"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		use  connUse
		args []string
		env  []string
		want string // the target, or the usage error
	}{
		{"redis", connProvider, words("--redis r:1"), nil, "redis r:1, prefix pipestate; chosen by --redis"},
		{"redis prefix", connProvider, words("--redis r:1 --prefix p"), nil, "redis r:1, prefix p; chosen by --redis, --prefix"},
		{"redis url", connProvider, words("--redis redis://u:secret@r:1/2"), nil, "redis redis://u:xxxxx@r:1/2, prefix pipestate; chosen by --redis"},
		{"cluster", connProvider, words("--redis-cluster a:1,b:2"), nil, "redis-cluster a:1,b:2, prefix pipestate; chosen by --redis-cluster"},
		{"dynamodb", connProvider, words("--dynamodb http://d:8000 --table t"), nil, "dynamodb http://d:8000, table t; chosen by --dynamodb, --table"},
		{"aws", connProvider, words("--table t"), nil, "dynamodb (AWS default config), table t; chosen by --table"},
		{"env redis", connProvider, nil, []string{envRedis + "=r:1", envPrefix + "=p"}, "redis r:1, prefix p; chosen by PIPESTATE_REDIS, PIPESTATE_PREFIX"},
		{"env dynamodb", connProvider, nil, []string{envDynamoDB + "=http://d:8000", envTable + "=t"}, "dynamodb http://d:8000, table t; chosen by PIPESTATE_DYNAMODB, PIPESTATE_TABLE"},
		{"flag over env", connProvider, words("--prefix q"), []string{envRedis + "=r:1", envPrefix + "=p"}, "redis r:1, prefix q; chosen by PIPESTATE_REDIS, --prefix"},
		{"flag backend over env backend", connProvider, words("--table t"), []string{envRedis + "=r:1", envPrefix + "=p"}, "dynamodb (AWS default config), table t; chosen by --table"},
		{"env table with a redis flag", connProvider, words("--redis r:1"), []string{envDynamoDB + "=http://d:8000", envTable + "=t"}, "redis r:1, prefix pipestate; chosen by --redis"},
		{"store prefix", connStore, words("--prefix s"), []string{envRedis + "=r:1", envPrefix + "=p"}, "redis r:1, prefix s; chosen by PIPESTATE_REDIS, --prefix"},
		{"store table", connStore, words("--table s"), []string{envDynamoDB + "=http://d:8000", envTable + "=t"}, "dynamodb http://d:8000, table s; chosen by PIPESTATE_DYNAMODB, --table"},
		{"tables", connTables, words("--dynamodb http://d:8000"), []string{envRedis + "=r:1"}, "dynamodb http://d:8000; chosen by --dynamodb"},
		{"no backend", connProvider, nil, nil, "no backend: pass --redis ADDR, --redis-cluster A,B,C, --dynamodb URL --table T, or --table T alone for the AWS default config; or set PIPESTATE_REDIS, PIPESTATE_REDIS_CLUSTER, or PIPESTATE_DYNAMODB and PIPESTATE_TABLE"},
		{"two redis", connProvider, words("--redis r:1 --redis-cluster a:1"), nil, "--redis and --redis-cluster both name a Redis backend: keep one"},
		{"two backends", connProvider, words("--redis r:1 --table t"), nil, "--redis and --table name two backends: keep one"},
		{"two env backends", connProvider, nil, []string{envRedis + "=r:1", envDynamoDB + "=http://d:8000"}, "PIPESTATE_REDIS and PIPESTATE_DYNAMODB name two backends: keep one"},
		{"endpoint without table", connProvider, words("--dynamodb http://d:8000"), nil, "--dynamodb needs the provider's table: add --table T (or set PIPESTATE_TABLE)"},
		{"prefix on dynamodb", connProvider, words("--table t --prefix p"), nil, "--prefix is a Redis key prefix; on DynamoDB the provider is named by --table"},
		{"store without prefix", connStore, nil, []string{envRedis + "=r:1", envPrefix + "=p"}, "missing --prefix: a store on Redis is named by its key prefix (what NewInt64SumStore etc. were given)"},
		{"store without table", connStore, nil, []string{envDynamoDB + "=http://d:8000", envTable + "=t"}, "missing --table: a store on DynamoDB is named by its table"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			var f connFlags
			f.register(fs, tc.use)
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			got, err := f.resolve(getenv(tc.env))
			s := fmt.Sprintf("%s; %s", got, got.hint())
			if err != nil {
				s = err.Error()
				if _, ok := err.(*usageError); !ok {
					t.Errorf("error %T, want a usage error", err)
				}
			}
			if s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		pos       string
		limit     int
		follow    bool
		wantError bool
	}{
		{words("orders"), "orders", 20, false, false},
		{words("orders --limit 3 --follow"), "orders", 3, true, false},
		{words("--limit 3 orders x --follow"), "orders x", 3, true, false},
		{words("--limit 3 -- --follow orders"), "--follow orders", 3, false, false},
		{words("orders --limit"), "", 0, false, true},
		{words("orders --nope"), "", 0, false, true},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		fs.SetOutput(&bytes.Buffer{})
		limit := fs.Int("limit", 20, "")
		follow := fs.Bool("follow", false, "")
		pos, err := parseArgs(fs, tc.args)
		if (err != nil) != tc.wantError {
			t.Errorf("%q: error %v", tc.args, err)
			continue
		}
		if err == nil && (strings.Join(pos, " ") != tc.pos || *limit != tc.limit || *follow != tc.follow) {
			t.Errorf("%q: %q, limit %d, follow %v", tc.args, pos, *limit, *follow)
		}
	}
}

func TestApprox(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 59 * time.Second: "59s", time.Minute: "1m", 59*time.Minute + 59*time.Second: "59m",
		time.Hour: "1h", 2*time.Hour + 15*time.Minute: "2h15m", 10 * time.Hour: "10h", 47 * time.Hour: "47h",
		48 * time.Hour: "2d", 400 * 24 * time.Hour: "400d",
	} {
		if got := approx(d); got != want {
			t.Errorf("approx(%v) = %q, want %q", d, got, want)
		}
	}
	in := &inv{cli: &cli{now: func() time.Time { return now }}}
	for tm, want := range map[time.Time]string{{}: "-", now: "0s ago", now.Add(-90 * time.Second): "1m ago", now.Add(30 * time.Minute): "in 30m"} {
		if got := in.ago(tm); got != want {
			t.Errorf("ago(%v) = %q, want %q", tm, got, want)
		}
	}
}

func TestParseTime(t *testing.T) {
	for s, want := range map[string]time.Time{
		"now": now, "-90m": now.Add(-90 * time.Minute), "2026-11-20": at(20, 0, 0), "2026-11-20T05:30": at(20, 5, 30),
		"2026-11-20T05:30:00+01:00": at(20, 4, 30),
	} {
		if got, err := parseTime(s, now); err != nil || !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "yesterday", "-5", "2026-13-01"} {
		if _, err := parseTime(s, now); err == nil {
			t.Errorf("parseTime(%q) succeeded", s)
		}
	}
}

// TestHelp: every command has --help with its usage line, flags and an example of
// itself, and the overview lists it.
func TestHelp(t *testing.T) {
	overview := runInProcess(context.Background(), nil, nil, "help")
	if overview.code != exitOK {
		t.Fatalf("help: exit %d", overview.code)
	}
	for _, s := range commands() {
		t.Run(s.name, func(t *testing.T) {
			r := runInProcess(context.Background(), nil, nil, append(words(s.name), "--help")...)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, want := range []string{"usage: pipestate " + s.name, "\nflags:\n", "\n  --json\n", "\nexample:\n  pipestate " + s.name} {
				if !strings.Contains(r.stdout, want) {
					t.Errorf("--help lacks %q:\n%s", want, r.stdout)
				}
			}
			if again := runInProcess(context.Background(), nil, nil, append([]string{"help"}, words(s.name)...)...); again.stdout != r.stdout {
				t.Errorf("'help %s' differs from '%s --help'", s.name, s.name)
			}
			if !strings.Contains(overview.stdout, "\n  "+s.name) {
				t.Errorf("the overview does not list %s", s.name)
			}
		})
	}
	if r := runInProcess(context.Background(), nil, nil); r.code != exitUsage || !strings.Contains(r.stderr, "usage: pipestate COMMAND") {
		t.Errorf("no arguments: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestRun runs the program's entry point in process against miniredis, connecting
// by flags.
func TestRun(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	h := redisHarness(t, "redis", mr.Addr(), nil)
	prefix := strings.TrimPrefix(h.line, "redis "+mr.Addr()+", prefix ")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"runs", "orders", "--redis", mr.Addr(), "--prefix", prefix, "--status", "RUNNING"},
		&stdout, &stderr, func() time.Time { return now })
	want := "backend: " + h.line + "\n" +
		"RUN     STATUS   VERSION  CREATED    UPDATED\n" +
		"r-0003  RUNNING  4        2h15m ago  12m ago\n"
	if code != exitOK || stdout.String() != want || stderr.Len() > 0 {
		t.Errorf("exit %d\n%s--- want\n%s--- stderr\n%s", code, stdout.String(), want, stderr.String())
	}
}

// TestUnreachable: a backend that does not answer is an error (exit 1) naming the
// backend and the flag that chose it.
func TestUnreachable(t *testing.T) {
	t.Parallel()
	mr := miniredis.RunT(t)
	addr := mr.Addr()
	mr.Close()
	r := runBinary(t, nil, "runs", "orders", "--redis", addr)
	want := "(backend redis " + addr + ", prefix pipestate; chosen by --redis)\n"
	if r.code != exitError || !strings.Contains(r.stderr, "connection refused") || !strings.HasSuffix(r.stderr, want) || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and %q", r.code, r.stdout, r.stderr, want)
	}
}

// TestCreateTablesAddsActiveIndex: a provider table made before the active-runs
// index (TableInput without ACTIVE) gets it from admin create-tables ("exists").
func TestCreateTablesAddsActiveIndex(t *testing.T) {
	t.Parallel()
	client := testenv.DynamoDBClient(t)
	table := testenv.UniqueName(t)
	t.Cleanup(func() { deleteTables(client, table) })
	in := ddbprovider.TableInput(table)
	in.GlobalSecondaryIndexes = slices.DeleteFunc(in.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndex) bool { return *g.IndexName == "ACTIVE" })
	in.AttributeDefinitions = slices.DeleteFunc(in.AttributeDefinitions, func(a ddbtypes.AttributeDefinition) bool { return strings.HasPrefix(*a.AttributeName, "active") })
	if _, err := client.CreateTable(t.Context(), in); err != nil {
		t.Fatal(err)
	}
	env := []string{envDynamoDB + "=" + testenv.DynamoDBEndpoint(t)}
	if r := runBinary(t, env, "admin", "create-tables", "--table", table, "--yes"); r.code != exitOK || !strings.Contains(r.stdout, "provider  exists") {
		t.Fatalf("admin create-tables on a table without the index: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	out, err := client.DescribeTable(t.Context(), &ddb.DescribeTableInput{TableName: &table})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(out.Table.GlobalSecondaryIndexes, func(g ddbtypes.GlobalSecondaryIndexDescription) bool { return *g.IndexName == "ACTIVE" }) {
		t.Errorf("after admin create-tables the table's indexes are %+v, want ACTIVE among them", out.Table.GlobalSecondaryIndexes)
	}
}

// TestCreateTables creates the provider's and two stores' tables on DynamoDB
// Local, then again (all exist), and uses them.
func TestCreateTables(t *testing.T) {
	t.Parallel()
	endpoint := testenv.DynamoDBEndpoint(t)
	client := testenv.DynamoDBClient(t)
	base := testenv.UniqueName(t)
	names := []string{base, base + "-counts", base + "-dedup"}
	t.Cleanup(func() { deleteTables(client, names...) })
	env := []string{envDynamoDB + "=" + endpoint}
	args := []string{"admin", "create-tables", "--table", names[0], "--store-tables", names[1], "--dedup-tables", names[2]}
	// Names replaced and spaces squeezed, as the names' lengths change the alignment.
	replace := strings.NewReplacer(endpoint, "ENDPOINT", names[1], "COUNTS", names[2], "DEDUP", names[0], "PROVIDER")
	squeeze := func(s string) string {
		var b strings.Builder
		for line := range strings.Lines(replace.Replace(s)) {
			b.WriteString(strings.Join(strings.Fields(line), " ") + "\n")
		}
		return b.String()
	}
	var got []string
	for _, extra := range [][]string{nil, {"--yes"}, {"--yes"}, {"--yes", "--json"}} {
		r := runBinary(t, env, slices.Concat(args, extra)...)
		got = append(got, fmt.Sprintf("exit %d\n%s%s", r.code, squeeze(r.stdout), squeeze(r.stderr)))
	}
	want := []string{
		"exit 2\npipestate admin create-tables: this writes: add --yes to create (or keep) the tables PROVIDER (provider), COUNTS (store), DEDUP (dedup)\nrun 'pipestate admin create-tables --help' for usage\n",
		"exit 0\nbackend: dynamodb ENDPOINT, table PROVIDER\nTABLE PURPOSE RESULT\nPROVIDER provider created\nCOUNTS store created\nDEDUP dedup created\n",
		"exit 0\nbackend: dynamodb ENDPOINT, table PROVIDER\nTABLE PURPOSE RESULT\nPROVIDER provider exists\nCOUNTS store exists\nDEDUP dedup exists\n",
		"exit 0\n" + `{"table":"PROVIDER","purpose":"provider","result":"exists"}` + "\n" +
			`{"table":"COUNTS","purpose":"store","result":"exists"}` + "\n" + `{"table":"DEDUP","purpose":"dedup","result":"exists"}` + "\n",
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("run %d:\n%s--- want\n%s", i, got[i], want[i])
		}
	}
	// The provider's table works.
	if r := runBinary(t, env, "pipelines", "list", "--table", names[0]); r.code != exitOK || !strings.HasSuffix(r.stdout, "no pipelines registered\n") {
		t.Errorf("pipelines list on the new table: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
	// A table with another schema is an error.
	r := runBinary(t, env, "admin", "create-tables", "--store-tables", names[0], "--yes")
	if r.code != exitError || !strings.Contains(r.stderr, "table "+names[0]+" (store)") {
		t.Errorf("a store table over the provider's: exit %d, %q", r.code, r.stderr)
	}
}
