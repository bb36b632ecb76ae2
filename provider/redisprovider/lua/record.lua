-- record: what the scripts that write a record's truth hash (record_put,
-- run_cas) read of its x and s fields, which scripts.go puts before them. A
-- field that is not a number (corrupt: by hand, a flipped byte) is read as the
-- Go readers read it (index.go fetchRecords), never as a Lua error.
-- record_live reports whether expiry x (µs, "0" or absent: never; not a
-- number: never, as the readers judge it) is after now µs.
local function record_live(x, now)
  local n = tonumber(x)
  return not n or n == 0 or n > tonumber(now)
end
-- record_next_seq returns the sequence the write of the truth at key stores:
-- s + 1 when the record is live and s is a sequence; else (written anew, or s
-- corrupt) s + 1 and now µs at least, above every sequence its list entries may
-- carry, as for a record written anew.
local function record_next_seq(key, live, now)
  local n = tonumber(redis.call('HGET', key, 's') or '0')
  local ok = n and n >= 0 and n == math.floor(n) and n < 2^53
  if not ok then n, live = 0, false end
  if live then return n + 1 end
  return math.max(n + 1, tonumber(now))
end
