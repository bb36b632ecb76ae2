-- fence: where the provider's scripts of records that may be fenced
-- (record_put, run_cas, append_once, slot_put) keep their fence, after the rule
-- itself (redisx.FenceLua, which scripts.go puts first). Every call, fenced or
-- not, passes after the script's own keys the fence memory of its record (see
-- "Key schema"; none for a record nothing fences: a pipeline), and after its
-- own arguments the lease key and fence, both '' when it is unfenced. An
-- unfenced write never reads a memory nor creates one, but makes an existing
-- one live at least as long as the record it wrote (fence_kept).
local fence_memory
-- fence_fenced reports whether the call is fenced.
local function fence_fenced() return ARGV[#ARGV] ~= '' end
-- fence_refused is called once, after the call's own marker and before
-- anything the write checks itself; nkeys is the number of the script's own
-- keys, before the memory. It returns the remembered fence when it is above
-- the write's (the write is refused and writes nothing), else nil.
local function fence_refused(nkeys)
  fence_memory = KEYS[nkeys + 1]
  if not fence_memory or not fence_fenced() then return nil end
  return fence_check(fence_memory, ARGV[#ARGV - 1], ARGV[#ARGV])
end
-- fence_args is the number of ARGV before the fence's.
local function fence_args() return #ARGV - 2 end
-- fence_kept is called once the write wrote, fenced or not, with the record's
-- server TTL in ms ('0': none): see fence_remember.
local function fence_kept(ttl) fence_remember(ttl, fence_memory) end
