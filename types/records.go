package types

import (
	"fmt"
	"time"
)

// RequestStatus is the state of a rerun or replay request.
type RequestStatus string

// Request statuses.
const (
	RequestPending   RequestStatus = "PENDING"
	RequestRunning   RequestStatus = "RUNNING"
	RequestCompleted RequestStatus = "COMPLETED"
	RequestFailed    RequestStatus = "FAILED"
	RequestCancelled RequestStatus = "CANCELLED"
)

// Valid reports whether s is a known status.
func (s RequestStatus) Valid() bool {
	switch s {
	case RequestPending, RequestRunning, RequestCompleted, RequestFailed, RequestCancelled:
		return true
	}
	return false
}

func validateRequestStatus(s RequestStatus) error {
	if !s.Valid() {
		return fmt.Errorf("%w: request status %q", ErrInvalid, s)
	}
	return nil
}

// RerunRecord is a request to run a pipeline again for an earlier date.
type RerunRecord struct {
	RerunID       string         `json:"rerunId"`
	PipelineID    string         `json:"pipelineId"`
	OriginalDate  string         `json:"originalDate"`
	OriginalRunID string         `json:"originalRunId,omitempty"`
	Reason        string         `json:"reason,omitempty"`
	Description   string         `json:"description,omitempty"`
	Status        RequestStatus  `json:"status"`
	RerunRunID    string         `json:"rerunRunId,omitempty"`
	RequestedAt   time.Time      `json:"requestedAt"`
	CompletedAt   *time.Time     `json:"completedAt,omitempty"`
	Metadata      map[string]any `json:"metadata,omitempty"`
}

// Validate checks the IDs, the original date and the status.
func (r RerunRecord) Validate() error {
	if err := ValidateID("rerun ID", r.RerunID); err != nil {
		return err
	}
	if err := ValidateID("pipeline ID", r.PipelineID); err != nil {
		return err
	}
	if err := ValidateID("original date", r.OriginalDate); err != nil {
		return err
	}
	if err := validateOptionalID("original run ID", r.OriginalRunID); err != nil {
		return err
	}
	if err := validateOptionalID("rerun run ID", r.RerunRunID); err != nil {
		return err
	}
	return validateRequestStatus(r.Status)
}

// ReplayRequest asks for a pipeline's date and schedule to be evaluated again.
type ReplayRequest struct {
	PipelineID  string        `json:"pipelineId"`
	Date        string        `json:"date"`
	ScheduleID  string        `json:"scheduleId"`
	Reason      string        `json:"reason,omitempty"`
	RequestedBy string        `json:"requestedBy,omitempty"`
	Status      RequestStatus `json:"status"`
	CreatedAt   time.Time     `json:"createdAt"`
}

// Validate checks the key fields and the status. An empty ScheduleID means
// DefaultScheduleID.
func (r ReplayRequest) Validate() error {
	if err := ValidateID("pipeline ID", r.PipelineID); err != nil {
		return err
	}
	if err := ValidateID("date", r.Date); err != nil {
		return err
	}
	if err := validateSchedule(r.ScheduleID); err != nil {
		return err
	}
	return validateRequestStatus(r.Status)
}

// LateArrival records data that arrived after a date's run had completed.
type LateArrival struct {
	PipelineID  string    `json:"pipelineId"`
	Date        string    `json:"date"`
	ScheduleID  string    `json:"scheduleId"`
	DetectedAt  time.Time `json:"detectedAt"`
	RecordDelta int64     `json:"recordDelta"`
	TraitType   string    `json:"traitType,omitempty"`
}

// Validate checks the key fields. An empty ScheduleID means DefaultScheduleID.
func (l LateArrival) Validate() error {
	if err := ValidateID("pipeline ID", l.PipelineID); err != nil {
		return err
	}
	if err := ValidateID("date", l.Date); err != nil {
		return err
	}
	if err := validateSchedule(l.ScheduleID); err != nil {
		return err
	}
	return validateOptionalID("trait type", l.TraitType)
}

// CascadeMarker tells a downstream pipeline that an upstream one (Source) finished
// its date and schedule, so it should evaluate next.
type CascadeMarker struct {
	PipelineID string    `json:"pipelineId"`
	ScheduleID string    `json:"scheduleId"`
	Date       string    `json:"date"`
	Source     string    `json:"source"`
	WrittenAt  time.Time `json:"writtenAt"`
}

// CascadeMarkerRecord is one write of a cascade marker as a
// provider.MarkerWatcher delivers it. Cursor is opaque and only meaningful to the
// backend that made it: watching from it resumes after this write.
type CascadeMarkerRecord struct {
	Cursor string        `json:"cursor"`
	Marker CascadeMarker `json:"marker"`
}

// Validate checks every field but WrittenAt. An empty ScheduleID means
// DefaultScheduleID; Source is the upstream pipeline's ID.
func (m CascadeMarker) Validate() error {
	if err := ValidateID("pipeline ID", m.PipelineID); err != nil {
		return err
	}
	if err := validateSchedule(m.ScheduleID); err != nil {
		return err
	}
	if err := ValidateID("date", m.Date); err != nil {
		return err
	}
	return ValidateID("cascade source", m.Source)
}

// Lease is a held lock with a fencing token. Fence strictly increases across
// successive leases of the same Key; Token identifies this holding.
type Lease struct {
	Key       string    `json:"key"`
	Token     string    `json:"token"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// Validate checks the key and that the token is set.
func (l Lease) Validate() error {
	if err := ValidateLockKey(l.Key); err != nil {
		return err
	}
	if l.Token == "" {
		return fmt.Errorf("%w: lease token is empty", ErrInvalid)
	}
	return nil
}

// LockInfo is what holds a lock key at one instant, as provider.LockInspector
// reports it: a lock (Owner set) or a lease (Token and Fence set).
type LockInfo struct {
	Key string `json:"key"`
	// Owner is the owner identity of the provider instance that holds the key as a
	// lock (provider.Locker); empty for a lease, which is held by its Token, not by
	// an instance: any instance given the Lease may renew or release it.
	Owner string `json:"owner,omitempty"`
	// Token and Fence are those of the lease that holds the key (provider.Leaser);
	// empty and 0 for a lock.
	Token string `json:"token,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	// ExpiresAt is when the holding expires; nil for a lock taken with ttl 0.
	ExpiresAt *time.Time `json:"expiresAt,omitempty"`
}

// IsLease reports whether a lease, rather than a lock, holds the key.
func (i LockInfo) IsLease() bool { return i.Token != "" }
