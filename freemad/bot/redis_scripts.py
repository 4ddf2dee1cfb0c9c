"""The Lua scripts behind `freemad.bot.redis_stores`: every write to the Redis delivery log and
claims that must not race is one of these, which Redis runs atomically."""

# KEYS: the delivery's hash, the index, the unfinished set, the key of the body's digest.
# ARGV: id, now, status, ttl (ms), cutoff, body, event, digest, the prefix of digest keys, then
# the optional fields as name, value pairs. A delivery taken back with another body gives up its
# old digest's key, whose name is made here (the scripts already assume one server, no cluster).
RECORD = """
local owner = redis.call('GET', KEYS[4])
if owner and owner ~= ARGV[1] then return 0 end
local current = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'body_sha256')
if current[1] then
  if current[1] ~= 'failed' or tonumber(current[2]) ~= 0 then return 0 end
  if current[3] and current[3] ~= ARGV[8] then
    local old = ARGV[9] .. current[3]
    if redis.call('GET', old) == ARGV[1] then redis.call('DEL', old) end
  end
  redis.call('HSET', KEYS[1], 'body', ARGV[6], 'received_at', ARGV[2], 'updated_at', ARGV[2],
             'status', ARGV[3], 'detail', '', 'body_sha256', ARGV[8])
else
  redis.call('HSET', KEYS[1], 'body', ARGV[6], 'received_at', ARGV[2], 'updated_at', ARGV[2],
             'status', ARGV[3], 'detail', '', 'attempts', 0, 'event', ARGV[7],
             'body_sha256', ARGV[8])
  for i = 10, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('SET', KEYS[4], ARGV[1], 'PX', ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
if ARGV[3] == 'queued' or ARGV[3] == 'running' then
  redis.call('ZADD', KEYS[3], ARGV[2], ARGV[1])
else
  redis.call('ZREM', KEYS[3], ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', '(' .. ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. ARGV[5])
return 1
"""

# KEYS: the delivery's hash, the unfinished set. ARGV: status, detail, now, attempts to add, id.
MARK = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'status', ARGV[1], 'detail', ARGV[2], 'updated_at', ARGV[3])
local attempts = tonumber(redis.call('HGET', KEYS[1], 'attempts')) or 0
if ARGV[4] ~= '0' then attempts = redis.call('HINCRBY', KEYS[1], 'attempts', ARGV[4]) end
if ARGV[1] == 'queued' or ARGV[1] == 'running' or (ARGV[1] == 'failed' and attempts > 0) then
  redis.call('ZADD', KEYS[2], redis.call('HGET', KEYS[1], 'received_at') or 0, ARGV[5])
else
  redis.call('ZREM', KEYS[2], ARGV[5])
end
return 1
"""

# KEYS: the delivery's hash, the unfinished set. ARGV: id. Puts a delivery an older version
# recorded into the unfinished set if it is unfinished; atomic, so it cannot undo a `mark`.
ADOPT = """
local c = redis.call('HMGET', KEYS[1], 'status', 'attempts', 'received_at')
local attempts = tonumber(c[2]) or 0
if c[1] == 'queued' or c[1] == 'running' or (c[1] == 'failed' and attempts > 0) then
  redis.call('ZADD', KEYS[2], c[3] or 0, ARGV[1])
  return 1
end
return 0
"""

# KEYS: the claim's hash. ARGV: now, owner, host, pid, boot, expires, ttl (ms), and the holder
# that may be replaced although its lease runs (its process is gone), or ''.
# Returns {attempt}, or {0, owner, host, pid, boot} of the live holder.
CLAIM = """
local c = redis.call('HMGET', KEYS[1], 'owner', 'host', 'pid', 'boot', 'expires', 'attempts')
if c[1] and (tonumber(c[5]) or 0) > tonumber(ARGV[1]) and c[1] ~= ARGV[8] then
  return {0, c[1], c[2] or '', c[3] or '0', c[4] or ''}
end
local attempt = (tonumber(c[6]) or 0) + 1
redis.call('HSET', KEYS[1], 'owner', ARGV[2], 'host', ARGV[3], 'pid', ARGV[4], 'boot', ARGV[5],
           'expires', ARGV[6], 'attempts', attempt)
redis.call('PEXPIRE', KEYS[1], ARGV[7])
return {attempt}
"""

# KEYS: the claim's hash. ARGV: owner, expires, ttl (ms).
RENEW = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'expires', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
"""

# KEYS: the claim's hash. ARGV: owner.
RELEASE = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('HDEL', KEYS[1], 'owner', 'host', 'pid', 'boot')
redis.call('HSET', KEYS[1], 'expires', 0)
return 1
"""
