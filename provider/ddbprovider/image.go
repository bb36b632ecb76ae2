package ddbprovider

import (
	"strings"
	"time"

	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/pipestate/pipestate/provider"
	"github.com/pipestate/pipestate/provider/ddbprovider/internal/itemimage"
	"github.com/pipestate/pipestate/types"
)

// Item images for package ddbstream (see internal/itemimage): what kind of item
// a key is, by the key schema of the package doc, and its record decoded as the
// provider's reads decode it (unmarshal, decodeData, lockInfo's holder rule).

func init() { itemimage.Classify, itemimage.Decode = classifyImage, decodeImage }

// imageKind is the kind of the item (pk, sk), and the provider.RecordKind its
// errors name (for the kinds that have a Value).
func imageKind(pk, sk string) (itemimage.Kind, provider.RecordKind) {
	suffix := func(prefix string) bool { // pk is prefix and an ID
		rest, ok := strings.CutPrefix(pk, prefix)
		return ok && rest != ""
	}
	switch {
	case suffix(runPrefix) && sk == skState:
		return itemimage.Run, provider.KindRunState
	case suffix(rerunPrefix) && sk == skState:
		return itemimage.Rerun, provider.KindRerun
	case suffix(lockPrefix) && sk == skLock:
		return itemimage.Lock, provider.KindLock
	case suffix(markerPrefix):
		if strings.HasPrefix(sk, skMarkerByTime) {
			return itemimage.Other, "" // the by-time list copy
		}
		if date, schedule, ok := strings.Cut(sk, "#"); ok && date != "" && schedule != "" {
			return itemimage.Marker, provider.KindCascadeMarker
		}
	case pk == markerLogPK:
		if sk == skLogSeq || numberedKey(sk, skLogEntry) {
			return itemimage.Other, "" // the marker log: WatchCascadeMarkers's, not a second marker
		}
	case suffix(pipelinePrefix):
		switch {
		case numberedKey(sk, skEvent): // as readAfter reads the log
			return itemimage.Event, provider.KindEvent
		case strings.HasPrefix(sk, skReplay):
			return itemimage.Replay, provider.KindReplay
		case sk == skConfig, sk == skReadiness, sk == skEventSeq:
			return itemimage.Other, ""
		}
		for _, prefix := range [...]string{skTrait, skRun, skRunLog, skRerun, skLate, skLateGuard} {
			if strings.HasPrefix(sk, prefix) {
				return itemimage.Other, ""
			}
		}
	}
	return itemimage.Foreign, ""
}

// classifyImage is itemimage.Classify.
func classifyImage(table string, key map[string]ddbtypes.AttributeValue) (itemimage.Item, error) {
	out, _, err := classify(table, key)
	return out, err
}

// classify is the kind and name of the item (key) of table, and the
// provider.RecordKind its errors name (see imageKind).
func classify(table string, key map[string]ddbtypes.AttributeValue) (itemimage.Item, provider.RecordKind, error) {
	pk, err := attrString(key[attrPK])
	if err == nil {
		_, err = attrString(key[attrSK])
	}
	if err != nil { // the table's key schema has string keys PK and SK
		return itemimage.Item{}, "", provider.Invalidf("dynamodb: an image of table %s without string keys %s and %s", table, attrPK, attrSK)
	}
	sk, _ := attrString(key[attrSK])
	kind, rk := imageKind(pk, sk)
	return itemimage.Item{Kind: kind, Name: tableName(table).where(pk, sk)}, rk, nil
}

// decodeImage is itemimage.Decode.
func decodeImage(table string, av map[string]ddbtypes.AttributeValue) (itemimage.Item, error) {
	t := tableName(table)
	out, rk, err := classify(table, av)
	if err != nil || out.Kind == itemimage.Foreign || out.Kind == itemimage.Other {
		return out, err
	}
	kind := out.Kind
	it, err := unmarshal(av)
	if err != nil {
		return out, t.badItem(rk, av, err).bad
	}
	if it.Exp != 0 && kind != itemimage.Lock {
		out.Exp = time.Unix(0, it.Exp).UTC()
	}
	switch kind {
	case itemimage.Marker:
		out.Value, err = imageData[types.CascadeMarker](t, rk, it)
	case itemimage.Run:
		out.Value, err = imageData[types.RunState](t, rk, it)
	case itemimage.Rerun:
		out.Value, err = imageData[types.RerunRecord](t, rk, it)
	case itemimage.Replay:
		out.Value, err = imageData[types.ReplayRequest](t, rk, it)
	case itemimage.Event:
		var rec types.EventRecord
		if rec, err = eventRecord(t, it); err == nil {
			out.Value = &rec
		}
	case itemimage.Lock:
		out.Value, err = imageLock(t, it)
	}
	return out, err
}

// imageData decodes the data of it, a record of kind.
func imageData[T any](t tableName, kind provider.RecordKind, it item) (*T, error) {
	v := new(T)
	if err := decodeData(t, kind, it, v); err != nil {
		return nil, err
	}
	return v, nil
}

// imageLock is the holding a lock item shows, whether or not it has expired (the
// caller judges that by ExpiresAt); nil when no holder is stored.
func imageLock(t tableName, it item) (*types.LockInfo, error) {
	if it.Holder == "" {
		return nil, nil
	}
	var expires time.Time
	if it.Exp != 0 {
		expires = time.Unix(0, it.Exp).UTC()
	}
	info, err := provider.HolderInfo(recordID(provider.KindLock, it), it.Holder, it.Fence, expires)
	if err != nil {
		return nil, provider.CorruptAt(err, t.where(it.PK, it.SK))
	}
	return info, nil
}
