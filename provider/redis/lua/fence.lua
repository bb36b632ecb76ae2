-- fence: where the provider's fenced scripts (record_put, run_cas, append_once,
-- slot_put) keep their fence, after the rule itself (redisx.FenceLua, which
-- scripts.go puts first). A fenced write passes, after the script's own keys and
-- arguments, the fence memory of its record as its last KEY (see "Key schema")
-- and the lease key and fence as its last two ARGV. An unfenced write passes
-- neither, and the script never touches a fence memory.
-- fence_refused is called once, after the call's own marker and before
-- anything the write checks itself; nkeys is the script's KEYS count unfenced.
-- It returns the remembered fence when it is above the write's (the write is
-- refused and writes nothing), else nil.
local function fence_refused(nkeys)
  if #KEYS == nkeys then return nil end
  return fence_check(KEYS[#KEYS], ARGV[#ARGV - 1], ARGV[#ARGV])
end
-- fence_args is the number of ARGV before the fence's (all of them unfenced).
local function fence_args()
  if fence_key then return #ARGV - 2 end
  return #ARGV
end
