package redisx

import "time"

// Millis returns the milliseconds to give PX (SET, PEXPIRE) for a positive ttl, so
// that the key is gone when the contract says it expired: at the first reading of
// the server's clock >= the write's + ttl. A ttl <= 0 is returned as 0 (the
// callers' "no expiry").
//
// Why ceil(ttl) - 1: Redis reads its clock in whole milliseconds, sets a key
// written at T with PX n to expire at T+n, and treats it as expired only once
// now > T+n (strictly), so the key is visible at T..T+n and gone from T+n+1. On
// that clock, "expired when now >= T+ttl" is "gone from T+ceil(ttl)", hence
// n = ceil(ttl) - 1: exact for every ttl above 1 ms, never later (rounding up
// alone, n = ceil(ttl), keeps the key one millisecond past its expiry; the
// truncated n = floor(ttl) does too for a whole ttl).
//
// The one exception is a ttl of at most 1 ms, finer than Redis keeps time: it
// would need n = 0, which SET PX refuses and the scripts take as "no expiry", so
// it gets 1, the shortest life Redis gives a key (the millisecond of the write
// and the next). A positive ttl thus never becomes "no expiry", and no key lives
// more than one millisecond past its expiry. Millisecond is the finest unit the
// contract asks every backend to keep (provider.CheckReadinessTTL).
func Millis(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	ms := int64(ttl / time.Millisecond)
	if ttl%time.Millisecond != 0 {
		ms++ // ceil
	}
	if ms > 1 {
		ms--
	}
	return ms
}
