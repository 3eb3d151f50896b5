//! The emulated path from a latlab scenario file: the scenario crate's
//! parser, topology expansion and link builder make the links (queue
//! disciplines, rates, traces, loss streams, all seeded as in a simulation
//! of the same file), and the emulator takes the links on the route between
//! two nodes.
//!
//! Accepted file: any latlab scenario. The path runs from `--client` to
//! `--server` (node names; by default the topology's first and last nodes),
//! uplink = the simulator's route client → server, downlink = server →
//! client. `duration_s` must be present (the schema needs it) but the
//! emulation lasts as long as the command does; `flows` are ignored (the
//! traffic is real); `seed` seeds random loss and rate generators;
//! `sample_interval_ms` is the `link_samples` interval; `outputs.pcap`
//! names links to capture (as `--pcap` does for all of them). A link that
//! is a user's downlink of an LTE cell or a station's of a Wi-Fi AP runs
//! the whole medium (scheduler, HARQ or retries) with only that member's
//! packets in it: the other users and stations of the scenario stay idle.

use std::path::Path;

use latlab_link::{LinkService, Medium, PacketRef, Service};
use latlab_scenario::ctx::Ctx;
use latlab_scenario::links::{self, BuiltLinks};
use latlab_scenario::routing::Router;
use latlab_scenario::timing::Timing;
use latlab_scenario::topology;

use super::line::{Hop, HopService, Line};

/// Everything the emulator takes from the scenario.
pub struct PathPlan {
    pub scenario_name: String,
    pub seed: u64,
    pub client_node: String,
    pub server_node: String,
    /// client → server.
    pub up: Line,
    /// server → client.
    pub down: Line,
    /// 0: no `link_samples`.
    pub sample_interval_ns: u64,
    /// Link names from `outputs.pcap`.
    pub pcap_links: Vec<String>,
}

/// Load `path` and build the path between `client` and `server`.
pub fn load(path: &Path, client: Option<&str>, server: Option<&str>) -> Result<PathPlan, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let source = path.display().to_string();
    from_text(&text, &source, client, server)
}

/// As [`load`], from the file's text; `source` names it in messages (and
/// anchors relative trace paths when it is a file).
pub fn from_text(
    text: &str,
    source: &str,
    client: Option<&str>,
    server: Option<&str>,
) -> Result<PathPlan, String> {
    let sc = latlab_scenario::parse(text, source).map_err(|e| e.to_string())?;
    // Real traffic replaces the flows (they are not checked here); the
    // emulator writes its own raw pcap of the links `outputs.pcap` names.
    let pcap_links = sc.outputs.pcap.clone();
    let cx = Ctx { source };
    let timing = Timing::of(&cx, &sc).map_err(|e| e.to_string())?;
    let plan = topology::expand(&sc.topology, sc.seed, source).map_err(|e| e.to_string())?;
    let built: BuiltLinks<PacketRef> = links::build(&cx, &plan, sc.seed).map_err(|e| e.to_string())?;
    let link_names = links::link_names(&plan);
    let names = &plan.nodes;
    let (c, s) = path_ends(names, source, client, server)?;
    for name in &pcap_links {
        if !link_names.contains(name) {
            return Err(format!(
                "{source}: outputs.pcap: unknown link {name:?}; links are named \"from->to\" by node names"
            ));
        }
    }
    let (up_ids, down_ids) = routes_between(&plan, &built, source, (c, s))?;
    let mut pool = LinkPool {
        source,
        links: link_names.iter().cloned().zip(built.services).map(Some).collect(),
        media: built.media.into_iter().map(Some).collect(),
    };
    let up = pool.take_line(&up_ids)?;
    let down = pool.take_line(&down_ids)?;
    Ok(PathPlan {
        scenario_name: sc.name.clone(),
        seed: sc.seed,
        client_node: names[c as usize].clone(),
        server_node: names[s as usize].clone(),
        up,
        down,
        sample_interval_ns: timing.sample_interval_ns,
        pcap_links,
    })
}

/// The client's and the server's node: named by `--client` and `--server`,
/// by default the topology's first and last nodes; two distinct nodes.
fn path_ends(
    names: &[String],
    source: &str,
    client: Option<&str>,
    server: Option<&str>,
) -> Result<(u32, u32), String> {
    let node = |name: Option<&str>, default: usize, flag: &str| -> Result<u32, String> {
        match name {
            None => Ok(default as u32),
            Some(n) => names
                .iter()
                .position(|m| m == n)
                .map(|i| i as u32)
                .ok_or_else(|| {
                    format!(
                        "--{flag} {n:?}: no such node in {source}; nodes are {}",
                        names.join(", ")
                    )
                }),
        }
    };
    if names.len() < 2 {
        return Err(format!("{source}: topology: a path needs at least two nodes"));
    }
    let c = node(client, 0, "client")?;
    let s = node(server, names.len() - 1, "server")?;
    if c == s {
        return Err(format!(
            "--client and --server are the same node ({:?}); the path needs two ends",
            names[c as usize]
        ));
    }
    Ok((c, s))
}

/// The links of the simulator's routes client → server and back.
fn routes_between(
    plan: &topology::NetPlan,
    built: &BuiltLinks<PacketRef>,
    source: &str,
    (c, s): (u32, u32),
) -> Result<(Vec<u32>, Vec<u32>), String> {
    let names = &plan.nodes;
    let graph: Vec<(u32, u32, u64)> = plan
        .links
        .iter()
        .zip(&built.services)
        .map(|(l, svc)| (l.src, l.dst, svc.delay_ns))
        .collect();
    let mut router = Router::new(names.len(), &graph);
    let mut route = |a: u32, b: u32| {
        router.route(a, b).ok_or_else(|| {
            format!(
                "{source}: no route from {:?} to {:?} in the topology",
                names[a as usize], names[b as usize]
            )
        })
    };
    Ok((route(c, s)?, route(s, c)?))
}

/// The scenario's links and shared media, each taken by at most one hop of
/// the path.
struct LinkPool<'a> {
    source: &'a str,
    links: Vec<Option<(String, LinkService<PacketRef>)>>,
    media: Vec<Option<Medium<PacketRef>>>,
}

impl LinkPool<'_> {
    /// The line through links `ids`, in order.
    fn take_line(&mut self, ids: &[u32]) -> Result<Line, String> {
        let source = self.source;
        let mut hops = Vec::with_capacity(ids.len());
        for &id in ids {
            let (name, svc) = self.links[id as usize].take().ok_or_else(|| {
                format!("{source}: link {id} lies on both directions of the path; the emulator needs distinct links")
            })?;
            let service = match svc.service {
                Service::Fixed => HopService::Fixed(svc.rate),
                Service::Varying(tx) => HopService::Varying(tx),
                Service::Shared { medium, member } => {
                    let m = self.media[medium as usize].take().ok_or_else(|| {
                        format!(
                            "{source}: link {:?}: its cell or AP already serves another link of the path; the emulator runs one member per medium",
                            name
                        )
                    })?;
                    HopService::Shared {
                        medium: Box::new(m.kind),
                        member,
                    }
                }
            };
            hops.push(Hop::new(
                id,
                name,
                service,
                svc.delay_ns,
                svc.qdisc,
                svc.loss_prob,
                svc.loss_rng,
            ));
        }
        Ok(Line::new(hops))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_NODES: &str = r#"
        name = "t"
        duration_s = 1
        [topology]
        kind = "custom"
        nodes = [{ name = "client" }, { name = "server" }]
        [[topology.links]]
        from = "client"
        to = "server"
        rate_bps = 20e6
        reverse_rate_bps = 10e6
        delay_ms = 25
        loss = 0.01
        queue = { kind = "codel", limit_packets = 100, target_ms = 5, interval_ms = 100 }
    "#;

    #[test]
    fn a_two_node_scenario_gives_one_hop_each_way() {
        let p = from_text(TWO_NODES, "t.toml", None, None).unwrap();
        assert_eq!(
            (p.client_node.as_str(), p.server_node.as_str()),
            ("client", "server")
        );
        let (u, d) = (&p.up.hops[0], &p.down.hops[0]);
        assert_eq!((p.up.hops.len(), p.down.hops.len()), (1, 1));
        assert_eq!(
            (u.name.as_str(), d.name.as_str()),
            ("client->server", "server->client")
        );
        assert_eq!((u.nominal_bps(), d.nominal_bps()), (20_000_000, 10_000_000));
        assert_eq!((u.delay_ns, d.delay_ns), (25_000_000, 25_000_000));
        assert_eq!(u.qdisc.name(), "codel");
        // Loss is on the forward direction only, as in the simulator.
        assert_eq!((u.loss_prob, d.loss_prob), (0.01, 0.0));
        assert_eq!(p.sample_interval_ns, 100_000_000);
    }

    #[test]
    fn a_multi_hop_path_follows_the_route() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../scenarios/codel-uplink.toml"
        ))
        .unwrap();
        let p = from_text(&text, "codel-uplink.toml", Some("laptop"), Some("server")).unwrap();
        let names: Vec<&str> = p.up.hops.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["laptop->home", "home->isp", "isp->server"]);
        assert_eq!(p.down.hops.len(), 3);
        assert_eq!(p.down.hops[1].nominal_bps(), 50_000_000);
    }

    #[test]
    fn a_cell_or_an_ap_member_is_a_shared_hop() {
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"));
        let p = load(&dir.join("cellular.toml"), Some("ue0"), Some("server")).unwrap();
        let kinds: Vec<&str> = p.down.hops.iter().map(|h| h.kind()).collect();
        assert_eq!(kinds.last(), Some(&"lte"), "{kinds:?}");
        assert!(p.down.hops.last().unwrap().nominal_bps() > 0);
        assert!(p.up.hops.iter().all(|h| h.kind() != "lte"));
        let p = load(&dir.join("wifi.toml"), Some("sta0"), Some("server")).unwrap();
        assert_eq!(p.down.hops.last().map(|h| h.kind()), Some("wifi"));
    }

    #[test]
    fn packets_cross_a_cell_downlink_in_order_and_are_accounted() {
        use crate::emulate::line::Outcome;
        use crate::emulate::outputs::link_row;
        use latlab_link::PacketRef;
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios"));
        for (file, client) in [("cellular.toml", "ue0"), ("wifi.toml", "sta0")] {
            let mut p = load(&dir.join(file), Some(client), Some("server")).unwrap();
            let mut out = Vec::new();
            // 200 packets of 1500 B, one every 100 µs (120 Mbit/s offered).
            for i in 0..200u32 {
                let t = u64::from(i) * 100_000;
                p.down.advance(t, &mut out);
                let pkt = PacketRef {
                    idx: i,
                    wire_bytes: 1500,
                    flow: 0,
                    route: Default::default(),
                };
                p.down.arrive(t, pkt, &mut out);
            }
            p.down.advance(60_000_000_000, &mut out);
            let mut last = 0;
            let mut delivered = 0;
            for o in &out {
                if let Outcome::Delivered { due_ns, .. } = o {
                    assert!(*due_ns >= last, "{file}: out of order");
                    last = *due_ns;
                    delivered += 1;
                }
            }
            let dropped = out
                .iter()
                .filter(|o| matches!(o, Outcome::Dropped { .. }))
                .count();
            assert_eq!(delivered + dropped, 200, "{file}");
            assert!(delivered > 0, "{file}");
            for h in &p.down.hops {
                assert!(link_row(h, "down").conservation_ok, "{file}: {}", h.name);
            }
            assert_eq!(p.down.next_due_ns(), None, "{file}");
        }
    }

    #[test]
    fn bad_choices_are_errors_naming_them() {
        let e = from_text(TWO_NODES, "t.toml", Some("nobody"), None)
            .err()
            .unwrap();
        assert!(e.contains("--client") && e.contains("nobody"), "{e}");
        let e = from_text(TWO_NODES, "t.toml", Some("server"), None)
            .err()
            .unwrap();
        assert!(e.contains("same node"), "{e}");
        let e = from_text(
            &TWO_NODES.replace("delay_ms = 25", "delay_ms = -1"),
            "t.toml",
            None,
            None,
        )
        .err()
        .unwrap();
        assert!(e.contains("delay_ms"), "{e}");
    }
}
