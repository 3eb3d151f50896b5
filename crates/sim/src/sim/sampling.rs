//! Measurement events: periodic samples and the start of the measurement window.

use super::Simulation;
use crate::engine::Event;
use crate::flow::Transport;

impl Simulation {
    /// Take a measurement sample and schedule the next.
    #[inline]
    pub(super) fn on_sample(&mut self) {
        self.samples
            .record(self.now_ns, &self.flows, &mut self.links, &self.media);
        if self.has_access {
            self.samples.record_access(
                self.now_ns,
                &self.flows,
                &mut self.links,
                &mut self.media,
                &mut self.access_delay,
            );
        }
        let next = self.now_ns + self.sample_interval_ns;
        if next <= self.duration_ns {
            self.queue.schedule(next, Event::Sample);
        }
    }

    /// The measurement window opens: snapshot the counters summaries start from.
    #[inline]
    pub(super) fn on_measure_start(&mut self) {
        let now = self.now_ns;
        for f in &mut self.flows {
            f.window_start_delivered = f.bytes_delivered();
            f.window_start_sent = f.bytes_sent();
            if let Transport::Mptcp(m) = &mut f.transport {
                m.window_start_occupancy_byte_ns = m.receiver.buffer_stats(now).occupancy_byte_ns;
                for k in 0..m.paths.len() {
                    let acked = m.paths[k]
                        .subflow
                        .and_then(|i| m.sender().subflow(i as usize))
                        .map_or(0, |s| s.tcp().stats().bytes_acked);
                    m.paths[k].window_start_acked = acked;
                }
            }
        }
        for l in &mut self.links {
            l.window_start_departures_bytes = l.counters.departures_bytes;
            if let Some(b) = l.offered_bytes_until(&mut self.media, self.now_ns) {
                l.access.window_start_offered_bytes = b;
            }
        }
    }
}
