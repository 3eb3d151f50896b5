//! latlab's real-network tools over Linux sockets: the `latlab-net` binary
//! (`media`, `emulate`, `flows`, `recv`, `proxy`, `mptcp-watch`), which the
//! Python `latlab` command runs for its real-network subcommands.
//!
//! The driving contract: where a tool runs a sans-IO machine (media: TFRC
//! or DFlow from `latlab_proto`; emulate: `latlab_qdisc` queues and
//! `latlab_link` links; recv: a receiver-window controller), it is that
//! machine's wall-time driver. It reads the monotonic clock ([`clock`]) and
//! passes that `now` in, feeds the machine what arrived on its socket or TUN
//! device (`on_data`, `on_feedback`, `enqueue`, ...), sends what the machine
//! hands out (`poll_transmit`, `dequeue`), and waits until the earlier of
//! the machine's next deadline (`next_timeout`, `Dequeue::Wait`) and the
//! next readable descriptor. The same machines run in virtual time in
//! `latlab-sim`; this crate never depends on it. The other tools (flows,
//! proxy) drive the kernel's TCP and MPTCP and record what it reports.
//!
//! - [`media::wire`]: the media packet format (versioned) and its parser.
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
//! - [`run_files`]: per-interval CSV rows and the JSON summary a run writes.
//! - [`cli`]: the command line.

pub mod arg_values;
pub mod cli;
pub mod clock;
pub mod emulate;
pub mod flows;
pub mod media;
pub mod mptcp;
pub mod proxy;
pub mod recv;
pub mod run_files;
mod sockaddr;
