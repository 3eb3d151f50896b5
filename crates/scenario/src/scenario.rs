//! The scenario file: one TOML schema shared by the CLI and the Python API.
//!
//! Parsing is strict (`deny_unknown_fields` everywhere) and every error names
//! the key path and what was expected. Semantic checks (positive rates, known
//! nodes, routable flows) happen in topology expansion ([`crate::topology`])
//! and in the simulator's builder, which report errors in the same form.

pub use crate::choice::{
    ApBufferSpec, CellScheduler, FlowKind, LossRecovery, MptcpScheduler, RwndController, TcpPreset,
    UdpPatternKind,
};
use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use std::fmt;

/// A scenario error: where (file and key path) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    pub source_name: String,
    /// Dotted key path, e.g. `topology.links[2].rate_bps`; empty for file-level errors.
    pub path: String,
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}: {}", self.source_name, self.message)
        } else {
            write!(f, "{}: {}: {}", self.source_name, self.path, self.message)
        }
    }
}

impl std::error::Error for ScenarioError {}

/// A number, or a `[min, max]` range drawn uniformly per element.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged, expecting = "a number or a [min, max] pair of numbers")]
pub enum Range {
    Fixed(f64),
    Uniform([f64; 2]),
}

impl Range {
    pub fn min(&self) -> f64 {
        match *self {
            Range::Fixed(v) => v,
            Range::Uniform([a, _]) => a,
        }
    }
    pub fn max(&self) -> f64 {
        match *self {
            Range::Fixed(v) => v,
            Range::Uniform([_, b]) => b,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    #[serde(default = "default_name")]
    pub name: String,
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time to run, seconds.
    pub duration_s: f64,
    /// Time-series sampling interval, milliseconds; 0 turns samples off.
    #[serde(default = "default_sample_interval_ms")]
    pub sample_interval_ms: f64,
    /// Summaries (goodput, throughput, utilisation) cover [measure_from_s, duration_s].
    #[serde(default)]
    pub measure_from_s: f64,
    /// TCP defaults for every flow; a flow group may override any field.
    #[serde(default)]
    pub tcp: TcpSpec,
    pub topology: Topology,
    #[serde(default)]
    pub flows: Vec<FlowGroup>,
    #[serde(default)]
    pub outputs: Outputs,
}

fn default_name() -> String {
    "scenario".to_string()
}
fn default_seed() -> u64 {
    1
}
fn default_sample_interval_ms() -> f64 {
    100.0
}

/// TCP settings. Every field is optional; unset fields come from the preset.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TcpSpec {
    /// "ns2" (1000-byte data packets, 40-byte ACKs, one ACK per segment) or
    /// "linux" (MSS 1448 + 52 header bytes, delayed ACKs, SACK).
    pub preset: Option<TcpPreset>,
    pub mss_bytes: Option<u32>,
    pub header_bytes: Option<u32>,
    pub initial_window_segments: Option<u32>,
    /// "newreno", "sack" (RFC 6675) or "fack" (forward acknowledgement).
    pub recovery: Option<LossRecovery>,
    pub sack: Option<bool>,
    pub timestamps: Option<bool>,
    pub min_rto_ms: Option<f64>,
    pub initial_rto_ms: Option<f64>,
    pub delayed_ack: Option<bool>,
    pub delayed_ack_segments: Option<u32>,
    pub delayed_ack_timeout_ms: Option<f64>,
    /// The fixed receiver's advertised window (with `rwnd_controller` unset
    /// or "fixed").
    pub rwnd_bytes: Option<u64>,
    /// Receiver-window controller: "fixed" (default), "autotuning",
    /// "drwa" or "rtac" (docs/models/receiver-window.md).
    pub rwnd_controller: Option<RwndController>,
    /// Its constants, e.g. { theta = 1.38, link_rate_bps = 40e6 } for RTAC.
    pub rwnd_params: Option<std::collections::BTreeMap<String, f64>>,
    pub pacing: Option<bool>,
    pub pacing_ss_factor: Option<f64>,
    pub pacing_ca_factor: Option<f64>,
    pub idle_restart: Option<bool>,
    /// RFC 6675 rescue retransmission (default true; false as in ns-3).
    pub rescue_retransmission: Option<bool>,
    /// Restart the RTO timer at a fast retransmit (default true; false as RFC 6298 and ns-3).
    pub rto_restart_on_fast_retransmit: Option<bool>,
    /// ssthresh from the RFC 6675 pipe, recomputed at a timeout in recovery
    /// (default false: RFC 5681 FlightSize; true as ns-3 3.44).
    pub ssthresh_from_pipe: Option<bool>,
    /// Drop the RTO backoff on every ACK of new data (default false: RFC
    /// 6298 keeps it until a new RTT sample; true as ns-3 3.44).
    pub rto_backoff_reset_on_ack: Option<bool>,
    /// Check the window against the RFC 6675 pipe outside SACK recovery too
    /// (default false: RFC 5681 FlightSize; true as ns-3 3.44).
    pub window_from_pipe: Option<bool>,
    /// ECN (RFC 3168) at both ends: ECT(0) data, ECE/CWR (default false).
    pub ecn: Option<bool>,
}

impl TcpSpec {
    /// Fields set in `over` replace those in `self`.
    pub fn overlay(&self, over: &TcpSpec) -> TcpSpec {
        macro_rules! pick {
            ($($f:ident),*) => { TcpSpec { $($f: over.$f.clone().or_else(|| self.$f.clone())),* } };
        }
        pick!(
            preset,
            mss_bytes,
            header_bytes,
            initial_window_segments,
            recovery,
            sack,
            timestamps,
            min_rto_ms,
            initial_rto_ms,
            delayed_ack,
            delayed_ack_segments,
            delayed_ack_timeout_ms,
            rwnd_bytes,
            rwnd_controller,
            rwnd_params,
            pacing,
            pacing_ss_factor,
            pacing_ca_factor,
            idle_restart,
            rescue_retransmission,
            rto_restart_on_fast_retransmit,
            ssthresh_from_pipe,
            rto_backoff_reset_on_ack,
            window_from_pipe,
            ecn
        )
    }
}

/// A queue discipline on a link, chosen by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum QueueSpec {
    Droptail(DropTailSpec),
    Red(RedSpec),
    Codel(CoDelSpec),
    /// The optimal edge pacer (docs/models/edge-pacer.md): no packet held longer than delay_ms.
    EdgePacer(EdgePacerSpec),
    /// FQ-CoDel (RFC 8290): per-flow queues, DRR, CoDel on each.
    FqCodel(FqCoDelSpec),
    /// PIE (RFC 8033): random early drop driven by the queueing delay.
    Pie(PieSpec),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgePacerSpec {
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    /// Delay bound d, milliseconds; 0 turns pacing off (a FIFO).
    pub delay_ms: f64,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DropTailSpec {
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RedSpec {
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    /// Thresholds in packets (bytes when byte_mode).
    pub min_th: f64,
    pub max_th: f64,
    pub max_p: f64,
    pub w_q: f64,
    #[serde(default)]
    pub gentle: bool,
    #[serde(default)]
    pub byte_mode: bool,
    #[serde(default = "default_mean_pkt")]
    pub mean_pkt_size_bytes: u32,
    /// ns-2's `wait_` (spread drops after the last one).
    #[serde(default = "yes")]
    pub wait: bool,
    /// Mark ECT packets CE instead of dropping them early (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoDelSpec {
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    #[serde(default = "default_codel_target")]
    pub target_ms: f64,
    #[serde(default = "default_codel_interval")]
    pub interval_ms: f64,
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    /// Mark ECT packets CE instead of dropping them (RFC 3168).
    #[serde(default)]
    pub ecn: bool,
}

/// FQ-CoDel; defaults are Linux's (`tc qdisc add ... fq_codel`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FqCoDelSpec {
    /// Shared buffer over all flow queues (default 10240 packets).
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    /// Number of flow queues (default 1024).
    #[serde(default = "default_fq_flows")]
    pub flows: u32,
    /// DRR quantum, bytes (default 1514).
    #[serde(default = "default_fq_quantum")]
    pub quantum_bytes: u32,
    #[serde(default = "default_codel_target")]
    pub target_ms: f64,
    #[serde(default = "default_codel_interval")]
    pub interval_ms: f64,
    #[serde(default = "default_mtu")]
    pub mtu_bytes: u32,
    /// Mark ECT packets CE instead of dropping them (RFC 8290 §5.2.7;
    /// default false here, unlike Linux, so that results stay comparable).
    #[serde(default)]
    pub ecn: bool,
}

/// PIE; defaults are RFC 8033's (and Linux's 1000-packet limit).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PieSpec {
    pub limit_bytes: Option<u64>,
    pub limit_packets: Option<u64>,
    /// QDELAY_REF (default 15 ms).
    #[serde(default = "default_pie_target")]
    pub target_ms: f64,
    /// T_UPDATE (default 15 ms).
    #[serde(default = "default_pie_t_update")]
    pub t_update_ms: f64,
    #[serde(default = "default_pie_alpha")]
    pub alpha: f64,
    #[serde(default = "default_pie_beta")]
    pub beta: f64,
    /// MAX_BURST (default 150 ms).
    #[serde(default = "default_pie_max_burst")]
    pub max_burst_ms: f64,
    /// MEAN_PKTSIZE (default 1500).
    #[serde(default = "default_mtu")]
    pub mean_pkt_size_bytes: u32,
    /// Mark ECT packets CE instead of dropping them while the drop
    /// probability is at most 10 % (RFC 8033 §5.1).
    #[serde(default)]
    pub ecn: bool,
}

impl<'de> Deserialize<'de> for QueueSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        by_kind(
            d,
            &[
                ("droptail", |t| nested(t).map(QueueSpec::Droptail)),
                ("red", |t| nested(t).map(QueueSpec::Red)),
                ("codel", |t| nested(t).map(QueueSpec::Codel)),
                ("fq_codel", |t| nested(t).map(QueueSpec::FqCodel)),
                ("pie", |t| nested(t).map(QueueSpec::Pie)),
                ("edge-pacer", |t| nested(t).map(QueueSpec::EdgePacer)),
            ],
        )
    }
}

fn default_fq_flows() -> u32 {
    1024
}
fn default_fq_quantum() -> u32 {
    1514
}
fn default_pie_target() -> f64 {
    15.0
}
fn default_pie_t_update() -> f64 {
    15.0
}
fn default_pie_alpha() -> f64 {
    0.125
}
fn default_pie_beta() -> f64 {
    1.25
}
fn default_pie_max_burst() -> f64 {
    150.0
}

fn default_mean_pkt() -> u32 {
    1000
}
fn yes() -> bool {
    true
}
fn default_codel_target() -> f64 {
    5.0
}
fn default_codel_interval() -> f64 {
    100.0
}
fn default_mtu() -> u32 {
    1500
}

impl Default for QueueSpec {
    /// A large DropTail buffer: effectively lossless for the links it guards.
    fn default() -> Self {
        QueueSpec::Droptail(DropTailSpec {
            limit_bytes: None,
            limit_packets: Some(10_000),
        })
    }
}

/// The network, chosen by `kind`.
#[derive(Debug, Clone, PartialEq)]
pub enum Topology {
    Dumbbell(DumbbellSpec),
    EdgeDumbbell(EdgeDumbbellSpec),
    Custom(CustomSpec),
    Cellular(CellularSpec),
    Wifi(WifiSpec),
}

impl<'de> Deserialize<'de> for Topology {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        by_kind(
            d,
            &[
                ("dumbbell", |t| nested(t).map(Topology::Dumbbell)),
                ("edge-dumbbell", |t| nested(t).map(Topology::EdgeDumbbell)),
                ("custom", |t| nested(t).map(Topology::Custom)),
                ("cellular", |t| nested(t).map(Topology::Cellular)),
                ("wifi", |t| nested(t).map(Topology::Wifi)),
            ],
        )
    }
}

/// A time-varying link rate, one key naming the form:
/// `{ trace = "file" }` (Mahimahi delivery opportunities, looping; a
/// relative path is resolved against the scenario file's folder),
/// `{ schedule = [[t_s, rate_bps], ...] }` (piecewise constant),
/// `{ constant_bps = 10e6 }`, `{ markov = { ... } }` (a good/bad channel) or
/// `{ per_interval = { ... } }` (a rate drawn per interval).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum RateSpec {
    Trace(String),
    Schedule(Vec<[f64; 2]>),
    ConstantBps(f64),
    Markov(MarkovSpec),
    PerInterval(PerIntervalSpec),
}

/// A two-state Markov channel: exponential dwell times in each state.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MarkovSpec {
    pub good_bps: f64,
    pub bad_bps: f64,
    pub mean_good_ms: f64,
    pub mean_bad_ms: f64,
}

/// A rate drawn every `interval_ms` from one distribution (set exactly one).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PerIntervalSpec {
    pub interval_ms: f64,
    /// Uniform in [min, max] bits/s.
    pub uniform_bps: Option<[f64; 2]>,
    /// Log-normal: { median_bps, sigma } (σ of the rate's logarithm).
    pub lognormal: Option<LogNormalSpec>,
    /// An empirical distribution: one of these rates, equally likely.
    pub values_bps: Option<Vec<f64>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogNormalSpec {
    pub median_bps: f64,
    pub sigma: f64,
}

/// An LTE cell's radio scheduler and impairments (docs/models/links.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellSpec {
    #[serde(default = "default_tti_ms")]
    pub tti_ms: f64,
    #[serde(default = "default_resource_blocks")]
    pub resource_blocks: u32,
    /// "pf" (proportional fair, default) or "rr" (round robin).
    #[serde(default = "default_scheduler")]
    pub scheduler: CellScheduler,
    /// PF: time constant of the served-rate average, TTIs.
    #[serde(default = "default_pf_window")]
    pub pf_window_ttis: f64,
    /// Per-TTI probability that a transport block needs a HARQ retransmission.
    #[serde(default)]
    pub harq_error_prob: f64,
    #[serde(default = "default_harq_rtt_ms")]
    pub harq_rtt_ms: f64,
    #[serde(default = "default_harq_max_tx")]
    pub harq_max_tx: u32,
    /// Frame-timing jitter: a uniform extra delay in [0, jitter_ms] per transport block.
    #[serde(default)]
    pub jitter_ms: f64,
}

impl Default for CellSpec {
    fn default() -> Self {
        CellSpec {
            tti_ms: default_tti_ms(),
            resource_blocks: default_resource_blocks(),
            scheduler: default_scheduler(),
            pf_window_ttis: default_pf_window(),
            harq_error_prob: 0.0,
            harq_rtt_ms: default_harq_rtt_ms(),
            harq_max_tx: default_harq_max_tx(),
            jitter_ms: 0.0,
        }
    }
}

fn default_tti_ms() -> f64 {
    1.0
}
fn default_resource_blocks() -> u32 {
    50
}
fn default_scheduler() -> CellScheduler {
    CellScheduler::Pf
}
fn default_pf_window() -> f64 {
    100.0
}
fn default_harq_rtt_ms() -> f64 {
    8.0
}
fn default_harq_max_tx() -> u32 {
    4
}

/// A Wi-Fi AP's link-layer retry model (docs/models/links.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApSpec {
    /// The downlink queue: the one buffer all stations share, or with
    /// `buffer = "per-station"` each station's own (same kind and limit).
    #[serde(default = "default_ap_queue")]
    pub queue: QueueSpec,
    #[serde(default)]
    pub buffer: ApBufferSpec,
    #[serde(default = "default_slot_us")]
    pub slot_us: f64,
    #[serde(default = "default_cw_min")]
    pub cw_min: u32,
    #[serde(default = "default_cw_max")]
    pub cw_max: u32,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
}

impl Default for ApSpec {
    fn default() -> Self {
        ApSpec {
            queue: default_ap_queue(),
            buffer: ApBufferSpec::default(),
            slot_us: default_slot_us(),
            cw_min: default_cw_min(),
            cw_max: default_cw_max(),
            max_attempts: default_max_attempts(),
        }
    }
}

fn default_ap_queue() -> QueueSpec {
    QueueSpec::Droptail(DropTailSpec {
        limit_bytes: None,
        limit_packets: Some(400),
    })
}
fn default_slot_us() -> f64 {
    9.0
}
fn default_cw_min() -> u32 {
    15
}
fn default_cw_max() -> u32 {
    1023
}
fn default_max_attempts() -> u32 {
    7
}

/// One user (cellular) or station (Wi-Fi); unset fields take the topology's defaults.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RadioUserSpec {
    /// Custom topologies: the user's node.
    pub node: Option<String>,
    /// Downlink capacity (cellular: with the whole cell; Wi-Fi: PHY rate).
    pub rate: Option<RateSpec>,
    /// Cellular: this user's own downlink queue.
    pub queue: Option<QueueSpec>,
    /// Radio propagation delay, ms.
    pub delay_ms: Option<f64>,
    pub uplink_rate: Option<RateSpec>,
    /// Wi-Fi: probability that one transmission attempt fails.
    pub frame_error_prob: Option<f64>,
}

/// server — wired link (an optional bottleneck) — base station `bs` — users
/// ue0..ue{N-1}. Each user's downlink has its own queue and channel; all
/// share the cell's radio scheduler. Uplinks are plain links.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellularSpec {
    pub users: u32,
    #[serde(default = "default_wired_rate")]
    pub wired_rate_bps: f64,
    /// A time-varying rate for the wired link instead of wired_rate_bps.
    pub wired_rate: Option<RateSpec>,
    #[serde(default = "default_wired_delay")]
    pub wired_delay_ms: f64,
    #[serde(default)]
    pub wired_queue: QueueSpec,
    #[serde(default)]
    pub cell: CellSpec,
    /// Every user's downlink capacity unless the user sets its own.
    pub rate: Option<RateSpec>,
    /// Every user's downlink queue unless the user sets its own.
    #[serde(default = "default_user_queue")]
    pub queue: QueueSpec,
    #[serde(default = "default_radio_delay")]
    pub radio_delay_ms: f64,
    #[serde(default = "default_uplink_rate")]
    pub uplink_rate: RateSpec,
    /// Per-user settings, user i at index i (may be shorter than `users`).
    #[serde(default)]
    pub user: Vec<RadioUserSpec>,
}

/// server — wired link (an optional bottleneck) — access point `ap` —
/// stations sta0..sta{N-1}: one shared downlink buffer, per-station rate
/// and frame error probability. Uplinks are plain links.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WifiSpec {
    pub stations: u32,
    #[serde(default = "default_wired_rate")]
    pub wired_rate_bps: f64,
    pub wired_rate: Option<RateSpec>,
    #[serde(default = "default_wired_delay")]
    pub wired_delay_ms: f64,
    #[serde(default)]
    pub wired_queue: QueueSpec,
    #[serde(default)]
    pub ap: ApSpec,
    /// Every station's rate unless the station sets its own.
    pub rate: Option<RateSpec>,
    #[serde(default)]
    pub frame_error_prob: f64,
    #[serde(default = "default_wifi_radio_delay")]
    pub radio_delay_ms: f64,
    #[serde(default = "default_uplink_rate")]
    pub uplink_rate: RateSpec,
    #[serde(default)]
    pub station: Vec<RadioUserSpec>,
}

fn default_wired_rate() -> f64 {
    1e9
}
fn default_wired_delay() -> f64 {
    10.0
}
fn default_radio_delay() -> f64 {
    5.0
}
fn default_wifi_radio_delay() -> f64 {
    1.0
}
fn default_uplink_rate() -> RateSpec {
    RateSpec::ConstantBps(10e6)
}
/// RLC buffers are large (docs/models/links.md): 1 MB per user unless set.
fn default_user_queue() -> QueueSpec {
    QueueSpec::Droptail(DropTailSpec {
        limit_bytes: Some(1_000_000),
        limit_packets: None,
    })
}

/// An LTE cell inside a custom topology: the base station's node and its users' nodes.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomCellSpec {
    pub node: String,
    #[serde(default)]
    pub cell: CellSpec,
    pub rate: Option<RateSpec>,
    #[serde(default = "default_user_queue")]
    pub queue: QueueSpec,
    #[serde(default = "default_radio_delay")]
    pub radio_delay_ms: f64,
    #[serde(default = "default_uplink_rate")]
    pub uplink_rate: RateSpec,
    pub users: Vec<RadioUserSpec>,
}

/// A Wi-Fi AP inside a custom topology.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomApSpec {
    pub node: String,
    #[serde(default)]
    pub ap: ApSpec,
    pub rate: Option<RateSpec>,
    #[serde(default)]
    pub frame_error_prob: f64,
    #[serde(default = "default_wifi_radio_delay")]
    pub radio_delay_ms: f64,
    #[serde(default = "default_uplink_rate")]
    pub uplink_rate: RateSpec,
    pub stations: Vec<RadioUserSpec>,
}

/// N sender/receiver pairs, each on its own access link, around one core link.
/// Nodes: s0..s{N-1}, d0..d{N-1}, routers `left` and `right`; the core link
/// is `left->right` (and `right->left` for ACKs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DumbbellSpec {
    pub pairs: u32,
    pub access_rate_bps: Range,
    pub access_delay_ms: Range,
    pub core_rate_bps: f64,
    pub core_delay_ms: f64,
    #[serde(default)]
    pub core_queue: QueueSpec,
    #[serde(default)]
    pub access_queue: QueueSpec,
    /// Random independent loss probability on the forward core link.
    #[serde(default)]
    pub core_loss: f64,
}

/// The small-buffer study's two-level dumbbell: `edges` ingress edge
/// routers ie{j}, each fed by `hosts_per_edge` access links from hosts
/// s{i}; a core link c0->c1; mirrored egress edges ee{j} and receivers d{i}.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EdgeDumbbellSpec {
    pub edges: u32,
    pub hosts_per_edge: u32,
    pub access_rate_bps: Range,
    pub access_delay_ms: Range,
    pub edge_rate_bps: Range,
    pub edge_delay_ms: Range,
    pub core_rate_bps: f64,
    pub core_delay_ms: f64,
    #[serde(default)]
    pub core_queue: QueueSpec,
    #[serde(default)]
    pub edge_queue: QueueSpec,
    #[serde(default)]
    pub access_queue: QueueSpec,
}

/// Any graph: named nodes and links.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CustomSpec {
    pub nodes: Vec<NodeSpec>,
    #[serde(default)]
    pub links: Vec<LinkSpec>,
    /// LTE cells: downlinks from `node` to each user's node (and plain uplinks back).
    #[serde(default)]
    pub cells: Vec<CustomCellSpec>,
    /// Wi-Fi APs: downlinks from `node` to each station's node through one shared buffer.
    #[serde(default)]
    pub aps: Vec<CustomApSpec>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeSpec {
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    pub from: String,
    pub to: String,
    /// Fixed rate; or set `rate` instead.
    pub rate_bps: Option<f64>,
    /// A time-varying rate (trace, schedule or generator) instead of rate_bps.
    pub rate: Option<RateSpec>,
    pub delay_ms: f64,
    #[serde(default)]
    pub queue: QueueSpec,
    /// Also create the reverse link `to->from` with the same settings.
    #[serde(default = "yes")]
    pub duplex: bool,
    /// Random independent loss probability (forward direction only).
    #[serde(default)]
    pub loss: f64,
    /// Rate of the reverse direction when duplex (default: same as rate_bps).
    pub reverse_rate_bps: Option<f64>,
    /// A time-varying rate for the reverse direction.
    pub reverse_rate: Option<RateSpec>,
}

/// When flows start.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(
    untagged,
    expecting = "a number of seconds, or a table such as { uniform = [0, 10] }, { exponential_mean = 1.0 } or { at = [0.0, 1.5] }"
)]
pub enum StartSpec {
    At(f64),
    Dist(StartDist),
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "snake_case")]
pub enum StartDist {
    /// Uniform in [min, max] seconds.
    Uniform([f64; 2]),
    /// Poisson arrivals: exponential gaps with this mean, seconds, from 0.
    ExponentialMean(f64),
    /// Explicit start times, one per flow (list length must equal count).
    At(Vec<f64>),
}

impl Default for StartSpec {
    fn default() -> Self {
        StartSpec::At(0.0)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowGroup {
    #[serde(default = "default_group_name")]
    pub name: String,
    #[serde(default = "one")]
    pub count: u32,
    /// `{i}` in src and dst runs from first_index to first_index + count − 1,
    /// so two groups can share a topology's hosts without overlapping.
    #[serde(default)]
    pub first_index: u32,
    /// Source node; `{i}` is replaced by the flow's index in the group.
    pub src: String,
    pub dst: String,
    /// "tcp" (default), "udp", "tfrc" (RFC 5348) or "dflow" (TFRC with
    /// delay-based congestion events).
    #[serde(default = "default_kind")]
    pub kind: FlowKind,
    #[serde(default = "default_cc")]
    pub cc: String,
    /// Congestion-controller parameters, e.g. { target_ms = 50 } for LEDBAT.
    #[serde(default)]
    pub cc_params: std::collections::BTreeMap<String, f64>,
    /// UDP traffic (kind = "udp").
    pub udp: Option<UdpSpec>,
    /// TFRC / DFlow settings (kind = "tfrc" or "dflow"); optional.
    pub tfrc: Option<TfrcSpec>,
    /// TCP closed-loop users: each repeatedly transfers a file, then thinks.
    pub closed_loop: Option<ClosedLoopSpec>,
    /// Multipath TCP settings and paths (kind = "mptcp").
    pub mptcp: Option<MptcpSpec>,
    #[serde(default)]
    pub start_s: StartSpec,
    /// Finite flow size in bytes; absent means a long-lived bulk flow.
    pub size_bytes: Option<u64>,
    #[serde(default)]
    pub tcp: TcpSpec,
}

fn default_group_name() -> String {
    "flows".to_string()
}
fn one() -> u32 {
    1
}
fn default_kind() -> FlowKind {
    FlowKind::Tcp
}
fn default_cc() -> String {
    "newreno".to_string()
}

/// An open-loop UDP source (docs/models/workloads.md).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UdpSpec {
    /// "cbr", "poisson" or "lrd" (fractional Gaussian noise, Norros model).
    pub pattern: UdpPatternKind,
    /// Mean rate of the source, bits per second (payload).
    pub rate_bps: f64,
    /// Payload size: a number, or [min, max] drawn uniformly per packet.
    pub size_bytes: Range,
    /// lrd: Hurst parameter in (0.5, 1).
    pub hurst: Option<f64>,
    /// lrd: slot length of the fGn process, milliseconds (default 10).
    pub slot_ms: Option<f64>,
    /// lrd: Norros variance coefficient a in Var(A_k) = a·m·Δ^2H, bytes·s^(1−2H)
    /// (default: mean packet size · Δ^(1−2H), the variance a Poisson source
    /// of the same packets has at the slot scale).
    pub variance_coef: Option<f64>,
    /// Per-packet header bytes on the wire (default 28: IPv4 + UDP).
    pub header_bytes: Option<u32>,
}

/// A TFRC or DFlow flow (tfrc-dflow spec). Every field is optional; unset
/// fields take the defaults of `latlab_proto::tfrc::TfrcConfig` (RFC 5348)
/// and `DflowParams` (the DFlow draft). The DFlow fields are rejected for
/// kind = "tfrc", where they would have no effect.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TfrcSpec {
    /// s: payload of every data packet, bytes (default 1200).
    pub segment_bytes: Option<u32>,
    /// Per-packet header bytes on the wire, data and feedback alike
    /// (default 44: IPv4 + UDP 28 + a 16-byte TFRC header; a feedback
    /// packet's four fields fit in the same 16 bytes and it has no payload).
    pub header_bytes: Option<u32>,
    /// RFC 5348 §4.5 oscillation reduction (default false; not with DFlow).
    pub oscillation_reduction: Option<bool>,
    /// DFlow: queueing delay that flags a congestion event, ms (default 50).
    pub cd_thresh_ms: Option<f64>,
    /// DFlow: base_delay is the min one-way delay over this many RTTs
    /// (default 10; a standing queue drifts into a short base window).
    pub base_period_rtts: Option<f64>,
    /// DFlow: current_delay is the min one-way delay over this period, ms (default 50).
    pub current_period_ms: Option<f64>,
    /// DFlow: also require a rising delay (default false, as in the study).
    pub gradient_test: Option<bool>,
    /// Receiver clock minus simulation clock, ms (default 0; ≥ 0). DFlow
    /// must behave identically under any offset.
    pub receiver_clock_offset_ms: Option<f64>,
}

/// A Multipath TCP connection (kind = "mptcp"; docs/models/mptcp.md): the
/// data-level options and one path per subflow. The group's `cc` is every
/// subflow's controller ("lia" and "olia" couple them); its `tcp` table
/// applies to every subflow.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpSpec {
    /// "minrtt" (default: lowest SRTT with room, Linux's default) or "roundrobin".
    pub scheduler: Option<MptcpScheduler>,
    /// The shared data-level receive buffer, bytes (default: the TCP
    /// table's rwnd_bytes).
    pub recv_buffer_bytes: Option<u64>,
    /// Send new data only inside the connection-level window (RFC 8684
    /// §3.3.4; default true). false: each subflow applies the advertised
    /// window only in its own sequence space, and the receiver drops what
    /// does not fit its buffer.
    pub enforce_data_window: Option<bool>,
    /// NSDI'12 opportunistic retransmission (default false).
    #[serde(default)]
    pub opportunistic_retransmit: bool,
    /// NSDI'12 penalisation of the subflow holding the window (default false).
    #[serde(default)]
    pub penalise_slow_subflows: bool,
    /// One subflow per path, at least one.
    #[serde(default)]
    pub paths: Vec<MptcpPathSpec>,
    /// Reserved: the MPTCP-to-TCP proxy (split connection).
    pub proxy: Option<MptcpProxySpec>,
}

/// One subflow's path: the shortest route from the source through the
/// `via` waypoints to the destination (the reverse route back through them).
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpPathSpec {
    /// A label for the results (default "path0", "path1", ...).
    pub name: Option<String>,
    #[serde(default)]
    pub via: Vec<String>,
    /// Seconds after the flow's start that the subflow opens (default 0).
    #[serde(default)]
    pub join_s: f64,
    /// RFC 8684 §3.3.8 backup subflow: used only when no regular one is.
    #[serde(default)]
    pub backup: bool,
}

/// The MPTCP-to-TCP proxy at `node` (split connection). Parsed so that
/// scenarios can be written; the simulator does not run it yet.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpProxySpec {
    pub node: String,
    pub relay_bytes: Option<u64>,
    pub syn_delay_ms: Option<f64>,
    pub data_delay_ms: Option<f64>,
    pub upstream_cc: Option<String>,
    pub throttle: Option<MptcpThrottleSpec>,
}

/// A per-subflow rate limit installed by the proxy.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MptcpThrottleSpec {
    /// The path's name or index.
    pub path: PathRef,
    pub rate_bps: f64,
    pub after_s: Option<f64>,
    pub queue_bytes: Option<u64>,
}

/// A path named by its label or its index.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged, expecting = "a path name or index")]
pub enum PathRef {
    Index(u32),
    Name(String),
}

/// Closed-loop users (docs/models/workloads.md, after Schroeder et al., "Open versus closed").
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClosedLoopSpec {
    /// Pareto file sizes with this mean (bytes) ...
    pub pareto_mean_bytes: Option<f64>,
    /// ... and this shape (> 1; default 1.2).
    pub pareto_shape: Option<f64>,
    /// Or a fixed file size in bytes.
    pub file_bytes: Option<u64>,
    /// Exponential think time between files, mean in seconds.
    pub think_mean_s: f64,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outputs {
    /// Link names (`a->b`) whose transmitted packets are written to `<name>.pcap`.
    #[serde(default)]
    pub pcap: Vec<String>,
    /// Keep per-flow time series for at most this many flows (lowest ids);
    /// absent means all.
    pub max_sampled_flows: Option<u32>,
}

/// Errors raised inside a nested table carry their inner key path between
/// markers, `\u{1}path\u{1}message`, so that the outer path can be joined to
/// it: serde's internally tagged enums would otherwise lose the path.
const PATH_MARK: char = '\u{1}';

fn join_path(outer: &str, inner: &str) -> String {
    match (outer, inner) {
        ("" | ".", i) => i.to_string(),
        (o, "") => o.to_string(),
        (o, i) if i.starts_with('[') => format!("{o}{i}"),
        (o, i) => format!("{o}.{i}"),
    }
}

/// Split a path-marked message into (inner path, message).
fn unmark(message: &str) -> (&str, &str) {
    message
        .strip_prefix(PATH_MARK)
        .and_then(|rest| rest.split_once(PATH_MARK))
        .unwrap_or(("", message))
}

fn marked(path: &str, message: &str) -> String {
    format!("{PATH_MARK}{path}{PATH_MARK}{message}")
}

/// One variant of a table tagged by its `kind` key: the kind's name and how
/// the rest of the table becomes the variant.
type KindVariant<T, E> = (&'static str, fn(toml::Value) -> Result<T, E>);

/// Take the `kind` key out of a table and build the variant it names from
/// the rest; the accepted kinds are listed, in `kinds` order, in the error.
fn by_kind<'de, D: Deserializer<'de>, T>(d: D, kinds: &[KindVariant<T, D::Error>]) -> Result<T, D::Error> {
    let mut table = toml::Table::deserialize(d)?;
    let expected = kinds
        .iter()
        .map(|(k, _)| format!("{k:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    match table.remove("kind") {
        Some(toml::Value::String(k)) => match kinds.iter().find(|(name, _)| *name == k) {
            Some((_, variant)) => variant(toml::Value::Table(table)),
            None => Err(D::Error::custom(marked(
                "kind",
                &format!("unknown kind {k:?}; expected one of {expected}"),
            ))),
        },
        Some(_) => Err(D::Error::custom(marked(
            "kind",
            &format!("expected a string, one of {expected}"),
        ))),
        None => Err(D::Error::custom(format!(
            "missing field `kind`; expected one of {expected}"
        ))),
    }
}

/// Deserialize a nested table, keeping the key path of any error inside it.
fn nested<T: DeserializeOwned, E: serde::de::Error>(value: toml::Value) -> Result<T, E> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let outer = e.path().to_string();
        let inner = e.into_inner();
        let (path, message) = unmark(inner.message());
        E::custom(marked(&join_path(&outer, path), message))
    })
}

/// Parse a scenario from TOML text. `source_name` names the file in errors.
pub fn parse(text: &str, source_name: &str) -> Result<Scenario, ScenarioError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let outer = e.path().to_string();
        let inner = e.into_inner();
        let (inner_path, message) = unmark(inner.message());
        let mut message = message.to_string();
        if let Some(span) = inner.span() {
            let line = text[..span.start.min(text.len())].matches('\n').count() + 1;
            message = format!("{message} (line {line})");
        }
        ScenarioError {
            source_name: source_name.to_string(),
            path: join_path(&outer, inner_path),
            message,
        }
    })
}
