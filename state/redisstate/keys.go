package redisstate

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

// valueKey is "prefix:{entity}:kind:bucket".
func (ks keyspace) valueKey(kind string, k state.Key) string {
	return ks.entityKey(kind, k, false, "")
}

// onceKey is "prefix:{entity}:kind:once:bucket:eventID": the claim of an event ID
// applied to k by a store of this kind. It is injective (the bucket holds no ':') and
// shares the value key's hash tag, so both live in one cluster slot.
func (ks keyspace) onceKey(kind string, k state.Key, eventID string) string {
	return ks.entityKey(kind, k, true, eventID)
}

// entityKey is the value key of k (once == false) or the claim key of eventID on
// it, built in one allocation (the escaped entity costs another only when it differs
// from the entity). The part "prefix:{escaped entity}:" is the hash tag both share.
func (ks keyspace) entityKey(kind string, k state.Key, once bool, eventID string) string {
	entity := entityEscaper.Replace(k.Entity)
	var num [20]byte
	bucket := strconv.AppendInt(num[:0], k.Bucket, 10)
	n := len(ks.prefix) + len(":{}:") + len(entity) + len(kind) + len(":") + len(bucket)
	if once {
		n += len("once:") + len(":") + len(eventID)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(ks.prefix)
	b.WriteString(":{")
	b.WriteString(entity)
	b.WriteString("}:")
	b.WriteString(kind)
	b.WriteByte(':')
	if once {
		b.WriteString("once:")
	}
	b.Write(bucket)
	if once {
		b.WriteByte(':')
		b.WriteString(eventID)
	}
	return b.String()
}

// fenceKey is "prefix:{entity}:kind:fences": the fence memory of the store
// kind's values of one entity (package fence), in their hash tag. "fences" is no
// bucket and no claim's "once:", so it equals no other key.
func (ks keyspace) fenceKey(kind string, k state.Key) string {
	return ks.prefix + ":{" + entityEscaper.Replace(k.Entity) + "}:" + kind + ":fences"
}

// seenKey is "prefix:seen:eventID", the claim of a Deduper.
func (ks keyspace) seenKey(eventID string) string {
	return ks.prefix + ":seen:" + eventID
}
