//! Memory a scenario will need, estimated before anything is allocated.
//!
//! A scenario with `pairs = 999999999` would otherwise die in an allocation
//! failure (an abort, not an error) or be killed by the kernel half-way
//! through building. The estimate counts nodes, links and flows from the
//! scenario's own numbers (a built-in topology's size is arithmetic on its
//! keys), prices them at the bytes each costs once built (measured with
//! `latlab bench --scale`, rounded up), and refuses the scenario when the
//! total exceeds the limit: the caller's, or else the memory the machine
//! has available. The error names the key that makes the scenario large.
//!
//! The estimate is the set-up cost of an idle network; packets in flight
//! and time series come on top while it runs, so the limit keeps a margin.

use crate::scenario::{Scenario, ScenarioError, Topology};
use crate::wire::Hop;

/// Bytes per node once built: its name and index entries.
pub const BYTES_PER_NODE: u64 = 96;
/// Bytes per link once built: the link, its name, its boxed queue and
/// their first buffers (measured: see `latlab bench --scale`).
pub const BYTES_PER_LINK: u64 = 1_024;
/// Bytes per idle TCP flow once built: the flow, its sender and receiver,
/// controller, scoreboard and paths (measured: see `latlab bench --scale`).
pub const BYTES_PER_FLOW: u64 = 2_560;
/// Bytes per row of link time series at the peak of a run: the column
/// vectors (growing by doubling), then the Arrow table built from them.
pub const BYTES_PER_LINK_SAMPLE: u64 = 256;
/// Bytes per row of flow time series at the peak of a run, as above.
pub const BYTES_PER_FLOW_SAMPLE: u64 = 320;
/// Share of the available memory a build may plan to use: the run needs
/// room beyond the idle network (packets, samples, results).
const AVAILABLE_SHARE: f64 = 0.8;

/// How large a scenario is, and which keys make it so.
#[derive(Debug, Clone, PartialEq)]
pub struct Footprint {
    pub nodes: u64,
    pub links: u64,
    pub flows: u64,
    /// The key and value behind the node/link count, e.g. ("topology.pairs", 1000).
    pub topology_key: (String, u64),
    /// The largest flow group's count key, e.g. (`"flows[0].count"`, 1000).
    pub flow_key: Option<(String, u64)>,
}

impl Footprint {
    pub fn of(sc: &Scenario) -> Footprint {
        let (nodes, links, topology_key) = match &sc.topology {
            Topology::Dumbbell(d) => {
                let n = d.pairs as u64;
                (2 * n + 2, 4 * n + 2, ("topology.pairs".to_string(), n))
            }
            Topology::EdgeDumbbell(e) => {
                let (edges, per) = (e.edges as u64, e.hosts_per_edge as u64);
                let hosts = edges * per;
                let key = if per >= edges {
                    ("topology.hosts_per_edge".to_string(), per)
                } else {
                    ("topology.edges".to_string(), edges)
                };
                (2 * hosts + 2 * edges + 2, 4 * hosts + 4 * edges + 2, key)
            }
            // Server, optional wired router, base station or AP, N users:
            // a per-user downlink and uplink each, plus the wired links.
            Topology::Cellular(c) => {
                let n = c.users as u64;
                (n + 3, 2 * n + 4, ("topology.users".to_string(), n))
            }
            Topology::Wifi(w) => {
                let n = w.stations as u64;
                (n + 3, 2 * n + 4, ("topology.stations".to_string(), n))
            }
            Topology::Custom(c) => (
                c.nodes.len() as u64,
                c.links.len() as u64,
                ("topology.links".to_string(), c.links.len() as u64),
            ),
        };
        // An MPTCP connection holds a TCP sender/receiver pair per path.
        let flows = sc
            .flows
            .iter()
            .map(|g| g.count as u64 * g.mptcp.as_ref().map_or(1, |m| m.paths.len().max(1) as u64))
            .sum();
        let flow_key = sc
            .flows
            .iter()
            .enumerate()
            .max_by_key(|(i, g)| (g.count, std::cmp::Reverse(*i)))
            .map(|(i, g)| (format!("flows[{i}].count"), g.count as u64));
        Footprint {
            nodes,
            links,
            flows,
            topology_key,
            flow_key,
        }
    }

    /// Estimated bytes once built.
    pub fn bytes(&self) -> f64 {
        self.nodes as f64 * BYTES_PER_NODE as f64
            + self.links as f64 * BYTES_PER_LINK as f64
            + self.flows as f64 * BYTES_PER_FLOW as f64
    }

    /// The key to name in an error: the topology's or the flows', whichever costs more.
    fn culprit(&self) -> (String, u64) {
        let net = self.nodes as f64 * BYTES_PER_NODE as f64 + self.links as f64 * BYTES_PER_LINK as f64;
        let flows = self.flows as f64 * BYTES_PER_FLOW as f64;
        match &self.flow_key {
            Some(k) if flows > net => k.clone(),
            _ => self.topology_key.clone(),
        }
    }
}

/// Where the memory limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryLimit {
    /// The memory the machine has available now (Linux: MemAvailable), if known.
    #[default]
    Machine,
    /// An explicit limit in bytes (`--max-memory`).
    Bytes(u64),
    /// No check.
    Unlimited,
}

/// MemAvailable from /proc/meminfo, bytes.
pub fn machine_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Human-readable bytes: "3.2 GB".
pub fn human_bytes(b: f64) -> String {
    const UNITS: [&str; 6] = ["B", "kB", "MB", "GB", "TB", "PB"];
    let mut v = b;
    let mut u = 0;
    while v >= 1000.0 && u + 1 < UNITS.len() {
        v /= 1000.0;
        u += 1;
    }
    if u == 0 {
        format!("{v:.0} {}", UNITS[u])
    } else {
        format!("{v:.1} {}", UNITS[u])
    }
}

/// Refuse a scenario whose estimated memory exceeds the limit.
pub fn check(sc: &Scenario, source: &str, limit: MemoryLimit) -> Result<Footprint, ScenarioError> {
    let fp = Footprint::of(sc);
    let (limit_bytes, what) = match limit {
        MemoryLimit::Unlimited => (f64::INFINITY, String::new()),
        MemoryLimit::Bytes(b) => (b as f64, "the --max-memory limit of".to_string()),
        MemoryLimit::Machine => match machine_available_bytes() {
            Some(b) => (
                b as f64 * AVAILABLE_SHARE,
                "the memory this machine can spare,".to_string(),
            ),
            None => (f64::INFINITY, String::new()),
        },
    };
    let need = fp.bytes();
    if need > limit_bytes {
        let (key, value) = fp.culprit();
        return Err(ScenarioError {
            source_name: source.to_string(),
            path: key,
            message: format!(
                "{value} needs about {} to build ({} nodes, {} links, {} flows), \
                 more than {what} {}; make the network smaller",
                human_bytes(need),
                fp.nodes,
                fp.links,
                fp.flows,
                human_bytes(limit_bytes)
            ),
        });
    }
    // Events name a link in 30 bits (see `wire::Hop`), whatever the memory.
    if fp.links > u64::from(Hop::MAX_INDEX) {
        let (key, value) = fp.culprit();
        return Err(ScenarioError {
            source_name: source.to_string(),
            path: key,
            message: format!(
                "{value} makes {} links, too many: latlab addresses at most {} links",
                fp.links,
                Hop::MAX_INDEX
            ),
        });
    }
    Ok(fp)
}

/// The time series a run will keep: one row per sample time for every
/// sampled link and every sampled flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Series {
    pub sample_interval_ns: u64,
    pub duration_ns: u64,
    pub sampled_links: u64,
    pub sampled_flows: u64,
}

impl Series {
    /// Sample times in a run (none when sampling is off).
    pub fn samples(&self) -> u64 {
        match self.duration_ns.checked_div(self.sample_interval_ns) {
            Some(n) => n + 1,
            None => 0,
        }
    }

    /// Estimated bytes of time series at the end of the run.
    pub fn bytes(&self) -> f64 {
        self.samples() as f64
            * (self.sampled_links as f64 * BYTES_PER_LINK_SAMPLE as f64
                + self.sampled_flows as f64 * BYTES_PER_FLOW_SAMPLE as f64)
    }
}

/// Refuse a run whose time series alone would not fit beside the network
/// (`built_bytes`, from [`check`]): a fine `sample_interval_ms` over a long
/// run of a large network would otherwise be killed by the kernel at the
/// end, with nothing written.
pub fn check_series(
    series: &Series,
    built_bytes: f64,
    source: &str,
    limit: MemoryLimit,
) -> Result<(), ScenarioError> {
    let (limit_bytes, what) = match limit {
        MemoryLimit::Unlimited => return Ok(()),
        MemoryLimit::Bytes(b) => (b as f64, "the --max-memory limit of".to_string()),
        MemoryLimit::Machine => match machine_available_bytes() {
            Some(b) => (
                b as f64 * AVAILABLE_SHARE,
                "the memory this machine can spare,".to_string(),
            ),
            None => return Ok(()),
        },
    };
    let need = series.bytes();
    if need > 0.0 && built_bytes + need > limit_bytes {
        return Err(ScenarioError {
            source_name: source.to_string(),
            path: "sample_interval_ms".to_string(),
            message: format!(
                "{} ms over {} s is {} samples of {} sampled links and {} sampled flows: \
                 about {} of time series, which with the network ({}) is more than {what} {}; \
                 sample less often (a larger sample_interval_ms), run for less time, \
                 or keep fewer flows (outputs.max_sampled_flows)",
                series.sample_interval_ns as f64 / 1e6,
                series.duration_ns as f64 / 1e9,
                series.samples(),
                series.sampled_links,
                series.sampled_flows,
                human_bytes(need),
                human_bytes(built_bytes),
                human_bytes(limit_bytes)
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumbbell(pairs: u64, flows: u64) -> Scenario {
        let text = format!(
            "name = \"x\"\nseed = 1\nduration_s = 1\n[topology]\nkind = \"dumbbell\"\npairs = {pairs}\n\
             access_rate_bps = 1e6\naccess_delay_ms = 1\ncore_rate_bps = 1e6\ncore_delay_ms = 1\n\
             [[flows]]\ncount = {flows}\nsrc = \"s0\"\ndst = \"d0\"\n"
        );
        crate::scenario::parse(&text, "x.toml").unwrap()
    }

    #[test]
    fn a_huge_dumbbell_is_refused_naming_its_key() {
        let sc = dumbbell(999_999_999, 1);
        let e = check(&sc, "x.toml", MemoryLimit::Bytes(8 << 30)).unwrap_err();
        assert_eq!(e.path, "topology.pairs");
        assert!(e.message.starts_with("999999999 needs about"), "{}", e.message);
        assert!(e.message.contains("TB to build"), "{}", e.message);
        let sc = dumbbell(10, 4_000_000_000);
        let e = check(&sc, "x.toml", MemoryLimit::Bytes(8 << 30)).unwrap_err();
        assert_eq!(e.path, "flows[0].count");
    }

    #[test]
    fn a_hundred_thousand_flows_fit_in_a_gigabyte() {
        let fp = check(&dumbbell(100_000, 100_000), "x.toml", MemoryLimit::Bytes(1 << 30)).unwrap();
        assert_eq!((fp.nodes, fp.links, fp.flows), (200_002, 400_002, 100_000));
        assert!(check(&dumbbell(100_000, 100_000), "x.toml", MemoryLimit::Unlimited).is_ok());
    }

    #[test]
    fn more_links_than_events_can_name_are_refused_without_a_memory_limit() {
        let e = check(&dumbbell(600_000_000, 1), "x.toml", MemoryLimit::Unlimited).unwrap_err();
        assert_eq!(e.path, "topology.pairs");
        assert_eq!(
            e.message,
            "600000000 makes 2400000002 links, too many: latlab addresses at most 1073741823 links"
        );
    }

    #[test]
    fn fine_sampling_of_a_large_network_is_refused_naming_the_interval() {
        let series = Series {
            sample_interval_ns: 1_000_000,
            duration_ns: 30_000_000_000,
            sampled_links: 4042,
            sampled_flows: 0,
        };
        assert_eq!(series.samples(), 30_001);
        let e = check_series(&series, 1e8, "x.toml", MemoryLimit::Bytes(8 << 30)).unwrap_err();
        assert_eq!(e.path, "sample_interval_ms");
        assert!(
            e.message
                .starts_with("1 ms over 30 s is 30001 samples of 4042 sampled links"),
            "{}",
            e.message
        );
        assert!(e.message.contains("31.0 GB of time series"), "{}", e.message);
        let coarse = Series {
            sample_interval_ns: 10_000_000_000,
            ..series
        };
        assert!(check_series(&coarse, 1e8, "x.toml", MemoryLimit::Bytes(8 << 30)).is_ok());
        let off = Series {
            sample_interval_ns: 0,
            ..series
        };
        assert_eq!(off.samples(), 0);
        assert!(check_series(&off, 1e8, "x.toml", MemoryLimit::Bytes(1)).is_ok());
    }

    #[test]
    fn bytes_read_as_people_write_them() {
        assert_eq!(human_bytes(999.0), "999 B");
        assert_eq!(human_bytes(3.2e9), "3.2 GB");
    }
}
