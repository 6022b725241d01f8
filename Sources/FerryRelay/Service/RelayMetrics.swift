import Foundation

/// Request counters and latency histograms per route, rendered in Prometheus' text format.
///
/// `@unchecked Sendable`: every access to the counters holds `lock`.
public final class RelayMetrics: @unchecked Sendable {
    public static let buckets: [Double] = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private struct Histogram {
        var counts = [Int](repeating: 0, count: RelayMetrics.buckets.count)
        var sum = 0.0
        var count = 0
    }

    private let lock = NSLock()
    private var requests: [String: [Int: Int]] = [:]
    private var latency: [String: Histogram] = [:]

    public init() {}

    /// Records one finished request.
    public func record(route: String, status: Int, seconds: Double) {
        lock.lock(); defer { lock.unlock() }
        requests[route, default: [:]][status, default: 0] += 1
        var h = latency[route] ?? Histogram()
        for (i, bound) in RelayMetrics.buckets.enumerated() where seconds <= bound { h.counts[i] += 1 }
        h.sum += seconds
        h.count += 1
        latency[route] = h
    }

    /// The exposition text, with the gauges the caller reads at scrape time.
    public func render(eventsStored: Int64?, longPollers: Int) -> String {
        lock.lock(); defer { lock.unlock() }
        var out = "# HELP ferry_relay_requests_total HTTP requests by route and status.\n# TYPE ferry_relay_requests_total counter\n"
        for route in requests.keys.sorted() {
            for status in requests[route]!.keys.sorted() {
                out += "ferry_relay_requests_total{route=\"\(route)\",status=\"\(status)\"} \(requests[route]![status]!)\n"
            }
        }
        out += "# HELP ferry_relay_request_duration_seconds Time from the request's first byte to its response.\n# TYPE ferry_relay_request_duration_seconds histogram\n"
        for route in latency.keys.sorted() {
            let h = latency[route]!
            for (i, bound) in RelayMetrics.buckets.enumerated() {
                out += "ferry_relay_request_duration_seconds_bucket{route=\"\(route)\",le=\"\(bound)\"} \(h.counts[i])\n"
            }
            out += "ferry_relay_request_duration_seconds_bucket{route=\"\(route)\",le=\"+Inf\"} \(h.count)\n"
            out += "ferry_relay_request_duration_seconds_sum{route=\"\(route)\"} \(h.sum)\n"
            out += "ferry_relay_request_duration_seconds_count{route=\"\(route)\"} \(h.count)\n"
        }
        if let eventsStored {
            out += "# HELP ferry_relay_events_stored Events currently stored, all owners.\n# TYPE ferry_relay_events_stored gauge\n"
            out += "ferry_relay_events_stored \(eventsStored)\n"
        }
        out += "# HELP ferry_relay_long_pollers Pull requests waiting for a push.\n# TYPE ferry_relay_long_pollers gauge\n"
        out += "ferry_relay_long_pollers \(longPollers)\n"
        return out
    }
}
