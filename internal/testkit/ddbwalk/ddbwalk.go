// Package ddbwalk corrupts, one at a time, every attribute of every item a
// DynamoDB backend wrote, for tests that check each read notices and survives
// it (issue 35's breach class 4), the DynamoDB twin of package rediswalk: each
// attribute but the table's keys gets a value of the other type (a number for a
// string or binary, a string for a number), a number past int64 (when it is a
// number), an empty string (when it is a string) and is removed; after each
// case the item is put back as it was.
package ddbwalk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Case is one corruption: the item (its key attributes, as text), the
// attribute and the name of the value it got ("other type", "huge", "empty",
// "missing").
type Case struct {
	Table string
	Item  map[string]ddbtypes.AttributeValue // the item as it was
	Key   string                             // the item's key attributes, as text
	Attr  string
	Value string
}

func (c Case) String() string { return fmt.Sprintf("%s %s .%s := %s", c.Table, c.Key, c.Attr, c.Value) }

// Walk runs every case on the items of table (keys: its key attribute names)
// whose value is one of values (nil: all): it corrupts the attribute, calls
// check with the case, then puts the item back. It returns the number of cases.
// DynamoDB's refusals of a corruption (an index key of the wrong type) skip the
// case; other errors fail t.
func Walk(t testing.TB, c *ddb.Client, table string, keys, values []string, check func(Case)) int {
	t.Helper()
	ctx := context.Background()
	var items []map[string]ddbtypes.AttributeValue
	var start map[string]ddbtypes.AttributeValue
	for {
		out, err := c.Scan(ctx, &ddb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			t.Fatalf("ddbwalk: scan %s: %v", table, err)
		}
		items = append(items, out.Items...)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	isKey := map[string]bool{}
	for _, k := range keys {
		isKey[k] = true
	}
	n := 0
	for _, it := range items {
		key := ""
		for _, k := range keys {
			key += fmt.Sprintf("%s=%v ", k, text(it[k]))
		}
		var names []string
		for name := range it {
			if !isKey[name] {
				names = append(names, name)
			}
		}
		sort.Strings(names)
		for _, name := range names {
			for _, v := range variants(it[name]) {
				if values != nil && !slices.Contains(values, v.name) {
					continue
				}
				bad := make(map[string]ddbtypes.AttributeValue, len(it))
				for k, a := range it {
					bad[k] = a
				}
				if v.av == nil {
					delete(bad, name)
				} else {
					bad[name] = v.av
				}
				if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &table, Item: bad}); err != nil {
					var ve interface{ ErrorCode() string }
					if errors.As(err, &ve) && ve.ErrorCode() == "ValidationException" {
						continue // an index key of the other type: DynamoDB refuses it
					}
					t.Fatalf("ddbwalk: %v", err)
				}
				n++
				check(Case{Table: table, Item: it, Key: key, Attr: name, Value: v.name})
				if _, err := c.PutItem(ctx, &ddb.PutItemInput{TableName: &table, Item: it}); err != nil {
					t.Fatalf("ddbwalk: restore: %v", err)
				}
			}
		}
	}
	return n
}

type variant struct {
	name string
	av   ddbtypes.AttributeValue // nil: removed
}

func variants(av ddbtypes.AttributeValue) []variant {
	out := []variant{{"missing", nil}}
	switch av.(type) {
	case *ddbtypes.AttributeValueMemberN:
		out = append(out, variant{"other type", &ddbtypes.AttributeValueMemberS{Value: "seven"}},
			variant{"huge", &ddbtypes.AttributeValueMemberN{Value: "99999999999999999999999"}})
	case *ddbtypes.AttributeValueMemberS:
		out = append(out, variant{"other type", &ddbtypes.AttributeValueMemberN{Value: "7"}},
			variant{"empty", &ddbtypes.AttributeValueMemberS{Value: ""}},
			variant{"word", &ddbtypes.AttributeValueMemberS{Value: "seven"}})
	default:
		out = append(out, variant{"other type", &ddbtypes.AttributeValueMemberN{Value: "7"}})
	}
	return out
}

// text is a key attribute's value, as text.
func text(av ddbtypes.AttributeValue) string {
	switch a := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return a.Value
	case *ddbtypes.AttributeValueMemberN:
		return a.Value
	}
	return fmt.Sprint(av)
}

// Items returns every item of table, for comparing before and after an
// operation that must write nothing.
func Items(t testing.TB, c *ddb.Client, table string) string {
	t.Helper()
	out, err := c.Scan(context.Background(), &ddb.ScanInput{TableName: &table, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("ddbwalk: scan %s: %v", table, err)
	}
	var s []string
	for _, it := range out.Items {
		var names []string
		for k := range it {
			names = append(names, k)
		}
		sort.Strings(names)
		row := ""
		for _, k := range names {
			row += fmt.Sprintf("%s=%s;", k, describe(it[k]))
		}
		s = append(s, row)
	}
	sort.Strings(s)
	return fmt.Sprint(s)
}

func describe(av ddbtypes.AttributeValue) string {
	switch a := av.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return "S:" + a.Value
	case *ddbtypes.AttributeValueMemberN:
		return "N:" + a.Value
	case *ddbtypes.AttributeValueMemberB:
		return fmt.Sprintf("B:%x", a.Value)
	}
	return fmt.Sprintf("%T:%v", av, av)
}
