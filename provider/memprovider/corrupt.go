package memprovider

import (
	"fmt"

	"github.com/pipestate/pipestate/internal/corrupthook"
	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/types"
)

func init() {
	corrupthook.Corrupt = func(p any, kind provider.RecordKind, raw []byte, id ...string) error {
		mp, ok := p.(*Provider)
		if !ok {
			return fmt.Errorf("memory: corrupt: %T is not a *memory.Provider", p)
		}
		return mp.corrupt(kind, raw, id)
	}
}

// corrupt gives a record the stored form raw (see corrupthook.Corrupt): an
// upserted record (pipeline, trait, run, run log, rerun, replay, marker,
// readiness) must exist and keeps its place in lists; a record of a log (event,
// late arrival, marker write) is appended; a lock key gets raw as its holder.
func (p *Provider) corrupt(kind provider.RecordKind, raw []byte, id []string) error {
	need := map[provider.RecordKind]int{
		provider.KindPipeline: 1, provider.KindTrait: 2, provider.KindRunState: 1, provider.KindEvent: 1,
		provider.KindRunLog: 3, provider.KindRerun: 1, provider.KindReplay: 3, provider.KindLateArrival: 3,
		provider.KindCascadeMarker: 3, provider.KindMarkerWrite: 0, provider.KindReadiness: 1, provider.KindLock: 1,
	}
	n, ok := need[kind]
	if !ok || len(id) != n {
		return fmt.Errorf("memory: corrupt: kind %q with %d IDs", kind, len(id))
	}
	raw = append([]byte(nil), raw...)
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.raw == nil {
		s.raw = map[rawKey][]byte{}
	}
	replace := func(exists bool, k rawKey) error {
		if !exists {
			return fmt.Errorf("memory: corrupt: no %s %v to corrupt", kind, id)
		}
		s.raw[k] = raw
		return nil
	}
	now := p.now()
	switch kind {
	case provider.KindPipeline:
		_, ok := s.pipelines[id[0]]
		return replace(ok, pipelines.ref(id[0]))
	case provider.KindTrait:
		_, ok := s.traits[id[0]][id[1]]
		return replace(ok, traitRef(id[0], id[1]))
	case provider.KindRunState:
		_, ok := s.runs[id[0]]
		return replace(ok, runs.ref(id[0]))
	case provider.KindRunLog, provider.KindReplay, provider.KindCascadeMarker:
		k := slot{id[0], id[1], types.ScheduleOrDefault(id[2])}
		var ok bool
		switch kind {
		case provider.KindRunLog:
			_, ok = s.runLogs[k]
		case provider.KindReplay:
			_, ok = s.replays[k]
		default:
			_, ok = s.markers[k]
		}
		return replace(ok, rawKey{kind: kind, a: k.pipeline, b: k.date, c: k.schedule})
	case provider.KindRerun:
		_, ok := s.reruns[id[0]]
		return replace(ok, reruns.ref(id[0]))
	case provider.KindReadiness:
		_, ok := s.readiness[id[0]]
		return replace(ok, readinessRef(id[0]))
	case provider.KindEvent:
		log := s.events[id[0]]
		if log == nil {
			log = &eventLog{}
			s.events[id[0]] = log
		}
		log.seq++
		log.records = append(log.records, record{seq: log.seq, raw: raw, expires: provider.Expiry(now, p.retention.Events)})
		s.wake()
	case provider.KindLateArrival:
		k := slot{id[0], id[1], types.ScheduleOrDefault(id[2])}
		s.lateArrivals[k] = append(s.lateArrivals[k], lateArrival{raw: raw})
	case provider.KindMarkerWrite:
		s.markerLog = append(s.markerLog, markerWrite{raw: raw, expires: provider.Expiry(now, p.retention.MarkerLog)})
		s.wake()
	case provider.KindLock:
		l := s.locks[id[0]]
		l.holder = string(raw)
		s.locks[id[0]] = l
	}
	return nil
}
