//! Per-subflow rate limits on an egress device: an HTB root qdisc the
//! [`Throttler`] owns, and per throttled subflow one HTB class (rate = ceil,
//! so it never borrows) and one u32 filter matching exactly the subflow's
//! TCP 4-tuple that sends it to the class. Traffic no filter matches is not
//! classified and leaves through HTB's direct queue, unshaped (HTB's
//! "default 0"): the default is unlimited by construction.
//!
//! Each class has its own byte-limited FIFO (bfifo) as its leaf queue,
//! sized to [`LEAF_QUEUE_DELAY_NS`] of the class rate: without it HTB gives
//! the class a pfifo of the device's txqueuelen (1000 packets on a veth,
//! 2.4 s at 5 Mbit/s), the throttled subflow's RTT grows to seconds, and
//! the data-level receive window stalls the whole MPTCP connection behind
//! it (head-of-line blocking) instead of steering traffic to the other
//! subflows. Deleting the class deletes its leaf with it.
//!
//! Each rule uses one number N for its class (1:N, written in hex as tc
//! reads class minors) and its filter priority (prio N, its own u32
//! instance), so removing a rule needs no kernel-assigned filter handle:
//! `tc filter del ... prio N` drops exactly that filter.
//!
//! The rules go through iproute2's `tc`: one long-lived `tc -force -batch
//! -` process per device, fed a rule's lines (class, leaf FIFO and filter
//! in; filter and class out) and then a line that fails on purpose, whose
//! "Command failed -:N" report on tc's stderr marks that tc has run
//! everything before it. tc runs each line once the kernel acknowledged
//! the one before, so the rule is active when [`Throttler::throttle`]
//! returns; a refused line reports its own "Command failed" before the
//! marker's, and `-force` keeps tc running for the next rule. A fork and
//! exec of tc per rule cost 3-5 ms, which limited the leak test to
//! 6-8.5k install/remove rounds a minute; through the session a rule
//! costs about 0.3 ms. If the session dies, a one-shot `tc -batch` does
//! the rule. iproute2 is on every machine the namespace testbed runs on, and
//! its command syntax for HTB and u32 has been stable for twenty years;
//! hand-built TCA_U32_SEL structures over rtnetlink would have no other
//! user here.
//!
//! Dropping a [`ThrottleHandle`] removes its rule; dropping the last of
//! the [`Throttler`] and its handles deletes the root qdisc.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::net::IpAddr;
use std::process::{Child, ChildStderr, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::steer::Action;
use super::FourTuple;

/// Queueing delay a throttled subflow's leaf FIFO holds at the class rate.
pub const LEAF_QUEUE_DELAY_NS: u64 = 50_000_000;

/// The leaf FIFO never holds fewer bytes than this: the kernel queues TCP
/// segments as GSO super-packets of up to 64 KiB, and a FIFO that cannot
/// hold a few of them drops every one (at 10 Mbit/s, 50 ms is 62,500
/// bytes, less than one super-packet).
pub const LEAF_QUEUE_MIN_BYTES: u64 = 3 * 65_536;

/// Byte limit of the leaf FIFO of a class shaped to `rate_bps`.
pub fn leaf_queue_bytes(rate_bps: u64) -> u64 {
    let bytes = (rate_bps as u128 * LEAF_QUEUE_DELAY_NS as u128 / 8_000_000_000) as u64;
    bytes.max(LEAF_QUEUE_MIN_BYTES)
}

/// Class minors / filter priorities handed out, 1..=MAX_RULES.
pub const MAX_RULES: u16 = 0xfff0;

#[derive(Debug, thiserror::Error)]
pub enum ThrottleError {
    #[error("cannot run '{program}' (iproute2): {source}")]
    Spawn {
        program: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("'{command}' failed: {stderr}")]
    Command { command: String, stderr: String },
    #[error("device {dev} already has a root qdisc ({existing}); the throttler needs its own (remove it with 'tc qdisc del dev {dev} root', or use Throttler::replace)")]
    DeviceBusy { dev: String, existing: String },
    #[error("subflow {0}: local and remote address families differ")]
    MixedFamilies(FourTuple),
    #[error("rate_bps = {0}: must be at least 8 bit/s")]
    BadRate(u64),
    #[error("device {0}: all {MAX_RULES} throttle rules are in use")]
    Full(String),
    #[error("no route from {local} to {remote}: {detail}")]
    NoRoute {
        local: IpAddr,
        remote: IpAddr,
        detail: String,
    },
}

fn run(
    program: &'static str,
    netns: Option<&str>,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, ThrottleError> {
    let mut cmd = Command::new(program);
    if let Some(ns) = netns {
        cmd.args(["-n", ns]);
    }
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|source| ThrottleError::Spawn { program, source })?;
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("stdin was piped");
        // A write error means tc exited early; its status and stderr say why.
        let _ = pipe.write_all(text.as_bytes());
    }
    let out = child
        .wait_with_output()
        .map_err(|source| ThrottleError::Spawn { program, source })?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let ns = netns.map(|n| format!("-n {n} ")).unwrap_or_default();
        let what = match stdin {
            Some(text) => format!("{program} {ns}-batch - <<< {:?}", text.trim_end()),
            None => format!("{program} {ns}{}", args.join(" ")),
        };
        Err(ThrottleError::Command {
            command: what,
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        })
    }
}

/// The device a packet from `tuple.local` to `tuple.remote` leaves by
/// (`ip route get REMOTE from LOCAL`), in namespace `netns` (None: ours).
pub fn egress_device(tuple: &FourTuple, netns: Option<&str>) -> Result<String, ThrottleError> {
    let (local, remote) = (tuple.local.ip().to_canonical(), tuple.remote.ip().to_canonical());
    let out = run(
        "ip",
        netns,
        &[
            "-o",
            "route",
            "get",
            &remote.to_string(),
            "from",
            &local.to_string(),
        ],
        None,
    )
    .map_err(|e| ThrottleError::NoRoute {
        local,
        remote,
        detail: e.to_string(),
    })?;
    let mut words = out.split_whitespace();
    while let Some(w) = words.next() {
        if w == "dev" {
            if let Some(dev) = words.next() {
                return Ok(dev.to_string());
            }
        }
    }
    Err(ThrottleError::NoRoute {
        local,
        remote,
        detail: format!("no 'dev' in {:?}", out.trim()),
    })
}

/// A long-lived `tc -force -batch -` on one device (see the module notes).
#[derive(Debug)]
struct TcSession {
    child: Child,
    stdin: ChildStdin,
    stderr: BufReader<ChildStderr>,
    /// Lines written so far (tc numbers its error reports by line).
    lines_sent: usize,
}

/// A device name no machine has: `qdisc show dev` of it fails with a
/// message, the marker that tc has run every line before it. (A `show`
/// of a real device cannot serve: tc 6.1 keeps parse state across batch
/// lines, and `qdisc show ... root` after a `qdisc add ... parent` exits
/// with "parent is already specified".)
const MARKER_DEVICE: &str = "llnomarker0";

impl TcSession {
    fn start(netns: Option<&str>) -> std::io::Result<TcSession> {
        let mut cmd = Command::new("tc");
        if let Some(ns) = netns {
            cmd.args(["-n", ns]);
        }
        let mut child = cmd
            .args(["-force", "-batch", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        let stdin = child.stdin.take().expect("piped");
        let stderr = BufReader::new(child.stderr.take().expect("piped"));
        Ok(TcSession {
            child,
            stdin,
            stderr,
            lines_sent: 0,
        })
    }

    /// Run `lines`; Ok(Err(messages)) if tc refused one, Err if the
    /// session broke (tc exited).
    fn run(&mut self, lines: &[String]) -> std::io::Result<Result<(), String>> {
        let mut text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        text.push_str(&format!("qdisc show dev {MARKER_DEVICE}\n"));
        self.stdin.write_all(text.as_bytes())?;
        self.stdin.flush()?;
        self.lines_sent += lines.len() + 1;
        let marker_done = format!("Command failed -:{}", self.lines_sent);
        let mut messages = Vec::new();
        let mut failed = false;
        let mut line = String::new();
        loop {
            line.clear();
            if self.stderr.read_line(&mut line)? == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "tc exited",
                ));
            }
            let l = line.trim_end();
            if l == marker_done {
                break;
            }
            failed |= l.starts_with("Command failed");
            if !l.contains(MARKER_DEVICE) {
                messages.push(l.to_string());
            }
        }
        if failed {
            Ok(Err(messages.join("\n")))
        } else {
            Ok(Ok(()))
        }
    }
}

impl Drop for TcSession {
    fn drop(&mut self) {
        // Every command sent has run (each waited for its marker).
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Numbers 1..=MAX_RULES, lowest free first.
#[derive(Debug)]
struct IdPool {
    next: u16,
    free: Vec<u16>,
}

impl IdPool {
    fn take(&mut self) -> Option<u16> {
        if let Some(id) = self.free.pop() {
            return Some(id);
        }
        (self.next <= MAX_RULES).then(|| {
            self.next += 1;
            self.next - 1
        })
    }

    fn give_back(&mut self, id: u16) {
        self.free.push(id);
    }
}

#[derive(Debug)]
struct Device {
    dev: String,
    netns: Option<String>,
    ids: Mutex<IdPool>,
    /// Started at the first rule; None again if it broke.
    session: Mutex<Option<TcSession>>,
}

impl Device {
    fn tc(&self, args: &[&str]) -> Result<String, ThrottleError> {
        run("tc", self.netns.as_deref(), args, None)
    }

    fn tc_batch(&self, lines: &[String]) -> Result<(), ThrottleError> {
        let mut session = self.session.lock().unwrap_or_else(|p| p.into_inner());
        if session.is_none() {
            *session = TcSession::start(self.netns.as_deref()).ok();
        }
        if let Some(tc) = session.as_mut() {
            match tc.run(lines) {
                Ok(Ok(())) => return Ok(()),
                Ok(Err(stderr)) => {
                    let ns = self
                        .netns
                        .as_deref()
                        .map(|n| format!("-n {n} "))
                        .unwrap_or_default();
                    return Err(ThrottleError::Command {
                        command: format!("tc {ns}-force -batch - <<< {:?}", lines.join("\n")),
                        stderr,
                    });
                }
                // The session broke: a one-shot tc below.
                Err(_) => *session = None,
            }
        }
        drop(session);
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        run("tc", self.netns.as_deref(), &["-batch", "-"], Some(&text)).map(|_| ())
    }

    fn remove_rule(&self, id: u16, protocol: &str) -> Result<(), ThrottleError> {
        let dev = &self.dev;
        let result = self.tc_batch(&[
            format!("filter del dev {dev} parent 1: protocol {protocol} prio {id}"),
            format!("class del dev {dev} classid 1:{id:x}"),
        ]);
        if result.is_ok() {
            self.ids.lock().unwrap_or_else(|p| p.into_inner()).give_back(id);
        }
        result
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        // End the session first, then delete the root qdisc, which takes
        // every class and filter with it.
        self.session.lock().unwrap_or_else(|p| p.into_inner()).take();
        let _ = self.tc(&["qdisc", "del", "dev", &self.dev, "root"]);
    }
}

/// The HTB root on one egress device. Cheap to clone; shared by its handles.
#[derive(Clone, Debug)]
pub struct Throttler {
    device: Arc<Device>,
}

impl Throttler {
    /// Install an HTB root qdisc (handle 1:) on `dev` in namespace `netns`
    /// (None: this process's namespace). Refuses a device that already has
    /// a root qdisc other than the kernel's default.
    pub fn new(dev: &str, netns: Option<&str>) -> Result<Throttler, ThrottleError> {
        Self::install(dev, netns, false)
    }

    /// As [`Self::new`], first deleting whatever root qdisc `dev` has (e.g.
    /// one left by a killed proxy).
    pub fn replace(dev: &str, netns: Option<&str>) -> Result<Throttler, ThrottleError> {
        Self::install(dev, netns, true)
    }

    fn install(dev: &str, netns: Option<&str>, replace: bool) -> Result<Throttler, ThrottleError> {
        let existing = run("tc", netns, &["qdisc", "show", "dev", dev, "root"], None)?;
        let existing = existing.lines().next().unwrap_or("").trim().to_string();
        // The kernel's defaults carry no handle of ours: noqueue, pfifo_fast,
        // or an mq/fq_codel default set up at device creation ("handle 0:").
        let default = existing.is_empty()
            || existing.contains(" noqueue ")
            || existing.starts_with("qdisc noqueue")
            || existing.contains(" 0: root");
        if !default {
            if !replace {
                return Err(ThrottleError::DeviceBusy {
                    dev: dev.to_string(),
                    existing,
                });
            }
            run("tc", netns, &["qdisc", "del", "dev", dev, "root"], None)?;
        }
        run(
            "tc",
            netns,
            &[
                "qdisc", "add", "dev", dev, "root", "handle", "1:", "htb", "default", "0",
            ],
            None,
        )?;
        Ok(Throttler {
            device: Arc::new(Device {
                dev: dev.to_string(),
                netns: netns.map(str::to_string),
                ids: Mutex::new(IdPool {
                    next: 1,
                    free: Vec::new(),
                }),
                session: Mutex::new(None),
            }),
        })
    }

    pub fn device(&self) -> &str {
        &self.device.dev
    }

    /// Limit packets with source `tuple.local` and destination
    /// `tuple.remote` (TCP) leaving this device to `rate_bps`. The rule is
    /// active when this returns.
    pub fn throttle(&self, tuple: &FourTuple, rate_bps: u64) -> Result<ThrottleHandle, ThrottleError> {
        if rate_bps < 8 {
            return Err(ThrottleError::BadRate(rate_bps));
        }
        let (src, dst) = (tuple.local.ip().to_canonical(), tuple.remote.ip().to_canonical());
        let (protocol, m) = match (src, dst) {
            (IpAddr::V4(_), IpAddr::V4(_)) => ("ip", "ip"),
            (IpAddr::V6(_), IpAddr::V6(_)) => ("ipv6", "ip6"),
            _ => return Err(ThrottleError::MixedFamilies(*tuple)),
        };
        let plen = if protocol == "ip" { 32 } else { 128 };
        let dev = &self.device.dev;
        let id = self
            .device
            .ids
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
            .ok_or_else(|| ThrottleError::Full(dev.clone()))?;
        // quantum only splits spare bandwidth between siblings, which never
        // borrow here (ceil = rate); a fixed one avoids the kernel's
        // "quantum is big/small" warnings at extreme rates.
        let class = format!("class add dev {dev} parent 1: classid 1:{id:x} htb rate {rate_bps}bit ceil {rate_bps}bit quantum 1514");
        // `ip sport`/`ip6 sport` read the TCP header right after a base IP
        // header: TCP over IPv4 carries no IP options, IPv6 subflows no
        // extension headers.
        let filter = format!(
            "filter add dev {dev} parent 1: protocol {protocol} prio {id} u32 \
             match {m} protocol 6 0xff match {m} src {src}/{plen} match {m} dst {dst}/{plen} \
             match {m} sport {} 0xffff match {m} dport {} 0xffff flowid 1:{id:x}",
            tuple.local.port(),
            tuple.remote.port()
        );
        // No handle: the kernel picks one (ours, 1:N, are class ids).
        let leaf = format!(
            "qdisc add dev {dev} parent 1:{id:x} bfifo limit {}",
            leaf_queue_bytes(rate_bps)
        );
        match self.device.tc_batch(&[class, leaf, filter]) {
            Ok(()) => Ok(ThrottleHandle {
                device: Arc::clone(&self.device),
                id,
                protocol,
                tuple: *tuple,
                rate_bps,
                removed: false,
            }),
            Err(e) => {
                // Undo whichever half went in; then the id is free again.
                if self.device.remove_rule(id, protocol).is_err() {
                    let _ = self
                        .device
                        .tc(&["class", "del", "dev", dev, "classid", &format!("1:{id:x}")]);
                    self.device
                        .ids
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .give_back(id);
                }
                Err(e)
            }
        }
    }

    /// (classes, filters) the kernel has on the device under our root
    /// (`tc class show` / `tc filter show` lines naming a class of ours),
    /// to check for leaks.
    pub fn rule_counts(&self) -> Result<(usize, usize), ThrottleError> {
        let dev = &self.device.dev;
        let classes = self.device.tc(&["class", "show", "dev", dev])?;
        let filters = self.device.tc(&["filter", "show", "dev", dev])?;
        Ok((
            classes.lines().filter(|l| l.starts_with("class htb 1:")).count(),
            filters.lines().filter(|l| l.contains("flowid 1:")).count(),
        ))
    }
}

/// One installed rule; dropping it removes the rule (errors ignored, use
/// [`Self::remove`] to see them).
#[derive(Debug)]
pub struct ThrottleHandle {
    device: Arc<Device>,
    id: u16,
    protocol: &'static str,
    tuple: FourTuple,
    rate_bps: u64,
    removed: bool,
}

impl ThrottleHandle {
    pub fn tuple(&self) -> &FourTuple {
        &self.tuple
    }

    pub fn rate_bps(&self) -> u64 {
        self.rate_bps
    }

    /// The class (1:id, hex) and filter priority (prio id) of this rule.
    pub fn id(&self) -> u16 {
        self.id
    }

    pub fn device(&self) -> &str {
        &self.device.dev
    }

    /// Remove the class and the filter now.
    pub fn remove(mut self) -> Result<(), ThrottleError> {
        self.removed = true;
        self.device.remove_rule(self.id, self.protocol)
    }
}

impl Drop for ThrottleHandle {
    fn drop(&mut self) {
        if !self.removed {
            let _ = self.device.remove_rule(self.id, self.protocol);
        }
    }
}

/// The throttles of a whole proxy: one [`Throttler`] per egress device
/// (found with [`egress_device`]), one handle per throttled subflow; it
/// carries out [`Action`]s from [`super::steer::Steering`].
#[derive(Debug, Default)]
pub struct ThrottleSet {
    netns: Option<String>,
    devices: BTreeMap<String, Throttler>,
    active: BTreeMap<FourTuple, ThrottleHandle>,
    /// (local, remote) address → egress device: a subflow's second lookup
    /// (policy, then rule) and later subflows between the same addresses
    /// cost no `ip` process.
    routes: BTreeMap<(IpAddr, IpAddr), String>,
}

impl ThrottleSet {
    /// Devices and routes of namespace `netns` (None: this process's).
    pub fn new(netns: Option<&str>) -> ThrottleSet {
        ThrottleSet {
            netns: netns.map(str::to_string),
            ..ThrottleSet::default()
        }
    }

    /// Install the HTB root on `dev` now rather than at its first rule
    /// (which would then wait for one more `tc`).
    pub fn prepare(&mut self, dev: &str) -> Result<&Throttler, ThrottleError> {
        if !self.devices.contains_key(dev) {
            let t = Throttler::new(dev, self.netns.as_deref())?;
            self.devices.insert(dev.to_string(), t);
        }
        Ok(&self.devices[dev])
    }

    /// [`egress_device`], remembered per address pair. Call
    /// [`Self::forget_routes`] when routes change.
    pub fn egress_device(&mut self, tuple: &FourTuple) -> Result<String, ThrottleError> {
        let key = (tuple.local.ip().to_canonical(), tuple.remote.ip().to_canonical());
        if let Some(dev) = self.routes.get(&key) {
            return Ok(dev.clone());
        }
        let dev = egress_device(tuple, self.netns.as_deref())?;
        self.routes.insert(key, dev.clone());
        Ok(dev)
    }

    pub fn forget_routes(&mut self) {
        self.routes.clear();
    }

    pub fn throttler(&self, dev: &str) -> Option<&Throttler> {
        self.devices.get(dev)
    }

    /// Subflows throttled now.
    pub fn active(&self) -> impl Iterator<Item = &ThrottleHandle> {
        self.active.values()
    }

    /// Whether `tuple` has a rule of this set now.
    pub fn is_throttled(&self, tuple: &FourTuple) -> bool {
        self.active.contains_key(tuple)
    }

    /// Carry out one action; for a throttle, the time from this call to the
    /// rule being active (route lookup and `tc` included).
    pub fn apply(&mut self, action: &Action) -> Result<Option<Duration>, ThrottleError> {
        let t0 = Instant::now();
        match action {
            Action::Throttle { tuple, rate_bps, .. } => {
                if let Some(old) = self.active.remove(tuple) {
                    old.remove()?;
                }
                let dev = self.egress_device(tuple)?;
                let handle = self.prepare(&dev)?.throttle(tuple, *rate_bps)?;
                self.active.insert(*tuple, handle);
                Ok(Some(t0.elapsed()))
            }
            Action::Release { tuple, .. } => {
                if let Some(handle) = self.active.remove(tuple) {
                    handle.remove()?;
                }
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_reused_and_bounded() {
        let mut p = IdPool {
            next: 1,
            free: Vec::new(),
        };
        assert_eq!((p.take(), p.take()), (Some(1), Some(2)));
        p.give_back(1);
        assert_eq!(p.take(), Some(1));
        p.next = MAX_RULES;
        assert_eq!(p.take(), Some(MAX_RULES));
        assert_eq!(p.take(), None);
    }

    #[test]
    fn the_leaf_fifo_holds_fifty_ms_at_the_rate_and_at_least_three_gso_packets() {
        // 100 Mbit/s · 50 ms = 5 Mbit = 625,000 bytes.
        assert_eq!(leaf_queue_bytes(100_000_000), 625_000);
        assert_eq!(leaf_queue_bytes(1_000_000_000), 6_250_000);
        // 5 Mbit/s · 50 ms = 31,250 bytes: less than three GSO packets.
        assert_eq!(leaf_queue_bytes(5_000_000), 3 * 65_536);
    }
}
