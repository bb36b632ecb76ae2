package main

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/pipestate/pipestate/types"
)

// ErrInvalidFlow is wrapped by every error Load returns for a flow that cannot
// run: an ambiguous producer, a cycle, a duplicate or empty name.
var ErrInvalidFlow = errors.New("dataflow: invalid flow")

// Flow is a set of tasks. Its DAG is not written down: a task depends on the
// producer of each dataset it consumes.
type Flow struct {
	Pipeline string `yaml:"pipeline"` // the pipeline ID runs are stored under
	Tasks    []Task `yaml:"tasks"`

	byName     map[string]Task
	upstream   map[string][]string // task -> the tasks it waits for, sorted
	downstream map[string][]string // task -> the tasks waiting for it, sorted
	levels     [][]string          // level n: tasks whose longest upstream chain is n
}

// Task is one step of a flow.
type Task struct {
	Name     string   `yaml:"name"`
	Consumes []string `yaml:"consumes"`
	Produces []string `yaml:"produces"`
	// Retries is how many times a failed task is tried again (0: once in all).
	Retries int `yaml:"retries"`
	// RetryDelay is the backoff base: before retry n the task waits a random
	// time up to RetryDelay * 2^(n-1), capped at MaxRetryDelay (default RetryDelay*8).
	RetryDelay    time.Duration `yaml:"retry_delay"`
	MaxRetryDelay time.Duration `yaml:"max_retry_delay"`
	// Sim describes the simulated work (sim.go); a real flow would name a command.
	Sim Sim `yaml:"sim"`
}

// Load parses a flow from YAML, rejecting unknown fields, and infers its DAG.
// An ambiguous producer (two tasks produce one dataset) or a cycle is an error
// wrapping ErrInvalidFlow that names the tasks.
func Load(data []byte) (*Flow, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f Flow
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFlow, err)
	}
	if err := types.ValidateID("pipeline", f.Pipeline); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidFlow, err)
	}
	if len(f.Tasks) == 0 {
		return nil, fmt.Errorf("%w: no tasks", ErrInvalidFlow)
	}
	if err := f.infer(); err != nil {
		return nil, err
	}
	return &f, nil
}

// infer checks the tasks and builds the edges and levels.
func (f *Flow) infer() error {
	f.byName = map[string]Task{}
	producer := map[string]string{} // dataset -> task
	for _, t := range f.Tasks {
		switch {
		case t.Name == "":
			return fmt.Errorf("%w: a task has no name", ErrInvalidFlow)
		case f.byName[t.Name].Name != "":
			return fmt.Errorf("%w: two tasks are named %q", ErrInvalidFlow, t.Name)
		case t.Retries < 0 || t.RetryDelay < 0 || t.MaxRetryDelay < 0:
			return fmt.Errorf("%w: task %s: negative retries or retry delay", ErrInvalidFlow, t.Name)
		}
		f.byName[t.Name] = t
		for _, d := range t.Produces {
			if d == "" {
				return fmt.Errorf("%w: task %s produces an empty dataset name", ErrInvalidFlow, t.Name)
			}
			if other, ok := producer[d]; ok {
				return fmt.Errorf("%w: dataset %q has two producers: tasks %s and %s", ErrInvalidFlow, d, other, t.Name)
			}
			producer[d] = t.Name
		}
	}
	f.upstream, f.downstream = map[string][]string{}, map[string][]string{}
	for _, t := range f.Tasks {
		for _, d := range t.Consumes {
			p, ok := producer[d]
			if !ok || slices.Contains(f.upstream[t.Name], p) {
				continue // an external input, or a second dataset from the same task
			}
			f.upstream[t.Name] = append(f.upstream[t.Name], p)
			f.downstream[p] = append(f.downstream[p], t.Name)
		}
	}
	for _, m := range []map[string][]string{f.upstream, f.downstream} {
		for _, v := range m {
			slices.Sort(v)
		}
	}
	if cycle := f.findCycle(); cycle != nil {
		return fmt.Errorf("%w: cycle between tasks: %s", ErrInvalidFlow, strings.Join(cycle, " -> "))
	}
	// Without a cycle, the longest-path levels are well defined.
	level := map[string]int{}
	var depth func(string) int
	depth = func(name string) int {
		if l, ok := level[name]; ok {
			return l
		}
		l := 0
		for _, u := range f.upstream[name] {
			l = max(l, depth(u)+1)
		}
		level[name] = l
		return l
	}
	for _, name := range f.names() {
		l := depth(name)
		for len(f.levels) <= l {
			f.levels = append(f.levels, nil)
		}
		f.levels[l] = append(f.levels[l], name)
	}
	return nil
}

// findCycle returns the tasks of one cycle, first task repeated at the end
// ("a -> b -> a"), or nil. It is a depth-first search in name order, so the cycle
// it reports is always the same.
func (f *Flow) findCycle() []string {
	const (
		unseen = iota
		onPath
		done
	)
	color := map[string]int{}
	var path []string
	var visit func(string) []string
	visit = func(name string) []string {
		color[name] = onPath
		path = append(path, name)
		for _, next := range f.downstream[name] {
			switch color[next] {
			case onPath:
				i := slices.Index(path, next)
				return append(slices.Clone(path[i:]), next)
			case unseen:
				if c := visit(next); c != nil {
					return c
				}
			}
		}
		path = path[:len(path)-1]
		color[name] = done
		return nil
	}
	for _, name := range f.names() {
		if color[name] == unseen {
			if c := visit(name); c != nil {
				return c
			}
		}
	}
	return nil
}

// names returns the task names sorted.
func (f *Flow) names() []string {
	out := make([]string, 0, len(f.Tasks))
	for _, t := range f.Tasks {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// Upstream returns the tasks that produce what name consumes, sorted.
func (f *Flow) Upstream(name string) []string { return slices.Clone(f.upstream[name]) }

// Downstream returns the tasks that consume what name produces, sorted.
func (f *Flow) Downstream(name string) []string { return slices.Clone(f.downstream[name]) }

// Levels returns the tasks grouped by the length of their longest upstream chain:
// level 0 needs nothing, level n needs something from level n-1. Tasks of one level
// never depend on each other.
func (f *Flow) Levels() [][]string {
	out := make([][]string, len(f.levels))
	for i, l := range f.levels {
		out[i] = slices.Clone(l)
	}
	return out
}

// Descendants returns every task that depends, directly or not, on name, sorted.
func (f *Flow) Descendants(name string) []string {
	seen := map[string]bool{}
	var walk func(string)
	walk = func(n string) {
		for _, d := range f.downstream[n] {
			if !seen[d] {
				seen[d] = true
				walk(d)
			}
		}
	}
	walk(name)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
