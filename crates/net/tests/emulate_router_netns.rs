//! `latlab-net emulate` in router mode: the emulated link between two
//! interfaces of an existing router namespace, in a three-namespace
//! topology (client — router — server) the test builds.
//!
//! Needs root, /dev/net/tun and iproute2 (`ip`); without them every test
//! prints why and passes without running (run with `--nocapture` to see
//! the reason). The namespaces are deleted, and the emulator stopped, even
//! when an assertion fails (the guards' Drop). As in emulate_netns.rs,
//! what is asserted holds on a loaded machine: no packet arrives before
//! the delay, a busy link carries its rate and no more, and nothing of the
//! emulator's is left in the router namespace afterwards.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::emulate_util;
use crate::emulate_util::unavailable;

const BIN: &str = env!("CARGO_BIN_EXE_latlab-net");

const CLIENT_ADDR: &str = "10.91.1.1";
const SERVER_ADDR: &str = "10.91.2.1";
/// The scenario's link: 20 Mbit/s each way, 10 ms one-way, 100 packets.
const RATE_BPS: f64 = 20e6;
const DELAY_MS: f64 = 10.0;
const SCENARIO: &str = r#"
name = "router-test"
duration_s = 1
[topology]
kind = "custom"
nodes = [{ name = "client" }, { name = "server" }]
[[topology.links]]
from = "client"
to = "server"
rate_bps = 20e6
delay_ms = 10
queue = { kind = "droptail", limit_packets = 100 }
"#;

macro_rules! require_testbed {
    () => {
        if let Some(reason) = unavailable() {
            eprintln!("skipped: {reason} (router mode needs root, /dev/net/tun and iproute2)");
            return;
        }
    };
}

fn ip(args: &[&str]) -> String {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn scratch_dir(name: &str) -> PathBuf {
    emulate_util::scratch_dir("emu-router", name)
}

/// client (10.91.1.1) ─ veth ─ router (ra | rb) ─ veth ─ server (10.91.2.1);
/// the router forwards. Deleted on drop.
struct Topology {
    client: String,
    router: String,
    server: String,
}

impl Topology {
    fn build(tag: &str) -> Topology {
        let pid = std::process::id();
        let t = Topology {
            client: format!("llrt-{pid}-{tag}-c"),
            router: format!("llrt-{pid}-{tag}-r"),
            server: format!("llrt-{pid}-{tag}-s"),
        };
        for ns in [&t.client, &t.router, &t.server] {
            ip(&["netns", "add", ns]);
            ip(&["-n", ns, "link", "set", "lo", "up"]);
        }
        for (ns, dev, peer, addr, gw, raddr) in [
            (&t.client, "c0", "ra", CLIENT_ADDR, "10.91.1.2", "10.91.1.2/24"),
            (&t.server, "s0", "rb", SERVER_ADDR, "10.91.2.2", "10.91.2.2/24"),
        ] {
            ip(&[
                "-n", ns, "link", "add", dev, "type", "veth", "peer", "name", peer, "netns", &t.router,
            ]);
            ip(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            ip(&["-n", ns, "link", "set", dev, "up"]);
            ip(&["-n", ns, "route", "add", "default", "via", gw]);
            ip(&["-n", &t.router, "addr", "add", raddr, "dev", peer]);
            ip(&["-n", &t.router, "link", "set", peer, "up"]);
        }
        t.set_forwarding(true);
        t
    }

    fn set_forwarding(&self, on: bool) {
        let v = if on { "1" } else { "0" };
        let ok = Command::new("ip")
            .args(["netns", "exec", &self.router, "sysctl", "-qw"])
            .arg(format!("net.ipv4.ip_forward={v}"))
            .status()
            .unwrap()
            .success();
        assert!(ok, "sysctl net.ipv4.ip_forward in {}", self.router);
    }

    /// The router's rules that point at an emulator's tables, and its
    /// emulator TUN devices.
    fn leftovers(&self) -> (Vec<String>, Vec<String>) {
        let rules = ip(&["-n", &self.router, "-4", "rule", "show"])
            .lines()
            .filter(|l| l.contains("iif ra") || l.contains("iif rb"))
            .map(str::to_string)
            .collect();
        let devs = ip(&["-n", &self.router, "-o", "link", "show"])
            .lines()
            .filter(|l| l.contains("llemu"))
            .map(str::to_string)
            .collect();
        (rules, devs)
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in [&self.client, &self.router, &self.server] {
            let _ = Command::new("ip").args(["netns", "delete", ns]).status();
        }
    }
}

/// A running router-mode emulator; SIGTERM on drop.
struct Emulator {
    child: Option<Child>,
    ready: Value,
    out: PathBuf,
}

impl Emulator {
    fn start(scenario: &Path, router: &str, out: &Path) -> Emulator {
        let mut child = Command::new(BIN)
            .arg("emulate")
            .arg(scenario)
            .args(["--router-netns", router, "--ingress", "ra", "--egress", "rb"])
            .args(["--stay", "--quiet", "--out"])
            .arg(out)
            .stdout(Stdio::piped())
            .spawn()
            .expect("run latlab-net");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("no ready line from the emulator (got {line:?})");
            }
        };
        Emulator {
            child: Some(child),
            ready,
            out: out.to_path_buf(),
        }
    }

    /// SIGTERM, wait, and read the summary.
    fn stop(mut self) -> Value {
        let mut child = self.child.take().unwrap();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGTERM) };
        let status = child.wait().unwrap();
        assert!(status.success(), "emulator exit: {status}");
        let text = std::fs::read_to_string(self.out.join("summary.json")).unwrap();
        serde_json::from_str(&text).unwrap()
    }

    /// SIGKILL: no clean-up runs.
    fn kill(mut self) {
        let mut child = self.child.take().unwrap();
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
            let t0 = Instant::now();
            while t0.elapsed() < Duration::from_secs(5) {
                if let Ok(Some(_)) = c.try_wait() {
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Run `f` on a thread that has joined network namespace `ns`.
fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let path = format!("/var/run/netns/{ns}");
    std::thread::spawn(move || {
        let file = File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        // SAFETY: setns on a namespace file we opened; only this thread moves.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
        f()
    })
}

fn write_scenario(dir: &Path) -> PathBuf {
    let p = dir.join("router.toml");
    std::fs::write(&p, SCENARIO).unwrap();
    p
}

/// Round-trip times (ms) of `n` 64-byte UDP echoes client → server, one
/// every 20 ms.
fn echo_rtts_ms(t: &Topology, n: usize) -> Vec<f64> {
    let server = in_ns(&t.server, || {
        let s = UdpSocket::bind((SERVER_ADDR, 7100)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let mut buf = [0u8; 2048];
        while let Ok((len, from)) = s.recv_from(&mut buf) {
            if &buf[..len] == b"end" {
                break;
            }
            s.send_to(&buf[..len], from).unwrap();
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    let rtts = in_ns(&t.client, move || {
        let s = UdpSocket::bind((CLIENT_ADDR, 0)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut out = Vec::with_capacity(n);
        let mut buf = [0u8; 2048];
        for i in 0..n as u32 {
            let mut probe = [0u8; 64];
            probe[..4].copy_from_slice(&i.to_be_bytes());
            let t0 = Instant::now();
            s.send_to(&probe, (SERVER_ADDR, 7100)).unwrap();
            loop {
                let (len, _) = s.recv_from(&mut buf).expect("an echo within 2 s");
                if len == 64 && buf[..4] == i.to_be_bytes() {
                    break;
                }
            }
            out.push(t0.elapsed().as_secs_f64() * 1e3);
            std::thread::sleep(Duration::from_millis(20));
        }
        s.send_to(b"end", (SERVER_ADDR, 7100)).unwrap();
        out
    })
    .join()
    .unwrap();
    server.join().unwrap();
    rtts
}

/// A TCP transfer client → server for `secs`; the server's goodput
/// (bit/s) from its first byte to its last.
fn tcp_goodput_bps(t: &Topology, secs: f64) -> f64 {
    let server = in_ns(&t.server, || {
        let l = TcpListener::bind((SERVER_ADDR, 7101)).unwrap();
        let (mut c, _) = l.accept().unwrap();
        let mut buf = vec![0u8; 1 << 16];
        let mut first: Option<Instant> = None;
        let mut bytes = 0u64;
        loop {
            let n = c.read(&mut buf).unwrap();
            if n == 0 {
                break;
            }
            // The first read's bytes arrived before the clock started.
            if first.is_none() {
                first = Some(Instant::now());
            } else {
                bytes += n as u64;
            }
        }
        bytes as f64 * 8.0 / first.unwrap().elapsed().as_secs_f64()
    });
    std::thread::sleep(Duration::from_millis(100));
    in_ns(&t.client, move || {
        let mut s = TcpStream::connect((SERVER_ADDR, 7101)).unwrap();
        let buf = vec![0x5au8; 1 << 16];
        let end = Instant::now() + Duration::from_secs_f64(secs);
        while Instant::now() < end {
            s.write_all(&buf).unwrap();
        }
    })
    .join()
    .unwrap();
    server.join().unwrap()
}

fn quantile(xs: &[f64], q: f64) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

#[test]
fn a_router_namespace_forwards_through_the_emulated_link_and_is_left_clean() {
    let _turn = crate::turn::take_alone(module_path!());
    skip_if_tcp_mem_unfit!();
    require_testbed!();
    let dir = scratch_dir("link");
    let scenario = write_scenario(&dir);
    let t = Topology::build("l");
    // Without the emulator the path has no delay to speak of.
    let bare = quantile(&echo_rtts_ms(&t, 20), 0.5);
    let emu = Emulator::start(&scenario, &t.router, &dir.join("out"));
    assert_eq!(emu.ready["mode"], "router");
    assert_eq!(emu.ready["router_ns"], t.router.as_str());
    let (rules, devs) = t.leftovers();
    assert_eq!((rules.len(), devs.len()), (2, 2), "{rules:?} {devs:?}");

    let rtts = echo_rtts_ms(&t, 100);
    let (min, p50, p90) = (quantile(&rtts, 0.0), quantile(&rtts, 0.5), quantile(&rtts, 0.9));
    eprintln!(
        "UDP echo RTT through router mode ({DELAY_MS} ms one-way): min {min:.3} p50 {p50:.3} p90 {p90:.3} ms \
         (without the emulator: p50 {bare:.3} ms)"
    );
    // Never earlier than the two delays; on an idle machine p50 is within
    // a few hundred µs of them, a loaded one is given 10 ms.
    assert!(min >= 2.0 * DELAY_MS, "min RTT {min} ms");
    assert!(p50 <= 2.0 * DELAY_MS + 10.0, "p50 RTT {p50} ms");

    let goodput = tcp_goodput_bps(&t, 4.0);
    eprintln!(
        "TCP goodput through router mode: {:.2} Mbit/s (link {:.0} Mbit/s of IP packets)",
        goodput / 1e6,
        RATE_BPS / 1e6
    );
    // Goodput is below the link's IP rate by the headers (52 of 1500
    // bytes); it cannot exceed it, and a 4 s transfer fills most of it.
    assert!(goodput <= RATE_BPS * 1.02, "goodput {goodput}");
    assert!(goodput >= RATE_BPS * 0.7, "goodput {goodput}");

    let summary = emu.stop();
    assert_eq!(summary["router"]["ingress"], "ra");
    assert_eq!(summary["router"]["egress"], "rb");
    assert!(summary["up"]["delivered_pkts"].as_u64().unwrap() > 1000);
    assert!(summary["down"]["delivered_pkts"].as_u64().unwrap() > 100);
    let (rules, devs) = t.leftovers();
    assert!(rules.is_empty() && devs.is_empty(), "left: {rules:?} {devs:?}");
    // And the router forwards as before, undelayed.
    let after = quantile(&echo_rtts_ms(&t, 20), 0.5);
    assert!(after < DELAY_MS, "after the emulator: p50 {after} ms");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_killed_emulators_rules_go_at_the_next_start_and_bad_routers_are_refused() {
    let _turn = crate::turn::take(module_path!());
    require_testbed!();
    let dir = scratch_dir("kill");
    let scenario = write_scenario(&dir);
    let t = Topology::build("k");
    let emu = Emulator::start(&scenario, &t.router, &dir.join("out1"));
    emu.kill();
    let (rules, devs) = t.leftovers();
    // The TUN devices went with the process; the rules stayed.
    assert_eq!((rules.len(), devs.len()), (2, 0), "{rules:?} {devs:?}");

    let emu = Emulator::start(&scenario, &t.router, &dir.join("out2"));
    let (rules, _) = t.leftovers();
    assert_eq!(rules.len(), 2, "only the new emulator's rules: {rules:?}");
    let pid = emu.ready["pid"].as_u64().unwrap();
    let rtt = quantile(&echo_rtts_ms(&t, 10), 0.5);
    assert!(rtt >= 2.0 * DELAY_MS, "{rtt} ms");
    emu.stop();
    let (rules, devs) = t.leftovers();
    assert!(
        rules.is_empty() && devs.is_empty(),
        "pid {pid} left: {rules:?} {devs:?}"
    );

    let run = |args: &[&str]| {
        let out = Command::new(BIN)
            .arg("emulate")
            .arg(&scenario)
            .args(["--router-netns", &t.router, "--duration-s", "1", "--quiet"])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, err) = run(&["--ingress", "nosuch", "--egress", "rb"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("--ingress") && err.contains("nosuch"), "{err}");
    let (code, err) = run(&["--ingress", "ra", "--egress", "ra"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("same interface"), "{err}");
    let (code, err) = run(&["--ingress", "ra"]);
    assert_eq!(code, Some(2), "{err}");
    t.set_forwarding(false);
    let (code, err) = run(&["--ingress", "ra", "--egress", "rb"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("ip_forward"), "{err}");
    let (rules, devs) = t.leftovers();
    assert!(
        rules.is_empty() && devs.is_empty(),
        "a refused start left: {rules:?} {devs:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
