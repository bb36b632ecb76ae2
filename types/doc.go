// Package types holds pipestate's domain types: plain structs with JSON tags and
// Validate methods, and no I/O.
//
// # Identifiers
//
// Every identifier that becomes part of a storage key — pipeline, run, rerun, schedule,
// trait type, date — follows one rule, checked by [ValidateID]:
//
//   - 1 to [MaxIDLen] (128) bytes;
//   - only ASCII letters, digits and the characters  - _ . / + = @
//
// The rule leaves out every character a built-in backend uses as a key delimiter
// (':', '#', '{', '}', whitespace), so each backend can join identifiers with its
// delimiter and no two different tuples ever share storage. Dates are identifiers
// too and are ordered as strings; use ISO-8601 (2026-11-21, 2026-11-21T03) so that
// string order is time order.
//
// Lock and lease keys are free-form: any valid UTF-8 of 1 to [MaxLockKeyLen] bytes
// without control characters ([ValidateLockKey]). Backends store a lock key as a
// single key component, so any such key is safe.
//
// # Validation
//
// Each writable type has a Validate method. Errors wrap [ErrInvalid]; the provider
// package wraps them again in provider.ErrInvalidArgument.
package types
