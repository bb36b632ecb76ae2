package ddbprovider

// ActiveShard is activeShard, for tests that clone the items the provider
// wrote under other run IDs (TestActiveRunsBulkScale).
var ActiveShard = activeShard
