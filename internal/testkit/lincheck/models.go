package lincheck

import (
	"fmt"
	"math/bits"
	"strings"

	"github.com/anishathalye/porcupine"

	"github.com/pipestate/pipestate/types"
)

// partitionBy splits a history into one partition per key: the models below are
// per key (run ID, lock key, counter key), and porcupine checks partitions
// independently, which keeps each search small.
func partitionBy(key func(input any) string) func([]porcupine.Operation) [][]porcupine.Operation {
	return func(ops []porcupine.Operation) [][]porcupine.Operation {
		idx := map[string]int{}
		var parts [][]porcupine.Operation
		for _, o := range ops {
			k := key(o.Input)
			i, ok := idx[k]
			if !ok {
				i = len(parts)
				idx[k] = i
				parts = append(parts, nil)
			}
			parts[i] = append(parts[i], o)
		}
		return parts
	}
}

// ---- run register ----

// RunOp is an operation of the run register.
type RunOp int

// Run register operations.
const (
	PutRun RunOp = iota // PutRunState with Version and Status
	GetRun              // GetRunState
	CASRun              // CompareAndSwapRunState from Version to Status
)

// RunInput is the input of a run register operation.
type RunInput struct {
	Op      RunOp
	RunID   string
	Version int             // PutRun: the version stored; CASRun: the expected version
	Status  types.RunStatus // PutRun, CASRun: the status stored
}

// RunOutput is the output of a run register operation (or Unknown).
type RunOutput struct {
	Found   bool            // GetRun: the run exists
	Version int             // GetRun
	Status  types.RunStatus // GetRun
	Swapped bool            // CASRun
}

// runState is the register of one run ID.
type runState struct {
	found   bool
	version int
	status  types.RunStatus
}

// RunModel is the sequential specification of the run register, per RunID:
// PutRunState overwrites the run with the version given; GetRunState returns the
// version and status, or missing; CompareAndSwapRunState swaps (and stores version
// expectedVersion+1) exactly when the run exists with Version == expectedVersion.
func RunModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(func(in any) string { return in.(RunInput).RunID }),
		Init:      func() any { return runState{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(runState), in.(RunInput)
			unknown := isUnknown(out)
			switch i.Op {
			case PutRun:
				return true, runState{found: true, version: i.Version, status: i.Status}
			case GetRun:
				if unknown {
					return true, s
				}
				o := out.(RunOutput)
				return o.Found == s.found && (!s.found || o.Version == s.version && o.Status == s.status), s
			default: // CASRun
				swap := s.found && s.version == i.Version
				if !unknown && out.(RunOutput).Swapped != swap {
					return false, s
				}
				if swap {
					return true, runState{found: true, version: i.Version + 1, status: i.Status}
				}
				return true, s
			}
		},
		DescribeOperation: func(in, out any) string {
			i := in.(RunInput)
			var call string
			switch i.Op {
			case PutRun:
				call = fmt.Sprintf("put(%s, v%d, %s)", i.RunID, i.Version, i.Status)
			case GetRun:
				call = fmt.Sprintf("get(%s)", i.RunID)
			default:
				call = fmt.Sprintf("cas(%s, v%d→%s)", i.RunID, i.Version, i.Status)
			}
			if isUnknown(out) {
				return call + " → " + fmt.Sprint(out)
			}
			o := out.(RunOutput)
			switch {
			case i.Op == PutRun:
				return call
			case i.Op == CASRun:
				return fmt.Sprintf("%s → %t", call, o.Swapped)
			case !o.Found:
				return call + " → missing"
			default:
				return fmt.Sprintf("%s → v%d %s", call, o.Version, o.Status)
			}
		},
		DescribeState: func(st any) string {
			s := st.(runState)
			if !s.found {
				return "missing"
			}
			return fmt.Sprintf("v%d %s", s.version, s.status)
		},
	}
}

// ---- locks and leases ----

// LockOp is an operation on a lock or a lease.
type LockOp int

// Lock and lease operations.
const (
	AcquireLock LockOp = iota
	ReleaseLock
	AcquireLease
	RenewLease
	ReleaseLease
)

var lockOpNames = [...]string{"acquireLock", "releaseLock", "acquireLease", "renewLease", "releaseLease"}

// LockInput is the input of a lock or lease operation.
type LockInput struct {
	Op    LockOp
	Key   string
	Owner string // AcquireLock, ReleaseLock: the owner identity of the instance
	Token string // RenewLease, ReleaseLease: the lease's token
}

// LockOutput is the output of a lock or lease operation (or Unknown). OK is false
// for the documented refusals: AcquireLock (false, nil), ErrLockHeld,
// ErrLockNotHeld.
type LockOutput struct {
	OK    bool
	Token string // AcquireLease, RenewLease: the lease returned
	Fence int64  // AcquireLease, RenewLease: the lease's fence
}

// lockState is one key: its holder ("" when free, "lock:"+owner or
// "lease:"+token) and the fence of the latest lease known (a lower bound when a
// lease with an unknown outcome drew one).
type lockState struct {
	holder string
	fence  int64
}

// unknownLease holds a key taken by an AcquireLease whose outcome is unknown: its
// token is nobody's (no "lease:"+token equals it), so only expiry could free it.
const unknownLease = "lease?"

// LockModel is the sequential specification of locks and leases, per key, with no
// clock (workloads use TTLs that outlast them). A key has at most one holder.
// AcquireLock succeeds only on a free key (not re-entrant); ReleaseLock only for
// the owner holding it. AcquireLease succeeds only on a free key, with a fence
// greater than every fence before it; RenewLease succeeds only for the current
// lease and keeps its token and fence; ReleaseLease frees only the current lease.
func LockModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(func(in any) string { return in.(LockInput).Key }),
		Init:      func() any { return lockState{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(lockState), in.(LockInput)
			var o LockOutput
			unknown := isUnknown(out)
			if !unknown {
				o = out.(LockOutput)
			}
			lease := "lease:" + i.Token
			switch i.Op {
			case AcquireLock:
				if unknown {
					if s.holder == "" {
						s.holder = "lock:" + i.Owner
					}
					return true, s
				}
				if o.OK != (s.holder == "") {
					return false, s
				}
				if o.OK {
					s.holder = "lock:" + i.Owner
				}
				return true, s
			case ReleaseLock:
				held := s.holder == "lock:"+i.Owner
				if !unknown && o.OK != held {
					return false, s
				}
				if held {
					s.holder = ""
				}
				return true, s
			case AcquireLease:
				if unknown {
					if s.holder == "" {
						s.holder = unknownLease
					}
					return true, s
				}
				if o.OK != (s.holder == "") || o.OK && (o.Fence <= s.fence || o.Token == "") {
					return false, s
				}
				if o.OK {
					s = lockState{holder: "lease:" + o.Token, fence: o.Fence}
				}
				return true, s
			case RenewLease:
				held := s.holder == lease
				if unknown {
					return true, s
				}
				return o.OK == held && (!o.OK || o.Token == i.Token && o.Fence == s.fence), s
			default: // ReleaseLease
				held := s.holder == lease
				if !unknown && o.OK != held {
					return false, s
				}
				if held {
					s.holder = ""
				}
				return true, s
			}
		},
		DescribeOperation: func(in, out any) string {
			i := in.(LockInput)
			who := i.Owner
			if i.Op >= RenewLease {
				who = i.Token
			}
			call := fmt.Sprintf("%s(%s, %s)", lockOpNames[i.Op], i.Key, who)
			if i.Op == AcquireLease {
				call = fmt.Sprintf("%s(%s)", lockOpNames[i.Op], i.Key)
			}
			if isUnknown(out) {
				return call + " → " + fmt.Sprint(out)
			}
			o := out.(LockOutput)
			if o.OK && (i.Op == AcquireLease || i.Op == RenewLease) {
				return fmt.Sprintf("%s → %s fence %d", call, o.Token, o.Fence)
			}
			return fmt.Sprintf("%s → %t", call, o.OK)
		},
		DescribeState: func(st any) string {
			s := st.(lockState)
			h := s.holder
			if h == "" {
				h = "free"
			}
			return fmt.Sprintf("%s, fence %d", h, s.fence)
		},
	}
}

// ---- counter under redelivery ----

// CounterOp is an operation on an Int64 sum.
type CounterOp int

// Counter operations.
const (
	MergeOnce CounterOp = iota // MergeUpdateOnce(eventID, key, delta)
	GetSum                     // Get
)

// MaxEvents is the most event IDs per key that CounterModel tracks.
const MaxEvents = 64

// CounterInput is the input of a counter operation.
type CounterInput struct {
	Op    CounterOp
	Key   string
	Event int   // MergeOnce: the event, 0..MaxEvents-1 (its ID is EventID(Event))
	Delta int64 // MergeOnce: the delta; every delivery of one event carries the same
}

// CounterOutput is the output of a counter operation (or Unknown).
type CounterOutput struct {
	Applied bool  // MergeOnce
	Sum     int64 // GetSum (0 when missing)
}

// EventID is the event ID of event n.
func EventID(n int) string { return fmt.Sprintf("ev-%d", n) }

// counterState is one key: its sum and the set of events applied to it.
type counterState struct {
	sum     int64
	applied uint64
}

// CounterModel is the sequential specification of an Int64 sum per key under
// MergeUpdateOnce: the first delivery of an event to a key applies its delta and
// reports applied; every later one reports not applied and changes nothing; Get
// returns the sum of the applied deltas (0 when none).
func CounterModel() porcupine.Model {
	return porcupine.Model{
		Partition: partitionBy(func(in any) string { return in.(CounterInput).Key }),
		Init:      func() any { return counterState{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(counterState), in.(CounterInput)
			unknown := isUnknown(out)
			if i.Op == GetSum {
				return unknown || out.(CounterOutput).Sum == s.sum, s
			}
			bit := uint64(1) << i.Event
			fresh := s.applied&bit == 0
			if !unknown && out.(CounterOutput).Applied != fresh {
				return false, s
			}
			if fresh {
				s = counterState{sum: s.sum + i.Delta, applied: s.applied | bit}
			}
			return true, s
		},
		DescribeOperation: func(in, out any) string {
			i := in.(CounterInput)
			if i.Op == GetSum {
				if isUnknown(out) {
					return fmt.Sprintf("get(%s) → %v", i.Key, out)
				}
				return fmt.Sprintf("get(%s) → %d", i.Key, out.(CounterOutput).Sum)
			}
			call := fmt.Sprintf("once(%s, %s, %+d)", EventID(i.Event), i.Key, i.Delta)
			if isUnknown(out) {
				return fmt.Sprintf("%s → %v", call, out)
			}
			return fmt.Sprintf("%s → %t", call, out.(CounterOutput).Applied)
		},
		DescribeState: func(st any) string {
			s := st.(counterState)
			var evs []string
			for a := s.applied; a != 0; a &= a - 1 {
				evs = append(evs, fmt.Sprint(bits.TrailingZeros64(a)))
			}
			return fmt.Sprintf("sum %d, applied {%s}", s.sum, strings.Join(evs, ","))
		},
	}
}

// ---- list membership ----

// MaxListIDs is the most run IDs that ListModel tracks.
const MaxListIDs = 256

// IDSet is a set of run ID indexes 0..MaxListIDs-1. It is comparable.
type IDSet [MaxListIDs / 64]uint64

// Add returns s with n added.
func (s IDSet) Add(n int) IDSet { s[n/64] |= 1 << (n % 64); return s }

// Has reports whether n is in s.
func (s IDSet) Has(n int) bool { return s[n/64]&(1<<(n%64)) != 0 }

// Union returns s ∪ t.
func (s IDSet) Union(t IDSet) IDSet {
	for i := range s {
		s[i] |= t[i]
	}
	return s
}

// SubsetOf reports whether s ⊆ t.
func (s IDSet) SubsetOf(t IDSet) bool {
	for i := range s {
		if s[i]&^t[i] != 0 {
			return false
		}
	}
	return true
}

func (s IDSet) String() string {
	var ns []string
	for n := range MaxListIDs {
		if s.Has(n) {
			ns = append(ns, fmt.Sprint(n))
		}
	}
	return "{" + strings.Join(ns, ",") + "}"
}

// ListOp is an operation of the list workload.
type ListOp int

// List operations.
const (
	CreateRun ListOp = iota // PutRunState of a new run ID
	ListRuns                // ListRuns with a limit above the number of runs
)

// ListInput is the input of a list operation.
type ListInput struct {
	Op ListOp
	ID int // CreateRun: the run ID's index
	// Called (ListRuns) is the set of IDs whose create had been called when the
	// list returned: what it may contain. The List workload fills it in from the
	// history.
	Called IDSet
}

// ListOutput is the output of a list operation (or Unknown).
type ListOutput struct {
	IDs IDSet // ListRuns: the IDs listed
	// Bad (ListRuns) describes a list that is wrong in itself: a duplicate, a run
	// ID the workload never created, or an order other than newest first.
	Bad string
}

// ListModel is the sequential specification of list membership after creates.
// Its state is the set of IDs that every list must contain from now on: a create
// adds its ID, and a list adds what it listed (an item never disappears). A list
// must contain that set, only IDs whose create had been called when it returned
// (no phantoms), and must be well formed (ListOutput.Bad empty). Lists need not be
// snapshots: a create concurrent with a list may or may not appear in it.
func ListModel() porcupine.Model {
	return porcupine.Model{
		Init: func() any { return IDSet{} },
		Step: func(st, in, out any) (bool, any) {
			s, i := st.(IDSet), in.(ListInput)
			if i.Op == CreateRun {
				return true, s.Add(i.ID)
			}
			if isUnknown(out) {
				return true, s
			}
			o := out.(ListOutput)
			if o.Bad != "" || !s.SubsetOf(o.IDs) || !o.IDs.SubsetOf(i.Called) {
				return false, s
			}
			return true, s.Union(o.IDs)
		},
		DescribeOperation: func(in, out any) string {
			i := in.(ListInput)
			if i.Op == CreateRun {
				s := fmt.Sprintf("create(%d)", i.ID)
				if isUnknown(out) {
					s += fmt.Sprintf(" → %v", out)
				}
				return s
			}
			if isUnknown(out) {
				return fmt.Sprintf("list → %v", out)
			}
			o := out.(ListOutput)
			if o.Bad != "" {
				return fmt.Sprintf("list → %v BAD: %s", o.IDs, o.Bad)
			}
			return fmt.Sprintf("list → %v", o.IDs)
		},
		DescribeState: func(st any) string { return "must list " + st.(IDSet).String() },
	}
}
