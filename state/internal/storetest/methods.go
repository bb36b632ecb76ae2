package storetest

import (
	"reflect"
	"slices"
	"testing"
)

// readers are the methods that write nothing; every other exported method of a store
// or deduper is a write method.
var readers = []string{"Get", "GetMany", "GetRevisions", "Close"}

// WriteMethods returns "Type.Method" for every exported write method of the types of
// values (pointers to stores and dedupers), sorted.
func WriteMethods(values ...any) []string {
	var ms []string
	for _, v := range values {
		t := reflect.TypeOf(v)
		for i := range t.NumMethod() {
			if m := t.Method(i).Name; !slices.Contains(readers, m) {
				ms = append(ms, t.Elem().Name()+"."+m)
			}
		}
	}
	slices.Sort(ms)
	return ms
}

// CoverWriteMethods fails t unless rows (a table's "Type.Method" row names) lists
// every write method of values, and nothing else: a new write method without a row
// fails the table.
func CoverWriteMethods(t *testing.T, rows []string, values ...any) {
	t.Helper()
	want := WriteMethods(values...)
	for _, m := range want {
		if !slices.Contains(rows, m) {
			t.Errorf("write method %s has no row", m)
		}
	}
	for _, r := range rows {
		if !slices.Contains(want, r) {
			t.Errorf("row %s names no write method", r)
		}
	}
}
