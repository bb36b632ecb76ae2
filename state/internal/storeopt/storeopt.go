// Package storeopt is the option machinery the state backends share: which
// constructors an option applies to, the settings every backend has (the CAS retry
// policy, the MergeUpdateOnce claim TTL, the Deduper claim TTL) with their defaults
// and checks. Each backend's options embed Common and document themselves.
package storeopt

import (
	"fmt"
	"time"

	"github.com/pipestate/pipestate/state"
)

// Target is a set of constructors an option applies to.
type Target uint8

// Targets.
const (
	Numeric Target = 1 << iota // Int64SumStore, Float64SumStore, Int64MaxStore
	Bytes                      // BytesStore
	Deduper                    // Deduper

	Stores = Numeric | Bytes
	All    = Stores | Deduper
)

// Common holds the settings every backend has.
type Common struct {
	Ctor     string          // the constructor being configured, for error messages
	Target   Target          // the constructor's kind
	CAS      state.CASPolicy // retries of lost races
	DedupTTL time.Duration   // life of MergeUpdateOnce claims
	TTL      time.Duration   // life of Deduper claims
}

// NewCommon returns the defaults for constructor ctor of kind t.
func NewCommon(ctor string, t Target) Common {
	return Common{Ctor: ctor, Target: t, CAS: state.DefaultCASPolicy(), DedupTTL: state.DefaultDedupTTL, TTL: state.DefaultDedupTTL}
}

// Apply runs opts on c in order; a nil option is an error wrapping
// state.ErrInvalidArgument, and so is any error an option returns.
func Apply[C any, O ~func(*C) error](c *C, ctor string, opts []O) error {
	for _, o := range opts {
		if o == nil {
			return state.Invalidf("%s: nil option", ctor)
		}
		if err := o(c); err != nil {
			return err
		}
	}
	return nil
}

// Allow rejects option when it does not apply to the constructor being configured.
func (c *Common) Allow(option string, t Target) error {
	if c.Target&t == 0 {
		return state.Invalidf("%s: option %s does not apply", c.Ctor, option)
	}
	return nil
}

// SetMaxRetries is WithMaxRetries for the constructors in t: n >= 0.
func (c *Common) SetMaxRetries(t Target, n int) error {
	if err := c.Allow("WithMaxRetries", t); err != nil {
		return err
	}
	if n < 0 {
		return state.Invalidf("%s: max retries %d is negative", c.Ctor, n)
	}
	c.CAS.MaxRetries = n
	return nil
}

// SetBackoff is WithBackoff for the constructors in t: 0 < base <= max.
func (c *Common) SetBackoff(t Target, base, max time.Duration) error {
	if err := c.Allow("WithBackoff", t); err != nil {
		return err
	}
	if base <= 0 || max < base {
		return state.Invalidf("%s: backoff base %v and max %v must be positive with base <= max", c.Ctor, base, max)
	}
	c.CAS.Base, c.CAS.Max = base, max
	return nil
}

// SetDedupTTL is WithDedupTTL (stores only): 0 <= d <= state.MaxTTL, 0 = forever.
func (c *Common) SetDedupTTL(d time.Duration) error {
	if err := c.Allow("WithDedupTTL", Stores); err != nil {
		return err
	}
	if err := state.CheckTTL(d); err != nil {
		return fmt.Errorf("%s: dedup %w", c.Ctor, err)
	}
	c.DedupTTL = d
	return nil
}

// SetTTL is WithTTL (Deduper only): 0 <= d <= state.MaxTTL, 0 = forever.
func (c *Common) SetTTL(d time.Duration) error {
	if err := c.Allow("WithTTL", Deduper); err != nil {
		return err
	}
	if err := state.CheckTTL(d); err != nil {
		return fmt.Errorf("%s: %w", c.Ctor, err)
	}
	c.TTL = d
	return nil
}
