package main

import (
	"slices"
	"strings"
)

// suggest returns the names closest to word, for "did you mean": those at the
// least edit distance (insertions, deletions, substitutions and swaps of two
// neighbouring letters, case ignored), if it is at most 1 for a word of up to 5
// letters and 2 for a longer one, or those word begins (at least 3 letters),
// which count as 1. None when nothing is that close.
func suggest(word string, names []string) []string {
	w := strings.ToLower(word)
	limit := 1
	if len([]rune(w)) > 5 {
		limit = 2
	}
	best, out := limit+1, []string(nil)
	for _, n := range names {
		d := distance(w, strings.ToLower(n))
		if len(w) >= 3 && strings.HasPrefix(strings.ToLower(n), w) {
			d = min(d, 1)
		}
		switch {
		case d == 0 || d > best:
		case d < best:
			best, out = d, []string{n}
		case !slices.Contains(out, n):
			out = append(out, n)
		}
	}
	return out
}

// distance is the optimal string alignment distance between a and b, in runes:
// Levenshtein's, with a swap of two neighbours as one edit.
func distance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// didYouMean is " (did you mean X?)" for the suggestions, each shown by show,
// or "" for none.
func didYouMean(suggestions []string, show func(string) string) string {
	if len(suggestions) == 0 {
		return ""
	}
	return " (did you mean " + orList(suggestions, show) + "?)"
}

// orList is the suggestions, each shown by show, joined by " or ".
func orList(suggestions []string, show func(string) string) string {
	shown := make([]string, len(suggestions))
	for i, s := range suggestions {
		shown[i] = show(s)
	}
	return strings.Join(shown, " or ")
}
