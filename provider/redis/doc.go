// Package redis is the Redis backend of pipestate: a provider.Provider (with
// provider.Leaser and provider.CascadeReader) over any goredis.UniversalClient,
// standalone or Redis Cluster.
package redis
