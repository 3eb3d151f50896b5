//! `latlab-net proxy` flags and the TOML file (`--config`), merged into
//! [`ProxyOptions`]: a flag overrides the file's key of the same name.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use serde::Deserialize;

use super::{ProxyMode, ProxyOptions};

pub const PROXY_EXAMPLE: &str = "Examples:\n  \
  latlab-net proxy --listen 0.0.0.0:8000 --to 10.0.1.2:80            # fixed upstream (HAProxy tcp mode)\n  \
  latlab-net proxy --listen 0.0.0.0:3128 --mode http --events ev.jsonl --metrics 127.0.0.1:9100\n  \
  latlab-net proxy --listen [::]:1080 --mode socks5 --idle-timeout-s 60\n  \
  latlab-net proxy --config proxy.toml\n\
The file takes the flags' names with underscores, e.g.\n  \
  listen = \"0.0.0.0:8000\"\n  to = \"10.0.1.2:80\"\n  max_connections = 5000\n  buffer_bytes = 262144\n\
The first stdout line is {\"event\":\"ready\",\"listen\":...,\"protocol\":\"mptcp\"|\"tcp\",\"metrics\":...}.";

/// See `--buffer-bytes`.
pub const DEFAULT_BUFFER_BYTES: u64 = 1 << 20;

/// See `--mptcp-sndbuf-bytes`: the kernel holds twice this, 16 MiB, the
/// smallest that removed the stalls in benches/proxy_bench.py (8 MiB held
/// still stalled; benches/README.md, "proxy").
pub const DEFAULT_MPTCP_SNDBUF_BYTES: u64 = 8 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModeName {
    /// Every connection to the `--to` upstream.
    Fixed,
    /// An HTTP forward proxy: absolute-URI requests and CONNECT.
    Http,
    /// A SOCKS 5 proxy (RFC 1928): no authentication, CONNECT.
    Socks5,
}

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// A TOML file with any of the settings below (flags override it).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Address to listen on (MPTCP; plain TCP clients fall back).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// The upstream of every connection (`--mode fixed`, the default when given).
    #[arg(long, value_name = "HOST:PORT")]
    pub to: Option<String>,
    #[arg(long, value_enum)]
    pub mode: Option<ModeName>,
    /// Listen with plain TCP instead of MPTCP.
    #[arg(long)]
    pub tcp_only: bool,
    /// Client connections open at once; more are accepted and closed at once [default: 10000].
    #[arg(long, value_name = "N")]
    pub max_connections: Option<u64>,
    /// Bytes each direction of a connection may hold in the proxy (its
    /// splice pipe, rounded up to a power of two pages; unprivileged, at most
    /// /proc/sys/fs/pipe-max-size) [default: 1048576: a 1 MiB pipe moved
    /// 1.5-2× the bytes per system call of the 64 KiB default].
    #[arg(long, value_name = "BYTES")]
    pub buffer_bytes: Option<u64>,
    /// Send buffer of each MPTCP client socket, bytes, fixed at accept (the
    /// kernel holds twice this; above net.core.wmem_max only with
    /// CAP_NET_ADMIN); 0: the kernel's autotuning (net.ipv4.tcp_wmem) [default:
    /// 8388608]. With autotuning's 4 MiB a bulk download to an MPTCP client
    /// stalled for 200 ms at a time: the client's kernel (6.18) acknowledges
    /// data at the MPTCP level later than on its subflow, the full buffer
    /// stops the sender and nothing new is sent to prompt a fresh DATA_ACK
    /// until the MPTCP retransmission timer fires. With the fixed buffer the
    /// socket also gets TCP_NOTSENT_LOWAT 1 MiB, so the buffer holds bytes
    /// in flight, not a queue of unsent ones. Plain TCP clients keep
    /// autotuning.
    #[arg(long, value_name = "BYTES")]
    pub mptcp_sndbuf_bytes: Option<u64>,
    /// Largest HTTP request head or SOCKS request [default: 16384].
    #[arg(long, value_name = "BYTES")]
    pub max_header_bytes: Option<u64>,
    /// Give up an upstream connect after this long, ms [default: 5000].
    #[arg(long, value_name = "MS")]
    pub connect_timeout_ms: Option<f64>,
    /// Close a connection after this long without a byte either way, s
    /// (0: never) [default: 300].
    #[arg(long, value_name = "S")]
    pub idle_timeout_s: Option<f64>,
    /// After SIGTERM/SIGINT: stop accepting, let open transfers finish for
    /// this long, then close the rest, s [default: 10].
    #[arg(long, value_name = "S")]
    pub grace_s: Option<f64>,
    /// Write one JSON line per connection here (timestamps, bytes, how it ended).
    #[arg(long, value_name = "FILE")]
    pub events: Option<PathBuf>,
    /// Serve Prometheus metrics (text format) on this address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub metrics: Option<String>,
    /// Throttle a subflow once its connection has two or more: a rule
    /// `client=CIDR,interface=DEV,port=N,rate=RATE` (keys optional but
    /// rate, e.g. `interface=eth1,rate=5mbit`); repeat for more rules, the
    /// first match wins. Needs root (HTB class + u32 filter per subflow).
    #[arg(long, value_name = "RULE")]
    pub throttle: Vec<String>,
    /// Apply the throttle rules this long after a connection's second
    /// subflow is established, ms [default: 0].
    #[arg(long, value_name = "MS", default_value_t = 0)]
    pub throttle_delay_ms: u64,
    /// Write MPTCP per-subflow samples (bytes, srtt, cwnd, retransmissions)
    /// and the steering log (path-manager events, throttles with their
    /// install latency) to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub mptcp_log: Option<PathBuf>,
    /// Per-subflow sampling interval for --mptcp-log, ms.
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u64).range(10..=3_600_000))]
    pub stats_interval_ms: u64,
    /// Receive buffer of the path-manager event socket, bytes (each event
    /// takes about 1 KiB of it). A burst that overflows it loses events,
    /// which the proxy counts and recovers from by resynchronising with the
    /// kernel's subflows; a small value forces that path in tests.
    #[arg(long, value_name = "BYTES", default_value_t = super::mptcp_observer::PM_EVENTS_BUFFER_BYTES,
          value_parser = clap::value_parser!(u64).range(4096..=(1 << 30)))]
    pub pm_events_buffer_bytes: u64,
    /// Print nothing but the ready line.
    #[arg(long, short)]
    pub quiet: bool,
}

/// The file's keys (all optional; unknown keys are errors).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    listen: Option<String>,
    to: Option<String>,
    mode: Option<ModeName>,
    mptcp: Option<bool>,
    max_connections: Option<u64>,
    buffer_bytes: Option<u64>,
    mptcp_sndbuf_bytes: Option<u64>,
    max_header_bytes: Option<u64>,
    connect_timeout_ms: Option<f64>,
    idle_timeout_s: Option<f64>,
    grace_s: Option<f64>,
    events: Option<PathBuf>,
    metrics: Option<String>,
}

fn load_file(path: &Path) -> Result<FileConfig, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("--config {}: {e}", path.display()))?;
    toml::from_str(&text).map_err(|e| format!("--config {}: {e}", path.display()))
}

fn socket_addr(key: &str, s: &str) -> Result<SocketAddr, String> {
    s.parse()
        .map_err(|_| format!("{key} '{s}': expected ADDR:PORT with a literal IP address"))
}

fn in_range(key: &str, v: u64, min: u64, max: u64) -> Result<u64, String> {
    if (min..=max).contains(&v) {
        Ok(v)
    } else {
        Err(format!("{key} {v}: expected {min}..={max}"))
    }
}

fn duration_ns(key: &str, v: f64, unit_ns: f64, zero_ok: bool) -> Result<u64, String> {
    let ns = v * unit_ns;
    if v.is_finite() && (v > 0.0 || (zero_ok && v == 0.0)) && ns <= 365.0 * 86_400e9 {
        Ok(ns.round() as u64)
    } else {
        Err(format!(
            "{key} {v}: expected a finite number {} up to a year",
            if zero_ok { "≥ 0" } else { "> 0" }
        ))
    }
}

impl ProxyArgs {
    /// The run options, or a message naming the offending flag or key.
    pub fn options(&self) -> Result<ProxyOptions, String> {
        let file = match &self.config {
            Some(p) => load_file(p)?,
            None => FileConfig::default(),
        };
        // The name a value came from, for messages.
        macro_rules! pick {
            ($field:ident, $flag:literal) => {
                match (&self.$field, &file.$field) {
                    (Some(v), _) => Some((v.clone(), concat!("--", $flag))),
                    (None, Some(v)) => Some((v.clone(), concat!("config key ", stringify!($field)))),
                    (None, None) => None,
                }
            };
        }
        let (listen, key) = pick!(listen, "listen").ok_or("--listen (or config key listen) is required")?;
        let listen = socket_addr(key, &listen)?;
        let to = pick!(to, "to");
        let mode_name = match pick!(mode, "mode") {
            Some((m, _)) => m,
            None if to.is_some() => ModeName::Fixed,
            None => return Err("--mode fixed|http|socks5 is required (fixed needs --to HOST:PORT)".into()),
        };
        let mode = match (mode_name, to) {
            (ModeName::Fixed, Some((to, key))) => {
                let addr = to
                    .to_socket_addrs()
                    .map_err(|e| format!("{key} '{to}': {e}"))?
                    .next()
                    .ok_or_else(|| format!("{key} '{to}': no address"))?;
                ProxyMode::Fixed(addr)
            }
            (ModeName::Fixed, None) => return Err("--mode fixed needs --to HOST:PORT".into()),
            (_, Some((_, key))) => return Err(format!("{key} applies to --mode fixed only")),
            (ModeName::Http, None) => ProxyMode::Http,
            (ModeName::Socks5, None) => ProxyMode::Socks5,
        };
        let max_connections = match pick!(max_connections, "max-connections") {
            Some((v, key)) => in_range(key, v, 1, 1_000_000)?,
            None => 10_000,
        };
        let buffer_bytes = match pick!(buffer_bytes, "buffer-bytes") {
            Some((v, key)) => in_range(key, v, 4096, 1 << 30)?,
            None => DEFAULT_BUFFER_BYTES,
        };
        let mptcp_sndbuf_bytes = match pick!(mptcp_sndbuf_bytes, "mptcp-sndbuf-bytes") {
            Some((0, _)) => 0,
            Some((v, key)) => in_range(key, v, 4096, 1 << 30)?,
            None => DEFAULT_MPTCP_SNDBUF_BYTES,
        };
        let max_header_bytes = match pick!(max_header_bytes, "max-header-bytes") {
            Some((v, key)) => in_range(key, v, 64, 1 << 20)?,
            None => 16_384,
        };
        let connect_timeout_ns = match pick!(connect_timeout_ms, "connect-timeout-ms") {
            Some((v, key)) => duration_ns(key, v, 1e6, false)?,
            None => 5_000_000_000,
        };
        let idle_timeout_ns = match pick!(idle_timeout_s, "idle-timeout-s") {
            Some((v, key)) => duration_ns(key, v, 1e9, true)?,
            None => 300_000_000_000,
        };
        let grace_ns = match pick!(grace_s, "grace-s") {
            Some((v, key)) => duration_ns(key, v, 1e9, true)?,
            None => 10_000_000_000,
        };
        let metrics = match pick!(metrics, "metrics") {
            Some((v, key)) => Some(socket_addr(key, &v)?),
            None => None,
        };
        Ok(ProxyOptions {
            listen,
            mode,
            mptcp: !self.tcp_only && file.mptcp.unwrap_or(true),
            max_connections: max_connections as usize,
            buffer_bytes: buffer_bytes as usize,
            mptcp_sndbuf_bytes: (mptcp_sndbuf_bytes > 0).then_some(mptcp_sndbuf_bytes as usize),
            max_header_bytes: max_header_bytes as usize,
            connect_timeout_ns,
            idle_timeout_ns: (idle_timeout_ns > 0).then_some(idle_timeout_ns),
            grace_ns,
            events: pick!(events, "events").map(|(p, _)| p),
            metrics,
            quiet: self.quiet,
            mptcp_observer: {
                // Checked here so a bad rule is a usage error (exit 2), not a failure after start.
                crate::mptcp::policy::Policy::from_flags(&self.throttle, self.throttle_delay_ms)?;
                super::mptcp_observer::MptcpOptions {
                    throttle: self.throttle.clone(),
                    throttle_delay_ms: self.throttle_delay_ms,
                    log: self.mptcp_log.clone(),
                    stats_interval_ms: self.stats_interval_ms,
                    pm_events_buffer_bytes: self.pm_events_buffer_bytes as usize,
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command};
    use clap::Parser;

    fn options(args: &str) -> Result<super::ProxyOptions, String> {
        let cli = Cli::try_parse_from(std::iter::once("latlab-net").chain(args.split_whitespace()))
            .map_err(|e| e.to_string())?;
        match cli.command {
            Command::Proxy(a) => a.options(),
            _ => panic!("not proxy"),
        }
    }

    #[test]
    fn flags_override_the_file() {
        let dir = std::env::temp_dir().join(format!("latlab-proxy-args-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("p.toml");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nmode = \"http\"\nmax_connections = 7\nidle_timeout_s = 0\nmptcp = false\n",
        )
        .unwrap();
        let o = options(&format!("proxy --config {} --max-connections 9", file.display())).unwrap();
        assert_eq!(o.listen, "127.0.0.1:9000".parse().unwrap());
        assert!(matches!(o.mode, super::ProxyMode::Http));
        assert_eq!((o.max_connections, o.idle_timeout_ns, o.mptcp), (9, None, false));
        assert_eq!((o.buffer_bytes, o.connect_timeout_ns), (1 << 20, 5_000_000_000));
        assert_eq!(o.mptcp_sndbuf_bytes, Some(8 << 20));
        let o = options(&format!(
            "proxy --config {} --mptcp-sndbuf-bytes 0",
            file.display()
        ))
        .unwrap();
        assert_eq!(o.mptcp_sndbuf_bytes, None, "0: the kernel's autotuning");
        std::fs::write(&file, "listen = \"127.0.0.1:9000\"\nmax_conections = 7\n").unwrap();
        let err = options(&format!("proxy --config {}", file.display())).unwrap_err();
        assert!(err.contains("max_conections"), "{err}");
        std::fs::write(
            &file,
            "listen = \"127.0.0.1:9000\"\nto = \"127.0.0.1:80\"\nbuffer_bytes = 10\n",
        )
        .unwrap();
        let err = options(&format!("proxy --config {}", file.display())).unwrap_err();
        assert!(
            err.contains("config key buffer_bytes") && err.contains("4096"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_input_names_the_flag() {
        for (args, mentions) in [
            ("proxy --to 127.0.0.1:80", "--listen"),
            ("proxy --listen 127.0.0.1:1", "--mode"),
            ("proxy --listen localhost:1 --to 127.0.0.1:80", "--listen"),
            ("proxy --listen 127.0.0.1:1 --mode fixed", "--to"),
            ("proxy --listen 127.0.0.1:1 --mode http --to 127.0.0.1:80", "--to"),
            ("proxy --listen 127.0.0.1:1 --mode socks4", "socks4"),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --buffer-bytes 1",
                "--buffer-bytes",
            ),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --mptcp-sndbuf-bytes 100",
                "--mptcp-sndbuf-bytes",
            ),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --connect-timeout-ms 0",
                "--connect-timeout-ms",
            ),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --idle-timeout-s nan",
                "--idle-timeout-s",
            ),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --max-connections 0",
                "--max-connections",
            ),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --metrics x",
                "--metrics",
            ),
            ("proxy --listen 127.0.0.1:1 --to 127.0.0.1", "--to"),
            (
                "proxy --listen 127.0.0.1:1 --to 127.0.0.1:80 --config /nonexistent.toml",
                "nonexistent",
            ),
        ] {
            let err = options(args).map(|_| ()).unwrap_err();
            assert!(err.contains(mentions), "{args}: {err}");
        }
    }
}
