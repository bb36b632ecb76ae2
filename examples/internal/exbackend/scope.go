package exbackend

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// EndTimeout bounds the clean-up of Begin's end.
const EndTimeout = 30 * time.Second

// Begin makes a run on a server (-redis or -dynamodb) its own; call it after
// the flags are parsed. Without -prefix, c.Prefix gets a random suffix
// ("quickstart-3fa9c2d1"), so no two runs share keys or tables. The returned end
// says on w what the run left under the prefix (the Redis keys prefix:*, or the
// DynamoDB tables named prefix or prefix-*) and removes it, unless -keep or an
// explicit -prefix. A run in memory has nothing to say or remove. end ignores
// the cancellation and deadline of its ctx (keeping its values) and is bounded
// by EndTimeout instead, so a run that ended on its deadline is cleaned up too.
func (c *Config) Begin(fs *flag.FlagSet) (end func(ctx context.Context, w io.Writer) error) {
	if c.Redis == "" && c.DynamoDB == "" {
		return func(context.Context, io.Writer) error { return nil }
	}
	named := false
	fs.Visit(func(f *flag.Flag) { named = named || f.Name == "prefix" })
	if !named {
		var b [4]byte
		_, _ = rand.Read(b[:]) // never fails
		c.Prefix += "-" + hex.EncodeToString(b[:])
	}
	remove := !named && !c.Keep
	return func(ctx context.Context, w io.Writer) error {
		// The run's ctx may have ended (a run that failed on its deadline):
		// what it wrote is removed all the same, within a bound of its own.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), EndTimeout)
		defer cancel()
		what, where, n, err := c.sweep(ctx, remove)
		if err != nil {
			return fmt.Errorf("remove what the run wrote under %s: %w", c.Prefix, err)
		}
		switch {
		case remove:
			fmt.Fprintf(w, "wrote %d %s under %s on %s; removed them (-keep keeps them)\n", n, what, c.Prefix, where)
		case named:
			fmt.Fprintf(w, "wrote %d %s under %s on %s; kept them: -prefix named it\n", n, what, c.Prefix, where)
		default:
			fmt.Fprintf(w, "wrote %d %s under %s on %s; kept them (-keep)\n", n, what, c.Prefix, where)
		}
		return nil
	}
}

// Count counts what is under c.Prefix on c's server (see Begin): Redis keys
// or DynamoDB tables.
func (c Config) Count(ctx context.Context) (int, error) {
	_, _, n, err := c.sweep(ctx, false)
	return n, err
}

// Remove deletes what is under c.Prefix on c's server (see Begin).
func (c Config) Remove(ctx context.Context) error {
	_, _, _, err := c.sweep(ctx, true)
	return err
}

// sweep counts, and with remove deletes, what is under c.Prefix on the server:
// what names it ("keys", "tables"), where the server.
func (c Config) sweep(ctx context.Context, remove bool) (what, where string, n int, err error) {
	if c.DynamoDB != "" {
		tables, err := c.tables(ctx)
		if err != nil {
			return "tables", "", 0, err
		}
		if remove {
			client := c.DynamoDBClient()
			for _, t := range tables {
				if _, err := client.DeleteTable(ctx, &ddb.DeleteTableInput{TableName: aws.String(t)}); err != nil {
					return "tables", "", 0, err
				}
			}
		}
		return "tables", "DynamoDB " + c.DynamoDB + " (" + strings.Join(tables, ", ") + ")", len(tables), nil
	}
	client, closeClient, err := c.RedisClient()
	if err != nil {
		return "keys", "", 0, err
	}
	defer closeClient()
	var keys []string
	it := client.Scan(ctx, 0, globEscape(c.Prefix)+":*", 1000).Iterator()
	for it.Next(ctx) {
		keys = append(keys, it.Val())
	}
	if err := it.Err(); err != nil {
		return "keys", "", 0, err
	}
	if remove && len(keys) > 0 {
		if err := client.Unlink(ctx, keys...).Err(); err != nil {
			return "keys", "", 0, err
		}
	}
	return "keys", "Redis " + c.Redis, len(keys), nil
}

// tables is the DynamoDB tables named c.Prefix or c.Prefix-*.
func (c Config) tables(ctx context.Context) ([]string, error) {
	client := c.DynamoDBClient()
	var out []string
	in := &ddb.ListTablesInput{}
	for {
		page, err := client.ListTables(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, t := range page.TableNames {
			if t == c.Prefix || strings.HasPrefix(t, c.Prefix+"-") {
				out = append(out, t)
			}
		}
		if page.LastEvaluatedTableName == nil {
			return out, nil
		}
		in.ExclusiveStartTableName = page.LastEvaluatedTableName
	}
}

// globEscape makes s match itself in a Redis glob.
func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
