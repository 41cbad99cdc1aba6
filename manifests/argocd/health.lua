-- Argo CD health check for kafkaops resources (group kafkaops.io: KafkaCluster,
-- KafkaTopic, KafkaAcl, KafkaBrokerConfig). Installation: manifests/README.md.
--
-- Argo CD runs this with the live object as `obj` and expects a table
-- {status = Healthy|Progressing|Degraded|Suspended, message = "..."} back.
-- The operator writes kstatus-style status: status.observedGeneration and
-- status.conditions[] of type Ready / Reconciling / Stalled / Drifted.
--
-- Rules, first match wins:
--   1. no status, or status.observedGeneration < metadata.generation
--        -> Progressing "waiting for the operator to observe generation N"
--        (Suspended instead when the object carries kafkaops.io/paused: "true":
--         a paused resource's new generation waits for the resume, not the operator)
--   2. Stalled=True                     -> Degraded, "<reason>: <message>"
--   3. Ready=False with reason Paused   -> Suspended
--   4. Reconciling=True                 -> Progressing, its message
--   5. Ready=True                       -> Healthy (notes Drifted=True if present)
--   6. Ready=False                      -> Degraded, "<reason>: <message>"
--   7. anything else (Ready Unknown or missing) -> Progressing
-- Every field may be missing; nothing here assumes one is present.

local hs = {}

-- "12" rather than "12.0" whatever number type the Lua runtime hands us.
local function num(value)
  if type(value) == "number" and value == math.floor(value) then
    return string.format("%d", value)
  end
  return tostring(value)
end

-- The first condition of that type, or nil.
local function condition(conditions, ctype)
  if type(conditions) ~= "table" then
    return nil
  end
  for _, c in ipairs(conditions) do
    if type(c) == "table" and c.type == ctype then
      return c
    end
  end
  return nil
end

local function is(c, status)
  return c ~= nil and c.status == status
end

-- "reason: message", whichever of the two is present, or the fallback.
local function describe(c, fallback)
  local reason = c ~= nil and c.reason or nil
  local message = c ~= nil and c.message or nil
  if reason ~= nil and reason ~= "" and message ~= nil and message ~= "" then
    return reason .. ": " .. message
  elseif message ~= nil and message ~= "" then
    return message
  elseif reason ~= nil and reason ~= "" then
    return reason
  end
  return fallback
end

local metadata = obj.metadata or {}
local generation = metadata.generation
local annotations = metadata.annotations or {}
local paused = annotations["kafkaops.io/paused"] == "true"
local status = obj.status

-- 1. The operator has not caught up with the spec yet.
local observed = nil
if type(status) == "table" then
  observed = status.observedGeneration
end
if type(status) ~= "table" or observed == nil or
    (type(generation) == "number" and type(observed) == "number" and observed < generation) then
  local waiting
  if generation ~= nil then
    waiting = "generation " .. num(generation)
  else
    waiting = "the resource"
  end
  if paused then
    hs.status = "Suspended"
    hs.message = "paused (kafkaops.io/paused); " .. waiting .. " will be reconciled when resumed"
  else
    hs.status = "Progressing"
    hs.message = "waiting for the operator to observe " .. waiting
  end
  return hs
end

local conditions = status.conditions
local ready = condition(conditions, "Ready")
local reconciling = condition(conditions, "Reconciling")
local stalled = condition(conditions, "Stalled")
local drifted = condition(conditions, "Drifted")

-- 2. The operator gave up until something changes (bad spec, unsafe change refused, ...).
if is(stalled, "True") then
  hs.status = "Degraded"
  hs.message = describe(stalled, "stalled")
  return hs
end

-- 3. kafkaops.io/paused: "true" -- the operator leaves the resource alone on purpose.
if is(ready, "False") and ready.reason == "Paused" then
  hs.status = "Suspended"
  hs.message = describe(ready, "paused")
  return hs
end

-- 4. A reconcile (or a partition reassignment) is under way.
if is(reconciling, "True") then
  hs.status = "Progressing"
  hs.message = describe(reconciling, "reconciling")
  return hs
end

-- 5. In sync with Kafka -- apart from drift the operator reports but does not correct.
if is(ready, "True") then
  hs.status = "Healthy"
  hs.message = describe(ready, "ready")
  if is(drifted, "True") then
    hs.message = hs.message .. " (drift detected: " .. describe(drifted, "Drifted") .. ")"
  end
  return hs
end

-- 6. Not ready, and not because of a pause or an ongoing reconcile.
if is(ready, "False") then
  hs.status = "Degraded"
  hs.message = describe(ready, "not ready")
  return hs
end

-- 7. Ready Unknown or absent: the operator has not reached a verdict.
hs.status = "Progressing"
hs.message = describe(ready, "waiting for the Ready condition")
return hs
