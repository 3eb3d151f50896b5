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

mod mptcp_util;
use mptcp_util::{in_ns, sh, sh_out, unavailable, veth, Namespaces};

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

#[test]
fn the_proxy_samples_subflows_and_throttles_the_second_path() {
    if let Some(why) = unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let ns = Namespaces::new("proxy", &["cli", "prx", "srv"]);
    let (cli, prx, srv) = (ns.0[0].clone(), ns.0[1].clone(), ns.0[2].clone());
    veth(&cli, "c1", "10.234.1.1", &prx, "p1", "10.234.1.2");
    veth(&cli, "c2", "10.234.2.1", &prx, "p2", "10.234.2.2");
    veth(&prx, "p3", "10.234.3.1", &srv, "s3", "10.234.3.2");
    for n in [&cli, &prx] {
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
        &cli,
        "mptcp",
        "endpoint",
        "add",
        "10.234.2.1",
        "dev",
        "c2",
        "subflow",
    ]);

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
    assert!(after_ms >= 0.0 && after_ms < 5_000.0, "{after_ms}");
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
