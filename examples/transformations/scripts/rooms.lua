-- The room of each device; one unknown to the table goes to rooms/unknown.
local rooms = {
  ["dev-01"] = "kitchen",
  ["dev-02"] = "living room",
  ["dev-03"] = "garage",
}

local reading = envelope.body
if type(reading) ~= "table" or type(reading.device) ~= "string" then return nil end
reading.room = rooms[reading.device] or "unknown"
envelope.headers["mqtt.topic"] = "rooms/" .. reading.room:gsub(" ", "-") .. "/" .. reading.device
return envelope
