// Package fence makes a lease's fencing token protect data: a write made through
// a fenced view (provider.Fenced, state.Fenced) carries the lease's key and fence,
// and the storage refuses it once a newer lease of the same key has written the
// record. This package holds the token and the rule; the views live beside the
// interfaces they wrap.
//
// A lease (provider.Leaser) guarantees that at most one holder has it at a time
// by the backend's clock, and its Fence strictly increases from one lease of a
// key to the next. A holder that pauses past its expiry (a GC pause, a stopped
// VM, a partition) does not know that it lost the lease, and provider.KeepAlive
// can only cancel its context once it runs again. Fencing closes that window:
//
//	lease, err := leaser.AcquireLease(ctx, "ingest/orders", time.Minute)
//	work, stop, err := provider.KeepAlive(ctx, leaser, *lease, time.Minute)
//	defer stop()
//	fp, err := provider.Fenced(p, *lease)
//	ok, err := fp.CompareAndSwapRunState(work, runID, v, next) // ErrFenced once a newer lease wrote the run
//
// # The rule
//
// Each record remembers, for every lease key that has written it, the highest
// fence that did. A fenced write whose fence is below the one its record
// remembers for the same key is refused, atomically with the write, with an error
// wrapping ErrFenced (which wraps pipestate.ErrLockNotHeld) and nothing written.
// Otherwise the write goes on as it would unfenced, and when it writes, the
// record remembers its fence. So:
//
//   - a newer fence's write makes every older fence's write to that record fail;
//   - equal fences pass (a holder writes a record many times);
//   - a fence of another lease key neither passes nor blocks anything: the
//     record remembers each key apart;
//   - a write that writes nothing (a CAS on the wrong version, a create that finds
//     the run, a refused write) remembers nothing;
//   - the fence is checked before what the write itself checks, so a stale
//     holder's CAS or create is refused with ErrFenced, not answered false; only
//     MergeUpdateOnce checks its event's claim first (a repeated event is a
//     duplicate whatever its fence);
//   - a retried call after a lost reply gets its first attempt's outcome, as the
//     write's own lost-reply rule says: the check is part of the write.
//
// The check costs no extra round trip: it runs in the write's own script (Redis,
// with no cross-slot access on a cluster), condition or transaction item
// (DynamoDB) or critical section (memory, SQLite). The one exception is a
// DynamoDB Int64MaxStore merge that leaves the value as it was: unfenced it
// writes nothing, so the first time a fence merges into the key it takes a
// second request to remember it (see state/ddbstate).
//
// "The record" is, by write: the run (by RunID) for PutRunState,
// CompareAndSwapRunState and CreateRunState; the pipeline's event log for
// AppendEvent; the (pipeline, date, schedule) list for PutLateArrival; the
// (pipeline, date, schedule) entry for PutRunLog, WriteCascadeMarker and
// PutReplay; the rerun (by RerunID) for PutRerun; and the key of the store for
// MergeUpdate, MergeUpdateOnce and MergeMany. A backend may remember fences for a
// larger group of records (the Redis provider: everything stored under one hash
// tag, so a pipeline's run logs, markers, replays, late arrivals and events share
// one memory; the Redis stores: every bucket of an entity), which refuses more
// stale writes, never fewer: a fence below a newer one of the same key is stale
// everywhere.
//
// # Which writes take a fence
//
// Through provider.Fenced: PutRunState, CompareAndSwapRunState, CreateRunState,
// AppendEvent, PutLateArrival, PutRunLog, WriteCascadeMarker, PutRerun and
// PutReplay, the writes a holder makes while it runs a pipeline. Through state.Fenced:
// MergeUpdate, MergeUpdateOnce and MergeMany, so a compaction or backfill job
// cannot double-write after a takeover. The others go through unfenced:
// RegisterPipeline and DeletePipeline (configuration, written by deploys and
// operators, not by holders), PutTrait and PutReadiness (evaluations that expire,
// latest wins), the lock and lease calls (they check their own tokens), and
// Deduper.MarkSeen.
//
// # Unfenced writes
//
// An unfenced write (p itself, not provider.Fenced(p, lease)) to a record that remembers fences is
// allowed, and neither checks nor changes which fences the record remembers
// (it does make them live as long as the record it extends, see Lifetime): an operator
// fixing a stuck run with the CLI holds no lease, and during a rolling upgrade
// the older version writes unfenced. A fence therefore protects a record only
// from fenced writers of the same lease key; mix unfenced writers in only where
// that is what you want.
//
// # What a fence does not protect
//
//   - Records no newer lease has written yet: a stale holder's write to a record
//     its successor has not touched succeeds (the successor's first write then
//     supersedes it, as ordinary write order would).
//   - Unfenced writers, and writers fenced by another lease key.
//   - Reads: a stale holder reads what is there; only its writes are refused.
//   - Clocks: a fence does not depend on clocks at all. Leases do: two holders
//     may both believe they hold a lease when clocks run at different rates, and
//     fencing is what makes that harmless for the records above.
//
// # Lifetime
//
// What a record remembers lives as long as the record (its retention, the key's
// TTL of a store) and no longer, so it adds no unbounded growth: once the backend
// has deleted an expired record, the record written again remembers from scratch,
// and a holder paused for longer than the record's retention can write it again
// (a backend may remember longer, which only refuses more). "As long as the
// record" counts from the record's last write, whatever write it was: any
// write that extends a record's life (fenced or not, by an instance with a
// longer retention, a store merge with a longer ttl or ttl 0) extends what it
// remembers with it, atomically with the write, so a stale holder never meets
// a live record that forgot the newer fence (an operator's unfenced fix, such
// as the CLI's run fail, included). A backend that keeps the memory apart from
// the record (a Redis hash beside the record, a DynamoDB item beside a list)
// must therefore touch it on unfenced writes too; providertest's and
// statetest's Fencing groups check it with time (Harness.Sleep past the first
// write's retention only). Each lease key that ever wrote a record adds one small entry to it (a
// hash field on Redis, an attribute on DynamoDB), so use a bounded set of lease
// keys per record (one per pipeline or job, not one per run).
//
// # Backends
//
// Every backend must honour fenced writes: providertest's Fencing group and
// statetest's Fencing group check the rule on every harness. A backend reads the
// token of a write with FromContext and applies Set's rule atomically with the
// write; decorators (observe, the caches, the breaker) pass the context through
// unchanged.
package fence
