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
