package providertest

// BasicsTable is basicsTable, for TestBasicsDocumented.
var BasicsTable = basicsTable

// BasicsMethods counts the methods of the basics' steps.
func BasicsMethods() []string {
	var out []string
	for _, b := range basics {
		out = append(out, b.methods...)
	}
	return out
}

// BasicsGroups lists the groups the basics' steps name, and afterBasics.
func BasicsGroups() []string {
	out := append([]string(nil), afterBasics...)
	for _, b := range basics {
		out = append(out, b.groups...)
	}
	return out
}
