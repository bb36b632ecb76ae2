-- idx_expired: the entries of a list index whose records may have expired, for a
-- writer to prune: up to ARGV[2] IDs whose score in the expiry index is at most
-- now (expired when now >= the expiry), each with its entry in the index hash.
-- The score is the expiry the record's last list set saw; a later write of the
-- truth alone (a CAS) may have moved it on, so the writer reads each truth before
-- it drops an entry (lua/idx_apply.lua modes "d" and "x").
-- KEYS[1] = expiry index (sorted set id -> expiry µs), KEYS[2] = index hash
-- ARGV[1] = now µs, ARGV[2] = the most IDs returned
-- Returns id1, entry1, id2, entry2, ... (entry "" when the hash has none).
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local out = {}
for i = 1, #gone do
  out[#out + 1] = gone[i]
  out[#out + 1] = redis.call('HGET', KEYS[2], gone[i]) or ''
end
return out
