-- GET the paths of a file in turn (wrk args: FILE THREADS [KEYS]). Thread k of n takes lines k, k+n, k+2n, ...
-- so no two requests of a run are alike unless the file runs out; "WRAPPED n" counts the restarts.
-- With KEYS (a file of API keys, one a line) each request takes the next key, as many clients would.
local threads = {}
local next_id = 0

function setup(thread)
  thread:set("id", next_id)
  next_id = next_id + 1
  table.insert(threads, thread)
end

function init(args)
  paths = {}
  for line in io.lines(args[1]) do
    paths[#paths + 1] = line
  end
  step = tonumber(args[2])
  wrapped = 0
  i = id + 1
  keys = {}
  if args[3] then
    for line in io.lines(args[3]) do
      keys[#keys + 1] = {Authorization = "Bearer " .. line}
    end
  end
  k = id
end

function request()
  if i > #paths then
    i = (i - 1) % #paths + 1
    wrapped = wrapped + 1
  end
  local path = paths[i]
  i = i + step
  if #keys > 0 then
    k = k % #keys + 1
    return wrk.format(nil, path, keys[k])
  end
  return wrk.format(nil, path)
end

-- Requests answered later than limit_us microseconds, from the latency percentiles (wrk keeps no list).
local function later_than(latency, total, limit_us)
  if latency.max <= limit_us then return 0 end
  local within, beyond = 0.0, 100.0  -- percentile(within) <= limit_us < percentile(beyond)
  for _ = 1, 30 do
    local middle = (within + beyond) / 2
    if latency:percentile(middle) <= limit_us then within = middle else beyond = middle end
  end
  return math.max(1, math.floor(total * (100 - within) / 100 + 0.5))
end

function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do
    total = total + (thread:get("wrapped") or 0)
  end
  io.write(string.format("WRAPPED %d\n", total))
  io.write(string.format("P50 %d\nP90 %d\nP99 %d\n", latency:percentile(50), latency:percentile(90), latency:percentile(99)))
  io.write(string.format("MAX %d\nPAST2S %d\n", latency.max, later_than(latency, summary.requests, 2000000)))
end
