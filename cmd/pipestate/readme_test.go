package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeBackend is how the README's transcripts connect and what their backend
// line says; a transcript with another connection (a black hole's) is not checked.
const (
	readmeConn    = " --redis localhost:6379"
	readmeBackend = "backend: redis localhost:6379, prefix pipestate"
)

// readmeToken is a lease token in a README transcript.
var readmeToken = regexp.MustCompile(`\b[0-9a-f]{32}\b`)

// TestReadmeTranscripts: every transcript of README's "When something is stuck"
// that connects with readmeConn is the golden file of the same command line, so
// the walkthrough shows what the command prints.
func TestReadmeTranscripts(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "\n## When something is stuck\n")
	section, _, _ = strings.Cut(section, "\n## ")
	goldens := map[string]string{} // command line -> what it prints
	paths, err := filepath.Glob("testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		cmd, rest, _ := strings.Cut(string(b), "\n")
		if exit, out, _ := strings.Cut(rest, "\n"); exit == "exit 0" && !strings.Contains(out, "--- stderr") {
			goldens[cmd] = out
		}
	}
	checked := 0
	for _, block := range regexp.MustCompile("(?s)```\n(.*?)```").FindAllStringSubmatch(section, -1) {
		for _, tr := range strings.Split("\n"+block[1], "\n$ ")[1:] {
			cmd, out, _ := strings.Cut(tr, "\n")
			if !strings.Contains(cmd, readmeConn) {
				continue
			}
			cmd = "$ " + readmeToken.ReplaceAllString(strings.Replace(cmd, readmeConn, "", 1), "{TOKEN}")
			out = strings.Replace(readmeToken.ReplaceAllString(strings.TrimRight(out, "\n")+"\n", "TOKEN"), readmeBackend, "backend: BACKEND", 1)
			want, ok := goldens[cmd]
			switch {
			case !ok:
				t.Errorf("README runs %q, which no golden file with exit 0 runs", cmd)
			case out != want:
				t.Errorf("README's transcript of %q differs from its golden file:\n--- README\n%s--- golden\n%s", cmd, out, want)
			}
			checked++
		}
	}
	if checked < 9 {
		t.Errorf("checked %d README transcripts, want the 9 of the walkthrough at least", checked)
	}
}
