package redisprovider

import (
	"crypto/rand"
	"encoding/hex"
	"strings"
)

// keys builds every key of one provider; see "Key schema" in the package doc.
type keys struct{ prefix string }

// index is a list index: a sorted set of lex-ordered members (all scores 0), a
// hash from record ID to "<seq>|<member>" and an expiry index (a sorted set of
// IDs by their record's expiry µs, see lua/idx_apply.lua), all in one hash slot.
// Run logs and cascade markers use z, h and x as their order, values and
// expiries (lua/slot_put.lua).
type index struct{ z, h, x string }

// newIndex returns the index whose sorted set is z and hash h.
func newIndex(z, h string) index { return index{z, h, z + ":exp"} }

// keys returns the index's keys in the order of lua/idx_apply.lua.
func (ix index) keys() []string { return []string{ix.z, ix.h, ix.x} }

// pipeline returns the hash-tagged base of a pipeline's keys: prefix:{pipelineID}.
// Pipeline IDs never contain ':', '{' or '}', so the other tags below, which all
// contain ':', never equal a pipeline's.
func (k keys) pipeline(id string) string { return k.prefix + ":{" + id + "}" }

func (k keys) config(pid string) string    { return k.pipeline(pid) + ":config" }
func (k keys) readiness(pid string) string { return k.pipeline(pid) + ":readiness" }

// traits returns a pipeline's traits hash and its expiry index (see
// lua/traits.lua).
func (k keys) traits(pid string) (hash, expiry string) {
	h := k.pipeline(pid) + ":traits"
	return h, h + ":exp"
}
func (k keys) events(pid string) string { return k.pipeline(pid) + ":events" }
func (k keys) runs(pid string) index {
	return newIndex(k.pipeline(pid)+":runs", k.pipeline(pid)+":runs:ids")
}
func (k keys) reruns(pid string) index {
	return newIndex(k.pipeline(pid)+":reruns", k.pipeline(pid)+":reruns:ids")
}
func (k keys) runLogs(pid string) index {
	return newIndex(k.pipeline(pid)+":runlogs:order", k.pipeline(pid)+":runlogs")
}
func (k keys) markers(pid string) index {
	return newIndex(k.pipeline(pid)+":markers:order", k.pipeline(pid)+":markers")
}
func (k keys) late(pid, date, schedule string) string {
	return k.pipeline(pid) + ":late:" + date + ":" + schedule
}
func (k keys) replay(pid, date, schedule string) string {
	return k.pipeline(pid) + ":replay:" + date + ":" + schedule
}

// fences returns the fence memory of the records under the hash tag of base (a
// pipeline's base, k.pipeline, or a run's or rerun's key): a hash lease key ->
// the highest fence that wrote there (see lua/fence.lua).
func (k keys) fences(base string) string { return base + ":fences" }

func (k keys) run(runID string) string     { return k.prefix + ":{run:" + runID + "}" }
func (k keys) rerun(rerunID string) string { return k.prefix + ":{rerun:" + rerunID + "}" }

// lock returns the key of a lock or lease and of its fence counter. Both carry the
// whole lock key, escaped, as their hash tag, so they share a slot; the escaping
// ('%' '{' '}' as %25 %7B %7D) is injective and keeps '}' out of the tag.
func (k keys) lock(key string) (lock, fence string) {
	l := k.prefix + ":{lock:" + lockEscaper.Replace(key) + "}"
	return l, l + ":fence"
}

// call returns the marker key of the call with nonce on the record, lock, stream
// or list at key:
// it shares key's slot, and keeps the call's outcome for callMemory so that a
// retried call applies once (see "Retries" in the package doc). Nonces are hex, so
// markers never equal another key of the schema.
func (k keys) call(key, nonce string) string { return key + callInfix + nonce }

// newCall is call(key, nonce) with a fresh nonce of ids.Random's form (32 hex
// digits, the marker's last 32 bytes), built in one allocation.
func (k keys) newCall(key string) string {
	var r [16]byte
	var h [32]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails
	hex.Encode(h[:], r[:])
	var b strings.Builder
	b.Grow(len(key) + len(callInfix) + len(h))
	b.WriteString(key)
	b.WriteString(callInfix)
	b.Write(h[:])
	return b.String()
}

const callInfix = ":call:"

var lockEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// markerLog is the stream of every cascade marker write of every pipeline, the
// marker watchers' log: one key, so one slot.
func (k keys) markerLog() string { return k.prefix + ":{:markers}" }

func (k keys) globalPipelines() index { return k.global("pipelines") }
func (k keys) globalReruns() index    { return k.global("reruns") }
func (k keys) globalReplays() index   { return k.global("replays") }

// activeRuns is the active-runs index: every unfinished run, member its RunID.
func (k keys) activeRuns() index { return k.global("active") }

func (k keys) global(name string) index {
	base := k.prefix + ":{:" + name + "}"
	return newIndex(base, base+":ids")
}

// sep joins the parts of members and hash fields. It sorts before every byte an ID
// may hold, so "a"+sep+x sorts before "a-b"+sep+y, as "a" sorts before "a-b".
const sep = "\x00"

// slotField is the hash field and sorted-set member of a (date, schedule) record.
func slotField(date, schedule string) string { return date + sep + schedule }
