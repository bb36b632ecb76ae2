package redisprovider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/pipestate/pipestate/fence"
	"github.com/pipestate/pipestate/internal/ids"
	"github.com/pipestate/pipestate/internal/redisx"
	"github.com/pipestate/pipestate/internal/signal"
	"github.com/pipestate/pipestate/provider"
)

// This file holds the one mechanism behind every list whose records live in another
// hash slot than the list: pipelines (global list), runs (per-pipeline list),
// reruns (per-pipeline and global lists) and replays (global list).
//
// A record's truth is a hash with fields s (a sequence bumped by every write), m (the
// member the record wants in its lists, "" once deleted), p (its pipeline) and j (its
// JSON). A list is an index: a sorted set of members (score 0, so ordered by bytes)
// plus a hash id -> "<seq>|<member>". Writes go in this order:
//
//  1. a provisional entry is added to each list the record will be in; where the
//     ID already has an entry, nothing is added and the entry is stamped instead
//     (the write relies on it);
//  2. the truth is written by one script, which returns the new sequence;
//  3. each list entry is set to (sequence, member), clearing the write's own stamp,
//     or removed (member ""), and this only if the list has not already seen a
//     later sequence and, for a removal, the entry bears no stamp younger than
//     provisionalGrace: a removal's sequence can predate the truth of a write that
//     relied on the entry, and removing it then would leave that truth unlisted
//     should the write's step 3 fail.
//
// Readers show a list entry only if it is settled (not provisional) and the truth
// exists and wants exactly that member in that list, so a crash between the steps
// never makes anything wrong visible, and a listing is a snapshot of the settled
// entries when it read the index. Readers also repair what they skip, with the
// sequence read from the truth (settling the provisional entry of a truth that
// exists), so the sequence guard makes repairs and late writers commute: the list
// converges to the latest truth whatever the interleaving. A provisional entry
// whose truth is missing is dropped only once older than provisionalGrace.

// record is one truth hash as read by fetchRecords.
type record struct {
	exists   bool   // the hash exists (has a sequence)
	bad      error  // why the hash does not decode (its sequence), or nil
	seq      int64  // s
	member   string // m
	pipeline string // p
	json     string // j
	hasJSON  bool
	created  string // c (runs only)
	exp      int64  // x: its expiry in Unix µs, 0: never (fetchRecords reports an expired record as missing)
}

// call is one script invocation of a batch.
type call struct {
	s    script
	keys []string
	args []any
}

// runBatch runs calls in one pipeline (one round trip per node), then the calls
// whose script the server did not have with EVAL in a second (redisx.RunMany).
// The calls must not depend on each other's order: on a cluster they run on
// several nodes at once.
func (p *Provider) runBatch(ctx context.Context, op string, calls []call) ([]*goredis.Cmd, error) {
	cmds := make([]*goredis.Cmd, len(calls))
	if len(calls) == 1 || p.life.ReadOnly() { // run refuses the write scripts of a read-only provider
		for i, c := range calls {
			cmds[i] = p.run(ctx, c.s, c.keys, c.args...)
			if err := cmds[i].Err(); err != nil {
				return cmds, p.wrap(op, err)
			}
		}
		return cmds, nil
	}
	rc := make([]redisx.Call, len(calls))
	for i, c := range calls {
		rc[i] = redisx.Call{Script: c.s, Keys: c.keys, Args: c.args}
	}
	cmds = p.scripts.RunMany(ctx, rc)
	for i := range cmds {
		if err := cmds[i].Err(); err != nil {
			return cmds, p.wrap(op, err)
		}
	}
	return cmds, nil
}

// idxCall is an idx_apply call on list ix in mode "p" or "d"; member is the
// observed entry in mode "d", and n is the writer's clock in ms (mode "p") or the
// stamp before which a stamped entry may be dropped (mode "d").
func idxCall(ix index, mode, id, member string, n int64) call {
	return call{scriptIdxApply, ix.keys(), []any{mode, id, member, n}}
}

// setCall is an idx_apply call in mode "s": it sets id's entry in ix to (seq,
// member), with the record's expiry exp (Unix µs, 0: never) in the expiry
// index, or removes it when member is "". For a set, stamp is the caller's own
// step 1 stamp (0: none), which the set clears; for a removal, it is the stamp
// bound (now - provisionalGrace): an entry a writer's step 1 stamped at or after
// it stays, as that writer may be about to write a truth that wants it.
func setCall(ix index, id, member string, seq, stamp, exp int64) call {
	return call{scriptIdxApply, ix.keys(), []any{"s", id, member, seq, stamp, exp}}
}

// provisionalGrace is how long a provisional list entry whose truth is missing is
// kept from readers' repairs: its writer may still be between steps 1 and 2 (see
// "Cross-slot writes" in the package doc); likewise, how long a stamped entry is
// kept from removals. go-redis's timeouts and retries bound
// that time far below it.
const provisionalGrace = 5 * time.Minute

// stampBound is the stamp before which no writer still relies on a stamped list
// entry: now - provisionalGrace by p's clock, in ms.
func (p *Provider) stampBound() int64 { return p.now().Add(-provisionalGrace).UnixMilli() }

// undoAny is the mode "d" stamp bound of a writer undoing its own provisional
// entry, whatever its age.
const undoAny = math.MaxInt64

// indexedRecord is what putIndexed writes: a record's truth and its list entries.
type indexedRecord struct {
	key      string  // the truth hash
	id       string  // the record's ID in its lists
	member   string  // the member it wants in each of lists (truth field m)
	data     []byte  // its JSON (truth field j)
	pipeline string  // its pipeline (truth field p)
	lists    []index // the lists it is in
	// mode is what the truth step does with a stored record (see putMode).
	mode putMode
	// leave, when not nil, returns the list a record moved away from oldPipeline
	// leaves.
	leave func(oldPipeline string) index
	// members, when it has a list of lists, is the member the record wants in
	// that list instead of member (a run's RunID in the active-runs index).
	members map[index]string
	// drop are lists the record leaves with the write (a finished run leaves the
	// active-runs index): their entries are removed after the truth is written.
	drop []index
	// fields are more truth fields stored beside the JSON (a run's v and c).
	fields map[string]string
	// life is the retention the write gives the record (see lifetimeOf).
	life lifetime
	// truth, when not nil, is the truth key of a record of the lists by its ID:
	// the write then prunes each list of expired records (expiredCall, prune).
	truth func(id string) string
	// fences, when not "", is the record's fence memory: a write whose context
	// carries a fence is fenced, and every write keeps the memory as long as the
	// record (lua/fence.lua); kind names the record in a refusal.
	fences string
	kind   provider.RecordKind
}

// memberOf is the member r wants in its list ix.
func (r indexedRecord) memberOf(ix index) string {
	if m, ok := r.members[ix]; ok {
		return m
	}
	return r.member
}

// putMode is what the truth step of putIndexed does when the record is stored.
type putMode string

const (
	// putMove overwrites the record, moving it to the new pipeline.
	putMove putMode = "move"
	// putStrict overwrites the record, but refuses the write when the record is
	// stored under another pipeline.
	putStrict putMode = "strict"
	// putCreate refuses the write when the record is stored at all.
	putCreate putMode = "create"
)

// putIndexed writes r's truth and its entries in r.lists, in the order described
// above. It returns the previous pipeline and whether the write was accepted.
//
// A refused write undoes the provisional entries it added in step 1, but only
// when the stored record belongs to another pipeline: when it belongs to the same
// one, the entry is the stored record's (a concurrent writer of the same ID, in
// step 1 at the same time, added none of its own), and its writer's step 3 or a
// reader's repair settles it.
func (p *Provider) putIndexed(ctx context.Context, op string, r indexedRecord) (oldPipeline string, ok bool, err error) {
	calls := make([]call, len(r.lists))
	stamp := p.now().UnixMilli()
	for i, ix := range r.lists {
		calls[i] = idxCall(ix, "p", r.id, r.memberOf(ix), stamp)
	}
	added, err := p.runBatch(ctx, op, calls)
	if err != nil {
		return "", false, err
	}
	args := []any{r.member, r.data, r.pipeline, string(r.mode), callMemory.Milliseconds(), r.life.now, r.life.exp, r.life.ttl}
	for _, f := range slices.Sorted(maps.Keys(r.fields)) {
		args = append(args, f, r.fields[f])
	}
	keys := []string{r.key, p.k.call(r.key, ids.Random())}
	var (
		t      fence.Token
		fenced bool
		stale  error // the fence's refusal
	)
	keys, args, t, fenced = fenceArgs(ctx, r.fences, keys, args)
	res, err := p.run(ctx, scriptRecordPut, keys, args...).Slice()
	if err != nil {
		return "", false, p.wrap(op, err)
	}
	var (
		seq int64
		old string
	)
	if newest, ok := refusedFence(res); fenced && ok && len(res) == 3 {
		seq, stale = fenceRefusal, fenceError(op, t, r.kind, r.id, newest)
		old, _ = res[1].(string) // "" when the record is missing
	} else if seq, old, err = seqAndString(res); err != nil {
		return "", false, p.wrap(op, err)
	}
	calls = calls[:0]
	for i, ix := range r.lists {
		switch entry, _ := added[i].Text(); { // "" if step 1 added none
		case seq >= 0:
			calls = append(calls, setCall(ix, r.id, r.memberOf(ix), seq, stamp, r.life.exp))
		case entry != "" && old != r.pipeline && (stale == nil || old != ""):
			// refused: undo exactly the entry this call added (a fenced refusal of
			// a missing record keeps it, as a concurrent writer may rely on it;
			// readers drop it after provisionalGrace)
			calls = append(calls, idxCall(ix, "d", r.id, entry, undoAny))
		}
	}
	if seq >= 0 {
		for _, ix := range r.drop {
			calls = append(calls, setCall(ix, r.id, "", seq, p.stampBound(), 0))
		}
	}
	if seq >= 0 && r.leave != nil && old != "" && old != r.pipeline {
		calls = append(calls, setCall(r.leave(old), r.id, "", seq, p.stampBound(), 0))
	}
	pruned := seq >= 0 && r.truth != nil
	if pruned { // what expired in the lists, read with the last step
		for _, ix := range r.lists {
			calls = append(calls, expiredCall(ix, time.UnixMicro(r.life.now)))
		}
	}
	if len(calls) == 0 {
		return old, seq >= 0, stale
	}
	cmds, err := p.runBatch(ctx, op, calls)
	if stale != nil {
		return old, false, stale
	}
	if err != nil || !pruned {
		return old, seq >= 0, err
	}
	pages := make([][]string, len(r.lists))
	for i, c := range cmds[len(cmds)-len(r.lists):] {
		if pages[i], err = c.StringSlice(); err != nil {
			return old, true, p.wrap(op, err)
		}
	}
	return old, true, p.prune(ctx, op, r.lists, pages, r.truth)
}

// seqAndString reads a script's {int, string} reply.
func seqAndString(res []any) (int64, string, error) {
	if len(res) != 2 {
		return 0, "", fmt.Errorf("unexpected script reply %v", res)
	}
	n, ok1 := res[0].(int64)
	s, ok2 := res[1].(string)
	if !ok1 || !ok2 {
		return 0, "", fmt.Errorf("unexpected script reply %v", res)
	}
	return n, s, nil
}

// fetchRecords reads the truth hashes at keys in one pipeline (one round trip per
// node on a cluster).
func (p *Provider) fetchRecords(ctx context.Context, op string, keys []string) ([]record, error) {
	cmds := make([]*goredis.SliceCmd, len(keys))
	_, err := p.c.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = pipe.HMGet(ctx, k, "s", "m", "p", "j", "c", "x")
		}
		return nil
	})
	if err != nil {
		return nil, p.wrap(op, err)
	}
	out := make([]record, len(keys))
	now := p.now()
	for i, c := range cmds {
		v := c.Val()
		str := func(j int) (string, bool) { s, ok := v[j].(string); return s, ok }
		s, ok := str(0)
		if !ok {
			continue
		}
		seq, err := strconv.ParseInt(s, 10, 64)
		r := record{exists: true, seq: seq}
		if err != nil {
			r.bad = fmt.Errorf("sequence field s: %w", err)
		}
		r.member, _ = str(1)
		r.pipeline, _ = str(2)
		r.json, r.hasJSON = str(3)
		r.created, _ = str(4)
		if x, ok := str(5); ok {
			r.exp, _ = strconv.ParseInt(x, 10, 64) // not a number (by hand): never expires
		}
		if !alive(r.exp, now) {
			continue // expired: missing to every reader and writer
		}
		out[i] = r
	}
	return out, nil
}

// settled reports whether a list entry was set by a write's final step (or by a
// repair): "<seq>|<member>", or "<seq>#<ms>|<member>" when a write relied on it,
// rather than provisional: "<seq>@<ms>|<member>", or "0|<member>" from older
// versions.
func settled(entry string) bool {
	seq, _, ok := strings.Cut(entry, "|")
	return ok && seq != "0" && !strings.Contains(seq, "@")
}

// listSpec describes how to read one list of records of kind.
type listSpec struct {
	kind  provider.RecordKind
	ix    index
	desc  bool                   // highest member first
	timed bool                   // members are timeKey + ID (else the member is the ID)
	key   func(id string) string // the truth key of a record
	want  func(r record) string  // the member r wants in this list ("" = none)
	after string                 // the exclusive start member of an ascending list ("": the first)
}

// errFiltered is a listing's decode refusing a record its caller's filter does
// not keep: the record is neither listed nor counted nor repaired.
var errFiltered = errors.New("filtered out")

// start is the listing's first bound: after s.after, or the list's end.
func (s listSpec) start(dir string) string {
	switch {
	case s.after != "":
		return "(" + s.after
	case dir == "desc":
		return "+"
	}
	return "-"
}

// skip reports err, the *provider.CorruptError of the record id of a listing,
// unless reported already has id, and returns true; any other error returns
// false (the listing fails with it).
func (p *Provider) skip(ctx context.Context, err error, id string, reported *map[string]bool) bool {
	if !errors.Is(err, provider.ErrCorrupt) {
		return false
	}
	if (*reported)[id] {
		return true
	}
	if *reported == nil {
		*reported = map[string]bool{}
	}
	(*reported)[id] = true
	return provider.SkipCorrupt(ctx, p.sig, err)
}

// decodeRecord is a listing's decode of the record r of the list entry id,
// whose truth is at key, into *v: r's own corruption (a sequence that does not
// parse), or decode's.
func decodeRecord[T any](s listSpec, r record, id, key string, v *T, decode func(r record, id, key string, v *T) error) error {
	if r.bad != nil {
		return corrupt(s.kind, id, where(key, ""), r.bad)
	}
	return decode(r, id, key, v)
}

// pageSize bounds one read of a list index.
const pageSize = 256

// errRetry is never returned; it marks a listing that repaired entries out of order.
var errRetry = errors.New("retry")

// listIndexed returns up to limit (all when limit <= 0) visible records of a list,
// decoded by decode (its key, for a *provider.CorruptError), in list order,
// repairing the entries it skips (listReadOnly instead when p is read-only). See
// the comment at the top of the file. A listing that re-adds or settles entries
// (so that the order it read may be stale, or a record that existed is missing)
// is redone, at most twice.
//
// A record that does not decode (decode's *provider.CorruptError, or a truth
// whose sequence does not parse) is skipped and reported once per call, however
// often the listing is redone, and the next record takes its place within limit.
// Its entry is left as it is: the record is there, only unreadable.
//
// One call returns each record at most once, and every record that exists and
// keeps its member for the whole call is returned (within limit): pages follow each
// other by an exclusive bound on the member, so entries that move or vanish never
// shift the others, and a record met again under the member it moved to is skipped.
//
// Each repair is recorded (signal Repair, by list), and each re-read (signal Retry,
// reason signal.ReasonIndexRepair).
func listIndexed[T any](ctx context.Context, p *Provider, op string, s listSpec, limit int, decode func(r record, id, key string, v *T) error) ([]T, error) {
	var reported map[string]bool // the IDs of the corrupt records reported
	if p.life.ReadOnly() {
		return listReadOnly(ctx, p, op, s, limit, decode, &reported)
	}
	for attempt := 1; ; attempt++ {
		out, err := listOnce(ctx, p, op, s, limit, decode, &reported)
		if errors.Is(err, errRetry) {
			if attempt <= 2 {
				p.sig.Retry(ctx, op, signal.ReasonIndexRepair, attempt)
				continue
			}
			return out, nil
		}
		return out, err
	}
}

func listOnce[T any](ctx context.Context, p *Provider, op string, s listSpec, limit int, decode func(r record, id, key string, v *T) error,
	reported *map[string]bool) ([]T, error) {
	var out []T
	seen := map[string]bool{}
	readded := false
	dir, off := "asc", 0
	if s.desc {
		dir = "desc"
	}
	bound := s.start(dir)
	if s.timed {
		off = ids.TimeKeyLen
	}
	for {
		n := pageSize
		if limit > 0 {
			n = min(pageSize, max(limit-len(out), 1))
		}
		page, recs, err := p.readPage(ctx, op, s, dir, bound, n, off)
		if err != nil {
			return nil, err
		}
		if len(page) == 0 {
			break
		}
		count := len(page) / 3
		bound = "(" + page[len(page)-3]
		var fixes []call
		young := p.stampBound()
		for i, r := range recs {
			m, id, entry := page[3*i], page[3*i+1], page[3*i+2]
			if !r.exists {
				fixes = append(fixes, idxCall(s.ix, "d", id, entry, young))
				continue
			}
			if r.bad != nil { // no sequence to repair by: report it where it is listed, leave it
				if s.want(r) == m && settled(entry) && !seen[id] {
					p.skip(ctx, corrupt(s.kind, id, where(s.key(id), ""), r.bad), id, reported)
				}
				continue
			}
			w := s.want(r)
			if w == m && settled(entry) {
				if !seen[id] && (limit <= 0 || len(out) < limit) {
					var v T
					if err := decode(r, id, s.key(id), &v); err != nil {
						if errors.Is(err, errFiltered) {
							seen[id] = true
							continue
						}
						if !p.skip(ctx, err, id, reported) {
							return nil, err
						}
						continue
					}
					seen[id] = true
					out = append(out, v)
				}
				continue
			}
			bound := young // a removal keeps a young stamp's entry
			if w != "" {
				bound = 0 // a set keeps every stamp: the reader has none of its own
			}
			fixes = append(fixes, setCall(s.ix, id, w, r.seq, bound, r.exp))
			readded = readded || w != ""
		}
		if len(fixes) > 0 {
			cmds, err := p.runBatch(ctx, op, fixes)
			if err != nil {
				return nil, err
			}
			repaired := 0
			for _, c := range cmds {
				if n, _ := c.Int(); n == 1 {
					repaired++
				}
			}
			p.sig.Repair(ctx, s.ix.z, repaired)
		}
		if (limit > 0 && len(out) >= limit) || count < n {
			break
		}
	}
	if readded {
		return out, errRetry
	}
	return out, nil
}

// readPage reads one page of up to n entries of list s after bound (see
// lua/idx_page.lua: member, ID and entry, three values each) and the truth of
// each entry's record.
func (p *Provider) readPage(ctx context.Context, op string, s listSpec, dir, bound string, n, off int) ([]string, []record, error) {
	page, err := p.run(ctx, scriptIdxPage, []string{s.ix.z, s.ix.h}, dir, bound, n, off).StringSlice()
	if err != nil {
		return nil, nil, p.wrap(op, err)
	}
	if len(page)%3 != 0 {
		return nil, nil, p.wrap(op, fmt.Errorf("unexpected index page of %d values", len(page)))
	}
	keys := make([]string, len(page)/3)
	for i := range keys {
		keys[i] = s.key(page[3*i+1])
	}
	if len(keys) == 0 {
		return page, nil, nil
	}
	recs, err := p.fetchRecords(ctx, op, keys)
	if err != nil {
		return nil, nil, err
	}
	return page, recs, nil
}

// listReadOnly is listIndexed for a read-only provider: it pages through the
// list like listOnce and writes nothing. Instead of repairing an entry, it shows
// what the repair and the re-read would have shown: a record whose truth exists
// and wants the entry's member in this list is listed whether or not the entry is
// settled (the repair would settle it), and one whose truth wants another member
// is listed at that member (the repair would move its entry there), when the
// pages read reach that place; an entry whose truth is missing or wants no place
// in the list is skipped (the repair would drop it). So the listing is what a
// writer's would have been after its repairs, and leaves the entries to the next
// writer or writing reader that meets them. A record that does not decode takes
// no place in the listing (limit counts good records); it is reported, once,
// when it would have been listed within it.
func listReadOnly[T any](ctx context.Context, p *Provider, op string, s listSpec, limit int, decode func(r record, id, key string, v *T) error,
	reported *map[string]bool) ([]T, error) {
	type found struct {
		at  string // the member the record wants: its place in the list
		id  string
		v   T
		err error // why it does not decode
	}
	var (
		out        []found
		bad        []found
		dir, bound = "asc", "-"
		off        int
		last       string                                     // the last member read
		before     = func(a, b string) bool { return a <= b } // a is at or before b in list order
	)
	if s.desc {
		dir = "desc"
		before = func(a, b string) bool { return a >= b }
	}
	bound = s.start(dir)
	if s.timed {
		off = ids.TimeKeyLen
	}
	// placed counts the records found at or before the last member read: no later
	// page can put a record before them, except one whose entry a crashed move
	// left further down, which a writer's listing would not have met either.
	placed := func() int {
		n := 0
		for _, f := range out {
			if before(f.at, last) {
				n++
			}
		}
		return n
	}
	for {
		n := pageSize
		if limit > 0 {
			n = min(pageSize, max(limit-placed(), 1))
		}
		page, recs, err := p.readPage(ctx, op, s, dir, bound, n, off)
		if err != nil {
			return nil, err
		}
		count := len(page) / 3
		if count == 0 {
			break
		}
		last = page[len(page)-3]
		bound = "(" + last
		for i, r := range recs {
			if !r.exists {
				continue
			}
			if w := s.want(r); w != "" {
				f := found{at: w, id: page[3*i+1]}
				if f.err = decodeRecord(s, r, f.id, s.key(f.id), &f.v, decode); f.err != nil {
					if errors.Is(f.err, errFiltered) {
						continue
					}
					if !errors.Is(f.err, provider.ErrCorrupt) {
						return nil, f.err
					}
					bad = append(bad, f)
					continue
				}
				out = append(out, f)
			}
		}
		if (limit > 0 && placed() >= limit) || count < n {
			break
		}
	}
	slices.SortStableFunc(out, func(a, b found) int {
		switch {
		case a.at == b.at:
			return 0
		case before(a.at, b.at):
			return -1
		}
		return 1
	})
	recs := make([]T, 0, len(out))
	seen := map[string]bool{}
	cutoff := "" // the place of the last record listed, when the limit cut the listing
	for _, f := range out {
		if limit > 0 && len(recs) >= limit {
			break
		}
		if !seen[f.id] {
			seen[f.id] = true
			recs = append(recs, f.v)
			if limit > 0 && len(recs) == limit {
				cutoff = f.at
			}
		}
	}
	for _, f := range bad {
		if (cutoff == "" || before(f.at, cutoff)) && !seen[f.id] {
			p.skip(ctx, f.err, f.id, reported)
		}
	}
	return recs, nil
}
