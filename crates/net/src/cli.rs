//! The `latlab-net` command line (clap derive), and its translation into
//! validated run options. Every mistake a user can make on the command line
//! ends in one `error:` message and exit code 2 (clap's convention), never
//! a panic.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use latlab_proto::tcp::RwndSpec;
use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcMode};

use crate::arg_values::{non_negative_finite, positive_finite};
use crate::media::receiver::RecvOptions;
use crate::media::sender::SendOptions;
use crate::media::wire::{DATA_HEADER_LEN, MAX_PACKET_BYTES};
use crate::recv::RecvOptions as TcpRecvOptions;

#[derive(Debug, Parser)]
#[command(
    name = "latlab-net",
    version,
    about = "latlab's real-network tools over Linux sockets",
    propagate_version = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Media-like congestion-controlled UDP: TFRC (RFC 5348) or DFlow.
    #[command(subcommand)]
    Media(MediaCommand),
    /// Emulate a scenario's path (delay, rate, queue, loss) between two
    /// network namespaces over TUN devices, and run a command across it.
    #[command(after_help = crate::emulate::args::EMULATE_EXAMPLE)]
    Emulate(crate::emulate::args::EmulateArgs),
    /// Run a scenario's TCP flows with the kernel's TCP, and its UDP sources
    /// on the simulator's schedule, between two network namespaces (an
    /// emulated path's ends), measured as the simulator does.
    #[command(after_help = crate::flows::args::FLOWS_EXAMPLE)]
    Flows(crate::flows::args::FlowsArgs),
    /// A TCP sink whose advertised window is set by a receiver-window
    /// controller (Linux auto-tuning, DRWA or RTAC), with per-interval
    /// goodput, RTT and window.
    #[command(after_help = TCP_RECV_EXAMPLE)]
    Recv(TcpRecvArgs),
    /// Print the MPTCP path manager's events (connections, subflows,
    /// announced addresses) as JSON lines.
    #[command(name = "mptcp-watch", after_help = crate::mptcp::watch::WATCH_EXAMPLE)]
    MptcpWatch(crate::mptcp::watch::WatchArgs),
    /// The MPTCP-to-TCP converter: accept MPTCP (and plain TCP) clients,
    /// relay each to a TCP upstream (fixed, HTTP forward proxy or SOCKS 5)
    /// with splice(2).
    #[command(after_help = crate::proxy::args::PROXY_EXAMPLE)]
    Proxy(crate::proxy::args::ProxyArgs),
}

const TCP_RECV_EXAMPLE: &str = "Example:\n  latlab-net recv --listen 0.0.0.0:5001 --controller rtac \
     --param theta=1.38 --param link_rate_bps=40e6 --param delta_ms=18 --record recv.csv\n\
     Parameters (--param KEY=VALUE) are those of the scenario table rwnd_params \
     (docs/models/receiver-window.md).";

/// The receiver-window controllers `recv` runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ControllerName {
    /// Linux receive-buffer auto-tuning (twice the largest delivery per RTT).
    Autotuning,
    /// DRWA: λ·(RTT_min/RTT)·(delivery per RTT).
    Drwa,
    /// RTAC: the window a Reno sender would hold under an emulated AQM.
    Rtac,
}

#[derive(Debug, Args)]
pub struct TcpRecvArgs {
    /// Address to listen on (one connection is accepted).
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    #[arg(long, value_enum)]
    pub controller: ControllerName,
    /// A controller constant, KEY=VALUE (repeatable), e.g. rmem_max_bytes=2621440.
    #[arg(long = "param", value_name = "KEY=VALUE", value_parser = key_value)]
    pub params: Vec<(String, f64)>,
    /// Stop after this long, s [default: when the sender closes, or SIGINT/SIGTERM].
    #[arg(long, value_name = "S", value_parser = positive_finite)]
    pub duration_s: Option<f64>,
    #[command(flatten)]
    pub output: OutputArgs,
}

fn key_value(s: &str) -> Result<(String, f64), String> {
    let (k, v) = s
        .split_once('=')
        .ok_or_else(|| format!("expected KEY=VALUE, got '{s}'"))?;
    let v: f64 = v.trim().parse().map_err(|_| format!("'{v}' is not a number"))?;
    Ok((k.trim().to_string(), v))
}

impl TcpRecvArgs {
    /// The run options, or a message naming the offending flag.
    pub fn options(&self) -> Result<TcpRecvOptions, String> {
        let name = match self.controller {
            ControllerName::Autotuning => "autotuning",
            ControllerName::Drwa => "drwa",
            ControllerName::Rtac => "rtac",
        };
        let controller = RwndSpec::parse(name, &self.params).map_err(|e| format!("--param: {e}"))?;
        Ok(TcpRecvOptions {
            listen: self.listen,
            controller,
            duration_ns: self.duration_s.map(|s| to_ns(s, S, "duration-s")).transpose()?,
            interval_ns: to_ns(self.output.interval_ms, MS, "interval-ms")?,
            record: self.output.record.clone(),
            summary: self.output.summary.clone(),
            quiet: self.output.quiet,
        })
    }
}

#[derive(Debug, Subcommand)]
pub enum MediaCommand {
    /// Send a constant-packet-size, always-backlogged media stream, paced
    /// by TFRC or DFlow.
    #[command(after_help = SEND_EXAMPLE)]
    Send(SendArgs),
    /// Receive a media stream, answer with feedback, and record rate,
    /// one-way delay and loss. Takes its protocol settings from the sender.
    #[command(after_help = RECV_EXAMPLE)]
    Recv(RecvArgs),
}

const SEND_EXAMPLE: &str =
    "Example:\n  latlab-net media send --to 10.0.0.2:5000 --mode dflow --duration-s 30 --record send.csv";
const RECV_EXAMPLE: &str =
    "Example:\n  latlab-net media recv --listen 0.0.0.0:5000 --duration-s 35 --record recv.csv";

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// RFC 5348: reacts to loss only.
    Tfrc,
    /// TFRC plus delay congestion events (queueing delay above --cd-thresh-ms).
    Dflow,
}

/// Options both ends share.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Write one CSV row per interval here.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Write the end-of-run summary (JSON) here [default: the record's
    /// path with .summary.json].
    #[arg(long, value_name = "FILE")]
    pub summary: Option<PathBuf>,
    /// Interval between printed lines and recorded rows, ms.
    #[arg(long, default_value_t = 100.0, value_name = "MS", value_parser = positive_finite)]
    pub interval_ms: f64,
    /// Print nothing (the record and summary files are still written).
    #[arg(long, short)]
    pub quiet: bool,
}

#[derive(Debug, Args)]
pub struct SendArgs {
    /// The receiver's address.
    #[arg(long, value_name = "ADDR:PORT")]
    pub to: SocketAddr,
    /// Local address to send from [default: any address, any port].
    #[arg(long, value_name = "ADDR:PORT")]
    pub bind: Option<SocketAddr>,
    #[arg(long, value_enum, default_value_t = Mode::Dflow)]
    pub mode: Mode,
    /// UDP payload of every packet, header included: s of the TFRC equation.
    #[arg(long, default_value_t = 1200, value_name = "BYTES",
          value_parser = clap::value_parser!(u32).range(DATA_HEADER_LEN as i64..=MAX_PACKET_BYTES as i64))]
    pub packet_bytes: u32,
    /// How long to send, s.
    #[arg(long, default_value_t = 30.0, value_name = "S", value_parser = positive_finite)]
    pub duration_s: f64,
    /// The source's maximum bit rate (a codec's ceiling) [default: none:
    /// always data, as fast as the congestion control allows].
    #[arg(long, value_name = "BPS", value_parser = positive_finite)]
    pub max_rate_bps: Option<f64>,

    /// queueing delay (current − base one-way delay) that flags a
    /// congestion event, ms [default: 50].
    #[arg(long, value_name = "MS", value_parser = positive_finite, help_heading = "DFlow")]
    pub cd_thresh_ms: Option<f64>,
    /// current_delay is the minimum one-way delay over this period,
    /// ms [default: 50].
    #[arg(long, value_name = "MS", value_parser = positive_finite, help_heading = "DFlow")]
    pub current_period_ms: Option<f64>,
    /// base_delay is the minimum one-way delay over this many RTTs
    /// [default: 1000, as the DFlow study is run in latlab: the DFlow draft's 10
    /// lets a slowly built standing queue drift into the base delay].
    #[arg(long, value_name = "RTTS", value_parser = positive_finite, help_heading = "DFlow")]
    pub base_period_rtts: Option<f64>,
    /// also require the current delay to be rising (off in the study).
    #[arg(long, help_heading = "DFlow")]
    pub gradient_test: bool,

    /// NDUPACK: a packet is lost once this many later packets arrived
    /// [default: 3].
    #[arg(long, value_name = "N", help_heading = "TFRC")]
    pub ndupack: Option<u32>,
    /// RFC 5348 §4.5 oscillation reduction (TFRC only).
    #[arg(long, help_heading = "TFRC")]
    pub oscillation_reduction: bool,
    /// q in R = q·R + (1 − q)·R_sample [default: 0.9].
    #[arg(long, value_name = "Q", help_heading = "TFRC")]
    pub rtt_filter_q: Option<f64>,
    /// t_mbi: the rate never falls below one packet per this many seconds
    /// [default: 64].
    #[arg(long, value_name = "S", value_parser = positive_finite, help_heading = "TFRC")]
    pub t_mbi_s: Option<f64>,
    /// No-feedback timer before the first feedback, s [default: 2].
    #[arg(long, value_name = "S", value_parser = positive_finite, help_heading = "TFRC")]
    pub initial_no_feedback_s: Option<f64>,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct RecvArgs {
    /// Address to listen on.
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Stop after this long, s [default: until SIGINT/SIGTERM or idle].
    #[arg(long, value_name = "S", value_parser = positive_finite)]
    pub duration_s: Option<f64>,
    /// Stop once data has arrived and then none came for this long, s.
    #[arg(long, value_name = "S", value_parser = positive_finite)]
    pub idle_timeout_s: Option<f64>,
    /// Leave this long after the first data packet (slow start) out of the
    /// summary's `measured` figures, s.
    #[arg(long, default_value_t = 0.0, value_name = "S", value_parser = non_negative_finite)]
    pub warmup_s: f64,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Seconds or milliseconds to ns, refusing what does not fit (a year).
fn to_ns(value: f64, unit_ns: f64, flag: &str) -> Result<u64, String> {
    let ns = (value * unit_ns).round();
    if !(1.0..=365.0 * 86_400e9).contains(&ns) {
        return Err(format!("--{flag} {value} is out of range"));
    }
    Ok(ns as u64)
}

const MS: f64 = 1e6;
const S: f64 = 1e9;

impl SendArgs {
    /// The run options, or a message naming the offending flag.
    pub fn options(&self) -> Result<SendOptions, String> {
        let dflow_flags = [
            ("cd-thresh-ms", self.cd_thresh_ms.is_some()),
            ("current-period-ms", self.current_period_ms.is_some()),
            ("base-period-rtts", self.base_period_rtts.is_some()),
            ("gradient-test", self.gradient_test),
        ];
        let mode = match self.mode {
            Mode::Tfrc => {
                if let Some((flag, _)) = dflow_flags.iter().find(|(_, given)| *given) {
                    return Err(format!("--{flag} applies to --mode dflow only"));
                }
                TfrcMode::Tfrc
            }
            Mode::Dflow => {
                if self.oscillation_reduction {
                    return Err(
                        "--oscillation-reduction applies to --mode tfrc only (DFlow disables it)".into(),
                    );
                }
                let d = DflowParams::default();
                TfrcMode::DFlow(DflowParams {
                    cd_thresh_ns: match self.cd_thresh_ms {
                        Some(ms) => to_ns(ms, MS, "cd-thresh-ms")?,
                        None => d.cd_thresh_ns,
                    },
                    current_period_ns: match self.current_period_ms {
                        Some(ms) => to_ns(ms, MS, "current-period-ms")?,
                        None => d.current_period_ns,
                    },
                    base_period_rtts: self.base_period_rtts.unwrap_or(DEFAULT_BASE_PERIOD_RTTS),
                    gradient_test: self.gradient_test,
                })
            }
        };
        let d = TfrcConfig::default();
        let config = TfrcConfig {
            mode,
            segment_bytes: self.packet_bytes,
            initial_no_feedback_ns: match self.initial_no_feedback_s {
                Some(s) => to_ns(s, S, "initial-no-feedback-s")?,
                None => d.initial_no_feedback_ns,
            },
            t_mbi_ns: match self.t_mbi_s {
                Some(s) => to_ns(s, S, "t-mbi-s")?,
                None => d.t_mbi_ns,
            },
            rtt_filter_q: self.rtt_filter_q.unwrap_or(d.rtt_filter_q),
            ndupack: self.ndupack.unwrap_or(d.ndupack),
            oscillation_reduction: self.oscillation_reduction,
        };
        // The protocol's own check names the field (e.g. "tfrc ndupack must
        // be in 1..=64").
        config.validate()?;
        let bind = self.bind.unwrap_or_else(|| {
            if self.to.is_ipv6() {
                "[::]:0".parse().expect("literal address")
            } else {
                "0.0.0.0:0".parse().expect("literal address")
            }
        });
        if bind.is_ipv6() != self.to.is_ipv6() {
            return Err(format!(
                "--bind {bind} and --to {} are of different IP versions",
                self.to
            ));
        }
        Ok(SendOptions {
            to: self.to,
            bind,
            config,
            duration_ns: to_ns(self.duration_s, S, "duration-s")?,
            max_rate_bps: self.max_rate_bps,
            interval_ns: to_ns(self.output.interval_ms, MS, "interval-ms")?,
            record: self.output.record.clone(),
            summary: self.output.summary.clone(),
            quiet: self.output.quiet,
        })
    }
}

/// See `--base-period-rtts`: latlab's DFlow scenarios use 1000 too.
pub const DEFAULT_BASE_PERIOD_RTTS: f64 = 1000.0;

impl RecvArgs {
    pub fn options(&self) -> Result<RecvOptions, String> {
        Ok(RecvOptions {
            listen: self.listen,
            duration_ns: self.duration_s.map(|s| to_ns(s, S, "duration-s")).transpose()?,
            idle_timeout_ns: self
                .idle_timeout_s
                .map(|s| to_ns(s, S, "idle-timeout-s"))
                .transpose()?,
            warmup_ns: if self.warmup_s == 0.0 {
                0
            } else {
                to_ns(self.warmup_s, S, "warmup-s")?
            },
            interval_ns: to_ns(self.output.interval_ms, MS, "interval-ms")?,
            record: self.output.record.clone(),
            summary: self.output.summary.clone(),
            quiet: self.output.quiet,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &str) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("latlab-net").chain(args.split_whitespace()))
    }

    fn send_options(args: &str) -> Result<SendOptions, String> {
        match parse(args).map_err(|e| e.to_string())?.command {
            Command::Media(MediaCommand::Send(a)) => a.options(),
            _ => panic!("not send"),
        }
    }

    #[test]
    fn send_defaults_and_dflow_parameters() {
        let o = send_options("media send --to 127.0.0.1:5000").unwrap();
        let d = o.config.dflow_params().unwrap();
        assert_eq!(d.cd_thresh_ns, 50_000_000);
        assert_eq!(d.base_period_rtts, DEFAULT_BASE_PERIOD_RTTS);
        assert_eq!(o.config.segment_bytes, 1200);
        assert_eq!(o.duration_ns, 30_000_000_000);
        assert_eq!(o.bind, "0.0.0.0:0".parse().unwrap());
        let o = send_options(
            "media send --to [::1]:5000 --mode dflow --cd-thresh-ms 20.5 --current-period-ms 30 \
             --base-period-rtts 10 --gradient-test --packet-bytes 500 --ndupack 5",
        )
        .unwrap();
        let d = o.config.dflow_params().unwrap();
        assert_eq!(
            (
                d.cd_thresh_ns,
                d.current_period_ns,
                d.base_period_rtts,
                d.gradient_test
            ),
            (20_500_000, 30_000_000, 10.0, true)
        );
        assert_eq!((o.config.segment_bytes, o.config.ndupack), (500, 5));
        assert!(o.bind.is_ipv6());
        let o = send_options("media send --to 127.0.0.1:5000 --mode tfrc --oscillation-reduction").unwrap();
        assert!(o.config.dflow_params().is_none() && o.config.oscillation_reduction);
    }

    #[test]
    fn tcp_recv_takes_the_controller_and_its_parameters() {
        let cli = parse(
            "recv --listen 127.0.0.1:5001 --controller rtac --param theta=1.5 \
             --param link_rate_bps=20e6 --param delta_ms=8 --duration-s 3",
        )
        .unwrap();
        let Command::Recv(a) = cli.command else {
            panic!("not recv")
        };
        let o = a.options().unwrap();
        assert_eq!(o.controller.name(), "rtac");
        let latlab_proto::tcp::RwndSpec::Rtac(p) = o.controller else {
            panic!()
        };
        assert_eq!(
            (p.theta, p.link_rate_bps, p.delta_ms),
            (Some(1.5), Some(20e6), 8.0)
        );
        assert_eq!(o.duration_ns, Some(3_000_000_000));
    }

    #[test]
    fn bad_input_is_an_error_naming_the_flag() {
        for (args, mentions) in [
            ("media send", "--to"),
            ("media send --to nowhere", "nowhere"),
            ("media send --to 127.0.0.1:5000 --mode cubic", "cubic"),
            ("media send --to 127.0.0.1:5000 --packet-bytes 10", "10"),
            ("media send --to 127.0.0.1:5000 --packet-bytes 70000", "70000"),
            ("media send --to 127.0.0.1:5000 --duration-s -1", "-1"),
            ("media send --to 127.0.0.1:5000 --duration-s nan", "nan"),
            ("media send --to 127.0.0.1:5000 --duration-s 1e30", "duration-s"),
            ("media send --to 127.0.0.1:5000 --interval-ms 0", "0"),
            (
                "media send --to 127.0.0.1:5000 --mode tfrc --cd-thresh-ms 20",
                "cd-thresh-ms",
            ),
            (
                "media send --to 127.0.0.1:5000 --oscillation-reduction",
                "oscillation",
            ),
            ("media send --to 127.0.0.1:5000 --ndupack 0", "ndupack"),
            (
                "media send --to 127.0.0.1:5000 --rtt-filter-q 1.5",
                "rtt_filter_q",
            ),
            ("media send --to 127.0.0.1:5000 --cd-thresh-ms 1e9", "cd"),
            (
                "media send --to 127.0.0.1:5000 --base-period-rtts 0.5",
                "base_period_rtts",
            ),
            ("media send --to 127.0.0.1:5000 --bind [::]:0", "IP versions"),
            ("media recv --listen 127.0.0.1:x", "127.0.0.1:x"),
            ("media recv", "--listen"),
            ("media recv --listen 127.0.0.1:5000 --warmup-s -2", "-2"),
            ("media recv --listen 127.0.0.1:5000 --idle-timeout-s 0", "0"),
            ("media frobnicate", "frobnicate"),
            ("recv --listen 127.0.0.1:5001", "--controller"),
            ("recv --listen 127.0.0.1:5001 --controller bbr", "bbr"),
            (
                "recv --listen 127.0.0.1:5001 --controller drwa --param lambda",
                "KEY=VALUE",
            ),
            (
                "recv --listen 127.0.0.1:5001 --controller drwa --param lambda=x",
                "'x'",
            ),
            (
                "recv --listen 127.0.0.1:5001 --controller drwa --param lamda=3",
                "lambda",
            ),
            (
                "recv --listen 127.0.0.1:5001 --controller rtac --param theta=1.38",
                "link_rate_bps",
            ),
            (
                "recv --listen 127.0.0.1:5001 --controller rtac --param alpha=2",
                "out of range",
            ),
        ] {
            let err = match parse(args) {
                Err(e) => {
                    assert_eq!(e.exit_code(), 2, "{args}");
                    e.to_string()
                }
                Ok(cli) => match cli.command {
                    Command::Media(MediaCommand::Send(a)) => a.options().unwrap_err(),
                    Command::Media(MediaCommand::Recv(a)) => a.options().map(|_| ()).unwrap_err(),
                    Command::Emulate(_) | Command::Flows(_) | Command::MptcpWatch(_) | Command::Proxy(_) => {
                        panic!("not a media command: {args}")
                    }
                    Command::Recv(a) => a.options().map(|_| ()).unwrap_err(),
                },
            };
            assert!(err.contains(mentions), "{args}: {err}");
        }
    }
}
