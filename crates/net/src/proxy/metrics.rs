//! Counters and histograms of the proxy, rendered in the Prometheus text
//! exposition format (version 0.0.4) for `--metrics ADDR`.

use std::fmt::Write;

/// Histogram bucket upper bounds, seconds: 10 µs to 10 s.
const BUCKETS_S: [f64; 19] = [
    10e-6, 25e-6, 50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3, 50e-3, 100e-3, 250e-3,
    500e-3, 1.0, 2.5, 5.0, 10.0,
];

#[derive(Clone, Debug, Default)]
pub struct Histogram {
    /// Cumulative counts are made when rendering; these are per bucket,
    /// with one more for +Inf.
    counts: [u64; BUCKETS_S.len() + 1],
    sum_s: f64,
    count: u64,
}

impl Histogram {
    pub fn observe_ns(&mut self, ns: u64) {
        let s = ns as f64 * 1e-9;
        let i = BUCKETS_S.iter().position(|&b| s <= b).unwrap_or(BUCKETS_S.len());
        self.counts[i] += 1;
        self.sum_s += s;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cum = 0;
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in BUCKETS_S.iter().enumerate() {
            cum += self.counts[i];
            let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"{b}\"}} {cum}");
        }
        let _ = writeln!(out, "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}", self.count);
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        let _ = writeln!(out, "{name}_sum{braces} {}", self.sum_s);
        let _ = writeln!(out, "{name}_count{braces} {}", self.count);
    }
}

/// Error kinds counted (`latlab_proxy_errors_total{kind=...}`).
pub const ERROR_KINDS: [&str; 13] = [
    "connect_refused",
    "connect_timeout",
    "connect_unreachable",
    "connect_failed",
    "resolve_failed",
    "client_reset",
    "upstream_reset",
    "io_error",
    "idle_timeout",
    "bad_request",
    "header_too_large",
    "unsupported",
    "shutdown",
];

#[derive(Clone, Debug, Default)]
pub struct Metrics {
    pub accepted: u64,
    pub active: u64,
    /// Refused at accept: `max_connections` reached.
    pub refused: u64,
    pub bytes_c2s: u64,
    pub bytes_s2c: u64,
    pub errors: [u64; ERROR_KINDS.len()],
    pub syn_delay: Histogram,
    pub data_delay_c2s: Histogram,
    pub data_delay_s2c: Histogram,
    pub connect_time: Histogram,
}

impl Metrics {
    pub fn count_error(&mut self, kind: &str) {
        if let Some(i) = ERROR_KINDS.iter().position(|&k| k == kind) {
            self.errors[i] += 1;
        }
    }

    pub fn render(&self) -> String {
        let mut out = String::with_capacity(8192);
        let mut counter = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {value}");
        };
        counter(
            "latlab_proxy_connections_accepted_total",
            "counter",
            "Client connections accepted.",
            self.accepted,
        );
        counter(
            "latlab_proxy_connections_active",
            "gauge",
            "Client connections open now.",
            self.active,
        );
        counter(
            "latlab_proxy_connections_refused_total",
            "counter",
            "Client connections closed at accept because max_connections was reached.",
            self.refused,
        );
        let _ = writeln!(
            out,
            "# HELP latlab_proxy_bytes_total Payload bytes relayed.\n# TYPE latlab_proxy_bytes_total counter\n\
             latlab_proxy_bytes_total{{direction=\"client_to_server\"}} {}\n\
             latlab_proxy_bytes_total{{direction=\"server_to_client\"}} {}",
            self.bytes_c2s, self.bytes_s2c
        );
        let _ = writeln!(
            out,
            "# HELP latlab_proxy_errors_total Connections that ended in an error, by kind.\n\
             # TYPE latlab_proxy_errors_total counter"
        );
        for (kind, n) in ERROR_KINDS.iter().zip(self.errors) {
            let _ = writeln!(out, "latlab_proxy_errors_total{{kind=\"{kind}\"}} {n}");
        }
        let hist = |out: &mut String, name: &str, help: &str, parts: &[(&str, &Histogram)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} histogram");
            for (labels, h) in parts {
                h.render(out, name, labels);
            }
        };
        hist(
            &mut out,
            "latlab_proxy_syn_conversion_seconds",
            "Client connection accepted to upstream connect started.",
            &[("", &self.syn_delay)],
        );
        hist(
            &mut out,
            "latlab_proxy_upstream_connect_seconds",
            "Upstream connect started to established.",
            &[("", &self.connect_time)],
        );
        hist(
            &mut out,
            "latlab_proxy_data_conversion_seconds",
            "First byte read on one side to first byte written on the other.",
            &[
                ("direction=\"client_to_server\"", &self.data_delay_c2s),
                ("direction=\"server_to_client\"", &self.data_delay_s2c),
            ],
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_buckets_are_cumulative() {
        let mut m = Metrics::default();
        m.syn_delay.observe_ns(5_000); // 5 µs
        m.syn_delay.observe_ns(80_000); // 80 µs
        m.syn_delay.observe_ns(20_000_000_000); // 20 s: +Inf only
        m.count_error("connect_refused");
        let text = m.render();
        assert!(
            text.contains("latlab_proxy_syn_conversion_seconds_bucket{le=\"0.00001\"} 1"),
            "{text}"
        );
        assert!(text.contains("latlab_proxy_syn_conversion_seconds_bucket{le=\"0.0001\"} 2"));
        assert!(text.contains("latlab_proxy_syn_conversion_seconds_bucket{le=\"10\"} 2"));
        assert!(text.contains("latlab_proxy_syn_conversion_seconds_bucket{le=\"+Inf\"} 3"));
        assert!(text.contains("latlab_proxy_syn_conversion_seconds_count 3"));
        assert!(text.contains("latlab_proxy_errors_total{kind=\"connect_refused\"} 1"));
        assert!(text.contains(
            "latlab_proxy_data_conversion_seconds_bucket{direction=\"client_to_server\",le=\"+Inf\"} 0"
        ));
    }
}
