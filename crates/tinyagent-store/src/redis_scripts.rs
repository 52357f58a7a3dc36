//! The Lua scripts of [`RedisStore`](crate::RedisStore): one per operation, so that each is
//! atomic. Times are milliseconds since the epoch (13 digits: Lua's numbers print them
//! exactly).

use redis::Script;

/// Loads a session: `[]` when it does not exist, else version, count, created, updated,
/// expires, owner, the number of messages, the messages, then state keys and values.
const LOAD: &str = r"
local meta = redis.call('HMGET', KEYS[1], 'version', 'count', 'created', 'updated', 'expires', 'owner')
if not meta[1] then return {} end
local out = {}
for i = 1, 6 do out[i] = meta[i] or '' end
local msgs = redis.call('LRANGE', KEYS[2], 0, -1)
out[7] = tostring(#msgs)
for i = 1, #msgs do out[#out + 1] = msgs[i] end
local state = redis.call('HGETALL', KEYS[3])
for i = 1, #state do out[#out + 1] = state[i] end
return out
";

/// Shared by the writing scripts: sets the expiry of a session's keys from its own TTL or the
/// store's (ARGV[2] now, ARGV[3] the store's TTL or ''), records the write time and indexes
/// the session, in the index of all sessions and in its owner's (`<index>:<owner>`; sessions
/// without an owner are only in the first). KEYS: meta, msgs, state, index; ARGV[1]: id.
const TOUCH: &str = r"
local function touch()
  local now = tonumber(ARGV[2])
  local ttl = redis.call('HGET', KEYS[1], 'ttl')
  if not ttl or ttl == '' then ttl = ARGV[3] end
  local expires = ''
  if ttl ~= '' and tonumber(ttl) >= 0 then expires = now + tonumber(ttl) end
  redis.call('HSET', KEYS[1], 'updated', now, 'expires', expires)
  for i = 1, 3 do
    if expires == '' then redis.call('PERSIST', KEYS[i])
    else redis.call('PEXPIREAT', KEYS[i], expires) end
  end
  redis.call('ZADD', KEYS[4], now, ARGV[1])
  local owner = redis.call('HGET', KEYS[1], 'owner')
  if owner and owner ~= '' then redis.call('ZADD', KEYS[4] .. ':' .. owner, now, ARGV[1]) end
end
local function fresh()
  redis.call('DEL', KEYS[2], KEYS[3])
  redis.call('HSET', KEYS[1], 'version', 0, 'count', 0, 'created', ARGV[2], 'ttl', '', 'owner', '')
end
";

/// ARGV: id, now, store TTL, expected version ('' for any, a number for that version, either
/// after '!' for a session that must exist), owner ('*' for any, else '=' and the owner the session must have or gets),
/// message count, messages, then state changes as ('s', key, value) or ('d', key).
const COMMIT: &str = r"
local must_exist = string.sub(ARGV[4], 1, 1) == '!'
local expected = tonumber(must_exist and string.sub(ARGV[4], 2) or ARGV[4])
local owner = nil
if ARGV[5] ~= '*' then owner = string.sub(ARGV[5], 2) end
if redis.call('EXISTS', KEYS[1]) == 0 then
  if must_exist or (expected and expected > 0) then return {'notfound'} end
  fresh()
  if owner then redis.call('HSET', KEYS[1], 'owner', owner) end
elseif owner and (redis.call('HGET', KEYS[1], 'owner') or '') ~= owner then
  return {'notfound'}
end
local version = tonumber(redis.call('HGET', KEYS[1], 'version'))
if not version then return {'corrupt', 'its version is not a number'} end
if expected and expected ~= version then return {'conflict', tostring(version)} end
local n = tonumber(ARGV[6])
for i = 1, n do redis.call('RPUSH', KEYS[2], ARGV[6 + i]) end
local i = 7 + n
while i <= #ARGV do
  if ARGV[i] == 's' then
    redis.call('HSET', KEYS[3], ARGV[i + 1], ARGV[i + 2])
    i = i + 3
  else
    redis.call('HDEL', KEYS[3], ARGV[i + 1])
    i = i + 2
  end
end
if n > 0 then version = version + 1 end
redis.call('HSET', KEYS[1], 'version', version, 'count', redis.call('LLEN', KEYS[2]))
touch()
return {'ok', tostring(version)}
";

/// ARGV: id, now, store TTL.
const CREATE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 1 then return {'exists'} end
fresh()
touch()
return {'ok', tostring(redis.call('HGET', KEYS[1], 'expires'))}
";

/// ARGV: id, now, store TTL, the session's own TTL (-1: never).
const SET_TTL: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then return {'notfound'} end
redis.call('HSET', KEYS[1], 'ttl', ARGV[4])
touch()
return {'ok'}
";

/// KEYS: meta, msgs, state, index, lock; ARGV: id.
const DELETE: &str = r"
local existed = redis.call('EXISTS', KEYS[1])
local owner = redis.call('HGET', KEYS[1], 'owner')
if owner and owner ~= '' then redis.call('ZREM', KEYS[4] .. ':' .. owner, ARGV[1]) end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('ZREM', KEYS[4], ARGV[1])
return existed
";

/// A page of sessions by last write, newest first (ties: greater id first), after the cursor
/// (ARGV[1] its score or '+inf', ARGV[2] its id or ''), unindexing sessions that expired.
/// ARGV[3]: how many; ARGV[4]: the meta key prefix; ARGV[5]: '*' for every session, else '='
/// and the owner whose sessions are listed (KEYS[1] is then that owner's index, or for the
/// empty owner the index of all sessions). Returns, per session: id, score, version, count,
/// created, updated, expires, owner.
const LIST: &str = r"
local want = tonumber(ARGV[3])
local owner = nil
if ARGV[5] ~= '*' then owner = string.sub(ARGV[5], 2) end
local out = {}
local offset = 0
while #out < 8 * want do
  local batch = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', offset, 200)
  if #batch == 0 then break end
  offset = offset + #batch / 2
  for i = 1, #batch, 2 do
    local id, score = batch[i], batch[i + 1]
    local seen = ARGV[2] ~= '' and score == ARGV[1] and id >= ARGV[2]
    if not seen then
      local meta = redis.call('HMGET', ARGV[4] .. id, 'version', 'count', 'created', 'updated', 'expires', 'owner')
      local mine = owner == nil or (meta[6] or '') == owner
      if meta[1] and mine then
        out[#out + 1] = id
        out[#out + 1] = score
        for k = 1, 6 do out[#out + 1] = meta[k] or '' end
        if #out >= 8 * want then break end
      elseif not meta[1] or owner ~= '' then
        -- Gone (expired or deleted), or no longer this owner's: out of this index.
        redis.call('ZREM', KEYS[1], id)
      end
    end
  end
end
return out
";

const RENEW: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
";

const RELEASE: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
";

pub(crate) struct Scripts {
    pub(crate) load: Script,
    pub(crate) commit: Script,
    pub(crate) create: Script,
    pub(crate) set_ttl: Script,
    pub(crate) delete: Script,
    pub(crate) list: Script,
    pub(crate) renew: Script,
    pub(crate) release: Script,
}

pub(crate) fn scripts() -> &'static Scripts {
    static SCRIPTS: std::sync::OnceLock<Scripts> = std::sync::OnceLock::new();
    SCRIPTS.get_or_init(|| Scripts {
        load: Script::new(LOAD),
        commit: Script::new(&format!("{TOUCH}{COMMIT}")),
        create: Script::new(&format!("{TOUCH}{CREATE}")),
        set_ttl: Script::new(&format!("{TOUCH}{SET_TTL}")),
        delete: Script::new(DELETE),
        list: Script::new(LIST),
        renew: Script::new(RENEW),
        release: Script::new(RELEASE),
    })
}
