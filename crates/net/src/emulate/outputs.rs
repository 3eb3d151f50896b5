//! What an emulation leaves in its output folder:
//!
//! - `link_samples.csv`: every `sample_interval_ms`, one row per emulated
//!   link with the simulator's `link_samples` columns (crates/sim/src/
//!   tables.rs, python/latlab/schema.py): queue occupancy, cumulative
//!   arrivals, queue drops and departed bytes, and the mean and maximum
//!   sojourn of the packets dequeued since the previous row.
//! - `links.csv`: one row per emulated link (id, name, direction, kind,
//!   rate, delay, final counters and the conservation check).
//! - `packets.csv` (`--packet-log`): one row per packet read, with when it
//!   was read, its fate, when it was due at the far end and when it was
//!   written there.
//! - `<from>_to_<to>.pcap` (`--pcap` or `outputs.pcap`): the real packets'
//!   bytes as they left each link's transmitter (LINKTYPE_RAW, ns
//!   timestamps on the wall clock).
//! - `summary.json`: counters and the timing-error percentiles.

use std::io;
use std::path::Path;

use serde::Serialize;

use super::line::Hop;

/// A `link_samples` row: the simulator's columns, same names and units.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkSampleRow {
    pub time_ns: u64,
    pub link_id: u32,
    pub queue_bytes: u64,
    pub queue_pkts: u64,
    pub arrivals_pkts: u64,
    pub drops_pkts: u64,
    pub departures_bytes: u64,
    pub sojourn_mean_ns: u64,
    pub sojourn_max_ns: u64,
}

/// The row for `hop` at `time_ns`; resets the per-interval sojourn
/// accumulators, as the simulator's sampler does (crates/sim/src/measure.rs).
pub fn sample(hop: &mut Hop, time_ns: u64) -> LinkSampleRow {
    let v = hop.queue_view();
    let c = &mut hop.svc.counters;
    let row = LinkSampleRow {
        time_ns,
        link_id: hop.link_id,
        queue_bytes: v.len_bytes,
        queue_pkts: v.len_pkts,
        arrivals_pkts: c.arrivals_pkts,
        drops_pkts: v.stats.drops_pkts(),
        departures_bytes: c.departures_bytes,
        sojourn_mean_ns: c.sojourn_sum_ns.checked_div(c.sojourn_count).unwrap_or(0),
        sojourn_max_ns: c.sojourn_max_ns,
    };
    c.sojourn_sum_ns = 0;
    c.sojourn_count = 0;
    c.sojourn_max_ns = 0;
    row
}

/// A `links.csv` row, written at the end.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LinkRow {
    pub link_id: u32,
    pub name: String,
    /// "up" (client → server) or "down".
    pub direction: &'static str,
    pub kind: &'static str,
    pub qdisc: &'static str,
    pub rate_bps: u64,
    pub delay_ns: u64,
    pub arrivals_pkts: u64,
    pub departures_pkts: u64,
    pub departures_bytes: u64,
    pub drops_pkts: u64,
    /// ECN marks: ECT packets the queue set CE on instead of dropping.
    pub marks_pkts: u64,
    pub lost_pkts: u64,
    /// Queued, or (a cell) taken from the queue but not yet delivered.
    pub queued_pkts: u64,
    pub on_wire_pkts: u64,
    /// arrivals = departures + drops + lost + queued.
    pub conservation_ok: bool,
}

pub fn link_row(hop: &Hop, direction: &'static str) -> LinkRow {
    let v = hop.queue_view();
    let q = v.stats;
    let c = &hop.counters;
    // A cell's packets in HARQ are neither queued nor departed yet.
    let queued = v.len_pkts + v.in_service_pkts;
    LinkRow {
        link_id: hop.link_id,
        name: hop.name.clone(),
        direction,
        kind: hop.kind(),
        qdisc: v.name,
        rate_bps: hop.nominal_bps(),
        delay_ns: hop.delay_ns,
        arrivals_pkts: c.arrivals_pkts,
        departures_pkts: c.departures_pkts,
        departures_bytes: c.departures_bytes,
        drops_pkts: q.drops_pkts(),
        marks_pkts: q.marks_pkts,
        lost_pkts: c.lost_pkts,
        queued_pkts: queued,
        on_wire_pkts: hop.on_wire_pkts() as u64,
        conservation_ok: c.arrivals_pkts == c.departures_pkts + q.drops_pkts() + c.lost_pkts + queued,
    }
}

/// A `packets.csv` row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PacketRow {
    pub direction: &'static str,
    pub bytes: u32,
    /// When it was read from the sender's TUN, ns since the start.
    pub read_ns: u64,
    /// "delivered", "queue_drop" or "lost".
    pub fate: &'static str,
    /// The link that dropped it.
    pub drop_link_id: Option<u32>,
    /// When the model said it reaches the far end.
    pub due_ns: Option<u64>,
    /// When it was written to the receiver's TUN.
    pub written_ns: Option<u64>,
}

/// |actual − scheduled| write times in 100 ns bins up to 10 ms (one bin
/// past that), so percentiles cost no per-packet memory.
#[derive(Clone, Debug)]
pub struct TimingHistogram {
    bins: Vec<u64>,
    count: u64,
    max_ns: u64,
    sum_ns: u128,
}

const BIN_NS: u64 = 100;
const BINS: usize = 100_000;

impl Default for TimingHistogram {
    fn default() -> Self {
        TimingHistogram {
            bins: vec![0; BINS + 1],
            count: 0,
            max_ns: 0,
            sum_ns: 0,
        }
    }
}

/// Percentiles of the timing error, µs.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct TimingSummary {
    pub count: u64,
    pub mean_us: f64,
    pub p50_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

impl TimingHistogram {
    pub fn record(&mut self, error_ns: u64) {
        let bin = ((error_ns / BIN_NS) as usize).min(BINS);
        self.bins[bin] += 1;
        self.count += 1;
        self.max_ns = self.max_ns.max(error_ns);
        self.sum_ns += u128::from(error_ns);
    }

    /// The nearest-rank `q` quantile, ns (the upper edge of its bin, so
    /// never an underestimate; the maximum past the last bin).
    pub fn quantile_ns(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0;
        for (i, &n) in self.bins.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(if i == BINS {
                    self.max_ns
                } else {
                    ((i as u64 + 1) * BIN_NS).min(self.max_ns)
                });
            }
        }
        Some(self.max_ns)
    }

    pub fn summary(&self) -> Option<TimingSummary> {
        let us = |ns: u64| ns as f64 / 1e3;
        Some(TimingSummary {
            count: self.count,
            mean_us: self.sum_ns as f64 / self.count.max(1) as f64 / 1e3,
            p50_us: us(self.quantile_ns(0.5)?),
            p99_us: us(self.quantile_ns(0.99)?),
            p999_us: us(self.quantile_ns(0.999)?),
            max_us: us(self.max_ns),
        })
    }
}

/// A link's capture: the simulator's file format and name
/// ([`latlab_link::pcap`]), with the real packets' bytes.
pub type RawPcap = latlab_link::pcap::PcapFile;

/// Creates link `link_name`'s capture in `dir`, named as the simulator
/// names it; an error names the file.
pub fn create_pcap(dir: &Path, link_name: &str) -> Result<RawPcap, String> {
    let path = dir.join(latlab_link::pcap::file_name(link_name));
    latlab_link::pcap::create(&path).map_err(|e| format!("{}: {e}", path.display()))
}

/// Appends a packet that left a link at `unix_ns` (ns since the Unix
/// epoch), all its bytes captured.
pub fn write_packet(pcap: &mut RawPcap, unix_ns: u64, packet: &[u8]) -> io::Result<()> {
    pcap.write_record(unix_ns, packet, packet.len() as u32)
}

/// Per direction, in the summary.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DirectionSummary {
    pub links: Vec<String>,
    pub read_pkts: u64,
    pub read_bytes: u64,
    pub delivered_pkts: u64,
    pub delivered_bytes: u64,
    pub queue_drops_pkts: u64,
    /// Packets whose IP header a queue's ECN mark turned CE (RFC 3168).
    pub ce_marked_pkts: u64,
    pub lost_pkts: u64,
    /// Still queued or propagating when the emulator stopped.
    pub in_flight_pkts: u64,
    /// Delivered bytes (after the first packet) over the time between the
    /// first and the last write: the link's rate when it was kept busy.
    pub delivered_rate_bps: Option<f64>,
    /// The same over the scheduled (model) times.
    pub scheduled_rate_bps: Option<f64>,
    pub timing_error: Option<TimingSummary>,
}

/// Packets read from the TUN devices that were not forwarded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct InputCounters {
    /// Not IPv4 or IPv6.
    pub not_ip_pkts: u64,
    /// IPv4/IPv6 with a truncated or inconsistent header.
    pub malformed_pkts: u64,
    /// Longer than --max-packet-bytes.
    pub oversized_pkts: u64,
    /// The packet pool was full (--max-buffered-packets).
    pub no_buffer_pkts: u64,
    /// Writes to a TUN device that failed.
    pub write_errors: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub scenario: String,
    pub seed: u64,
    pub client_node: String,
    pub server_node: String,
    pub client_ns: String,
    pub server_ns: String,
    pub client_addr: String,
    pub server_addr: String,
    pub elapsed_s: f64,
    pub up: DirectionSummary,
    pub down: DirectionSummary,
    pub input: InputCounters,
    pub links: Vec<LinkRow>,
    pub max_buffered_pkts: u64,
    pub command_exit_code: Option<i32>,
    /// Router mode's interfaces (the namespace and address fields above
    /// are then empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub router: Option<RouterSummary>,
}

/// Where a router-mode link ran.
#[derive(Serialize, Debug, Clone)]
pub struct RouterSummary {
    pub router_ns: Option<String>,
    pub ingress: String,
    pub egress: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulate::line::{HopService, Line, Outcome};
    use latlab_link::LinkRate;
    use latlab_link::PacketRef;
    use latlab_qdisc::{DropTail, Limit};
    use rand::SeedableRng;

    #[test]
    fn histogram_quantiles_are_upper_bin_edges() {
        let mut h = TimingHistogram::default();
        assert!(h.summary().is_none());
        for ns in [50, 150, 250, 350, 10_000_000_000] {
            h.record(ns);
        }
        assert_eq!(h.quantile_ns(0.2), Some(100));
        assert_eq!(h.quantile_ns(0.5), Some(300));
        assert_eq!(h.quantile_ns(0.8), Some(400));
        assert_eq!(h.quantile_ns(1.0), Some(10_000_000_000));
        assert_eq!(h.summary().unwrap().count, 5);
    }

    #[test]
    fn sample_rows_carry_the_simulator_columns() {
        let hop = Hop::new(
            3,
            "a->b".into(),
            HopService::Fixed(LinkRate::Fixed { rate_bps: 12_000_000 }),
            0,
            latlab_link::LinkQueue::DropTail(DropTail::new(Limit::Packets(1))),
            0.0,
            rand_pcg::Pcg64Mcg::seed_from_u64(1),
        );
        let mut line = Line::new(vec![hop]);
        let mut out = Vec::new();
        for i in 0..3 {
            line.arrive(
                0,
                PacketRef {
                    idx: i,
                    wire_bytes: 1500,
                    flow: 0,
                    route: Default::default(),
                },
                &mut out,
            );
        }
        line.advance(1_000_000, &mut out);
        assert!(out.iter().any(|o| matches!(o, Outcome::Delivered { .. })));
        let row = sample(&mut line.hops[0], 1_000_000);
        assert_eq!(
            row,
            LinkSampleRow {
                time_ns: 1_000_000,
                link_id: 3,
                queue_bytes: 0,
                queue_pkts: 0,
                arrivals_pkts: 3,
                drops_pkts: 1,
                departures_bytes: 3000,
                sojourn_mean_ns: 500_000,
                sojourn_max_ns: 1_000_000,
            }
        );
        // The sojourn statistics are per interval.
        assert_eq!(sample(&mut line.hops[0], 2_000_000).sojourn_max_ns, 0);
        let r = link_row(&line.hops[0], "up");
        assert!(r.conservation_ok && r.departures_pkts == 2 && r.drops_pkts == 1);
        // A CSV header with the schema's column names.
        let mut w = csv::Writer::from_writer(Vec::new());
        w.serialize(&row).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(text.starts_with(
            "time_ns,link_id,queue_bytes,queue_pkts,arrivals_pkts,drops_pkts,departures_bytes,sojourn_mean_ns,sojourn_max_ns\n"
        ));
    }

    /// A capture's bytes as the emulator wrote them before the pcap format
    /// moved to `latlab_link::pcap`: they stay identical.
    #[test]
    fn pcap_bytes_are_unchanged() {
        let dir = std::env::temp_dir().join(format!("latlab-emu-pcap-pinned-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut p = create_pcap(&dir, "c->s").unwrap();
        let packet: Vec<u8> = (0..60u8).collect();
        write_packet(&mut p, 1_764_000_000_123_456_789, &packet).unwrap();
        write_packet(&mut p, 1_764_000_001_000_000_000, &[0x60, 0, 0, 0, 0, 8, 17, 64]).unwrap();
        write_packet(&mut p, u64::MAX, &[]).unwrap();
        p.finish().unwrap();
        let b = std::fs::read(dir.join("c_to_s.pcap")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        assert_eq!(hex, PINNED_PCAP_HEX);
    }

    const PINNED_PCAP_HEX: &str = concat!(
        "4d3cb2a1020004000000000000000000ffff0000650000000081246915cd5b073c0000003c0000000001020304050607",
        "08090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f3031323334353637",
        "38393a3b01812469000000000800000008000000600000000008114009fa824bffe54a2a0000000000000000",
    );

    #[test]
    fn pcap_records_hold_the_bytes() {
        let dir = std::env::temp_dir().join(format!("latlab-emu-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut p = create_pcap(&dir, "a->b#2").unwrap();
        write_packet(&mut p, 1_500_000_000_123, &[0x45, 0, 0, 20]).unwrap();
        p.finish().unwrap();
        let b = std::fs::read(dir.join("a_to_b_2.pcap")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(b.len(), 24 + 16 + 4);
        assert_eq!(u32::from_le_bytes(b[20..24].try_into().unwrap()), 101);
        assert_eq!(u32::from_le_bytes(b[24..28].try_into().unwrap()), 1500);
        assert_eq!(u32::from_le_bytes(b[28..32].try_into().unwrap()), 123);
        assert_eq!(&b[40..], &[0x45, 0, 0, 20]);
    }
}
