//! What the server has done, for `/metrics` (the Prometheus text format), and
//! the admission limits that keep it from taking more than it can serve.
//!
//! A request admitted holds a [`Ticket`] until its response body is over (an
//! MCP call's event stream ends with the call), so "in flight" counts calls,
//! not just request headers, and the duration recorded is the whole call's.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use crate::tool::EngineLoad;

/// Upper bounds, in seconds, of the call-duration histogram's buckets.
const BUCKETS: [f64; 10] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0, 300.0];

/// Counters and gauges of one server.
#[derive(Default)]
pub struct Metrics {
    pub calls_in_flight: AtomicUsize,
    pub sandboxes_open: AtomicUsize,
    pub calls_total: AtomicU64,
    pub refused_busy: AtomicU64,
    pub refused_auth: AtomicU64,
    /// Connections closed at once because the server had `--max-connections` open.
    pub refused_connections: AtomicU64,
    pub sandboxes_total: AtomicU64,
    /// Bytes of MCP response bodies and of SDK connections sent to clients.
    pub bytes_out: AtomicU64,
    /// Calls finished per bucket of [`BUCKETS`], then past the last.
    buckets: [AtomicU64; BUCKETS.len() + 1],
    /// Sum of finished calls' seconds, in microseconds.
    duration_micros: AtomicU64,
}

/// What kind of work a ticket admits, each with its own limit.
#[derive(Clone, Copy)]
pub enum Work {
    /// An MCP request (a tool call's answer streams until the call ends).
    Call,
    /// An SDK connection (a sandbox, for as long as it is open).
    Sandbox,
}

/// One admitted request or connection; dropping it frees its place.
pub struct Ticket {
    metrics: Arc<Metrics>,
    work: Work,
    started: Instant,
}

/// Count one more in `in_progress` if fewer than `limit` are; whether it was.
/// The caller gives the place back with a `fetch_sub` when the work ends.
pub(crate) fn take_place(in_progress: &AtomicUsize, limit: usize) -> bool {
    in_progress.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| (now < limit).then_some(now + 1)).is_ok()
}

impl Metrics {
    /// A place for `work` if fewer than `limit` are in progress; `None`: the server is full.
    pub fn admit(self: &Arc<Self>, work: Work, limit: usize) -> Option<Ticket> {
        if !take_place(self.gauge(work), limit) {
            self.refused_busy.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        match work {
            Work::Call => &self.calls_total,
            Work::Sandbox => &self.sandboxes_total,
        }
        .fetch_add(1, Ordering::Relaxed);
        Some(Ticket { metrics: self.clone(), work, started: Instant::now() })
    }

    fn gauge(&self, work: Work) -> &AtomicUsize {
        match work {
            Work::Call => &self.calls_in_flight,
            Work::Sandbox => &self.sandboxes_open,
        }
    }

    fn observe(&self, seconds: f64) {
        let bucket = BUCKETS.iter().position(|bound| seconds <= *bound).unwrap_or(BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.duration_micros.fetch_add((seconds * 1e6) as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition, with what only the engines know (`load`, summed over them).
    /// `network`: each principal's connections allowed and refused by its kernels' proxies.
    pub fn render(&self, principals: usize, load: &EngineLoad, network: &[(String, u64, u64)]) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, values: &[(&str, String)]| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for (labels, value) in values {
                let _ = writeln!(out, "{name}{labels} {value}");
            }
        };
        let load_of = |atomic: &AtomicU64| atomic.load(Ordering::Relaxed).to_string();
        metric(
            "cellbox_principals",
            "gauge",
            "Principals that made a request since the start.",
            &[("", principals.to_string())],
        );
        let kernels = load.kernels.busy + load.kernels.idle;
        metric(
            "cellbox_kernels",
            "gauge",
            "Live kernels over all engines, spares not included.",
            &[("", kernels.to_string())],
        );
        metric(
            "cellbox_kernels_by_state",
            "gauge",
            "Live kernels: busy (a call holds it), idle, or spare (started ahead of need).",
            &[
                ("{state=\"busy\"}", load.kernels.busy.to_string()),
                ("{state=\"idle\"}", load.kernels.idle.to_string()),
                ("{state=\"spare\"}", load.spares.to_string()),
            ],
        );
        metric("cellbox_spare_kernels", "gauge", "Warm spare kernels ready.", &[("", load.spares.to_string())]);
        metric(
            "cellbox_calls_queued",
            "gauge",
            "Calls waiting for a kernel another call of their session holds.",
            &[("", load.kernels.queued_calls.to_string())],
        );
        metric(
            "cellbox_runs_unfinished",
            "gauge",
            "Runs (calls with a wait) not finished.",
            &[("", load.runs.to_string())],
        );
        metric(
            "cellbox_kernel_evictions_total",
            "counter",
            "Kernels the server stopped on its own: at the kernel limit, idle too long, or past the memory limit.",
            &[
                ("{reason=\"limit\"}", load.evictions.limit.to_string()),
                ("{reason=\"idle\"}", load.evictions.idle.to_string()),
                ("{reason=\"memory\"}", load.evictions.memory.to_string()),
            ],
        );
        metric(
            "cellbox_bytes_out_total",
            "counter",
            "Bytes sent to clients: MCP response bodies and SDK connections.",
            &[("", load_of(&self.bytes_out))],
        );
        metric(
            "cellbox_calls_in_flight",
            "gauge",
            "MCP requests whose answers are not over yet.",
            &[("", self.calls_in_flight.load(Ordering::Relaxed).to_string())],
        );
        metric(
            "cellbox_sdk_sandboxes_open",
            "gauge",
            "Open SDK connections.",
            &[("", self.sandboxes_open.load(Ordering::Relaxed).to_string())],
        );
        metric("cellbox_calls_total", "counter", "MCP requests admitted.", &[("", load_of(&self.calls_total))]);
        metric(
            "cellbox_sdk_sandboxes_total",
            "counter",
            "SDK connections admitted.",
            &[("", load_of(&self.sandboxes_total))],
        );
        metric(
            "cellbox_refused_busy_total",
            "counter",
            "Requests refused with 429 (at a limit).",
            &[("", load_of(&self.refused_busy))],
        );
        metric(
            "cellbox_refused_auth_total",
            "counter",
            "Requests refused with 401.",
            &[("", load_of(&self.refused_auth))],
        );
        metric(
            "cellbox_refused_connections_total",
            "counter",
            "Connections closed at once because the server had --max-connections open.",
            &[("", load_of(&self.refused_connections))],
        );
        let by_principal: Vec<(String, String)> = network
            .iter()
            .flat_map(|(name, allowed, refused)| {
                [
                    (format!("{{principal=\"{name}\",decision=\"allowed\"}}"), allowed.to_string()),
                    (format!("{{principal=\"{name}\",decision=\"refused\"}}"), refused.to_string()),
                ]
            })
            .collect();
        let labelled: Vec<(&str, String)> =
            by_principal.iter().map(|(labels, value)| (labels.as_str(), value.clone())).collect();
        metric(
            "cellbox_network_connections_total",
            "counter",
            "Connections the kernels' network proxies allowed and refused (--network allow:/deny:), per principal, \
             counted at the end of each call.",
            &labelled,
        );
        let name = "cellbox_call_duration_seconds";
        let _ = writeln!(out, "# HELP {name} MCP requests from admission to the end of their answer.");
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut cumulative = 0;
        for (bound, count) in BUCKETS.iter().zip(&self.buckets) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {cumulative}");
        }
        cumulative += self.buckets[BUCKETS.len()].load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {cumulative}");
        let sum = self.duration_micros.load(Ordering::Relaxed) as f64 / 1e6;
        let _ = writeln!(out, "{name}_sum {sum}\n{name}_count {cumulative}");
        out
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.metrics.gauge(self.work).fetch_sub(1, Ordering::SeqCst);
        if matches!(self.work, Work::Call) {
            self.metrics.observe(self.started.elapsed().as_secs_f64());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn admission_stops_at_the_limit_and_frees_places_on_drop() {
        let metrics = Arc::new(Metrics::default());
        let first = metrics.admit(Work::Call, 2).unwrap();
        let _second = metrics.admit(Work::Call, 2).unwrap();
        assert!(metrics.admit(Work::Call, 2).is_none());
        assert!(metrics.admit(Work::Sandbox, 1).is_some(), "each kind of work has its own limit");
        drop(first);
        assert!(metrics.admit(Work::Call, 2).is_some());
        let mut load = EngineLoad::default();
        load.kernels.busy = 1;
        load.kernels.idle = 2;
        load.evictions.idle = 4;
        let text = metrics.render(1, &load, &[("alice".into(), 3, 2)]);
        assert!(text.contains("cellbox_refused_busy_total 1\n"), "{text}");
        assert!(
            text.contains("cellbox_network_connections_total{principal=\"alice\",decision=\"refused\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("cellbox_kernels 3\n"), "{text}");
        assert!(text.contains("cellbox_kernels_by_state{state=\"busy\"} 1\n"), "{text}");
        assert!(text.contains("cellbox_kernel_evictions_total{reason=\"idle\"} 4\n"), "{text}");
        assert!(text.contains("cellbox_call_duration_seconds_count 2\n"), "{text}");
        assert!(text.contains("cellbox_calls_in_flight 1\n"), "{text}");
    }
}
