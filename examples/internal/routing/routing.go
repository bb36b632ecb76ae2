// Package routing is what the examples' stream-routers share: which work a
// cascade marker asks for, and the ID of the run that does it. The long-running
// router (examples/orchestrator, over WatchCascadeMarkers) and the Lambda one
// (examples/streamrouter, over the table's DynamoDB stream) route alike, so
// either may run, or both, and a date's run is created once.
package routing

import (
	"fmt"

	"github.com/pipestate/pipestate/types"
)

// Target is the work a cascade marker asks for: evaluating its pipeline (the
// upstream's downstream that the marker was written for) for its date and
// schedule.
type Target struct {
	PipelineID, Date, ScheduleID string
}

// TargetOf is the work m asks for.
func TargetOf(m types.CascadeMarker) Target {
	return Target{PipelineID: m.PipelineID, Date: m.Date, ScheduleID: types.ScheduleOrDefault(m.ScheduleID)}
}

// RunID is the ID of attempt (1, 2, ...) of t's run, derived from the target
// alone, so that every router and orchestrator names it alike and
// provider.RunCreator creates it once. (Joined with '-', which IDs may hold: a
// production system would join with a byte IDs cannot hold, such as '#'.)
func RunID(t Target, attempt int) string {
	return fmt.Sprintf("%s-%s-%s-%d", t.PipelineID, t.Date, t.ScheduleID, attempt)
}
