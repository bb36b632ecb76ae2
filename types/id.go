package types

import (
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// MaxIDLen is the longest identifier, in bytes, that [ValidateID] accepts.
const MaxIDLen = 128

// MaxLockKeyLen is the longest lock or lease key, in bytes, that [ValidateLockKey] accepts.
const MaxLockKeyLen = 512

// DefaultScheduleID is the schedule of run logs, replays, late arrivals and cascade
// markers written with an empty schedule ID.
const DefaultScheduleID = "daily"

// ErrInvalid is wrapped by every validation error in this package.
var ErrInvalid = errors.New("types: invalid value")

// ValidateID reports whether id is a valid identifier; what names the field in the
// error ("pipeline ID", "run ID", ...). See the package doc for the rule.
func ValidateID(what, id string) error {
	if id == "" {
		return fmt.Errorf("%w: %s is empty", ErrInvalid, what)
	}
	if len(id) > MaxIDLen {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, what, len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if !idByte(id[i]) {
			return fmt.Errorf("%w: %s %q has character %q at %d (allowed: letters, digits, - _ . / + = @)",
				ErrInvalid, what, id, id[i], i)
		}
	}
	return nil
}

func idByte(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	switch c {
	case '-', '_', '.', '/', '+', '=', '@':
		return true
	}
	return false
}

// ValidateLockKey reports whether key is a valid lock or lease key: valid UTF-8 of 1 to
// MaxLockKeyLen bytes with no control characters.
func ValidateLockKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: lock key is empty", ErrInvalid)
	case len(key) > MaxLockKeyLen:
		return fmt.Errorf("%w: lock key is %d bytes, more than %d", ErrInvalid, len(key), MaxLockKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: lock key %q is not valid UTF-8", ErrInvalid, key)
	}
	for _, r := range key {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: lock key %q has a control character", ErrInvalid, key)
		}
	}
	return nil
}

// ScheduleOrDefault returns id, or DefaultScheduleID when id is empty.
func ScheduleOrDefault(id string) string {
	if id == "" {
		return DefaultScheduleID
	}
	return id
}

// validateOptionalID is ValidateID for fields that may be empty.
func validateOptionalID(what, id string) error {
	if id == "" {
		return nil
	}
	return ValidateID(what, id)
}

// validateSchedule checks a schedule ID that may be empty (meaning DefaultScheduleID).
func validateSchedule(id string) error { return validateOptionalID("schedule ID", id) }
