// Package lincheck checks that the backends' concurrent operations are
// linearizable, with github.com/anishathalye/porcupine: tests record a history of
// operations that several clients (goroutines over several provider or store
// instances sharing one storage) ran at once, usually while faults are injected,
// and check it against a sequential model.
//
// The models:
//
//   - RunModel: the run register of each RunID (PutRunState, GetRunState,
//     CompareAndSwapRunState);
//   - LockModel: a lock (AcquireLock/ReleaseLock per owner) or a lease
//     (AcquireLease/RenewLease/ReleaseLease) of each key, with at most one holder
//     and fences that strictly increase across successive leases. The model has
//     no clock: workloads use TTLs long enough that nothing expires;
//   - CounterModel: an Int64 sum per key under MergeUpdateOnce redelivery, where
//     every event ID is applied exactly once;
//   - FencedModel: the run register under fenced writes (package fence): a write
//     whose fence is below the highest fence that wrote the run is refused with
//     ErrFenced and changes nothing, so no older holder's write lands after a
//     newer holder's; its workload, FencedRuns, has holders take the lease over
//     while others, paused, go on writing with older fences;
//   - ListModel: run IDs created by PutRunState and listed by ListRuns: a list
//     that starts after a create returned contains it, an item once listed is
//     listed by every later list, and a list never names an ID whose create had
//     not been called when it returned;
//   - EventLogModel: the event log of each pipeline (AppendEvent, ReadEventsSince,
//     ListEvents), the sequence of the messages appended: an append lands once,
//     at the end; a read from "" returns the whole log in order, a read from an
//     event's cursor exactly the events after it, ListEvents the newest ones; its
//     workload, EventLog, has several instances append to each pipeline at once.
//
// Each model comes with a workload (RunRegister, Locks, Counter, List, EventLog)
// that drives the interfaces of the provider and state packages from several
// clients started together from a barrier, and returns the recorded history.
// Config sizes it and bounds its time. The tests of this package run every
// workload on provider/memprovider and state/memstate, miniredis, redis-server, a Redis
// Cluster and DynamoDB Local, with
// faults from internal/testkit/faults, and prove on memory, through deliberately
// broken wrappers, that each check can fail.
//
// Unknown outcomes: a call that returned an error other than a documented answer
// (a cut connection, a reply lost after the retries ran out) may or may not have
// taken effect, and may even take effect after the call returned. The Recorder
// records it with the output Unknown and, in the history it hands out, a return
// time after every other event, so porcupine may place it anywhere after its call,
// including after everything else (never applied). Every model accepts Unknown and
// applies the operation's effect where it is placed.
//
// Unknown reads, which have no effect wherever they are placed, are left out of
// the histories the workloads return, which spares porcupine the search.
//
// Check runs porcupine with a timeout; a history that is not linearizable, or that
// the checker could not decide in time, is written as porcupine's HTML
// visualisation to a file under Dir, named in the error; Require also logs the
// operations of the first partition that is not linearizable as text.
//
// Example:
//
//	ops := lincheck.RunRegister(t, ctx, []provider.RunStore{p1, p2}, lincheck.Config{Duration: 5 * time.Second})
//	lincheck.Require(t, lincheck.RunModel(), ops)
package lincheck
