-- POST one form body again and again (wrk args: BODY). Authorization comes from wrk's -H.
function init(args)
  wrk.method = "POST"
  wrk.body = args[1]
  wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
end

function done(summary, latency, requests)
  io.write("WRAPPED 0\n")
  io.write(string.format("P50 %d\nP90 %d\nP99 %d\n", latency:percentile(50), latency:percentile(90), latency:percentile(99)))
end
