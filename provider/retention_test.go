package provider_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pipestate/pipestate/provider"
)

func TestRetentionCheck(t *testing.T) {
	for _, r := range []provider.Retention{provider.DefaultRetention(), provider.Forever(),
		{Runs: provider.MaxTTL, MarkerLog: time.Nanosecond}} {
		if err := r.Check(); err != nil {
			t.Errorf("%+v.Check() = %v, want nil", r, err)
		}
	}
	for field, r := range map[string]provider.Retention{
		"Runs":           {Runs: -time.Nanosecond},
		"LateArrivals":   {LateArrivals: provider.MaxTTL + 1},
		"CascadeMarkers": {Runs: time.Hour, CascadeMarkers: -time.Hour},
		"MarkerLog":      {MarkerLog: -1},
	} {
		err := r.Check()
		if !errors.Is(err, provider.ErrInvalidArgument) || !strings.Contains(err.Error(), field) {
			t.Errorf("%+v.Check() = %v, want ErrInvalidArgument naming %s", r, err, field)
		}
	}
	d := provider.DefaultRetention()
	if d.Runs != 30*24*time.Hour || d.Events != 30*24*time.Hour || d.MarkerLog != 24*time.Hour {
		t.Errorf("DefaultRetention() = %+v", d)
	}
}

func TestExpiryAndLive(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 1, time.UTC)
	if e := provider.Expiry(now, 0); !e.IsZero() {
		t.Errorf("Expiry(now, 0) = %v, want the zero time (never)", e)
	}
	exp := provider.Expiry(now, time.Hour)
	if !exp.Equal(now.Add(time.Hour)) {
		t.Errorf("Expiry(now, 1h) = %v", exp)
	}
	for _, c := range []struct {
		at   time.Time
		live bool
	}{{exp.Add(-time.Nanosecond), true}, {exp, false}, {exp.Add(time.Nanosecond), false}} {
		if got := provider.Live(exp, c.at); got != c.live {
			t.Errorf("Live(%v, %v) = %v, want %v (expired when now >= expiry)", exp, c.at, got, c.live)
		}
	}
	if !provider.Live(time.Time{}, now.Add(provider.MaxTTL)) {
		t.Error("Live(zero, ...) = false; the zero expiry never expires")
	}
}
