-- wrk script: POST one FCM HTTP v1 send request (a data message of ~100 bytes) per request and
-- print a JSON summary line: requests, errors (non-200 answers, socket errors), req/s, latency
-- percentiles in microseconds.
wrk.method = "POST"
wrk.body = '{"message": {"token": "bench-device-token-0001", "data": {"notification_id": "n1", "reading": "21.5", "unit": "C"}}}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. (os.getenv("BENCH_BEARER") or "bench")

local non200 = 0
response = function(status, headers, body)
    if status ~= 200 then non200 = non200 + 1 end
end

done = function(summary, latency, requests)
    local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout
    io.write(string.format(
        '{"requests": %d, "non_2xx": %d, "socket_errors": %d, "seconds": %.3f, "rps": %.1f, "p50_us": %d, "p99_us": %d, "max_us": %d}\n',
        summary.requests, summary.errors.status, errors, summary.duration / 1e6,
        summary.requests / (summary.duration / 1e6), latency:percentile(50), latency:percentile(99), latency.max))
end
