package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strings"
)

// Flags are spelled --name in every help text and message, though the flag
// package, which parses them, also takes -name.

// printFlags prints fs's flags as flag.PrintDefaults does, each spelled --name.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if kind != "" {
			line += " " + kind
		}
		fmt.Fprintf(w, "%s\n    \t%s", line, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if !zeroDefault(f) {
			if kind == "string" {
				fmt.Fprintf(w, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(w, " (default %v)", f.DefValue)
			}
		}
		fmt.Fprintln(w)
	})
}

// zeroDefault reports whether f's default is its type's zero value, which the
// help does not show.
func zeroDefault(f *flag.Flag) bool {
	t := reflect.TypeOf(f.Value)
	var z reflect.Value
	if t.Kind() == reflect.Pointer {
		z = reflect.New(t.Elem())
	} else {
		z = reflect.Zero(t)
	}
	v, ok := z.Interface().(flag.Value)
	return ok && f.DefValue == v.String()
}

// flagNames is the name of every flag of fs.
func flagNames(fs *flag.FlagSet) []string {
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

// invalidValue is the flag package's message for a value its flag refuses.
var invalidValue = regexp.MustCompile(`^invalid (?:boolean )?value ("(?:[^"\\]|\\.)*") for (?:flag )?-([^:]+): (.*)$`)

// flagError is the usage error of the flag package's error err, with flags
// spelled --name and a suggestion for an unknown one.
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return usagef("unknown flag --%s%s", name, didYouMean(suggest(name, flagNames(fs)), func(s string) string { return "--" + s }))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return usagef("--%s needs a value", name)
	}
	if m := invalidValue.FindStringSubmatch(msg); m != nil {
		reason := m[3]
		if f := fs.Lookup(m[2]); f != nil && reason == "parse error" {
			switch kind, _ := flag.UnquoteUsage(f); kind {
			case "int":
				reason = "want a whole number"
			case "":
				reason = "want true or false"
			}
		}
		return usagef("invalid value %s for --%s: %s", m[1], m[2], reason)
	}
	if s, ok := strings.CutPrefix(msg, "bad flag syntax: "); ok {
		return usagef("bad flag syntax %q: spell a flag --name or --name=value", s)
	}
	return usagef("%v", err)
}
