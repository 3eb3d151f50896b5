//! latlab's real-network tools over Linux sockets, built on the sans-IO
//! machines of `latlab_proto` (see docs: DESIGN.md, "net/").
//!
//! So far: the media transport, `latlab-net media send|recv`, which runs
//! TFRC (RFC 5348) or DFlow over UDP and records rate, one-way delay and
//! loss; and the link emulator, `latlab-net emulate`, which runs a
//! scenario's path (latlab-qdisc queues, latlab-link rates) between two
//! network namespaces over TUN devices.
//!
//! - [`wire`]: the versioned packet format and its parser.
//! - [`clock`]: the real-time clock and the precise wait the loops sleep in.
//! - [`media`]: the sender and receiver loops.
//! - [`emulate`]: the TUN link emulator.
//! - [`flows`]: a scenario's TCP flows over the kernel's TCP, between
//!   two namespaces (usually the emulator's), with TCP_INFO samples.
//! - [`recv`]: a TCP sink whose window is set by a receiver-window
//!   controller (`latlab-net recv`).
//! - [`mptcp`]: the kernel's MPTCP path-manager events, per-subflow
//!   statistics (SOL_MPTCP) and per-subflow throttling (HTB + u32), for the
//!   MPTCP proxy; `latlab-net mptcp-watch`.
//! - [`proxy`]: the MPTCP-to-TCP converter (`latlab-net proxy`): fixed,
//!   HTTP forward or SOCKS 5 upstream, splice(2) relay, event log, metrics.
//! - [`record`]: per-interval CSV rows and the JSON summary.
//! - [`cli`]: the command line.

pub mod arg_values;
pub mod cli;
pub mod clock;
pub mod emulate;
pub mod flows;
pub mod media;
pub mod mptcp;
pub mod proxy;
pub mod record;
pub mod recv;
mod sockaddr;
pub mod wire;
