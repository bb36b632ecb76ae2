package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// click is one page view as the queue delivers it. ID is the producer's event ID:
// a redelivery carries the same ID (and the same fields) as the original.
type click struct {
	ID   string
	User string
	Page string
	At   time.Time // event time: when the page was viewed
}

// stream describes a generated click stream.
type stream struct {
	Seed      uint64
	Clicks    int           // distinct clicks
	Users     int           // distinct users; a click's user drifts from the first to the last over Span
	Pages     []string      // the first pages are the most viewed
	Start     time.Time     // event time of the first click, on a window boundary
	Span      time.Duration // clicks are spread evenly over [Start, Start+Span)
	Redeliver float64       // fraction of clicks the queue delivers a second time
	Lag       int           // a redelivery arrives up to Lag deliveries after its original
}

// demo is the stream the example counts: 5,000 clicks over two hours by 400 users
// on six pages, 20% of them redelivered.
var demo = stream{
	Seed:      42,
	Clicks:    5000,
	Users:     400,
	Pages:     []string{"/", "/products", "/search", "/cart", "/checkout", "/help"},
	Start:     time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC),
	Span:      2 * time.Hour,
	Redeliver: 0.2,
	Lag:       300,
}

// End returns the first instant after the stream.
func (s stream) End() time.Time { return s.Start.Add(s.Span) }

// deliveries returns the clicks in the order the queue delivers them: every click
// once in event-time order, plus a redelivery of round(Redeliver*Clicks) of them,
// each arriving 1..Lag deliveries after its original (so after later clicks: out of
// order). The same stream always gives the same deliveries.
func (s stream) deliveries() []click {
	r := rand.New(rand.NewPCG(s.Seed, s.Seed^0x9e3779b97f4a7c15))
	// Active users drift: a click at fraction f of the span is by one of the
	// 60% of users starting at f*40% of them, so each hour has its own mix.
	window := max(1, s.Users*6/10)
	type slot struct {
		c   click
		pos float64 // delivery position
	}
	out := make([]slot, 0, s.Clicks+int(float64(s.Clicks)*s.Redeliver+0.5))
	for i := range s.Clicks {
		f := float64(i) / float64(s.Clicks)
		c := click{
			ID:   fmt.Sprintf("click-%05d", i),
			User: fmt.Sprintf("user-%03d", int(f*float64(s.Users-window))+r.IntN(window)),
			Page: s.Pages[s.page(r)],
			At:   s.Start.Add(time.Duration(f * float64(s.Span))),
		}
		out = append(out, slot{c, float64(i)})
	}
	for _, i := range r.Perm(s.Clicks)[:cap(out)-s.Clicks] {
		// +0.5 puts the redelivery between two originals, never before its own.
		out = append(out, slot{out[i].c, float64(i+1+r.IntN(max(1, s.Lag))) - 0.5})
	}
	slices.SortStableFunc(out, func(a, b slot) int { return cmp.Compare(a.pos, b.pos) })
	cs := make([]click, len(out))
	for i, sl := range out {
		cs[i] = sl.c
	}
	return cs
}

// page picks a page index with weights n, n-1, ..., 1 for n pages, so the first
// pages are the busiest and the last still gets views.
func (s stream) page(r *rand.Rand) int {
	n := len(s.Pages)
	x := r.IntN(n * (n + 1) / 2)
	for i := range n {
		if x < n-i {
			return i
		}
		x -= n - i
	}
	return n - 1
}
