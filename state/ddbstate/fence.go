package ddbstate

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/state"
)

// Fencing (package fence): a key's item remembers, for each lease key that
// merged into it through state.Fenced, the highest fence as the number attribute
// fencePrefix+key. A fenced merge adds to its update's condition
//
//	attribute_not_exists(#f) OR #f <= :fence
//
// and to its update SET #f = :fence. Merges are updates, never puts, so every
// merge, fenced or not, keeps what the item remembers; the attributes live and
// expire with the item (its ttl).

// fencePrefix starts the name of a fence attribute.
const fencePrefix = "f:"

// Placeholders of a fence in expressions.
const (
	fenceName  = "#f"
	fenceValue = ":fence"
	fenceCond  = "(attribute_not_exists(#f) OR #f <= :fence)"
	fenceSet   = "#f = :fence"
)

// guard is the fence of one merge: the token of its context, when fenced, and
// the key merged into, for the refusal's error.
type guard struct {
	t  fence.Token
	on bool
	k  state.Key
}

func guardOf(ctx context.Context, k state.Key) guard {
	t, ok := fence.FromContext(ctx)
	return guard{t: t, on: ok, k: k}
}

// attr is the name of the fence attribute of g's lease key.
func (g guard) attr() string { return fencePrefix + g.t.Key }

// refused returns the error of g's merge when old (the item a failed condition
// or a read saw) remembers a newer fence of g's key, and nil otherwise.
func (g guard) refused(name string, old map[string]av) error {
	if !g.on {
		return nil
	}
	n, ok := old[g.attr()].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return nil
	}
	newest, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || newest <= g.t.Fence {
		return nil
	}
	return fmt.Errorf("state/ddbstate: %s merge: %w", name, fence.Refused(g.t, fmt.Sprintf("key %q/%d", g.k.Entity, g.k.Bucket), newest))
}

// remembers reports whether old already remembers g's fence (so a merge that
// changes nothing else need not write).
func (g guard) remembers(old map[string]av) bool {
	if !g.on {
		return true
	}
	n, ok := old[g.attr()].(*ddbtypes.AttributeValueMemberN)
	return ok && n.Value == strconv.FormatInt(g.t.Fence, 10)
}

// names and values return the expression maps of a merge with g's added (copies
// when fenced; the maps themselves otherwise).
func (g guard) names(names map[string]string) map[string]string {
	if !g.on {
		return names
	}
	out := make(map[string]string, len(names)+1)
	for k, v := range names {
		out[k] = v
	}
	out[fenceName] = g.attr()
	return out
}

func (g guard) values(values map[string]av) map[string]av {
	if g.on {
		values[fenceValue] = numAV(g.t.Fence)
	}
	return values
}

// fenced returns f with the fence's condition and SET added (f's update has at
// most one SET clause).
func fenced(f mergeForm) mergeForm {
	u := f.update
	if i := strings.Index(u, "SET "); i >= 0 {
		u = u[:i+len("SET ")] + fenceSet + ", " + u[i+len("SET "):]
	} else {
		u += " SET " + fenceSet
	}
	return mergeForm{update: u, cond: parenthesized(f.cond) + " AND " + fenceCond}
}

// parenthesized returns cond in parentheses, unless it is one parenthesized
// group already: DynamoDB refuses redundant parentheses ("((a OR b))") with a
// ValidationException.
func parenthesized(cond string) string {
	depth := 0
	for i, c := range cond {
		switch c {
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i < len(cond)-1 {
				return "(" + cond + ")"
			}
		}
	}
	if strings.HasPrefix(cond, "(") {
		return cond
	}
	return "(" + cond + ")"
}

// expr returns the texts and maps of e, a built condition and update, with g's
// condition and SET added (by text: the expression package would read a lease
// key's dots and brackets as a document path).
func (g guard) expr(e expression.Expression) (update, cond *string, names map[string]string, values map[string]av) {
	update, cond, names, values = e.Update(), e.Condition(), e.Names(), e.Values()
	if !g.on {
		return update, cond, names, values
	}
	f := fenced(mergeForm{update: *update, cond: *cond})
	names, values = g.names(names), g.values(values)
	return &f.update, &f.cond, names, values
}
