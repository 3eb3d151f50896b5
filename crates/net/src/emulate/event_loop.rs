//! The emulator's one thread: read packets from both TUN devices, run the
//! two delay lines in wall time, write packets out when they are due.
//!
//! Each turn: run every line event due by now (writing delivered packets
//! at once), read up to [`READ_BATCH`] packets from each readable device
//! (each stamped with the clock right after its read), write due
//! `link_samples` rows, then wait for the earliest of: the next line
//! event, the next sample row, the next stop check, or a readable device.
//! The wait sleeps in `ppoll` (hrtimer, 1 µs timer slack) until
//! `--spin-us` (default [`clock::SPIN_NS`]) before the deadline and polls without sleeping for
//! the rest (crates/net/src/clock.rs says why), so a packet is written
//! within a few µs of its scheduled time on an idle core. No thread per
//! packet, no timer per packet: the lines know their next event.
//!
//! Packets are timed against the model's schedule: a write that is late
//! does not delay the next packet's scheduled departure (see line.rs), and
//! |written − due| is recorded for every delivered packet.

use latlab_qdisc::Ecn;
use std::fs::File;
use std::io::{self, BufWriter};
use std::os::fd::{AsRawFd, RawFd};

use latlab_link::PacketRef;

use super::line::{DropCause, Line, Outcome};
use super::outputs::{
    sample, write_packet, DirectionSummary, InputCounters, PacketRow, RawPcap, TimingHistogram,
};
use super::packet::{check_ip, Pool, Reject};
use super::tun::Tun;
use crate::clock;
use crate::run_files::{Recorder, RowClock};

/// Packets read from one device per turn before the lines run again: large
/// enough to drain a burst in one wake-up, small enough that a flood on one
/// side cannot starve the other side's writes.
pub const READ_BATCH: usize = 64;

/// How often the stop condition (child exited, duration) is checked.
const STOP_CHECK_NS: u64 = 5_000_000;

/// One direction: the line and what it has done.
pub struct Direction {
    pub name: &'static str,
    pub line: Line,
    /// A capture per hop (None: not captured).
    pub pcaps: Vec<Option<RawPcap>>,
    pub stats: DirectionSummary,
    pub timing: TimingHistogram,
    first_write: Option<(u64, u64)>,
    last_write_ns: u64,
    first_due: Option<(u64, u64)>,
    last_due_ns: u64,
}

impl Direction {
    pub fn new(name: &'static str, line: Line, pcaps: Vec<Option<RawPcap>>) -> Self {
        let links = line.hops.iter().map(|h| h.name.clone()).collect();
        Direction {
            name,
            line,
            pcaps,
            stats: DirectionSummary {
                links,
                ..Default::default()
            },
            timing: TimingHistogram::default(),
            first_write: None,
            last_write_ns: 0,
            first_due: None,
            last_due_ns: 0,
        }
    }

    /// Fill in the rates and the timing summary.
    pub fn finish(&mut self) {
        let rate = |first: Option<(u64, u64)>, last_ns: u64| {
            let (t0, bytes0) = first?;
            let bytes = self.stats.delivered_bytes - bytes0;
            (last_ns > t0 && bytes > 0).then(|| bytes as f64 * 8e9 / (last_ns - t0) as f64)
        };
        self.stats.delivered_rate_bps = rate(self.first_write, self.last_write_ns);
        self.stats.scheduled_rate_bps = rate(self.first_due, self.last_due_ns);
        self.stats.timing_error = self.timing.summary();
        self.stats.in_flight_pkts = self
            .line
            .hops
            .iter()
            .map(|h| {
                let v = h.queue_view();
                v.len_pkts + v.in_service_pkts + h.on_wire_pkts() as u64
            })
            .sum();
    }
}

/// Settings of one run of the loop.
pub struct LoopConfig {
    pub max_packet_bytes: usize,
    /// `link_samples` interval; 0 for none.
    pub sample_interval_ns: u64,
    /// Unix time (ns) at the loop's time 0, for pcap timestamps.
    pub unix_at_start_ns: u64,
    /// How long before a deadline the wait stops sleeping and polls.
    pub spin_ns: u64,
}

/// What the loop leaves besides the directions' own statistics.
pub struct LoopReport {
    pub input: InputCounters,
    pub elapsed_ns: u64,
    pub max_buffered_pkts: u64,
}

struct Sinks<'a> {
    samples: &'a mut Recorder,
    packets: Option<&'a mut csv::Writer<BufWriter<File>>>,
}

/// Run until `stop(elapsed_ns)` says so (checked every few ms) or SIGINT/
/// SIGTERM. `dirs[0]` reads `client` and writes `server` (the uplink),
/// `dirs[1]` the reverse.
#[allow(clippy::too_many_arguments)]
pub fn run(
    client: &Tun,
    server: &Tun,
    dirs: &mut [Direction; 2],
    pool: &mut Pool,
    cfg: &LoopConfig,
    samples: &mut Recorder,
    packets: Option<&mut csv::Writer<BufWriter<File>>>,
    stop: &mut dyn FnMut(u64) -> bool,
) -> io::Result<LoopReport> {
    clock::tighten_timer_slack();
    let mut sinks = Sinks { samples, packets };
    let start = clock::now_ns();
    let rel = || clock::now_ns() - start;
    let inputs = [client, server];
    let outputs = [server, client];
    let fds = [client.as_raw_fd(), server.as_raw_fd()];
    let mut input = InputCounters::default();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(4 * READ_BATCH);
    // One byte more than the largest packet accepted (a read longer than
    // that is oversized, whatever the kernel copied).
    let mut scratch = vec![0u8; cfg.max_packet_bytes + 1];
    let mut readable = [true, true];
    let mut rows = (cfg.sample_interval_ns > 0).then(|| RowClock::new(0, cfg.sample_interval_ns));
    let mut next_check = 0;
    let mut max_buffered = 0u64;
    loop {
        let now = rel();
        if clock::stop_requested() {
            break;
        }
        if now >= next_check {
            if stop(now) {
                break;
            }
            next_check = now + STOP_CHECK_NS;
        }
        for (d, dir) in dirs.iter_mut().enumerate() {
            dir.line.advance(now, &mut outcomes);
            settle(
                dir,
                outputs[d],
                pool,
                &mut outcomes,
                &mut input,
                cfg,
                &mut sinks,
                start,
            )?;
        }
        for (d, dir) in dirs.iter_mut().enumerate() {
            if !readable[d] {
                continue;
            }
            for _ in 0..READ_BATCH {
                let Some(n) = inputs[d].read(&mut scratch)? else {
                    break;
                };
                let t = rel();
                // The kernel returns a longer packet's full length but
                // copies only what fits: check before slicing.
                if n > cfg.max_packet_bytes {
                    input.oversized_pkts += 1;
                    continue;
                }
                let bytes = &scratch[..n];
                match check_ip(bytes) {
                    Err(Reject::NotIp) => {
                        input.not_ip_pkts += 1;
                        continue;
                    }
                    Err(Reject::Malformed) => {
                        input.malformed_pkts += 1;
                        continue;
                    }
                    Ok(()) => {}
                }
                dir.stats.read_pkts += 1;
                dir.stats.read_bytes += n as u64;
                let Some(pkt) = pool.insert(bytes, t) else {
                    input.no_buffer_pkts += 1;
                    continue;
                };
                max_buffered = max_buffered.max(pool.in_use() as u64);
                dir.line.arrive(t, pkt, &mut outcomes);
                settle(
                    dir,
                    outputs[d],
                    pool,
                    &mut outcomes,
                    &mut input,
                    cfg,
                    &mut sinks,
                    start,
                )?;
            }
        }
        if let Some(rc) = rows.as_mut() {
            while let Some(t) = rc.take_due(now) {
                for dir in dirs.iter_mut() {
                    for hop in dir.line.hops.iter_mut() {
                        sinks.samples.row(&sample(hop, t))?;
                    }
                }
            }
        }
        let deadline = dirs
            .iter()
            .filter_map(|d| d.line.next_due_ns())
            .chain(rows.as_ref().map(RowClock::next_ns))
            .chain([next_check])
            .min()
            .expect("next_check is always there");
        readable = wait(&fds, deadline, rel(), cfg.spin_ns);
    }
    Ok(LoopReport {
        input,
        elapsed_ns: rel(),
        max_buffered_pkts: max_buffered,
    })
}

/// Act on the line's outcomes: capture, count, write, free.
#[allow(clippy::too_many_arguments)]
fn settle(
    dir: &mut Direction,
    out: &Tun,
    pool: &mut Pool,
    outcomes: &mut Vec<Outcome>,
    input: &mut InputCounters,
    cfg: &LoopConfig,
    sinks: &mut Sinks,
    start: u64,
) -> io::Result<()> {
    for o in outcomes.drain(..) {
        match o {
            Outcome::Left {
                hop, pkt, leave_ns, ..
            } => {
                // The hop's queue marked the packet: the real header says so
                // from here on (the next hop, the pcap and the receiver).
                if pkt.route.ecn() == Ecn::Ce && pool.set_ce(pkt.idx) {
                    dir.stats.ce_marked_pkts += 1;
                }
                if let Some(p) = dir.pcaps[hop].as_mut() {
                    write_packet(p, cfg.unix_at_start_ns + leave_ns, pool.bytes(pkt.idx))?;
                }
            }
            Outcome::Dropped { hop, pkt, cause } => {
                match cause {
                    DropCause::Queue => dir.stats.queue_drops_pkts += 1,
                    DropCause::Lost => dir.stats.lost_pkts += 1,
                }
                let fate = match cause {
                    DropCause::Queue => "queue_drop",
                    DropCause::Lost => "lost",
                };
                log(
                    sinks,
                    dir.name,
                    pool,
                    pkt,
                    fate,
                    Some(dir.line.hops[hop].link_id),
                    None,
                    None,
                )?;
                pool.release(pkt.idx);
            }
            Outcome::Delivered { pkt, due_ns } => {
                if out.write(pool.bytes(pkt.idx)).is_err() {
                    input.write_errors += 1;
                }
                let written = clock::now_ns() - start;
                dir.timing.record(written.abs_diff(due_ns));
                let bytes = u64::from(pkt.wire_bytes);
                dir.stats.delivered_pkts += 1;
                dir.stats.delivered_bytes += bytes;
                let total = dir.stats.delivered_bytes;
                dir.first_write.get_or_insert((written, total));
                dir.first_due.get_or_insert((due_ns, total));
                dir.last_write_ns = written;
                dir.last_due_ns = due_ns;
                log(
                    sinks,
                    dir.name,
                    pool,
                    pkt,
                    "delivered",
                    None,
                    Some(due_ns),
                    Some(written),
                )?;
                pool.release(pkt.idx);
            }
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn log(
    sinks: &mut Sinks,
    direction: &'static str,
    pool: &Pool,
    pkt: PacketRef,
    fate: &'static str,
    drop_link_id: Option<u32>,
    due_ns: Option<u64>,
    written_ns: Option<u64>,
) -> io::Result<()> {
    if let Some(w) = sinks.packets.as_mut() {
        w.serialize(PacketRow {
            direction,
            bytes: pkt.wire_bytes,
            read_ns: pool.read_ns(pkt.idx),
            fate,
            drop_link_id,
            due_ns,
            written_ns,
        })
        .map_err(io::Error::other)?;
    }
    Ok(())
}

/// Wait until `deadline_ns` (loop time) or a device is readable; which
/// devices are readable.
fn wait(fds: &[RawFd; 2], deadline_ns: u64, now_ns: u64, spin_ns: u64) -> [bool; 2] {
    let left = deadline_ns.saturating_sub(now_ns);
    let timeout_ns = if left > spin_ns {
        left - spin_ns
    } else {
        // Spin: look without sleeping, the next turn re-checks the clock.
        std::hint::spin_loop();
        0
    };
    let mut pfds = fds.map(|fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    });
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: two valid pollfds, a valid timespec, no signal mask change.
    let n = unsafe { libc::ppoll(pfds.as_mut_ptr(), 2, &ts, std::ptr::null()) };
    if n <= 0 {
        return [false, false];
    }
    pfds.map(|p| p.revents & libc::POLLIN != 0)
}
