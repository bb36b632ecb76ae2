package ddbprovider

// ActiveShard is activeShard, for tests that clone the items the provider
// wrote under other run IDs (TestActiveRunsBulkScale).
var ActiveShard = activeShard

// ReindexAttempts is reindexAttempts, for the test that makes every attempt
// of ReindexRun lose (TestReindexRunUnderWrites).
const ReindexAttempts = reindexAttempts
