//! Topology builders: expand a scenario's `[topology]` into named nodes and
//! duplex links. Random per-link rates and delays come from the scenario's
//! topology stream, one draw per duplex link in build order.

use crate::rng::{stream, Stream};
use crate::scenario::{
    CustomSpec, DumbbellSpec, EdgeDumbbellSpec, QueueSpec, Range, ScenarioError, Topology,
};
use rand::Rng;
use rand_pcg::Pcg64Mcg;

/// Most hosts (sender/receiver pairs) a generated topology may have: a
/// guard against typos such as `pairs = 999999999`, which would otherwise
/// exhaust memory while the nodes are made. Not a memory estimate.
pub const MAX_HOSTS: u64 = 1_000_000;

/// One unidirectional link to build.
#[derive(Debug, Clone)]
pub struct LinkPlan {
    pub src: u32,
    pub dst: u32,
    pub rate_bps: f64,
    pub delay_ms: f64,
    pub queue: QueueSpec,
    pub loss: f64,
    /// Key path of the settings this link came from (for error messages).
    pub key_path: String,
    /// A link of interest (core/edge): its time series is kept by default.
    pub key_link: bool,
}

#[derive(Debug, Default)]
pub struct NetPlan {
    pub nodes: Vec<String>,
    pub links: Vec<LinkPlan>,
}

impl NetPlan {
    fn node(&mut self, name: String) -> u32 {
        self.nodes.push(name);
        self.nodes.len() as u32 - 1
    }

    #[allow(clippy::too_many_arguments)]
    fn duplex(
        &mut self,
        a: u32,
        b: u32,
        rate_bps: f64,
        delay_ms: f64,
        queue: &QueueSpec,
        key_path: &str,
        key_link: bool,
        forward_loss: f64,
    ) {
        for (src, dst, loss) in [(a, b, forward_loss), (b, a, 0.0)] {
            self.links.push(LinkPlan {
                src,
                dst,
                rate_bps,
                delay_ms,
                queue: queue.clone(),
                loss,
                key_path: key_path.to_string(),
                key_link,
            });
        }
    }
}

/// A class of links whose rate and delay are drawn per link.
struct Drawn<'a> {
    rate_bps: &'a Range,
    delay_ms: &'a Range,
    queue: &'a QueueSpec,
}

impl NetPlan {
    /// A duplex link with its rate, then its delay, drawn from `class`
    /// (this draw order is part of what a seed reproduces).
    fn drawn_duplex(
        &mut self,
        a: u32,
        b: u32,
        class: &Drawn,
        key_path: &str,
        key_link: bool,
        rng: &mut Pcg64Mcg,
    ) {
        let rate = draw(class.rate_bps, rng);
        let delay = draw(class.delay_ms, rng);
        self.duplex(a, b, rate, delay, class.queue, key_path, key_link, 0.0);
    }
}

fn err(source: &str, path: &str, message: impl Into<String>) -> ScenarioError {
    ScenarioError {
        source_name: source.to_string(),
        path: path.to_string(),
        message: message.into(),
    }
}

/// Check a range of a positive quantity (or non-negative when `allow_zero`).
fn check_range(r: &Range, source: &str, path: &str, allow_zero: bool) -> Result<(), ScenarioError> {
    let (lo, hi) = (r.min(), r.max());
    if !lo.is_finite() || !hi.is_finite() {
        return Err(err(source, path, "expected finite numbers"));
    }
    if lo > hi {
        return Err(err(
            source,
            path,
            format!("range [{lo}, {hi}] has min > max; expected [min, max]"),
        ));
    }
    if (allow_zero && lo < 0.0) || (!allow_zero && lo <= 0.0) {
        let what = if allow_zero { "non-negative" } else { "positive" };
        return Err(err(source, path, format!("expected a {what} value, got {lo}")));
    }
    Ok(())
}

fn check_scalar(v: f64, source: &str, path: &str, allow_zero: bool) -> Result<(), ScenarioError> {
    check_range(&Range::Fixed(v), source, path, allow_zero)
}

fn draw(r: &Range, rng: &mut Pcg64Mcg) -> f64 {
    match *r {
        Range::Fixed(v) => v,
        Range::Uniform([a, b]) if a == b => a,
        Range::Uniform([a, b]) => rng.random_range(a..=b),
    }
}

/// Expand the topology. Custom topologies resolve node names here.
pub fn expand(topo: &Topology, seed: u64, source: &str) -> Result<NetPlan, ScenarioError> {
    let mut rng = stream(seed, Stream::Topology, 0);
    let mut plan = NetPlan::default();
    match topo {
        Topology::Dumbbell(DumbbellSpec {
            pairs,
            access_rate_bps,
            access_delay_ms,
            core_rate_bps,
            core_delay_ms,
            core_queue,
            access_queue,
            core_loss,
        }) => {
            if *pairs == 0 {
                return Err(err(source, "topology.pairs", "expected at least 1 pair"));
            }
            if *pairs as u64 > MAX_HOSTS {
                return Err(err(
                    source,
                    "topology.pairs",
                    format!("{pairs} pairs is too many; expected at most {MAX_HOSTS}"),
                ));
            }
            check_range(access_rate_bps, source, "topology.access_rate_bps", false)?;
            check_range(access_delay_ms, source, "topology.access_delay_ms", true)?;
            check_scalar(*core_rate_bps, source, "topology.core_rate_bps", false)?;
            check_scalar(*core_delay_ms, source, "topology.core_delay_ms", true)?;
            check_loss(*core_loss, source, "topology.core_loss")?;
            let senders: Vec<u32> = (0..*pairs).map(|i| plan.node(format!("s{i}"))).collect();
            let receivers: Vec<u32> = (0..*pairs).map(|i| plan.node(format!("d{i}"))).collect();
            let left = plan.node("left".into());
            let right = plan.node("right".into());
            plan.duplex(
                left,
                right,
                *core_rate_bps,
                *core_delay_ms,
                core_queue,
                "topology.core_queue",
                true,
                *core_loss,
            );
            for (side, hosts, router) in [(0, &senders, left), (1, &receivers, right)] {
                for &h in hosts.iter() {
                    // Senders' links point host→router; receivers' router→host.
                    let (a, b) = if side == 0 { (h, router) } else { (router, h) };
                    let access = Drawn {
                        rate_bps: access_rate_bps,
                        delay_ms: access_delay_ms,
                        queue: access_queue,
                    };
                    plan.drawn_duplex(a, b, &access, "topology.access_queue", false, &mut rng);
                }
            }
        }
        Topology::EdgeDumbbell(EdgeDumbbellSpec {
            edges,
            hosts_per_edge,
            access_rate_bps,
            access_delay_ms,
            edge_rate_bps,
            edge_delay_ms,
            core_rate_bps,
            core_delay_ms,
            core_queue,
            edge_queue,
            access_queue,
        }) => {
            if *edges == 0 {
                return Err(err(source, "topology.edges", "expected at least 1 edge"));
            }
            if *hosts_per_edge == 0 {
                return Err(err(
                    source,
                    "topology.hosts_per_edge",
                    "expected at least 1 host per edge",
                ));
            }
            // In u64: the product of two u32 can overflow a u32.
            let hosts = *edges as u64 * *hosts_per_edge as u64;
            if hosts > MAX_HOSTS {
                return Err(err(
                    source,
                    "topology.hosts_per_edge",
                    format!(
                        "edges x hosts_per_edge = {hosts} hosts is too many; expected at most {MAX_HOSTS}"
                    ),
                ));
            }
            check_range(access_rate_bps, source, "topology.access_rate_bps", false)?;
            check_range(access_delay_ms, source, "topology.access_delay_ms", true)?;
            check_range(edge_rate_bps, source, "topology.edge_rate_bps", false)?;
            check_range(edge_delay_ms, source, "topology.edge_delay_ms", true)?;
            check_scalar(*core_rate_bps, source, "topology.core_rate_bps", false)?;
            check_scalar(*core_delay_ms, source, "topology.core_delay_ms", true)?;
            let n = edges * hosts_per_edge;
            let senders: Vec<u32> = (0..n).map(|i| plan.node(format!("s{i}"))).collect();
            let receivers: Vec<u32> = (0..n).map(|i| plan.node(format!("d{i}"))).collect();
            let ingress: Vec<u32> = (0..*edges).map(|j| plan.node(format!("ie{j}"))).collect();
            let egress: Vec<u32> = (0..*edges).map(|j| plan.node(format!("ee{j}"))).collect();
            let c0 = plan.node("c0".into());
            let c1 = plan.node("c1".into());
            plan.duplex(
                c0,
                c1,
                *core_rate_bps,
                *core_delay_ms,
                core_queue,
                "topology.core_queue",
                true,
                0.0,
            );
            let edge = Drawn {
                rate_bps: edge_rate_bps,
                delay_ms: edge_delay_ms,
                queue: edge_queue,
            };
            let access = Drawn {
                rate_bps: access_rate_bps,
                delay_ms: access_delay_ms,
                queue: access_queue,
            };
            for (j, (&ie, &ee)) in ingress.iter().zip(&egress).enumerate() {
                for (a, b) in [(ie, c0), (c1, ee)] {
                    plan.drawn_duplex(a, b, &edge, "topology.edge_queue", true, &mut rng);
                }
                let hosts = j as u32 * hosts_per_edge..(j as u32 + 1) * hosts_per_edge;
                for i in hosts {
                    for (a, b) in [(senders[i as usize], ie), (ee, receivers[i as usize])] {
                        plan.drawn_duplex(a, b, &access, "topology.access_queue", false, &mut rng);
                    }
                }
            }
        }
        Topology::Custom(CustomSpec { nodes, links }) => {
            let mut index = std::collections::BTreeMap::new();
            for (i, n) in nodes.iter().enumerate() {
                let path = format!("topology.nodes[{i}].name");
                if n.name.is_empty() || n.name.contains("->") || n.name.contains(char::is_whitespace) {
                    return Err(err(
                        source,
                        &path,
                        format!(
                            "node name {:?} is not valid; expected a non-empty name without spaces or '->'",
                            n.name
                        ),
                    ));
                }
                if index.insert(n.name.clone(), plan.node(n.name.clone())).is_some() {
                    return Err(err(source, &path, format!("node {:?} is defined twice", n.name)));
                }
            }
            for (i, l) in links.iter().enumerate() {
                let p = format!("topology.links[{i}]");
                let find = |name: &str, key: &str| {
                    index.get(name).copied().ok_or_else(|| {
                        err(
                            source,
                            &format!("{p}.{key}"),
                            format!("unknown node {name:?}; expected one of the names in topology.nodes"),
                        )
                    })
                };
                let (a, b) = (find(&l.from, "from")?, find(&l.to, "to")?);
                if a == b {
                    return Err(err(
                        source,
                        &format!("{p}.to"),
                        "a link must join two different nodes",
                    ));
                }
                check_scalar(l.rate_bps, source, &format!("{p}.rate_bps"), false)?;
                check_scalar(l.delay_ms, source, &format!("{p}.delay_ms"), true)?;
                check_loss(l.loss, source, &format!("{p}.loss"))?;
                plan.links.push(LinkPlan {
                    src: a,
                    dst: b,
                    rate_bps: l.rate_bps,
                    delay_ms: l.delay_ms,
                    queue: l.queue.clone(),
                    loss: l.loss,
                    key_path: format!("{p}.queue"),
                    key_link: true,
                });
                if l.duplex {
                    let rev_rate = l.reverse_rate_bps.unwrap_or(l.rate_bps);
                    check_scalar(rev_rate, source, &format!("{p}.reverse_rate_bps"), false)?;
                    plan.links.push(LinkPlan {
                        src: b,
                        dst: a,
                        rate_bps: rev_rate,
                        delay_ms: l.delay_ms,
                        queue: l.queue.clone(),
                        loss: 0.0,
                        key_path: format!("{p}.queue"),
                        key_link: true,
                    });
                }
            }
        }
    }
    Ok(plan)
}

fn check_loss(p: f64, source: &str, path: &str) -> Result<(), ScenarioError> {
    if !(0.0..1.0).contains(&p) {
        return Err(err(
            source,
            path,
            format!("expected a loss probability in [0, 1), got {p}"),
        ));
    }
    Ok(())
}
