package ddbx

import (
	"strings"
	"testing"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestItemSize(t *testing.T) {
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	n := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberN{Value: v} }
	for _, tc := range []struct {
		name string
		item map[string]ddbtypes.AttributeValue
		want int
	}{
		{name: "empty", item: nil, want: 0},
		{name: "string", item: map[string]ddbtypes.AttributeValue{"PK": s("abc")}, want: 5},
		{name: "utf8", item: map[string]ddbtypes.AttributeValue{"é": s("日本")}, want: 2 + 6},
		{name: "number", item: map[string]ddbtypes.AttributeValue{"n": n("12345")}, want: 1 + 4},
		{name: "number zeros", item: map[string]ddbtypes.AttributeValue{"n": n("-0001.2300")}, want: 1 + 4},
		{name: "negative", item: map[string]ddbtypes.AttributeValue{"n": n("-12")}, want: 1 + 3},
		{name: "unaligned", item: map[string]ddbtypes.AttributeValue{"n": n("1.1")}, want: 1 + 3},
		{name: "exponent", item: map[string]ddbtypes.AttributeValue{"n": n("-123.45e-7")}, want: 1 + 5},
		{name: "bad exponent", item: map[string]ddbtypes.AttributeValue{"n": n("12e")}, want: 1 + 3},
		{name: "zero", item: map[string]ddbtypes.AttributeValue{"n": n("0")}, want: 1 + 2},
		{name: "bool null", item: map[string]ddbtypes.AttributeValue{
			"b": &ddbtypes.AttributeValueMemberBOOL{Value: true}, "z": &ddbtypes.AttributeValueMemberNULL{Value: true}}, want: 4},
		{name: "binary", item: map[string]ddbtypes.AttributeValue{"b": &ddbtypes.AttributeValueMemberB{Value: make([]byte, 10)}}, want: 11},
		{name: "sets", item: map[string]ddbtypes.AttributeValue{
			"s": &ddbtypes.AttributeValueMemberSS{Value: []string{"ab", "c"}},
			"n": &ddbtypes.AttributeValueMemberNS{Value: []string{"1", "22"}},
			"b": &ddbtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}}, want: 1 + 3 + 1 + 4 + 1 + 3},
		{name: "list", item: map[string]ddbtypes.AttributeValue{
			"l": &ddbtypes.AttributeValueMemberL{Value: []ddbtypes.AttributeValue{s("ab"), n("1")}}}, want: 1 + 3 + 3 + 3},
		{name: "map", item: map[string]ddbtypes.AttributeValue{
			"m": &ddbtypes.AttributeValueMemberM{Value: map[string]ddbtypes.AttributeValue{"k": s("ab")}}}, want: 1 + 3 + 1 + 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ItemSize(tc.item); got != tc.want {
				t.Fatalf("ItemSize = %d, want %d", got, tc.want)
			}
		})
	}
	big := map[string]ddbtypes.AttributeValue{"d": s(strings.Repeat("x", MaxItemSize-1))}
	if !FitsItem(big) {
		t.Fatal("item of exactly MaxItemSize does not fit")
	}
	big["e"] = s("")
	if FitsItem(big) {
		t.Fatal("item of MaxItemSize+1 fits")
	}
}
