//! `latlab-net proxy` with MPTCP on both of a client's paths: per-subflow
//! statistics in `--mptcp-log`, and a `--throttle` rule installed on the
//! proxy's egress toward the client's second address once the connection
//! has two subflows, removed when the proxy stops.
//!
//! Three namespaces: a client with two veth paths to the proxy
//! (10.234.1.0/24 and 10.234.2.0/24; the client's MPTCP endpoint adds a
//! subflow from 10.234.2.1), the proxy, and a plain-TCP server behind it
//! (10.234.3.0/24) that sends a bulk download. Needs root, iproute2 and
//! net.mptcp.enabled = 1; skips with the reason otherwise. Namespaces go
//! even when an assertion fails; the test checks that the proxy leaves no
//! HTB qdisc behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddrV4, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::mptcp_util::{in_ns, sh, sh_out, unavailable, veth, Namespaces};

const BIN: &str = env!("CARGO_BIN_EXE_latlab-net");

/// An MPTCP client socket connected to `to`.
fn mptcp_connect(to: SocketAddrV4) -> TcpStream {
    // SAFETY: plain socket calls on a descriptor the stream then owns.
    unsafe {
        let fd = libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            libc::IPPROTO_MPTCP,
        );
        assert!(fd >= 0, "MPTCP socket: {}", std::io::Error::last_os_error());
        let sa = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: to.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from(*to.ip()).to_be(),
            },
            sin_zero: [0; 8],
        };
        let rc = libc::connect(
            fd,
            (&sa as *const libc::sockaddr_in).cast(),
            std::mem::size_of_val(&sa) as u32,
        );
        assert_eq!(rc, 0, "connect {to}: {}", std::io::Error::last_os_error());
        TcpStream::from_raw_fd(fd)
    }
}

/// The proxy, stopped with SIGTERM on drop.
struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(self.0.id() as libc::pid_t, libc::SIGTERM) };
        let _ = self.0.wait();
    }
}

/// Client, proxy and server namespaces (dropped: deleted): the client
/// reaches the proxy over two veth paths, 10.{net}.1.0/24 and
/// 10.{net}.2.0/24 (its MPTCP endpoint adds a subflow from 10.{net}.2.1),
/// the proxy the server over 10.{net}.3.0/24.
fn testbed(tag: &str, net: u8) -> Namespaces {
    let ns = Namespaces::new(tag, &["cli", "prx", "srv"]);
    let (cli, prx, srv) = (&ns.0[0], &ns.0[1], &ns.0[2]);
    let a = |path: u8, host: u8| format!("10.{net}.{path}.{host}");
    veth(cli, "c1", &a(1, 1), prx, "p1", &a(1, 2));
    veth(cli, "c2", &a(2, 1), prx, "p2", &a(2, 2));
    veth(prx, "p3", &a(3, 1), srv, "s3", &a(3, 2));
    for n in [cli, prx] {
        sh(&[
            "ip",
            "-n",
            n,
            "mptcp",
            "limits",
            "set",
            "subflows",
            "2",
            "add_addr_accepted",
            "2",
        ]);
    }
    sh(&[
        "ip",
        "-n",
        cli,
        "mptcp",
        "endpoint",
        "add",
        &a(2, 1),
        "dev",
        "c2",
        "subflow",
    ]);
    ns
}

#[test]
fn the_proxy_samples_subflows_and_throttles_the_second_path() {
    let _turn = crate::turn::take(module_path!());
    skip_if_tcp_mem_unfit!();
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let ns = testbed("proxy", 234);
    let (cli, prx, srv) = (ns.0[0].clone(), ns.0[1].clone(), ns.0[2].clone());

    // The server: one plain-TCP download of 4 s.
    let server = in_ns(&srv, || {
        let l = TcpListener::bind("10.234.3.2:5001").expect("server listen");
        let (mut s, _) = l.accept().expect("server accept");
        let buf = vec![0x5au8; 64 * 1024];
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(4) {
            if s.write_all(&buf).is_err() {
                break;
            }
        }
    });
    std::thread::sleep(Duration::from_millis(200));

    let dir = std::env::temp_dir().join(format!("latlab-proxy-mptcp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("mptcp.jsonl");
    let rate_bps = 5_000_000u64;
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &prx,
            BIN,
            "proxy",
            "--listen",
            "10.234.1.2:8080",
            "--to",
            "10.234.3.2:5001",
        ])
        .args(["--throttle", &format!("client=10.234.2.0/24,rate={rate_bps}")])
        .arg("--mptcp-log")
        .arg(&log)
        .args(["--stats-interval-ms", "200", "--quiet"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run latlab-net proxy");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let proxy = Proxy(child);
    assert!(ready.contains("ready"), "no ready line from the proxy: {ready:?}");

    let client = in_ns(&cli, || {
        let mut s = mptcp_connect("10.234.1.2:8080".parse().unwrap());
        let mut buf = vec![0u8; 256 * 1024];
        let mut total = 0u64;
        while let Ok(n) = s.read(&mut buf) {
            if n == 0 {
                break;
            }
            total += n as u64;
        }
        total
    });
    let received = client.join().unwrap();
    server.join().unwrap();
    assert!(received > 1_000_000, "the client got {received} bytes");
    // While the proxy still runs, its rule is there; after SIGTERM it is gone.
    let qdisc_during = sh_out(&["tc", "-n", &prx, "qdisc", "show", "dev", "p2"]);
    drop(proxy);
    let qdisc_after = sh_out(&["tc", "-n", &prx, "qdisc", "show", "dev", "p2"]);
    let classes_after = sh_out(&["tc", "-n", &prx, "class", "show", "dev", "p2"]);

    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    let kind = |k: &'static str| lines.iter().filter(move |v| v["kind"] == k);
    let remotes: std::collections::BTreeSet<String> = kind("subflow")
        .map(|v| v["remote"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        remotes.iter().any(|r| r.starts_with("10.234.1.1:"))
            && remotes.iter().any(|r| r.starts_with("10.234.2.1:")),
        "subflow samples from both client addresses: {remotes:?}"
    );
    let throttle: Vec<&Value> = kind("throttle").collect();
    assert_eq!(
        throttle.len(),
        1,
        "one throttle (the 10.234.2.0/24 subflow): {throttle:?}"
    );
    assert_eq!(throttle[0]["rate_bps"], rate_bps);
    assert!(throttle[0]["subflow"]["remote"]
        .as_str()
        .unwrap()
        .starts_with("10.234.2.1:"));
    let after_ms = throttle[0]["after_sub_established_ms"]
        .as_f64()
        .expect("latency from SUB_ESTABLISHED");
    eprintln!(
        "throttle active {after_ms:.1} ms after SUB_ESTABLISHED (install {} ms)",
        throttle[0]["install_ms"]
    );
    assert!((0.0..5_000.0).contains(&after_ms), "{after_ms}");
    assert_eq!(kind("throttle_error").count(), 0, "{lines:?}");
    // The throttled subflow carried less than the other (the last samples, at close).
    let last_sent = |prefix: &str| {
        kind("subflow")
            .filter(|v| v["remote"].as_str().unwrap_or("").starts_with(prefix))
            .map(|v| v["bytes_sent"].as_u64().unwrap_or(0))
            .max()
            .unwrap_or(0)
    };
    let (fast, slow) = (last_sent("10.234.1.1:"), last_sent("10.234.2.1:"));
    eprintln!("bytes sent by the proxy: first path {fast}, throttled path {slow}");
    assert!(
        fast > slow,
        "the unthrottled subflow carries more: {fast} vs {slow}"
    );
    assert!(
        qdisc_during.contains("htb"),
        "the throttle's HTB root was not there: {qdisc_during}"
    );
    assert!(
        !qdisc_after.contains("htb") && !classes_after.contains("htb"),
        "left behind: {qdisc_after} {classes_after}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Open file descriptors of process `pid`.
fn fd_count(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0)
}

/// Classes and filters of `dev` in namespace `ns` that direct traffic to a
/// throttle class (the HTB root itself stays while the proxy runs).
fn throttle_rules(ns: &str, dev: &str) -> (usize, usize) {
    let classes = sh_out(&["tc", "-n", ns, "class", "show", "dev", dev]);
    let filters = sh_out(&["tc", "-n", ns, "filter", "show", "dev", dev]);
    (
        classes.lines().filter(|l| l.starts_with("class htb")).count(),
        filters.lines().filter(|l| l.contains("flowid")).count(),
    )
}

/// What one throttled churn run through the proxy measured.
struct Churn {
    throttles: usize,
    releases: usize,
    errors: usize,
    overruns: u64,
    /// (classes, filters) on p2 once the last connection closed, proxy running.
    rules: (usize, usize),
    fds: (usize, usize),
}

/// 2,000 MPTCP connections through the proxy with `--throttle` on and an
/// event socket so small (96 KiB, about a hundred events) that the path
/// manager's events overrun it: releases must come from the proxy's own closes and
/// the resync, and no rule or descriptor may stay behind.
#[test]
fn throttled_churn_with_event_overruns_leaves_no_rule_or_descriptor_behind() {
    let _turn = crate::turn::take(module_path!());
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let c = throttled_churn("chur2", 236, 2_000, Some(96 * 1024));
    // Events lost to overruns are throttles never installed: 37 to 826 of
    // 2,000 in runs at 64-96 KiB, fewer the busier the machine. The
    // 10,000-connection run below is the strong leak check; this one is
    // about releases surviving overruns.
    assert_no_leak(&c, 20);
}

/// 10,000 MPTCP connections through the proxy with `--throttle` on (the
/// default event buffer): every connection whose second subflow joins gets
/// an HTB class and a u32 filter, and every one is gone once its
/// connection closes, while the proxy keeps running; the proxy's
/// descriptors return to their baseline. Before the proxy's closes
/// released their token's rules, ~1 % of throttles stayed (95 of 7,548).
/// About 12 s on a loaded 2-core machine.
#[test]
fn ten_thousand_throttled_connections_leave_no_rule_or_descriptor_behind() {
    let _turn = crate::turn::take(module_path!());
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let c = throttled_churn("churn", 235, 10_000, None);
    // 2,400 to 4,789 in runs after the fix (fewer when the machine is busy
    // and second subflows join late): a subflow that joins after the proxy
    // closed its connection is no longer throttled (7,548 before).
    assert_no_leak(&c, 1_000);
}

/// `min_throttles`: the leak check is only meaningful if many were
/// throttled (most second subflows join within the 10 ms each connection
/// stays open).
fn assert_no_leak(c: &Churn, min_throttles: usize) {
    assert_eq!(c.errors, 0, "throttle errors in the log");
    assert!(
        c.throttles >= min_throttles,
        "only {} throttles installed ({} event overruns)",
        c.throttles,
        c.overruns
    );
    assert_eq!(c.releases, c.throttles, "every installed throttle released");
    assert_eq!(
        c.rules,
        (0, 0),
        "(classes, filters) left on p2 while the proxy runs"
    );
    // The throttler's long-lived `tc -batch` session (its pipes) starts with
    // the first rule, after the baseline was taken.
    let (fds0, fds1) = c.fds;
    assert!(fds1 <= fds0 + 4, "proxy descriptors {fds0} before, {fds1} after");
}

/// `connections` MPTCP connections through a throttling proxy in testbed
/// `tag`/10.`net`.0.0; `pm_buffer`: the proxy's --pm-events-buffer-bytes.
fn throttled_churn(tag: &str, net: u8, connections: usize, pm_buffer: Option<usize>) -> Churn {
    // One churn at a time: two at once starve each other's steering thread.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    const WORKERS: usize = 32;
    const DOWNLOAD_BYTES: usize = 16 * 1024;
    let ns = testbed(tag, net);
    let addr = move |path: u8, host: u8, port: u16| format!("10.{net}.{path}.{host}:{port}");
    let (cli, prx, srv) = (ns.0[0].clone(), ns.0[1].clone(), ns.0[2].clone());

    // The server: per connection, a small download, then wait for the
    // client's close (so the client, not the server, ends each connection,
    // after its second subflow had time to join).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let server = in_ns(&srv, {
        let stop = std::sync::Arc::clone(&stop);
        move || {
            let l = TcpListener::bind(addr(3, 2, 5001)).expect("server listen");
            l.set_nonblocking(true).unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match l.accept() {
                    Ok((mut s, _)) => {
                        s.set_nonblocking(false).unwrap();
                        std::thread::spawn(move || {
                            let _ = s.write_all(&[0x5a; DOWNLOAD_BYTES]);
                            let mut sink = [0u8; 64];
                            let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                            while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(1)),
                }
            }
        }
    });
    std::thread::sleep(Duration::from_millis(200));

    let dir = std::env::temp_dir().join(format!("latlab-proxy-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("mptcp.jsonl");
    let mut child = Command::new("ip")
        .args(["netns", "exec", &prx, BIN, "proxy", "--listen", &addr(1, 2, 8080)])
        .args([
            "--to".to_string(),
            addr(3, 2, 5001),
            "--throttle".to_string(),
            format!("client=10.{net}.2.0/24,rate=50000000"),
        ])
        .args(
            pm_buffer
                .map(|b| vec!["--pm-events-buffer-bytes".to_string(), b.to_string()])
                .unwrap_or_default(),
        )
        .arg("--mptcp-log")
        .arg(&log)
        .args(["--max-connections", "4096", "--quiet"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("run latlab-net proxy");
    let mut ready = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut ready)
        .unwrap();
    let pid = child.id();
    let proxy = Proxy(child);
    assert!(ready.contains("ready"), "no ready line from the proxy: {ready:?}");
    std::thread::sleep(Duration::from_millis(100));
    let fds0 = fd_count(pid);

    let t0 = Instant::now();
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let next = std::sync::Arc::clone(&next);
            in_ns(&cli, move || {
                let mut bytes = 0usize;
                let to = addr(1, 2, 8080).parse().unwrap();
                while next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) < connections {
                    let mut s = mptcp_connect(to);
                    let mut buf = vec![0u8; DOWNLOAD_BYTES];
                    s.read_exact(&mut buf).expect("the download");
                    bytes += buf.len();
                    // Time for the second subflow to join and be throttled.
                    std::thread::sleep(Duration::from_millis(10));
                }
                bytes
            })
        })
        .collect();
    let received: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    let churn_s = t0.elapsed().as_secs_f64();
    assert_eq!(received, connections * DOWNLOAD_BYTES);

    // Rules go when their subflow's connection closes: wait for the last.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut rules = throttle_rules(&prx, "p2");
    while rules != (0, 0) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        rules = throttle_rules(&prx, "p2");
    }
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut fds1 = fd_count(pid);
    // The tc session's pipes (see assert_no_leak) are not a leak.
    while fds1 > fds0 + 4 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
        fds1 = fd_count(pid);
    }
    let qdisc_during = sh_out(&["tc", "-n", &prx, "qdisc", "show", "dev", "p2"]);
    drop(proxy);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    server.join().unwrap();
    let qdisc_after = sh_out(&["tc", "-n", &prx, "qdisc", "show", "dev", "p2"]);

    let text = std::fs::read_to_string(&log).unwrap();
    let count = |kind: &str| {
        text.lines()
            .filter(|l| l.contains(&format!("\"kind\":\"{kind}\"")))
            .count()
    };
    let (throttles, releases, errors) = (count("throttle"), count("release"), count("throttle_error"));
    let stats: Value = text
        .lines()
        .filter(|l| l.contains("\"kind\":\"steering_stats\""))
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .next_back()
        .expect("the proxy's steering_stats line");
    let overruns = stats["pm_overruns"].as_u64().unwrap_or(0);
    eprintln!(
        "{connections} MPTCP connections through the proxy in {churn_s:.1} s: {throttles} throttles installed, \
         {releases} released (by cause {}), {errors} errors; {overruns} event overruns, {} resyncs; \
         rules left {rules:?}; proxy fds {fds0} -> {fds1}",
        stats["released_by"], stats["resyncs"]
    );
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        qdisc_during.contains("htb"),
        "the proxy's HTB root: {qdisc_during}"
    );
    assert!(
        !qdisc_after.contains("htb"),
        "left behind after SIGTERM: {qdisc_after}"
    );
    Churn {
        throttles,
        releases,
        errors,
        overruns,
        rules,
        fds: (fds0, fds1),
    }
}
