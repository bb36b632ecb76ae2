// Package fencectx holds the context key of a fenced write's token, so that only
// the fenced views (provider.Fenced, state.Fenced) can set it while backends read
// it through fence.FromContext.
package fencectx

import "context"

type key struct{}

// With returns ctx carrying token.
func With(ctx context.Context, token any) context.Context {
	return context.WithValue(ctx, key{}, token)
}

// From returns the token ctx carries, or nil.
func From(ctx context.Context) any { return ctx.Value(key{}) }
