//! Shared by the proxy_* integration tests: a `latlab-net proxy` child
//! process (killed on drop), loopback servers, an MPTCP client socket, and
//! the child's fd count and RSS from /proc.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::FromRawFd;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::Value;

pub const BIN: &str = env!("CARGO_BIN_EXE_latlab-net");

pub struct Proxy {
    pub child: Child,
    pub addr: SocketAddr,
    pub metrics: Option<SocketAddr>,
    pub ready: Value,
}

impl Proxy {
    /// `latlab-net proxy --listen 127.0.0.1:0 ARGS...`, once it is ready.
    pub fn start(args: &[&str]) -> Proxy {
        let mut child = Command::new(BIN)
            .args(["proxy", "--listen", "127.0.0.1:0", "--quiet"])
            .args(args)
            .stdout(Stdio::piped())
            .spawn()
            .expect("run latlab-net");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let ready: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("ready line {line:?}: {e}"));
        let addr = ready["listen"].as_str().unwrap().parse().unwrap();
        let metrics = ready["metrics"].as_str().map(|m| m.parse().unwrap());
        Proxy {
            child,
            addr,
            metrics,
            ready,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Open file descriptors of the proxy.
    pub fn fds(&self) -> usize {
        std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .count()
    }

    /// Open (sockets, pipe ends) of the proxy.
    pub fn sockets_and_pipes(&self) -> (usize, usize) {
        let mut counts = (0, 0);
        for e in std::fs::read_dir(format!("/proc/{}/fd", self.pid()))
            .unwrap()
            .flatten()
        {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            let t = target.to_string_lossy();
            if t.starts_with("socket:") {
                counts.0 += 1;
            } else if t.starts_with("pipe:") {
                counts.1 += 1;
            }
        }
        counts
    }

    /// Resident set size of the proxy, KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }

    /// SIGTERM.
    pub fn terminate(&self) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid() as libc::pid_t, libc::SIGTERM) };
    }

    /// Wait for the exit (at most `limit`); the exit code.
    pub fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        let t0 = Instant::now();
        while t0.elapsed() < limit {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// The metrics endpoint's text.
    pub fn scrape(&self) -> String {
        let mut s = TcpStream::connect(self.metrics.expect("--metrics")).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    }

    /// One metric's value (`name` with its labels, as printed).
    pub fn metric(&self, name: &str) -> f64 {
        let text = self.scrape();
        text.lines()
            .find_map(|l| l.strip_prefix(name).and_then(|r| r.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))
            .parse()
            .unwrap()
    }

    /// Wait until `cond` holds for the metric (polling), or panic.
    pub fn wait_metric(&self, name: &str, cond: impl Fn(f64) -> bool, limit: Duration) {
        let t0 = Instant::now();
        loop {
            let v = self.metric(name);
            if cond(v) {
                return;
            }
            assert!(t0.elapsed() < limit, "{name} = {v} after {limit:?}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A TCP server on loopback running `handler` per connection on its own
/// thread (small stacks: the tests open a thousand).
pub fn server<F>(handler: F) -> (SocketAddr, JoinHandle<()>)
where
    F: Fn(TcpStream) + Send + Sync + Clone + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let h = std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let handler = handler.clone();
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || handler(stream))
                .unwrap();
        }
    });
    (addr, h)
}

/// Echo until EOF, then close.
pub fn echo(mut s: TcpStream) {
    let mut buf = vec![0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                if s.write_all(&buf[..n]).is_err() {
                    return;
                }
            }
        }
    }
    let _ = s.shutdown(Shutdown::Write);
}

pub fn echo_server() -> SocketAddr {
    server(echo).0
}

/// A port nobody listens on (bound, then closed).
pub fn closed_port() -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap()
}

/// A connected MPTCP client socket (socket(AF_INET, SOCK_STREAM, 262)).
pub fn mptcp_connect(addr: SocketAddr) -> TcpStream {
    let SocketAddr::V4(a) = addr else {
        panic!("IPv4 only")
    };
    // SAFETY: plain socket(2); the fd is owned by the TcpStream below.
    let fd = unsafe {
        libc::socket(
            libc::AF_INET,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            libc::IPPROTO_MPTCP,
        )
    };
    assert!(fd >= 0, "MPTCP socket: {}", std::io::Error::last_os_error());
    // SAFETY: fresh fd, owned from here on.
    let stream = unsafe { TcpStream::from_raw_fd(fd) };
    let sin = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: a.port().to_be(),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(a.ip().octets()),
        },
        sin_zero: [0; 8],
    };
    // SAFETY: a valid sockaddr_in of its exact size.
    let r = unsafe {
        libc::connect(
            fd,
            (&sin as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    };
    assert_eq!(r, 0, "MPTCP connect: {}", std::io::Error::last_os_error());
    stream
}

/// Close with a reset (SO_LINGER 0).
pub fn reset(s: TcpStream) {
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid linger struct of its exact size.
    unsafe {
        libc::setsockopt(
            std::os::fd::AsRawFd::as_raw_fd(&s),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
    drop(s);
}

/// Read until EOF or error; the bytes and the error, if any.
pub fn read_all(s: &mut TcpStream) -> (Vec<u8>, Option<std::io::Error>) {
    let mut out = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (out, None),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Some(e)),
        }
    }
}

/// The event log's lines.
pub fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

pub fn scratch(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("latlab-proxy-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Deterministic bytes (so a mismatch shows where).
pub fn pattern(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}
