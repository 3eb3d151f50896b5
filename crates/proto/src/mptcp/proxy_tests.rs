//! Dialogue tests of the MPTCP proxy: a server's TcpSender → one link →
//! the proxy → one path per subflow → an MptcpReceiver (the client), over
//! deterministic FIFO links.

use std::collections::VecDeque;

use super::*;
use crate::cc::by_name;
use crate::segment::Segment;
use crate::tcp::{FixedRwnd, TcpConfig, TcpReceiver, TcpSender, LARGE_RWND_BYTES};
use crate::{NS_PER_MS, NS_PER_SEC};

const MSS: u64 = 1448;
const HDR: u64 = 52;
const MBPS: u64 = 1_000_000;

/// Where a link delivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum To {
    Server,
    ProxyUpstream,
    ProxySubflow(usize),
    Client(usize),
}

/// One direction: serialization at `rate_bps`, then `prop_ns`; `drop_all`
/// makes it a dead path.
struct Link {
    rate_bps: u64,
    prop_ns: u64,
    to: To,
    drop_all: bool,
    busy_until: u64,
    /// (arrival, segment), FIFO.
    q: VecDeque<(u64, Segment)>,
}

impl Link {
    fn new(rate_bps: u64, one_way_ms: u64, to: To) -> Self {
        Link {
            rate_bps,
            prop_ns: one_way_ms * NS_PER_MS,
            to,
            drop_all: false,
            busy_until: 0,
            q: VecDeque::new(),
        }
    }

    fn tx_ns(&self, wire_bytes: u64) -> u64 {
        (wire_bytes * 8 * NS_PER_SEC).div_ceil(self.rate_bps)
    }

    fn send(&mut self, now: u64, seg: Segment) {
        if self.drop_all {
            return;
        }
        let start = self.busy_until.max(now);
        let finish = start + self.tx_ns(HDR + seg.payload_bytes as u64);
        self.busy_until = finish;
        self.q.push_back((finish + self.prop_ns, seg));
    }
}

struct Net {
    now: u64,
    server: TcpSender,
    server_started: bool,
    proxy: MptcpProxy,
    client: MptcpReceiver,
    /// Links: 0 server → proxy, 1 proxy → server, then per subflow i:
    /// 2 + 2i proxy → client, 3 + 2i client → proxy.
    links: Vec<Link>,
    /// Largest server flight seen once established, and the smallest
    /// window the server was offered.
    server_max_flight: u64,
    server_min_rwnd: u64,
    relay_max_seen: u64,
    /// ∫ relay occupancy dt as the harness sees it: the occupancy after
    /// each batch of events, held until the next.
    relay_integral: u128,
    relay_last: (u64, u64),
    first_client_byte_at: Option<u64>,
}

fn cfg() -> TcpConfig {
    TcpConfig::linux()
}

/// A proxy with subflows over `paths` = (rate, one-way ms) each.
struct Setup {
    total: Option<u64>,
    upstream: (u64, u64),
    upstream_rwnd: u64,
    paths: Vec<(u64, u64)>,
    proxy: ProxyConfig,
    client_buffer: u64,
}

impl Setup {
    fn new(paths: &[(u64, u64)], proxy: ProxyConfig) -> Self {
        Setup {
            total: Some(3_000_000),
            upstream: (100 * MBPS, 5),
            upstream_rwnd: LARGE_RWND_BYTES,
            paths: paths.to_vec(),
            proxy,
            client_buffer: LARGE_RWND_BYTES,
        }
    }

    fn build(&self) -> Net {
        let c = cfg();
        let mut up_cfg = c.clone();
        up_cfg.rwnd_bytes = self.upstream_rwnd;
        let upstream = TcpReceiver::new(up_cfg.clone(), Box::new(FixedRwnd(up_cfg.rwnd_bytes)));
        let mut down = MptcpSender::new(MptcpConfig::default(), Some(0));
        let mut client = MptcpReceiver::new(self.client_buffer);
        let mut links = vec![
            Link::new(self.upstream.0, self.upstream.1, To::ProxyUpstream),
            Link::new(self.upstream.0, self.upstream.1, To::Server),
        ];
        for (i, &(rate, ms)) in self.paths.iter().enumerate() {
            down.add_subflow(0, c.clone(), by_name("lia", MSS).unwrap(), false);
            client.add_subflow(c.clone());
            links.push(Link::new(rate, ms, To::Client(i)));
            links.push(Link::new(rate, ms, To::ProxySubflow(i)));
        }
        Net {
            now: 0,
            server: TcpSender::new(c.clone(), by_name("cubic", MSS).unwrap(), self.total),
            server_started: false,
            proxy: MptcpProxy::new(self.proxy, upstream, down).unwrap(),
            client,
            links,
            server_max_flight: 0,
            server_min_rwnd: u64::MAX,
            relay_max_seen: 0,
            relay_integral: 0,
            relay_last: (0, 0),
            first_client_byte_at: None,
        }
    }
}

impl Net {
    fn start(&mut self) {
        self.proxy.connect(self.now);
    }

    fn flush(&mut self) {
        let now = self.now;
        if !self.server_started && self.proxy.upstream_connect_at().is_some_and(|t| t <= now) {
            self.server.connect(now);
            self.server_started = true;
        }
        while let Some(seg) = self.server.poll_transmit(now) {
            self.links[0].send(now, seg);
        }
        while let Some(out) = self.proxy.poll_transmit(now) {
            match out {
                ProxyOutput::Upstream(seg) => self.links[1].send(now, seg),
                ProxyOutput::Subflow(i, seg) => self.links[2 + 2 * i].send(now, seg),
            }
        }
        while let Some((i, seg)) = self.client.poll_transmit(now) {
            self.links[3 + 2 * i].send(now, seg);
        }
        if self.server.is_established() {
            self.server_max_flight = self
                .server_max_flight
                .max(self.server.snd_max() - self.server.snd_una());
            self.server_min_rwnd = self.server_min_rwnd.min(self.server.peer_rwnd_bytes());
        }
        let occ = self.proxy.relay_occupancy_bytes();
        self.relay_max_seen = self.relay_max_seen.max(occ);
        let (t, last) = self.relay_last;
        self.relay_integral += u128::from(last) * u128::from(now - t);
        self.relay_last = (now, occ);
        if self.first_client_byte_at.is_none() && self.client.bytes_delivered() > 0 {
            self.first_client_byte_at = Some(now);
        }
    }

    fn next_event(&self) -> Option<u64> {
        let connect = match self.proxy.upstream_connect_at() {
            Some(t) if !self.server_started => Some(t),
            _ => None,
        };
        self.links
            .iter()
            .map(|l| l.q.front().map(|p| p.0))
            .chain([
                self.server.next_timeout(),
                self.proxy.next_timeout(),
                self.client.next_timeout(),
                connect,
            ])
            .flatten()
            .min()
    }

    /// Run until `until_ns` or, with `stop_at_completion`, until the
    /// client has everything the server sends.
    fn run(&mut self, until_ns: u64, stop_at_completion: bool) {
        for _ in 0..100_000_000u64 {
            self.flush();
            if stop_at_completion && self.server.is_complete() && self.proxy.downstream().is_complete() {
                return;
            }
            let Some(t) = self.next_event() else { return };
            if t > until_ns {
                self.now = until_ns;
                return;
            }
            self.now = self.now.max(t);
            let now = self.now;
            for l in 0..self.links.len() {
                while self.links[l].q.front().is_some_and(|p| p.0 <= now) {
                    let (_, seg) = self.links[l].q.pop_front().unwrap();
                    match self.links[l].to {
                        To::Server => self.server.on_segment(now, &seg),
                        To::ProxyUpstream => self.proxy.on_upstream_segment(now, &seg),
                        To::ProxySubflow(i) => self.proxy.on_subflow_segment(now, i, &seg),
                        To::Client(i) => self.client.on_segment(now, i, &seg),
                    }
                }
            }
            self.server.on_timeout(now);
            self.proxy.on_timeout(now);
            self.client.on_timeout(now);
        }
        panic!("the dialogue did not settle");
    }

    /// Data bytes subflow `i` has had acknowledged at its level.
    fn sub_acked(&self, i: usize) -> u64 {
        self.proxy
            .downstream()
            .subflow(i)
            .unwrap()
            .tcp()
            .stats()
            .bytes_acked
    }

    fn assert_delivered(&self, total: u64) {
        assert!(self.server.is_complete(), "the server did not finish");
        let s = self.proxy.stats(self.now);
        assert_eq!(s.bytes_read_upstream, total, "{s:?}");
        assert_eq!(s.bytes_to_downstream, total, "{s:?}");
        assert_eq!(s.bytes_relayed, total, "{s:?}");
        assert_eq!(s.relay_occupancy_bytes, 0, "{s:?}");
        assert_eq!(s.delay_line_bytes, 0, "{s:?}");
        assert_eq!(s.upstream_unread_bytes, 0, "{s:?}");
        assert_eq!(self.client.bytes_delivered(), total);
        assert_eq!(self.client.buffer().occupancy_bytes(), 0);
        assert_eq!(self.client.stats().unmapped_segments, 0);
        assert!(self.proxy.downstream().is_complete());
    }
}

fn plain(relay_bytes: u64) -> ProxyConfig {
    ProxyConfig {
        relay_bytes,
        data_delay_ns: 0,
        syn_delay_ns: 0,
        throttle: None,
    }
}

#[test]
fn every_byte_crosses_the_proxy_in_order_over_both_subflows() {
    let total = 3_000_000;
    let setup = Setup::new(&[(10 * MBPS, 5), (10 * MBPS, 15)], plain(1 << 20));
    let mut n = setup.build();
    n.start();
    n.run(60 * NS_PER_SEC, true);
    n.assert_delivered(total);
    // Both subflows carried data, and together exactly the transfer.
    let (a, b) = (n.sub_acked(0), n.sub_acked(1));
    assert_eq!(a + b, total);
    assert!(a > total / 5 && b > total / 10, "split {a} / {b}");
    // The relay was used and stayed within its bound.
    let s = n.proxy.stats(n.now);
    assert!(
        s.relay_max_bytes > 10 * MSS && s.relay_max_bytes <= 1 << 20,
        "{s:?}"
    );
    assert_eq!(s.relay_max_bytes, n.relay_max_seen);
    assert_eq!(s.relay_occupancy_byte_ns, n.relay_integral);
    let mean = n.relay_integral as f64 / n.now as f64;
    assert!((s.relay_mean_bytes - mean).abs() < 1e-6 * mean, "{s:?}");
    assert!(s.relay_mean_bytes > 0.0 && s.relay_mean_bytes < s.relay_max_bytes as f64);
    assert_eq!(s.throttle_installed_at_ns, None);
}

#[test]
fn a_small_relay_back_pressures_the_server() {
    // Server side 100 Mb/s, client side 2 × 2 Mb/s: the proxy cannot pass
    // on what the server could send. Relay 64 KB, upstream buffer 64 KB.
    let total = 2_000_000;
    let relay = 64 * 1024;
    let rwnd = 64 * 1024;
    let mut setup = Setup::new(&[(2 * MBPS, 5), (2 * MBPS, 10)], plain(relay));
    setup.total = Some(total);
    setup.upstream_rwnd = rwnd;
    let mut n = setup.build();
    n.start();
    n.run(120 * NS_PER_SEC, true);
    n.assert_delivered(total);
    let s = n.proxy.stats(n.now);
    // The relay filled up to its bound and never beyond.
    assert!(n.relay_max_seen <= relay && s.relay_max_bytes <= relay, "{s:?}");
    assert!(s.relay_max_bytes > relay - 2 * MSS, "{s:?}");
    // The upstream window closed: the server was offered a zero window,
    // its flight never exceeded the upstream buffer (plus one zero-window
    // probe), and the proxy's reads reopened it with window updates.
    assert_eq!(n.server_min_rwnd, 0);
    assert!(
        n.server_max_flight <= rwnd + MSS,
        "flight {}",
        n.server_max_flight
    );
    assert!(s.upstream_window_updates > 0, "{s:?}");
    // Without the bound (a relay as large as the transfer) the server
    // runs far ahead of the client side.
    let mut free = Setup::new(&[(2 * MBPS, 5), (2 * MBPS, 10)], plain(1 << 30));
    free.total = Some(total);
    free.upstream_rwnd = rwnd;
    let mut f = free.build();
    f.start();
    f.run(120 * NS_PER_SEC, true);
    f.assert_delivered(total);
    assert!(f.relay_max_seen > total / 2, "{}", f.relay_max_seen);
    assert!(f.server.completed_at_ns().unwrap() < n.server.completed_at_ns().unwrap() / 4);
}

/// Serialization of `bytes` at `rate_bps`, ns (rounded up, as the links do).
fn ser(bytes: u64, rate_bps: u64) -> u64 {
    (bytes * 8 * NS_PER_SEC).div_ceil(rate_bps)
}

#[test]
fn conversion_delays_add_to_the_first_bytes_arrival_as_computed_by_hand() {
    // One subflow, 10 Mb/s and 10 ms one way; server side 100 Mb/s, 5 ms.
    let first_byte = |syn_delay_ns: u64, data_delay_ns: u64| {
        let mut setup = Setup::new(
            &[(10 * MBPS, 10)],
            ProxyConfig {
                relay_bytes: 1 << 20,
                data_delay_ns,
                syn_delay_ns,
                throttle: None,
            },
        );
        setup.total = Some(100 * MSS);
        let mut n = setup.build();
        n.start();
        n.run(10 * NS_PER_SEC, true);
        n.assert_delivered(100 * MSS);
        let s = n.proxy.stats(n.now);
        (
            n.first_client_byte_at.unwrap(),
            s.upstream_connect_at_ns.unwrap(),
            s.first_subflow_established_at_ns.unwrap(),
        )
    };
    let (ms, syn, data) = (NS_PER_MS, 7_800_000, 15_300_000);
    // The subflow's handshake: SYN and SYN-ACK, header only, 10 Mb/s + 10 ms.
    let established = 2 * (ser(HDR, 10 * MBPS) + 10 * ms);
    // The server's: SYN and SYN-ACK at 100 Mb/s + 5 ms; then its first
    // data segment reaches the proxy, is read at once, waits the data
    // delay, and crosses the subflow.
    let upstream_handshake = 2 * (ser(HDR, 100 * MBPS) + 5 * ms);
    let data_up = ser(HDR + MSS, 100 * MBPS) + 5 * ms;
    let data_down = ser(HDR + MSS, 10 * MBPS) + 10 * ms;
    let expect = |s: u64, d: u64| established + s + upstream_handshake + data_up + d + data_down;
    assert_eq!(first_byte(0, 0), (expect(0, 0), established, established));
    assert_eq!(
        first_byte(syn, 0),
        (expect(syn, 0), established + syn, established)
    );
    assert_eq!(first_byte(0, data), (expect(0, data), established, established));
    assert_eq!(first_byte(syn, data).0, expect(0, 0) + syn + data);
}

/// Wired (20 Mb/s, 5 ms) and Wi-Fi-like (10 Mb/s, 15 ms) subflows, bulk
/// data from a 15 Mb/s server side, the wired subflow throttled to
/// `rate_bps` 2 s after both are up.
fn throttled(rate_bps: u64, wifi_dead: bool) -> Net {
    let throttle = ThrottleConfig {
        subflow: 0,
        rate_bps,
        after_ns: 2 * NS_PER_SEC,
        queue_bytes: 30_000,
        header_bytes: HDR as u32,
    };
    let mut setup = Setup::new(
        &[(20 * MBPS, 5), (10 * MBPS, 15)],
        ProxyConfig {
            relay_bytes: 2 << 20,
            data_delay_ns: 0,
            syn_delay_ns: 0,
            throttle: Some(throttle),
        },
    );
    setup.total = None;
    // The server side (15 Mb/s) is slower than the two paths together: the
    // wired subflow alone could carry it all.
    setup.upstream = (15 * MBPS, 5);
    let mut n = setup.build();
    if wifi_dead {
        n.links[4].drop_all = true;
    }
    n.start();
    n
}

#[test]
fn the_throttle_caps_its_subflow_and_traffic_moves_to_the_other() {
    let rate = 2 * MBPS;
    let mut n = throttled(rate, false);
    // Before installation: the wired subflow carries most (lower RTT,
    // twice the rate).
    n.run(2 * NS_PER_SEC, false);
    let s = n.proxy.stats(n.now);
    let second = s.second_subflow_established_at_ns.unwrap();
    assert_eq!(s.throttle_installed_at_ns, None);
    n.run(second + 2 * NS_PER_SEC - 1, false);
    assert_eq!(n.proxy.stats(n.now).throttle_installed_at_ns, None);
    let before = (n.sub_acked(0), n.sub_acked(1));
    assert!(before.0 > 2 * before.1, "before: {before:?}");
    n.run(second + 2 * NS_PER_SEC, false);
    let installed = n.proxy.stats(n.now).throttle_installed_at_ns;
    assert_eq!(installed, Some(second + 2 * NS_PER_SEC));
    // Give the queue that built before installation time to drain, then
    // measure 20 s.
    let t0 = n.now + 3 * NS_PER_SEC;
    n.run(t0, false);
    let at_t0 = (n.sub_acked(0), n.sub_acked(1));
    let outstanding_t0 = {
        let t = n.proxy.downstream().subflow(0).unwrap().tcp();
        t.snd_max() - t.snd_una()
    };
    let departed_t0 = n.proxy.stats(n.now).shaper_departures_bytes;
    let window = 20 * NS_PER_SEC;
    n.run(t0 + window, false);
    let wired = n.sub_acked(0) - at_t0.0;
    let wifi = n.sub_acked(1) - at_t0.1;
    // The bucket: wire bytes out in the window ≤ rate·T + one burst.
    let burst = MSS + HDR;
    let departed = n.proxy.stats(n.now).shaper_departures_bytes - departed_t0;
    let rate_bytes = rate / 8 * (window / NS_PER_SEC);
    assert!(
        departed <= rate_bytes + burst,
        "{departed} > {rate_bytes} + {burst}"
    );
    assert!(
        departed > rate_bytes * 95 / 100,
        "the bucket idled: {departed} of {rate_bytes}"
    );
    // Goodput: at most the rate less the headers, plus one burst, plus
    // what was outstanding at the window's start (it may be acknowledged
    // in the window, e.g. SACKed data when a hole is repaired).
    let payload_cap = rate_bytes * MSS / (MSS + HDR);
    assert!(
        wired <= payload_cap + burst + outstanding_t0,
        "wired {wired} > {payload_cap} + {burst} + {outstanding_t0}"
    );
    // ... and close to it: the bucket is kept busy.
    assert!(wired > payload_cap * 85 / 100, "wired {wired} of {payload_cap}");
    // Traffic moved to the Wi-Fi subflow, which now carries most.
    assert!(wifi > 3 * wired, "wired {wired}, wifi {wifi}");
    let s = n.proxy.stats(n.now);
    assert!(s.shaper_departures_pkts > 0);
    assert!(s.shaper_max_queue_bytes <= 30_000, "{s:?}");
    assert!(n.proxy.shaper().is_some());
    let wifi_before_rate = before.1 as f64 / (second + 2 * NS_PER_SEC) as f64;
    let wifi_after_rate = wifi as f64 / window as f64;
    assert!(
        wifi_after_rate > 1.5 * wifi_before_rate,
        "{wifi_before_rate} → {wifi_after_rate}"
    );
}

#[test]
fn the_throttle_waits_for_a_second_established_subflow() {
    // The Wi-Fi path never delivers: one subflow only, never throttled.
    let mut n = throttled(2 * MBPS, true);
    n.run(20 * NS_PER_SEC, false);
    let s = n.proxy.stats(n.now);
    assert!(s.first_subflow_established_at_ns.is_some());
    assert_eq!(s.second_subflow_established_at_ns, None);
    assert_eq!(s.throttle_installed_at_ns, None);
    assert_eq!(s.shaper_departures_pkts, 0);
    // The wired subflow runs well above the throttle's rate.
    assert!(n.sub_acked(0) > 20 * 2 * MBPS / 8 * 3, "{}", n.sub_acked(0));
}

#[test]
fn invalid_configurations_are_errors_naming_the_field() {
    let mk = |proxy: ProxyConfig, subflows: usize, app: Option<u64>| {
        let c = cfg();
        let up = TcpReceiver::new(c.clone(), Box::new(FixedRwnd(c.rwnd_bytes)));
        let mut down = MptcpSender::new(MptcpConfig::default(), app);
        for _ in 0..subflows {
            down.add_subflow(0, c.clone(), by_name("lia", MSS).unwrap(), false);
        }
        MptcpProxy::new(proxy, up, down).err()
    };
    let t = ThrottleConfig {
        subflow: 1,
        rate_bps: 1,
        after_ns: 0,
        queue_bytes: 10_000,
        header_bytes: 52,
    };
    let with = |t: ThrottleConfig| ProxyConfig {
        throttle: Some(t),
        ..plain(1000)
    };
    assert_eq!(mk(with(t), 2, Some(0)), None);
    assert!(mk(plain(0), 2, Some(0)).unwrap().contains("relay_bytes"));
    assert!(mk(with(t), 1, Some(0)).unwrap().contains("throttle.subflow"));
    assert!(mk(with(ThrottleConfig { rate_bps: 0, ..t }), 2, Some(0))
        .unwrap()
        .contains("throttle.rate_bps"));
    assert!(mk(
        with(ThrottleConfig {
            queue_bytes: 1000,
            ..t
        }),
        2,
        Some(0)
    )
    .unwrap()
    .contains("throttle.queue_bytes"));
    assert!(mk(plain(1000), 2, None).unwrap().contains("Some(0)"));
    assert!(mk(plain(1000), 0, Some(0)).unwrap().contains("no subflows"));
}
