package ddbstate

// LostRaces returns the compare-and-swap races s lost since it was created, for
// benchmarks.
func LostRaces(s *BytesStore) int64 { return s.retries.Load() }
