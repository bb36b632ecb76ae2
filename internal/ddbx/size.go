package ddbx

import (
	"strconv"
	"strings"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// MaxItemSize is DynamoDB's item size limit: 400 KB, attribute names included.
const MaxItemSize = 400 * 1024

// ItemSize estimates the stored size of item in bytes by DynamoDB's published
// rules: attribute names and strings count their UTF-8 bytes, binaries their
// length, booleans and nulls 1, lists and maps 3 bytes plus 1 per element, sets the
// sum of their members. Numbers count as DynamoDB stores them (see numberSize),
// which for negative numbers and odd digit alignments is a byte or two more than
// the published approximation. The estimate is never below DynamoDB's own count,
// so an item it puts at or under MaxItemSize is accepted by DynamoDB.
func ItemSize(item map[string]ddbtypes.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

// FitsItem reports whether ItemSize(item) is at most MaxItemSize.
func FitsItem(item map[string]ddbtypes.AttributeValue) bool {
	return ItemSize(item) <= MaxItemSize
}

func valueSize(v ddbtypes.AttributeValue) int {
	switch v := v.(type) {
	case *ddbtypes.AttributeValueMemberS:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberN:
		return numberSize(v.Value)
	case *ddbtypes.AttributeValueMemberB:
		return len(v.Value)
	case *ddbtypes.AttributeValueMemberBOOL, *ddbtypes.AttributeValueMemberNULL:
		return 1
	case *ddbtypes.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *ddbtypes.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *ddbtypes.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *ddbtypes.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is the size DynamoDB stores a number in: one byte of exponent, then
// the significant digits in base 100, paired around the decimal point (so 1.1 takes
// two digit bytes, 01 and 10), and for a negative number one terminating byte. The
// documented "1 byte per two significant digits plus 1" is this without the
// pairing and the terminator, and too small. A number that does not parse is sized
// as if both added a byte.
func numberSize(s string) int {
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimLeft(s, "+-")
	var exp int64
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.ParseInt(s[i+1:], 10, 64)
		if err != nil {
			e = 1 // odd: the larger estimate
		}
		exp, s = e, s[:i]
	}
	intPart, frac, _ := strings.Cut(s, ".")
	digits := intPart + frac
	point := int64(len(intPart)) // digits before the decimal point
	trimmed := strings.TrimLeft(digits, "0")
	point -= int64(len(digits) - len(trimmed))
	digits = strings.TrimRight(trimmed, "0")
	if digits == "" {
		return 2
	}
	// The value is 0.digits × 10^(point+exp); an odd power of ten shifts the
	// pairing by one digit.
	n := len(digits)
	if (point+exp)%2 != 0 {
		n++
	}
	size := 1 + (n+1)/2
	if neg {
		size++
	}
	return size
}
