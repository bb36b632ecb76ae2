package ddbprovider

import (
	"context"
	"strconv"
	"strings"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/fence"
)

// Fencing (package fence): the item that stands for a record (see "Fencing" in
// the package doc) remembers, for each lease key that wrote it through a fenced
// view, the highest fence as the number attribute fencePrefix+key. A fenced write
// adds to the write's own condition on that item
//
//	attribute_not_exists(#f) OR #f <= :fence
//
// and to its update SET #f = :fence, in the request it already sends. Writes of
// such items are updates, never puts, fenced or not, so a write keeps what the
// item remembers of other keys (and an unfenced write all of it).

// fencePrefix starts the name of a fence attribute; no other attribute's name
// starts with it.
const fencePrefix = "f:"

// guard is the fence of one write: the token of its context, when the write is
// fenced, and the name of its record for the refusal's error.
type guard struct {
	t      fence.Token
	on     bool
	record string
}

// guardOf is the guard of a write of record (a description for the error)
// whose context is ctx.
func guardOf(ctx context.Context, record string) guard {
	t, ok := fence.FromContext(ctx)
	return guard{t: t, on: ok, record: record}
}

// Placeholders of a fence in expressions; no other expression of the package
// uses them.
const (
	fenceName  = "#f"
	fenceValue = ":fence"
	fenceCond  = "(attribute_not_exists(#f) OR #f <= :fence)"
	fenceSet   = "#f = :fence"
)

// attr is the name of the fence attribute of g's lease key.
func (g guard) attr() string { return fencePrefix + g.t.Key }

// addTo adds g's name and value to an expression's maps (made when nil), which
// it returns; a no-op for an unfenced write.
func (g guard) addTo(names map[string]string, values map[string]ddbtypes.AttributeValue) (map[string]string, map[string]ddbtypes.AttributeValue) {
	if !g.on {
		return names, values
	}
	if names == nil {
		names = map[string]string{}
	}
	if values == nil {
		values = map[string]ddbtypes.AttributeValue{}
	}
	names[fenceName] = g.attr()
	values[fenceValue] = nv(g.t.Fence)
	return names, values
}

// and is cond (possibly "") with g's condition added.
func (g guard) and(cond string) string {
	switch {
	case !g.on:
		return cond
	case cond == "":
		return fenceCond
	}
	return "(" + cond + ") AND " + fenceCond
}

// refused returns the error of g's write when old (the item its condition saw;
// nil when missing) remembers a newer fence of g's key than g's, and nil
// otherwise: a failed condition is the fence's exactly when it returns an error.
func (g guard) refused(old map[string]ddbtypes.AttributeValue) error {
	if !g.on {
		return nil
	}
	if newest, ok := fenceIn(old, g.t.Key); ok && newest > g.t.Fence {
		return fence.Refused(g.t, g.record, newest)
	}
	return nil
}

// refusedItem is refused of an unmarshalled item.
func (g guard) refusedItem(it item) error {
	if !g.on {
		return nil
	}
	if newest := it.fences[g.t.Key]; newest > g.t.Fence {
		return fence.Refused(g.t, g.record, newest)
	}
	return nil
}

// fenceIn returns the fence av remembers for key.
func fenceIn(av map[string]ddbtypes.AttributeValue, key string) (int64, bool) {
	n, ok := av[fencePrefix+key].(*ddbtypes.AttributeValueMemberN)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseInt(n.Value, 10, 64)
	return f, err == nil
}

// schemaAttrs are the attributes an item may have besides its key (see item),
// with their placeholders in the expressions of putUpdate: the placeholders of
// exp, listPK, listSK and version are those the conditions use for them.
var schemaAttrs = [...]struct{ name, ph string }{
	{attrGSI1PK, "#gpk"}, {attrGSI1SK, "#gsk"}, {attrActPK, "#apk"}, {attrActSK, "#ask"}, {attrData, "#data"}, {attrExp, "#exp"}, {attrTTL, "#ttl"},
	{attrListPK, "#lpk"}, {attrListSK, "#lsk"}, {attrVer, "#v"}, {attrSeq, "#seq"}, {attrHolder, "#holder"},
	{attrFence, "#fence"}, {attrTok, "#tok"},
}

// update is an UpdateItem's parts: its key, update and condition expressions
// (cond "" for none) and their names and values.
type update struct {
	key    map[string]ddbtypes.AttributeValue
	text   string
	cond   string
	names  map[string]string
	values map[string]ddbtypes.AttributeValue
}

// putUpdate is the update that writes av (an item's attributes, with its key) as
// PutItem would, on condition cond (the zero expr: none) and g: every attribute
// of the item's schema is set to av's or removed, so what the item held is
// replaced, except its fence attributes, which are kept (and g's, when fenced,
// raised to g's fence).
func putUpdate(av map[string]ddbtypes.AttributeValue, cond expr, g guard) update {
	names := make(map[string]string, len(schemaAttrs)+4)
	values := make(map[string]ddbtypes.AttributeValue, len(av)+len(cond.values)+1)
	if cond.form != nil {
		for k, v := range cond.names {
			names[k] = v
		}
		for k, v := range cond.values {
			values[k] = v
		}
	}
	var set, remove strings.Builder
	for i, a := range schemaAttrs {
		names[a.ph] = a.name
		v, ok := av[a.name]
		if !ok {
			if remove.Len() > 0 {
				remove.WriteString(", ")
			}
			remove.WriteString(a.ph)
			continue
		}
		ph := ":s" + strconv.Itoa(i)
		values[ph] = v
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(a.ph + " = " + ph)
	}
	if g.on {
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(fenceSet)
	}
	names, values = g.addTo(names, values)
	text := ""
	if set.Len() > 0 {
		text = "SET " + set.String()
	}
	if remove.Len() > 0 {
		if text != "" {
			text += " "
		}
		text += "REMOVE " + remove.String()
	}
	u := update{key: map[string]ddbtypes.AttributeValue{attrPK: av[attrPK], attrSK: av[attrSK]}, text: text, names: names, values: values}
	if cond.form != nil {
		u.cond = cond.text
	}
	u.cond = g.and(u.cond)
	if len(u.values) == 0 {
		u.values = nil
	}
	return u
}

// txUpdate is the TransactWriteItem of putUpdate(av, cond, g), returning the old
// item when its condition fails.
func (p *Provider) txUpdate(av map[string]ddbtypes.AttributeValue, cond expr, g guard) ddbtypes.TransactWriteItem {
	u := putUpdate(av, cond, g)
	up := &ddbtypes.Update{
		TableName: &p.table, Key: u.key, UpdateExpression: &u.text,
		ExpressionAttributeNames: u.names, ExpressionAttributeValues: u.values,
	}
	if u.cond != "" {
		up.ConditionExpression = &u.cond
		up.ReturnValuesOnConditionCheckFailure = ddbtypes.ReturnValuesOnConditionCheckFailureAllOld
	}
	return ddbtypes.TransactWriteItem{Update: up}
}

// txGuard is the transaction action that checks and remembers g's fence (g is
// on) on the item (pk, sk), creating it if need be, and changes nothing else
// of it.
func (p *Provider) txGuard(pk, sk string, g guard) ddbtypes.TransactWriteItem {
	names, values := g.addTo(nil, nil)
	cond, update := g.and(""), "SET "+fenceSet
	return ddbtypes.TransactWriteItem{Update: &ddbtypes.Update{
		TableName:                           &p.table,
		Key:                                 key(pk, sk),
		ConditionExpression:                 &cond,
		UpdateExpression:                    &update,
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: ddbtypes.ReturnValuesOnConditionCheckFailureAllOld,
	}}
}
