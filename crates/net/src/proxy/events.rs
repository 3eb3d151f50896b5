//! The per-connection record and the JSON-lines event log (`--events`).
//!
//! Conversion delay (the split-connection proxy's own cost): from accepting
//! the client's connection (its handshake done, SYN to ACK) to starting the
//! upstream connect (our SYN), and from the first byte read on one side to
//! the first byte written on the other. All `*_ns` offsets are from the
//! accept, on CLOCK_MONOTONIC; `accepted_unix_ns` places the accept in wall
//! time.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use serde::Serialize;

/// One connection, written as one line when it closes (`"event":"close"`),
/// or when it is refused at accept (`"event":"refused"`).
#[derive(Clone, Debug, Default, Serialize)]
pub struct ConnectionRecord {
    pub event: &'static str,
    pub id: u64,
    pub mode: &'static str,
    pub client: String,
    /// TCP_IS_MPTCP at accept.
    pub client_mptcp: bool,
    /// What the client asked for (HTTP/SOCKS) or the fixed upstream.
    pub target: Option<String>,
    /// The upstream address connected to.
    pub upstream: Option<String>,
    pub accepted_unix_ns: u64,
    pub upstream_connect_start_ns: Option<u64>,
    pub upstream_established_ns: Option<u64>,
    /// Client → server: first byte read from the client, first written upstream.
    pub c2s_first_in_ns: Option<u64>,
    pub c2s_first_out_ns: Option<u64>,
    /// Server → client.
    pub s2c_first_in_ns: Option<u64>,
    pub s2c_first_out_ns: Option<u64>,
    pub bytes_c2s: u64,
    pub bytes_s2c: u64,
    pub duration_ns: u64,
    /// How it ended: "done" (both FINs relayed), or the error kind.
    pub close: &'static str,
    /// The error's text, when there was one.
    pub error: Option<String>,
}

impl ConnectionRecord {
    /// SYN conversion delay: accept → upstream connect started.
    pub fn syn_delay_ns(&self) -> Option<u64> {
        self.upstream_connect_start_ns
    }
}

/// Where records go (nothing without `--events`).
pub struct EventLog {
    out: Option<BufWriter<File>>,
}

impl EventLog {
    pub fn open(path: Option<&Path>) -> io::Result<EventLog> {
        let out = match path {
            Some(p) => Some(BufWriter::new(File::create(p)?)),
            None => None,
        };
        Ok(EventLog { out })
    }

    pub fn write(&mut self, record: &ConnectionRecord) -> io::Result<()> {
        if let Some(out) = &mut self.out {
            serde_json::to_writer(&mut *out, record).map_err(io::Error::other)?;
            out.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Called every timer turn and at exit, so a reader sees lines within
    /// ~50 ms.
    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.out {
            Some(out) => out.flush(),
            None => Ok(()),
        }
    }
}
