//! Topology builders: expand a scenario's `[topology]` into named nodes and
//! duplex links. Random per-link rates and delays come from the scenario's
//! topology stream, one draw per duplex link in build order.

use crate::rng::{stream, Stream};
use crate::scenario::{
    ApSpec, CellSpec, CellularSpec, CustomApSpec, CustomCellSpec, CustomSpec, DumbbellSpec, EdgeDumbbellSpec,
    LinkSpec, NodeSpec, QueueSpec, RadioUserSpec, Range, RateSpec, ScenarioError, Topology, WifiSpec,
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
    /// A time-varying rate (then `rate_bps` is unused), and its key path.
    pub rate: Option<RateSpec>,
    pub rate_path: String,
    /// Member of a shared medium: (medium, user or station index).
    pub medium: Option<(u32, u32)>,
}

impl LinkPlan {
    fn fixed(src: u32, dst: u32, rate_bps: f64, delay_ms: f64, queue: &QueueSpec, key_path: &str) -> Self {
        LinkPlan {
            src,
            dst,
            rate_bps,
            delay_ms,
            queue: queue.clone(),
            loss: 0.0,
            key_path: key_path.to_string(),
            key_link: true,
            rate: None,
            rate_path: key_path.replace(".queue", ".rate_bps"),
            medium: None,
        }
    }
}

/// One user or station of a shared medium.
#[derive(Debug, Clone)]
pub struct MemberPlan {
    /// Its downlink, an index into `NetPlan::links`.
    pub link: u32,
    pub rate: RateSpec,
    pub rate_path: String,
    /// Cellular: the user's own queue.
    pub queue: QueueSpec,
    pub queue_path: String,
    /// Wi-Fi: per-attempt frame error probability.
    pub frame_error_prob: f64,
}

/// A shared access medium: an LTE cell or a Wi-Fi AP.
#[derive(Debug, Clone)]
pub enum MediumPlan {
    Cell {
        spec: CellSpec,
        path: String,
        members: Vec<MemberPlan>,
    },
    Ap {
        spec: ApSpec,
        path: String,
        members: Vec<MemberPlan>,
    },
}

#[derive(Debug, Default)]
pub struct NetPlan {
    pub nodes: Vec<String>,
    pub links: Vec<LinkPlan>,
    pub media: Vec<MediumPlan>,
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
                rate: None,
                rate_path: key_path.replace(".queue", ".rate_bps"),
                medium: None,
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
        Topology::Dumbbell(spec) => plan.dumbbell(spec, source, &mut rng)?,
        Topology::EdgeDumbbell(spec) => plan.edge_dumbbell(spec, source, &mut rng)?,
        Topology::Custom(spec) => plan.custom(spec, source)?,
        Topology::Cellular(spec) => plan.cellular(spec, source)?,
        Topology::Wifi(spec) => plan.wifi(spec, source)?,
    }
    Ok(plan)
}

fn check_dumbbell(spec: &DumbbellSpec, source: &str) -> Result<(), ScenarioError> {
    let pairs = spec.pairs;
    if pairs == 0 {
        return Err(err(source, "topology.pairs", "expected at least 1 pair"));
    }
    if pairs as u64 > MAX_HOSTS {
        return Err(err(
            source,
            "topology.pairs",
            format!("{pairs} pairs is too many; expected at most {MAX_HOSTS}"),
        ));
    }
    check_range(&spec.access_rate_bps, source, "topology.access_rate_bps", false)?;
    check_range(&spec.access_delay_ms, source, "topology.access_delay_ms", true)?;
    check_scalar(spec.core_rate_bps, source, "topology.core_rate_bps", false)?;
    check_scalar(spec.core_delay_ms, source, "topology.core_delay_ms", true)?;
    check_loss(spec.core_loss, source, "topology.core_loss")
}

fn check_edge_dumbbell(spec: &EdgeDumbbellSpec, source: &str) -> Result<(), ScenarioError> {
    if spec.edges == 0 {
        return Err(err(source, "topology.edges", "expected at least 1 edge"));
    }
    if spec.hosts_per_edge == 0 {
        return Err(err(
            source,
            "topology.hosts_per_edge",
            "expected at least 1 host per edge",
        ));
    }
    // In u64: the product of two u32 can overflow a u32.
    let hosts = spec.edges as u64 * spec.hosts_per_edge as u64;
    if hosts > MAX_HOSTS {
        return Err(err(
            source,
            "topology.hosts_per_edge",
            format!("edges x hosts_per_edge = {hosts} hosts is too many; expected at most {MAX_HOSTS}"),
        ));
    }
    check_range(&spec.access_rate_bps, source, "topology.access_rate_bps", false)?;
    check_range(&spec.access_delay_ms, source, "topology.access_delay_ms", true)?;
    check_range(&spec.edge_rate_bps, source, "topology.edge_rate_bps", false)?;
    check_range(&spec.edge_delay_ms, source, "topology.edge_delay_ms", true)?;
    check_scalar(spec.core_rate_bps, source, "topology.core_rate_bps", false)?;
    check_scalar(spec.core_delay_ms, source, "topology.core_delay_ms", true)
}

/// A cellular or Wi-Fi topology's member count (`users`, `stations`) and
/// its per-member entries (`user`, `station`): at least one member, no
/// more entries than members.
fn check_members(
    source: &str,
    count_key: &str,
    entry_key: &str,
    count: u32,
    entries: usize,
) -> Result<(), ScenarioError> {
    if count == 0 {
        return Err(err(
            source,
            &format!("topology.{count_key}"),
            format!("expected at least 1 {entry_key}"),
        ));
    }
    // As for the dumbbells: without it a cell of millions of users was
    // expanded (gigabytes, tens of seconds) before the memory check refused it.
    if count as u64 > MAX_HOSTS {
        return Err(err(
            source,
            &format!("topology.{count_key}"),
            format!("{count} {count_key} is too many; expected at most {MAX_HOSTS}"),
        ));
    }
    if entries > count as usize {
        return Err(err(
            source,
            &format!("topology.{entry_key}[{count}]"),
            format!("{entries} {entry_key} entries for {count} {count_key}"),
        ));
    }
    Ok(())
}

impl NetPlan {
    /// Nodes named `{prefix}0`, `{prefix}1`, ...
    fn numbered_nodes(&mut self, prefix: &str, count: u32) -> Vec<u32> {
        (0..count).map(|i| self.node(format!("{prefix}{i}"))).collect()
    }

    /// `pairs` senders (s*) behind router `left`, as many receivers (d*)
    /// behind `right`, and the core link between the routers. Access links
    /// are drawn senders first, then receivers.
    fn dumbbell(
        &mut self,
        spec: &DumbbellSpec,
        source: &str,
        rng: &mut Pcg64Mcg,
    ) -> Result<(), ScenarioError> {
        check_dumbbell(spec, source)?;
        let senders = self.numbered_nodes("s", spec.pairs);
        let receivers = self.numbered_nodes("d", spec.pairs);
        let left = self.node("left".into());
        let right = self.node("right".into());
        self.duplex(
            left,
            right,
            spec.core_rate_bps,
            spec.core_delay_ms,
            &spec.core_queue,
            "topology.core_queue",
            true,
            spec.core_loss,
        );
        let access = Drawn {
            rate_bps: &spec.access_rate_bps,
            delay_ms: &spec.access_delay_ms,
            queue: &spec.access_queue,
        };
        for (side, hosts, router) in [(0, &senders, left), (1, &receivers, right)] {
            for &h in hosts.iter() {
                // Senders' links point host→router; receivers' router→host.
                let (a, b) = if side == 0 { (h, router) } else { (router, h) };
                self.drawn_duplex(a, b, &access, "topology.access_queue", false, rng);
            }
        }
        Ok(())
    }

    /// `edges` ingress (ie*) and egress (ee*) edge routers around the core
    /// link c0->c1, `hosts_per_edge` senders and receivers per edge. Per
    /// edge, its two edge links are drawn, then each host pair's access links.
    fn edge_dumbbell(
        &mut self,
        spec: &EdgeDumbbellSpec,
        source: &str,
        rng: &mut Pcg64Mcg,
    ) -> Result<(), ScenarioError> {
        check_edge_dumbbell(spec, source)?;
        let per_edge = spec.hosts_per_edge;
        let senders = self.numbered_nodes("s", spec.edges * per_edge);
        let receivers = self.numbered_nodes("d", spec.edges * per_edge);
        let ingress = self.numbered_nodes("ie", spec.edges);
        let egress = self.numbered_nodes("ee", spec.edges);
        let c0 = self.node("c0".into());
        let c1 = self.node("c1".into());
        self.duplex(
            c0,
            c1,
            spec.core_rate_bps,
            spec.core_delay_ms,
            &spec.core_queue,
            "topology.core_queue",
            true,
            0.0,
        );
        let edge = Drawn {
            rate_bps: &spec.edge_rate_bps,
            delay_ms: &spec.edge_delay_ms,
            queue: &spec.edge_queue,
        };
        let access = Drawn {
            rate_bps: &spec.access_rate_bps,
            delay_ms: &spec.access_delay_ms,
            queue: &spec.access_queue,
        };
        for (j, (&ie, &ee)) in ingress.iter().zip(&egress).enumerate() {
            for (a, b) in [(ie, c0), (c1, ee)] {
                self.drawn_duplex(a, b, &edge, "topology.edge_queue", true, rng);
            }
            let hosts = j as u32 * per_edge..(j as u32 + 1) * per_edge;
            for i in hosts {
                for (a, b) in [(senders[i as usize], ie), (ee, receivers[i as usize])] {
                    self.drawn_duplex(a, b, &access, "topology.access_queue", false, rng);
                }
            }
        }
        Ok(())
    }

    /// Named nodes, links between them, and cells and APs at some of them.
    fn custom(&mut self, spec: &CustomSpec, source: &str) -> Result<(), ScenarioError> {
        let index = self.custom_nodes(&spec.nodes, source)?;
        for (i, l) in spec.links.iter().enumerate() {
            self.custom_link(&index, &format!("topology.links[{i}]"), l, source)?;
        }
        for (c, cell) in spec.cells.iter().enumerate() {
            self.custom_cell(&index, &format!("topology.cells[{c}]"), cell, source)?;
        }
        for (k, ap) in spec.aps.iter().enumerate() {
            self.custom_ap(&index, &format!("topology.aps[{k}]"), ap, source)?;
        }
        Ok(())
    }

    /// Each node of `topology.nodes`, checked and indexed by name.
    fn custom_nodes(&mut self, nodes: &[NodeSpec], source: &str) -> Result<NodeIndex, ScenarioError> {
        let mut index = NodeIndex::new();
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
            if index.insert(n.name.clone(), self.node(n.name.clone())).is_some() {
                return Err(err(source, &path, format!("node {:?} is defined twice", n.name)));
            }
        }
        Ok(index)
    }

    /// Link `p` (`topology.links[i]`) from->to, and to->from when duplex
    /// (with the reverse rate when one is set).
    fn custom_link(
        &mut self,
        index: &NodeIndex,
        p: &str,
        l: &LinkSpec,
        source: &str,
    ) -> Result<(), ScenarioError> {
        let a = find_node(index, source, &format!("{p}.from"), &l.from)?;
        let b = find_node(index, source, &format!("{p}.to"), &l.to)?;
        if a == b {
            return Err(err(
                source,
                &format!("{p}.to"),
                "a link must join two different nodes",
            ));
        }
        let (rate_bps, rate) = link_rate(source, p, "rate", l.rate_bps, &l.rate)?;
        check_scalar(l.delay_ms, source, &format!("{p}.delay_ms"), true)?;
        check_loss(l.loss, source, &format!("{p}.loss"))?;
        let mut fwd = LinkPlan::fixed(a, b, rate_bps, l.delay_ms, &l.queue, &format!("{p}.queue"));
        fwd.loss = l.loss;
        fwd.rate_path = format!("{p}.rate");
        fwd.rate = rate.clone();
        self.links.push(fwd);
        if l.duplex {
            let (rev_bps, rev) = match (l.reverse_rate_bps, &l.reverse_rate) {
                (None, None) => (rate_bps, rate),
                (b, r) => link_rate(source, p, "reverse_rate", b, r)?,
            };
            let mut back = LinkPlan::fixed(b, a, rev_bps, l.delay_ms, &l.queue, &format!("{p}.queue"));
            if l.reverse_rate.is_some() || l.reverse_rate_bps.is_some() {
                back.rate_path = format!("{p}.reverse_rate");
            } else {
                back.rate_path = format!("{p}.rate");
            }
            back.rate = rev;
            self.links.push(back);
        }
        Ok(())
    }

    /// The named members of a custom cell or AP (`{p}.{list_key}[i].node`).
    fn named_members(
        index: &NodeIndex,
        source: &str,
        p: &str,
        list_key: &str,
        what: &str,
        members: &[RadioUserSpec],
    ) -> Result<Vec<(u32, RadioUserSpec)>, ScenarioError> {
        let mut out = Vec::new();
        for (u, member) in members.iter().enumerate() {
            let path = format!("{p}.{list_key}[{u}].node");
            let Some(name) = &member.node else {
                return Err(err(
                    source,
                    &path,
                    format!("missing; expected the {what}'s node name"),
                ));
            };
            out.push((find_node(index, source, &path, name)?, member.clone()));
        }
        Ok(out)
    }

    /// Cell `p` (`topology.cells[c]`) at its base-station node.
    fn custom_cell(
        &mut self,
        index: &NodeIndex,
        p: &str,
        cell: &CustomCellSpec,
        source: &str,
    ) -> Result<(), ScenarioError> {
        let bs = find_node(index, source, &format!("{p}.node"), &cell.node)?;
        let users = Self::named_members(index, source, p, "users", "user", &cell.users)?;
        let defaults = RadioDefaults {
            rate: &cell.rate,
            queue: &cell.queue,
            radio_delay_ms: cell.radio_delay_ms,
            uplink_rate: &cell.uplink_rate,
            frame_error_prob: None,
        };
        self.medium(
            source,
            p,
            "users",
            bs,
            &users,
            &defaults,
            Medium::Cell(cell.cell.clone()),
        )
    }

    /// AP `p` (`topology.aps[k]`) at its node.
    fn custom_ap(
        &mut self,
        index: &NodeIndex,
        p: &str,
        ap: &CustomApSpec,
        source: &str,
    ) -> Result<(), ScenarioError> {
        let node = find_node(index, source, &format!("{p}.node"), &ap.node)?;
        let stations = Self::named_members(index, source, p, "stations", "station", &ap.stations)?;
        let defaults = RadioDefaults {
            rate: &ap.rate,
            queue: &ap.ap.queue,
            radio_delay_ms: ap.radio_delay_ms,
            uplink_rate: &ap.uplink_rate,
            frame_error_prob: Some(ap.frame_error_prob),
        };
        self.medium(
            source,
            p,
            "stations",
            node,
            &stations,
            &defaults,
            Medium::Ap(ap.ap.clone()),
        )
    }

    /// Members `{prefix}0..count`, each with its entry of `specs` or the defaults.
    fn numbered_members(
        &mut self,
        prefix: &str,
        count: u32,
        specs: &[RadioUserSpec],
    ) -> Vec<(u32, RadioUserSpec)> {
        (0..count)
            .map(|i| {
                (
                    self.node(format!("{prefix}{i}")),
                    specs.get(i as usize).cloned().unwrap_or_default(),
                )
            })
            .collect()
    }

    /// A server, a wired link to base station `bs`, and `users` UEs in its cell.
    fn cellular(&mut self, spec: &CellularSpec, source: &str) -> Result<(), ScenarioError> {
        check_members(source, "users", "user", spec.users, spec.user.len())?;
        let server = self.node("server".into());
        let bs = self.node("bs".into());
        self.wired(
            source,
            server,
            bs,
            spec.wired_rate_bps,
            &spec.wired_rate,
            spec.wired_delay_ms,
            &spec.wired_queue,
        )?;
        let ues = self.numbered_members("ue", spec.users, &spec.user);
        let defaults = RadioDefaults {
            rate: &spec.rate,
            queue: &spec.queue,
            radio_delay_ms: spec.radio_delay_ms,
            uplink_rate: &spec.uplink_rate,
            frame_error_prob: None,
        };
        self.medium(
            source,
            "topology",
            "user",
            bs,
            &ues,
            &defaults,
            Medium::Cell(spec.cell.clone()),
        )
    }

    /// A server, a wired link to access point `ap`, and `stations` stations on it.
    fn wifi(&mut self, spec: &WifiSpec, source: &str) -> Result<(), ScenarioError> {
        check_members(source, "stations", "station", spec.stations, spec.station.len())?;
        let server = self.node("server".into());
        let apn = self.node("ap".into());
        self.wired(
            source,
            server,
            apn,
            spec.wired_rate_bps,
            &spec.wired_rate,
            spec.wired_delay_ms,
            &spec.wired_queue,
        )?;
        let stas = self.numbered_members("sta", spec.stations, &spec.station);
        let defaults = RadioDefaults {
            rate: &spec.rate,
            queue: &spec.ap.queue,
            radio_delay_ms: spec.radio_delay_ms,
            uplink_rate: &spec.uplink_rate,
            frame_error_prob: Some(spec.frame_error_prob),
        };
        self.medium(
            source,
            "topology",
            "station",
            apn,
            &stas,
            &defaults,
            Medium::Ap(spec.ap.clone()),
        )
    }
}

/// A link's rate from `NAME_bps` (fixed) or `NAME` (time-varying): exactly one.
fn link_rate(
    source: &str,
    p: &str,
    name: &str,
    bps: Option<f64>,
    spec: &Option<RateSpec>,
) -> Result<(f64, Option<RateSpec>), ScenarioError> {
    match (bps, spec) {
        (Some(_), Some(_)) => Err(err(
            source,
            &format!("{p}.{name}"),
            format!("set either {name}_bps or {name}, not both"),
        )),
        (Some(b), None) => {
            check_scalar(b, source, &format!("{p}.{name}_bps"), false)?;
            Ok((b, None))
        }
        (None, Some(r)) => Ok((0.0, Some(r.clone()))),
        (None, None) => Err(err(
            source,
            &format!("{p}.{name}_bps"),
            format!("missing; expected {name}_bps (a fixed rate) or {name} (a trace, schedule or generator)"),
        )),
    }
}

/// A custom topology's node ids by name.
type NodeIndex = std::collections::BTreeMap<String, u32>;

fn find_node(index: &NodeIndex, source: &str, path: &str, name: &str) -> Result<u32, ScenarioError> {
    index.get(name).copied().ok_or_else(|| {
        err(
            source,
            path,
            format!("unknown node {name:?}; expected one of the names in topology.nodes"),
        )
    })
}

enum Medium {
    Cell(CellSpec),
    Ap(ApSpec),
}

/// What a user or station takes when it does not say.
struct RadioDefaults<'a> {
    rate: &'a Option<RateSpec>,
    queue: &'a QueueSpec,
    radio_delay_ms: f64,
    uplink_rate: &'a RateSpec,
    /// Wi-Fi only.
    frame_error_prob: Option<f64>,
}

impl NetPlan {
    /// The wired link between the server and the access node, both ways.
    #[allow(clippy::too_many_arguments)]
    fn wired(
        &mut self,
        source: &str,
        a: u32,
        b: u32,
        rate_bps: f64,
        rate: &Option<RateSpec>,
        delay_ms: f64,
        queue: &QueueSpec,
    ) -> Result<(), ScenarioError> {
        check_scalar(delay_ms, source, "topology.wired_delay_ms", true)?;
        if rate.is_none() {
            check_scalar(rate_bps, source, "topology.wired_rate_bps", false)?;
        }
        for (src, dst) in [(a, b), (b, a)] {
            let mut l = LinkPlan::fixed(src, dst, rate_bps, delay_ms, queue, "topology.wired_queue");
            if rate.is_some() {
                l.rate = rate.clone();
                l.rate_path = "topology.wired_rate".into();
            }
            self.links.push(l);
        }
        Ok(())
    }

    /// A shared medium at `hub` with a downlink member and a plain uplink per user.
    #[allow(clippy::too_many_arguments)]
    fn medium(
        &mut self,
        source: &str,
        p: &str,
        list_key: &str,
        hub: u32,
        users: &[(u32, RadioUserSpec)],
        d: &RadioDefaults,
        kind: Medium,
    ) -> Result<(), ScenarioError> {
        let m = self.media.len() as u32;
        let mut members = Vec::new();
        let is_ap = matches!(kind, Medium::Ap(_));
        for (i, (node, u)) in users.iter().enumerate() {
            let up = format!("{p}.{list_key}[{i}]");
            if *node == hub {
                return Err(err(
                    source,
                    &format!("{up}.node"),
                    "a user must not be the hub node itself",
                ));
            }
            let s = member_settings(source, p, &up, u, d, is_ap)?;
            let link = self.links.len() as u32;
            let mut down = LinkPlan::fixed(hub, *node, 0.0, s.delay_ms, &s.queue, &format!("{up}.queue"));
            down.medium = Some((m, i as u32));
            down.rate_path = s.rate_path.clone();
            self.links.push(down);
            self.links
                .push(member_uplink(p, &up, *node, hub, s.delay_ms, u, d));
            members.push(MemberPlan {
                link,
                rate: s.rate,
                rate_path: s.rate_path,
                queue: s.queue,
                queue_path: s.queue_path,
                frame_error_prob: s.frame_error_prob,
            });
        }
        let path = p.to_string();
        self.media.push(match kind {
            Medium::Cell(spec) => MediumPlan::Cell { spec, path, members },
            Medium::Ap(spec) => MediumPlan::Ap { spec, path, members },
        });
        Ok(())
    }
}

/// A medium member's settings: its own (`up`, `{p}.user[i]`) or the
/// medium's (`p`).
struct MemberSettings {
    rate: RateSpec,
    rate_path: String,
    queue: QueueSpec,
    queue_path: String,
    frame_error_prob: f64,
    delay_ms: f64,
}

fn member_settings(
    source: &str,
    p: &str,
    up: &str,
    u: &RadioUserSpec,
    d: &RadioDefaults,
    is_ap: bool,
) -> Result<MemberSettings, ScenarioError> {
    let (rate, rate_path) = match (&u.rate, d.rate) {
        (Some(r), _) => (r.clone(), format!("{up}.rate")),
        (None, Some(r)) => (r.clone(), format!("{p}.rate")),
        (None, None) => {
            return Err(err(
                source,
                &format!("{p}.rate"),
                format!("missing; expected a downlink rate for every user ({p}.rate or {up}.rate)"),
            ))
        }
    };
    let (queue, queue_path) = match (&u.queue, is_ap) {
        (Some(_), true) => {
            return Err(err(
                source,
                &format!("{up}.queue"),
                "a station's queue is the AP's (`ap.queue`: shared, or one per station with `ap.buffer = \"per-station\"`); set the AP's queue instead",
            ))
        }
        (Some(q), false) => (q.clone(), format!("{up}.queue")),
        (None, _) => (d.queue.clone(), format!("{p}.queue")),
    };
    let frame_error_prob = match (u.frame_error_prob, d.frame_error_prob) {
        (Some(_), None) => {
            return Err(err(
                source,
                &format!("{up}.frame_error_prob"),
                "only Wi-Fi stations have a frame error probability; an LTE cell has harq_error_prob",
            ))
        }
        (Some(f), Some(_)) => f,
        (None, f) => f.unwrap_or(0.0),
    };
    check_loss(frame_error_prob, source, &format!("{up}.frame_error_prob"))?;
    let delay_ms = u.delay_ms.unwrap_or(d.radio_delay_ms);
    let delay_path = if u.delay_ms.is_some() {
        format!("{up}.delay_ms")
    } else {
        format!("{p}.radio_delay_ms")
    };
    check_scalar(delay_ms, source, &delay_path, true)?;
    Ok(MemberSettings {
        rate,
        rate_path,
        queue,
        queue_path,
        frame_error_prob,
        delay_ms,
    })
}

/// A member's plain uplink to the hub, at its own uplink rate or the medium's.
fn member_uplink(
    p: &str,
    up: &str,
    node: u32,
    hub: u32,
    delay_ms: f64,
    u: &RadioUserSpec,
    d: &RadioDefaults,
) -> LinkPlan {
    let uplink = u.uplink_rate.as_ref().unwrap_or(d.uplink_rate);
    let mut upl = LinkPlan::fixed(
        node,
        hub,
        0.0,
        delay_ms,
        &QueueSpec::default(),
        &format!("{up}.queue"),
    );
    upl.rate = Some(uplink.clone());
    upl.rate_path = if u.uplink_rate.is_some() {
        format!("{up}.uplink_rate")
    } else {
        format!("{p}.uplink_rate")
    };
    upl.key_link = false;
    upl
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
