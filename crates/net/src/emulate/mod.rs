//! `latlab-net emulate`: a user-space link emulator over TUN devices, in
//! the manner of Mahimahi's delay and link shells, driving latlab's own
//! queue disciplines (latlab-qdisc) and link models (latlab-link) in wall
//! time, so that one scenario's path can be simulated or emulated with the
//! same code. (This kernel has no netem: nothing in it can delay a packet.)
//!
//! ```text
//!  client namespace                 this process                 server namespace
//!  10.77.0.1 ── llemu<pid>c ══ fd ═ uplink line ═ fd ══ llemu<pid>s ── 10.77.1.1
//!                          ══ fd ═ downlink line ═ fd ══
//! ```
//!
//! Each line is the chain of the scenario's links on the route (queue,
//! transmitter or LTE cell / Wi-Fi AP, propagation delay, random loss per
//! link); see [`config`]
//! for the accepted file and `scenarios/emulate-20mbit-50ms.toml` for an
//! example. The command after `--` runs in the client namespace; with
//! `--stay` the emulator waits for a signal instead. Namespaces are removed
//! on every exit path (a guard's Drop, SIGINT/SIGTERM end the loop), and a
//! run after a SIGKILL removes what the killed one left ([`netns`]).
//!
//! Router mode (`--ingress`, `--egress`, `--router-netns`) puts the same
//! two lines between two interfaces of an existing router namespace
//! instead: policy rules route what arrives on each interface into a TUN
//! device, and the kernel forwards what the emulator writes back
//! ([`router`]).
//!
//! Modules: [`config`] (scenario → lines), [`netns`] (namespaces),
//! [`router`] (router mode's rules),
//! [`tun`] (device I/O), [`packet`] (checks, buffer pool), [`line`](mod@line) (the
//! delay line), [`event_loop`] (timing), [`outputs`] (output files),
//! [`args`] (command line).

pub mod args;
pub mod config;
pub mod event_loop;
pub mod line;
pub mod netns;
pub mod outputs;
pub mod packet;
pub mod router;
pub mod tun;

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::run_files::{write_summary, Recorder};
use args::EmulateOptions;
use event_loop::{Direction, LoopConfig};
use outputs::{create_pcap, link_row, RawPcap, Summary};

/// The line printed on stdout once the namespaces are up (one JSON object).
#[derive(serde::Serialize)]
struct Ready<'a> {
    event: &'static str,
    client_ns: &'a str,
    server_ns: &'a str,
    client_addr: &'a str,
    server_addr: &'a str,
    client_dev: &'a str,
    server_dev: &'a str,
    pid: u32,
}

/// The line printed on stdout once a router-mode link is up.
#[derive(serde::Serialize)]
struct RouterReady<'a> {
    event: &'static str,
    mode: &'static str,
    router_ns: Option<&'a str>,
    ingress: &'a str,
    egress: &'a str,
    up_dev: &'a str,
    down_dev: &'a str,
    pid: u32,
}

/// Where the two TUN devices went: two namespaces of our own, or a router
/// namespace given. Dropping it removes what was made.
enum Ends {
    Hosts(netns::Hosts),
    Router(router::RouterPath),
}

/// The TUN device each direction's packets are read from: the client's and
/// the server's (host mode), or the devices the uplink's and the
/// downlink's packets are routed into (router mode).
struct Tuns {
    client: tun::Tun,
    server: tun::Tun,
}

/// Where the summary says the ends were (empty in the mode that has none).
struct Places {
    client_ns: String,
    server_ns: String,
    client_addr: String,
    server_addr: String,
    router: Option<outputs::RouterSummary>,
}

impl Ends {
    /// Make the TUN devices and the namespaces (host mode) or the routing
    /// rules (router mode) around them, first removing what a killed
    /// emulator left.
    fn create(opts: &EmulateOptions, pid: u32) -> Result<(Tuns, Ends), String> {
        let tun_err = |e: io::Error| format!("{e} (the emulator needs root and /dev/net/tun)");
        match &opts.router {
            None => {
                for ns in netns::remove_stale()? {
                    if !opts.quiet {
                        eprintln!("removed stale namespace {ns} (its emulator is gone)");
                    }
                }
                let client = tun::Tun::create(&format!("llemu{pid}c")).map_err(tun_err)?;
                let server = tun::Tun::create(&format!("llemu{pid}s")).map_err(tun_err)?;
                let hosts = netns::Hosts::create(pid, &client, &server, opts.mtu)?;
                Ok((Tuns { client, server }, Ends::Hosts(hosts)))
            }
            Some(r) => {
                let ns = r.netns.as_deref();
                for rule in router::remove_stale_rules(ns)? {
                    if !opts.quiet {
                        eprintln!("removed stale {rule} (its emulator is gone)");
                    }
                }
                let up = tun::Tun::create(&format!("llemu{pid}u")).map_err(tun_err)?;
                let down = tun::Tun::create(&format!("llemu{pid}d")).map_err(tun_err)?;
                let path = router::RouterPath::create(pid, ns, &r.ingress, &r.egress, &up, &down, opts.mtu)?;
                Ok((
                    Tuns {
                        client: up,
                        server: down,
                    },
                    Ends::Router(path),
                ))
            }
        }
    }

    /// The JSON line printed on stdout once the ends are up.
    fn ready_line(&self, pid: u32) -> String {
        match self {
            Ends::Hosts(hosts) => serde_json::to_string(&Ready {
                event: "ready",
                client_ns: &hosts.client_ns,
                server_ns: &hosts.server_ns,
                client_addr: netns::CLIENT_ADDR,
                server_addr: netns::SERVER_ADDR,
                client_dev: &hosts.client_dev,
                server_dev: &hosts.server_dev,
                pid,
            }),
            Ends::Router(path) => serde_json::to_string(&RouterReady {
                event: "ready",
                mode: "router",
                router_ns: path.ns.as_deref(),
                ingress: &path.ingress,
                egress: &path.egress,
                up_dev: &path.up_dev,
                down_dev: &path.down_dev,
                pid,
            }),
        }
        .expect("plain struct")
    }

    /// What is emulated where, for a person reading stderr.
    fn describe(&self, plan: &config::PathPlan) -> String {
        match self {
            Ends::Hosts(hosts) => format!(
                "emulating {} <-> {} ({}): client {} in {}, server {} in {}",
                plan.client_node,
                plan.server_node,
                plan.scenario_name,
                netns::CLIENT_ADDR,
                hosts.client_ns,
                netns::SERVER_ADDR,
                hosts.server_ns
            ),
            Ends::Router(path) => format!(
                "emulating {} <-> {} ({}) in router {}: {} -> uplink -> {}, {} -> downlink -> {}",
                plan.client_node,
                plan.server_node,
                plan.scenario_name,
                path.ns.as_deref().unwrap_or("(this namespace)"),
                path.ingress,
                path.egress,
                path.egress,
                path.ingress
            ),
        }
    }

    /// Host mode: `ip netns exec CLIENT_NS COMMAND...`, with the addresses
    /// in its environment. Router mode: COMMAND where the emulator runs, with
    /// the router's namespace and interfaces in its environment. Also where
    /// it runs, for messages.
    fn command(&self, command: &[String]) -> (Command, String) {
        match self {
            Ends::Hosts(hosts) => {
                let mut cmd = Command::new("ip");
                cmd.args(["netns", "exec", &hosts.client_ns])
                    .args(command)
                    .env("LATLAB_EMU_CLIENT_NS", &hosts.client_ns)
                    .env("LATLAB_EMU_SERVER_NS", &hosts.server_ns)
                    .env("LATLAB_EMU_CLIENT_ADDR", netns::CLIENT_ADDR)
                    .env("LATLAB_EMU_SERVER_ADDR", netns::SERVER_ADDR);
                (cmd, hosts.client_ns.clone())
            }
            Ends::Router(path) => {
                let mut cmd = Command::new(&command[0]);
                cmd.args(&command[1..])
                    .env("LATLAB_EMU_ROUTER_NS", path.ns.as_deref().unwrap_or(""))
                    .env("LATLAB_EMU_INGRESS", &path.ingress)
                    .env("LATLAB_EMU_EGRESS", &path.egress);
                (cmd, "this namespace".to_string())
            }
        }
    }

    fn places(&self) -> Places {
        match self {
            Ends::Hosts(h) => Places {
                client_ns: h.client_ns.clone(),
                server_ns: h.server_ns.clone(),
                client_addr: netns::CLIENT_ADDR.into(),
                server_addr: netns::SERVER_ADDR.into(),
                router: None,
            },
            Ends::Router(p) => Places {
                client_ns: String::new(),
                server_ns: String::new(),
                client_addr: String::new(),
                server_addr: String::new(),
                router: Some(outputs::RouterSummary {
                    router_ns: p.ns.clone(),
                    ingress: p.ingress.clone(),
                    egress: p.egress.clone(),
                }),
            },
        }
    }
}

/// The run's CSV outputs in --out (none without it).
struct Outputs {
    samples: Recorder,
    packets: Option<csv::Writer<BufWriter<File>>>,
}

/// `opts.out/name`, when --out is given.
fn out_file(opts: &EmulateOptions, name: &str) -> Option<PathBuf> {
    opts.out.as_ref().map(|d| d.join(name))
}

/// Create --out and open `link_samples.csv` (when the scenario samples) and
/// `packets.csv` (with --packet-log).
fn open_outputs(opts: &EmulateOptions, plan: &config::PathPlan) -> Result<Outputs, String> {
    if let Some(dir) = &opts.out {
        std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
    }
    let samples = Recorder::create(
        out_file(opts, "link_samples.csv")
            .filter(|_| plan.sample_interval_ns > 0)
            .as_deref(),
    )
    .map_err(|e| e.to_string())?;
    let packets = match out_file(opts, "packets.csv").filter(|_| opts.packet_log) {
        Some(p) => Some(csv::Writer::from_writer(BufWriter::new(
            File::create(&p).map_err(|e| format!("{}: {e}", p.display()))?,
        ))),
        None => None,
    };
    Ok(Outputs { samples, packets })
}

/// A capture per hop of `line`: every hop's with --pcap, else those
/// `outputs.pcap` names; none without --out.
fn open_pcaps(
    opts: &EmulateOptions,
    pcap_links: &[String],
    line: &line::Line,
) -> Result<Vec<Option<RawPcap>>, String> {
    line.hops
        .iter()
        .map(|h| match &opts.out {
            Some(d) if opts.pcap || pcap_links.contains(&h.name) => create_pcap(d, &h.name).map(Some),
            _ => Ok(None),
        })
        .collect()
}

/// Run an emulation; the exit code to leave with (the command's, or 0).
pub fn run(opts: &EmulateOptions) -> Result<i32, String> {
    let plan = config::load(&opts.scenario, opts.client.as_deref(), opts.server.as_deref())?;
    let pid = std::process::id();
    let (tuns, ends) = Ends::create(opts, pid)?;
    let mut outputs = open_outputs(opts, &plan)?;
    let up_pcaps = open_pcaps(opts, &plan.pcap_links, &plan.up)?;
    let down_pcaps = open_pcaps(opts, &plan.pcap_links, &plan.down)?;
    let mut stdout = io::stdout().lock();
    let _ = writeln!(stdout, "{}", ends.ready_line(pid));
    let _ = stdout.flush();
    drop(stdout);
    if !opts.quiet {
        eprintln!("{}", ends.describe(&plan));
    }
    let mut dirs = [
        Direction::new("up", plan.up, up_pcaps),
        Direction::new("down", plan.down, down_pcaps),
    ];
    let (report, exit) = emulate(
        opts,
        &ends,
        &tuns,
        &mut dirs,
        plan.sample_interval_ns,
        &mut outputs,
    )?;
    let links = finish_outputs(opts, &mut dirs, outputs.packets)?;
    let command_exit_code = exit.map(|s| {
        use std::os::unix::process::ExitStatusExt;
        s.code().unwrap_or_else(|| 128 + s.signal().unwrap_or(0))
    });
    let [up, down] = dirs;
    let places = ends.places();
    let summary = Summary {
        scenario: plan.scenario_name,
        seed: plan.seed,
        client_node: plan.client_node,
        server_node: plan.server_node,
        client_ns: places.client_ns,
        server_ns: places.server_ns,
        client_addr: places.client_addr,
        server_addr: places.server_addr,
        router: places.router,
        elapsed_s: report.elapsed_ns as f64 / 1e9,
        up: up.stats,
        down: down.stats,
        input: report.input,
        links,
        max_buffered_pkts: report.max_buffered_pkts,
        command_exit_code,
    };
    report_summary(opts, &summary)?;
    // Rules and namespaces first, then the devices they point at.
    drop(ends);
    drop(tuns);
    Ok(command_exit_code.unwrap_or(0))
}

/// Start the command (if any), run the event loop until the command ends or
/// the duration is up, and end the command if it is still running. The
/// loop's report and the command's exit status.
fn emulate(
    opts: &EmulateOptions,
    ends: &Ends,
    tuns: &Tuns,
    dirs: &mut [Direction; 2],
    sample_interval_ns: u64,
    outputs: &mut Outputs,
) -> Result<(event_loop::LoopReport, Option<ExitStatus>), String> {
    let mut child = if opts.command.is_empty() {
        None
    } else {
        Some(spawn_command(ends, &opts.command, opts.out.as_deref())?)
    };
    let mut exit: Option<ExitStatus> = None;
    let unix_at_start_ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut pool = packet::Pool::new(opts.max_packet_bytes as usize, opts.max_buffered_packets as usize);
    let cfg = LoopConfig {
        max_packet_bytes: opts.max_packet_bytes as usize,
        sample_interval_ns,
        unix_at_start_ns,
        spin_ns: opts.spin_ns,
    };
    if let Some(prio) = opts.realtime {
        set_realtime(prio)?;
    }
    let mut stop = |elapsed_ns: u64| {
        if let Some(c) = child.as_mut() {
            if let Ok(Some(status)) = c.try_wait() {
                exit = Some(status);
                return true;
            }
        }
        opts.duration_ns.is_some_and(|d| elapsed_ns >= d)
    };
    let report = event_loop::run(
        &tuns.client,
        &tuns.server,
        dirs,
        &mut pool,
        &cfg,
        &mut outputs.samples,
        outputs.packets.as_mut(),
        &mut stop,
    );
    if exit.is_none() {
        if let Some(c) = child.as_mut() {
            exit = end_child(c);
        }
    }
    let report = report.map_err(|e| format!("emulator I/O: {e}"))?;
    Ok((report, exit))
}

/// Close the captures and `packets.csv`, and write `links.csv`; the link rows.
fn finish_outputs(
    opts: &EmulateOptions,
    dirs: &mut [Direction; 2],
    packets: Option<csv::Writer<BufWriter<File>>>,
) -> Result<Vec<outputs::LinkRow>, String> {
    for d in dirs.iter_mut() {
        d.finish();
        for p in d.pcaps.iter_mut().filter_map(Option::take) {
            p.finish().map_err(|e| e.to_string())?;
        }
    }
    if let Some(mut w) = packets {
        w.flush().map_err(|e| e.to_string())?;
    }
    let links: Vec<_> = dirs
        .iter()
        .flat_map(|d| d.line.hops.iter().map(move |h| link_row(h, d.name)))
        .collect();
    if let Some(p) = out_file(opts, "links.csv") {
        let mut r = Recorder::create(Some(&p)).map_err(|e| e.to_string())?;
        for row in &links {
            r.row(row).map_err(|e| e.to_string())?;
        }
    }
    Ok(links)
}

/// `summary.json` in --out, and the summary on stderr unless --quiet.
fn report_summary(opts: &EmulateOptions, summary: &Summary) -> Result<(), String> {
    if let Some(p) = out_file(opts, "summary.json") {
        write_summary(&p, summary).map_err(|e| e.to_string())?;
    }
    if !opts.quiet {
        eprintln!("{}", serde_json::to_string_pretty(summary).expect("plain struct"));
    }
    Ok(())
}

/// Start the command after `--` where [`Ends::command`] says.
fn spawn_command(ends: &Ends, command: &[String], out: Option<&Path>) -> Result<Child, String> {
    let (mut cmd, place) = ends.command(command);
    if let Some(dir) = out {
        cmd.env("LATLAB_EMU_OUT", dir);
    }
    cmd.spawn()
        .map_err(|e| format!("cannot run {:?} in {place}: {e}", command[0]))
}

/// Ask a command still running at the end to stop (SIGTERM), then kill it
/// after 2 s.
fn end_child(child: &mut Child) -> Option<ExitStatus> {
    if let Ok(Some(s)) = child.try_wait() {
        return Some(s);
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
    let t0 = Instant::now();
    while t0.elapsed() < Duration::from_secs(2) {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let _ = child.kill();
    child.wait().ok()
}

/// SCHED_FIFO at `prio` for this thread (the event loop's). Set after the
/// command is spawned, and with SCHED_RESET_ON_FORK, so that neither the
/// command nor the `ip` calls of the clean-up run real-time.
fn set_realtime(prio: i32) -> Result<(), String> {
    let param = libc::sched_param { sched_priority: prio };
    let policy = libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK;
    // SAFETY: pid 0 = this thread; a valid sched_param.
    if unsafe { libc::sched_setscheduler(0, policy, &param) } != 0 {
        return Err(format!(
            "--realtime {prio}: sched_setscheduler: {}",
            io::Error::last_os_error()
        ));
    }
    Ok(())
}
