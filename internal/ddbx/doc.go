// Package ddbx holds the DynamoDB helpers shared by pipestate's DynamoDB backends
// (provider/ddbprovider and state/ddbstate):
//
//   - [BatchGet] and [BatchWrite]: split a request into DynamoDB's per-call limits
//     (100 keys, 25 writes), issue the calls concurrently, and retry UnprocessedKeys /
//     UnprocessedItems with capped exponential backoff and full jitter
//     (internal/backoff) until everything is done, the retry budget runs out
//     ([ErrUnprocessed]) or ctx ends, reporting each retry round to
//     BatchOptions.OnRetry;
//   - [ThrottleSignals], a per-call SDK option whose middleware records the
//     throttled attempts the SDK's retryer retried (and a call that ends throttled)
//     through an internal/signal Recorder;
//   - error classification with errors.As on the SDK's exception types, never on
//     message strings: [IsConditionFailed], [ConditionFailedItem], [TxReasons],
//     [TxConditionFailed], [IsTxConflict], [IsThrottled];
//   - [ItemSize], an estimate of an item's stored size by DynamoDB's published rules,
//     to reject items over [MaxItemSize] (400 KB) before a write is attempted;
//   - [Query], which follows LastEvaluatedKey until the caller has what it needs;
//   - [EnsureTable], an idempotent create-table-and-wait that accepts an existing table
//     with the same key schema and rejects one with another ([ErrSchemaMismatch]).
//
// Every function honours ctx and wraps SDK errors with %w, so errors.As to the SDK's
// types keeps working. The package is internal: its API may change with its two users.
package ddbx
