package redis

import (
	"strconv"
	"strings"

	"github.com/pipestate/pipestate/state"
)

// entityEscaper escapes the characters that would end or nest a Redis Cluster hash tag
// ('{' and '}') and the escape character itself, so the escaped entity is injective
// and a valid, non-empty hash tag.
var entityEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// keyspace builds every key name of the stores; see the key schema in doc.go.
type keyspace struct {
	prefix string
}

// entityTag is "prefix:{escaped entity}": the part a value key and the claim keys of
// the same entity share, whose hash tag puts them in one cluster slot.
func (ks keyspace) entityTag(kind string, k state.Key) []byte {
	b := make([]byte, 0, len(ks.prefix)+len(k.Entity)+len(kind)+32)
	b = append(b, ks.prefix...)
	b = append(b, ":{"...)
	b = append(b, entityEscaper.Replace(k.Entity)...)
	b = append(b, "}:"...)
	b = append(b, kind...)
	b = append(b, ':')
	return b
}

// valueKey is "prefix:{entity}:kind:bucket".
func (ks keyspace) valueKey(kind string, k state.Key) string {
	return string(strconv.AppendInt(ks.entityTag(kind, k), k.Bucket, 10))
}

// onceKey is "prefix:{entity}:kind:once:bucket:eventID": the claim of an event ID
// applied to k by a store of this kind. It is injective (the bucket holds no ':') and
// shares the value key's hash tag, so both live in one cluster slot.
func (ks keyspace) onceKey(kind string, k state.Key, eventID string) string {
	b := ks.entityTag(kind, k)
	b = append(b, "once:"...)
	b = strconv.AppendInt(b, k.Bucket, 10)
	b = append(b, ':')
	b = append(b, eventID...)
	return string(b)
}

// seenKey is "prefix:seen:eventID", the claim of a Deduper.
func (ks keyspace) seenKey(eventID string) string {
	return ks.prefix + ":seen:" + eventID
}
