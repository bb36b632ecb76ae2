package statetest_test

// The flaws of issue 35's "Rules the suites do not test yet"; init adds them
// to broken.
func init() {
	for _, b := range []struct {
		name  string
		flaws flaws
		kind  string
		fails string
	}{
		// Rule: the fence check and the write are one atomic step.
		{"fence check then write", flaws{fenceCheckWrite: true}, sumToy, "fencing_race/MergeUpdate"},
		{"fence check then write (max)", flaws{fenceCheckWrite: true}, maxToy, "fencing_race/MergeUpdateOnce"},
		// Rule: Key.Entity is limited in bytes, not runes.
		{"entity limited in runes", flaws{entityRunes: true}, sumToy, "entity_length_in_bytes"},
	} {
		broken = append(broken, b)
	}
}
