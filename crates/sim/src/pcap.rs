//! Writes the TCP segments a simulated link transmits to a pcap file that
//! tshark / Wireshark can open.
//!
//! # File format
//!
//! The one the emulator writes too, [`latlab_link::pcap`]: classic libpcap with
//! nanosecond timestamps and link type `LINKTYPE_RAW` (101), so every
//! record starts directly with an IPv4 header. Frame timestamps are the
//! simulation time (`time_ns`); times past ~136 years of virtual time wrap
//! (no panic).
//!
//! # What a record contains
//!
//! The model carries no payload bytes, so each record holds only the IPv4
//! header (20 bytes) and the TCP header with options (20..=60 bytes). The
//! record's `incl_len` is that header length; its `orig_len` is
//! `max(wire_bytes, IPv4 total length)`, so Wireshark shows the link-level
//! size the simulator charged for the packet while marking the payload as
//! "not captured".
//!
//! The IPv4 total length is `20 + TCP header + payload_bytes` (clamped to
//! 65535), i.e. the packet a real stack would send for this segment. This
//! equals `wire_bytes` whenever the simulator's per-packet header overhead
//! matches the header written here (e.g. Linux-style 52 header bytes with
//! timestamps on); when it does not (e.g. an ACK that carries SACK blocks, or a
//! preset that charges 40 header bytes while timestamps are on), using the
//! real header length keeps tshark's TCP segment length equal to
//! `payload_bytes`, so its sequence analysis (next seq, "previous segment not
//! captured", ACKed-unseen) stays coherent.
//!
//! # Field mapping
//!
//! * Addresses: [`node_ipv4`] of `src_node` / `dst_node`.
//! * Ports: the flow's sender uses `10000 + flow_id % 50000`, the receiver
//!   `5001`; `from_sender` selects the direction (sender→receiver segments
//!   go from the sender port to 5001, the reverse direction swaps them).
//! * Sequence / acknowledgement numbers: the low 32 bits of the model's
//!   64-bit numbers (the model's ISN is 0, so tshark's relative numbers equal
//!   the model's byte offsets modulo 2^32). The acknowledgement field is 0
//!   when the ACK flag is clear.
//! * Flags: `seg.flags.0` verbatim (same bit values as the TCP header,
//!   ECE 0x40 and CWR 0x80 included, RFC 3168 §6.1).
//! * Window: every SYN / SYN-ACK advertises window scaling with a fixed shift
//!   of [`WINDOW_SHIFT`] (7, i.e. ×128). On SYNs the window field is
//!   `min(rwnd_bytes, 65535)` (RFC 7323 §2.2: SYN windows are never scaled);
//!   on other segments it is `min(rwnd_bytes >> 7, 65535)`, so advertised
//!   windows above 65535·128 bytes (~8 MiB) are shown clamped.
//! * Options on SYN / SYN-ACK: MSS (1460 unless [`PcapWriter::set_mss`]),
//!   SACK-permitted, timestamps (when `ts_val_ns` is set) and window scale,
//!   in Linux's order. Options on other segments: timestamps when
//!   `ts_val_ns` is set, then SACK blocks (at most [`MAX_SACK_BLOCKS`]; a
//!   larger `sack_len` is clamped). NOPs pad to a 4-byte multiple.
//! * Timestamp values: `TSval = ts_val_ns / 1000` and
//!   `TSecr = ts_ecr_ns / 1000` (0 when absent), truncated to 32 bits, i.e.
//!   microsecond ticks of the endpoint's clock.
//! * IPv4: version 4, IHL 5, DSCP 0 and the packet's ECN field (RFC 3168
//!   §5: Not-ECT 00, ECT(1) 01, ECT(0) 10, CE 11) in the TOS byte's low bits, identification from a per-writer
//!   counter (wrapping), DF set, TTL 64, protocol 6, valid header checksum.
//! * TCP checksum: computed over the pseudo-header (with the TCP length
//!   implied by the IPv4 total length) and the header. Since absent payload
//!   bytes contribute nothing to a ones'-complement sum this is the checksum
//!   of the segment with an all-zero payload; Wireshark does not validate
//!   TCP checksums by default, and with validation on it reports them as
//!   unverifiable because the payload was not captured.
//!
//! Writing a packet never allocates: the headers are assembled in a scratch
//! array inside the writer and handed to the buffered file with the record's
//! header.

use latlab_qdisc::Ecn;
use std::io;
use std::path::Path;

use latlab_link::pcap::PcapFile;
pub use latlab_link::pcap::{LINKTYPE_RAW, PCAP_MAGIC_NS, SNAPLEN};
use latlab_proto::{Segment, MAX_SACK_BLOCKS};

/// Window-scale shift advertised on every SYN / SYN-ACK.
pub const WINDOW_SHIFT: u8 = 7;
/// MSS advertised on SYN / SYN-ACK unless changed with [`PcapWriter::set_mss`].
pub const DEFAULT_MSS: u16 = 1460;
/// Port of the receiving side of every flow.
pub const RECEIVER_PORT: u16 = 5001;

/// Port of the sending side of flow `flow_id`: `10000 + flow_id % 50000`.
pub fn sender_port(flow_id: u32) -> u16 {
    (10000 + flow_id % 50000) as u16
}

/// IPv4 address of simulator node `node`: `10.x.y.z` where `x.y.z` are the
/// low 24 bits of `node + 1` (big-endian). The `+ 1` keeps small node ids
/// away from the all-zero host `10.0.0.0` (node 0 is `10.0.0.1`, node 1 is
/// `10.0.0.2`, ...). Ids from 2^24 - 1 upwards wrap around (node
/// 16777215 maps to `10.0.0.0`); no simulation comes near that.
pub fn node_ipv4(node: u32) -> [u8; 4] {
    let n = node.wrapping_add(1) & 0x00ff_ffff;
    [10, (n >> 16) as u8, (n >> 8) as u8, n as u8]
}

const IPV4_HEADER: usize = 20;
const TCP_BASE_HEADER: usize = 20;
const TCP_MAX_OPTIONS: usize = 40;
const SCRATCH_LEN: usize = IPV4_HEADER + TCP_BASE_HEADER + TCP_MAX_OPTIONS;

#[allow(dead_code)] // only the test parser needs it; never written
const OPT_EOL: u8 = 0;
const OPT_NOP: u8 = 1;
const OPT_MSS: u8 = 2;
const OPT_WSCALE: u8 = 3;
const OPT_SACK_PERM: u8 = 4;
const OPT_SACK: u8 = 5;
const OPT_TIMESTAMP: u8 = 8;

/// Writes simulated TCP segments to a pcap file (see the module docs for
/// how the model's fields map onto header fields).
pub struct PcapWriter {
    out: PcapFile,
    /// One packet's captured bytes (IPv4 + TCP header) are built here.
    scratch: [u8; SCRATCH_LEN],
    ip_id: u16,
    mss: u16,
}

impl PcapWriter {
    /// Creates (truncates) `path` and writes the pcap global header.
    pub fn create(path: &Path) -> io::Result<Self> {
        Ok(PcapWriter {
            out: latlab_link::pcap::create(path)?,
            scratch: [0u8; SCRATCH_LEN],
            ip_id: 0,
            mss: DEFAULT_MSS,
        })
    }

    /// Sets the MSS advertised in the options of subsequent SYN / SYN-ACKs.
    pub fn set_mss(&mut self, mss: u16) {
        self.mss = mss;
    }

    /// Appends one record for `seg`, transmitted at `time_ns` from node
    /// `src_node` to node `dst_node`. `from_sender` is true when the segment
    /// travels from the flow's sender to its receiver. `wire_bytes` is the
    /// packet size the simulator charged on the link. The IP header is
    /// Not-ECT (see [`Self::write_tcp_subflow`] for the ECN field).
    #[allow(clippy::too_many_arguments)]
    pub fn write_tcp(
        &mut self,
        time_ns: u64,
        src_node: u32,
        dst_node: u32,
        flow_id: u32,
        from_sender: bool,
        seg: &Segment,
        wire_bytes: u32,
    ) -> io::Result<()> {
        self.write_tcp_subflow(
            time_ns,
            src_node,
            dst_node,
            flow_id,
            0,
            from_sender,
            seg,
            wire_bytes,
            Ecn::NotEct,
        )
    }

    /// [`Self::write_tcp`] for subflow `subflow` of an MPTCP connection: its
    /// receiver port is `RECEIVER_PORT + subflow`, so each subflow is a TCP
    /// connection of its own in Wireshark (the DSS option is not written).
    /// `ecn` is the packet's IP ECN field as it left the link.
    #[allow(clippy::too_many_arguments)]
    pub fn write_tcp_subflow(
        &mut self,
        time_ns: u64,
        src_node: u32,
        dst_node: u32,
        flow_id: u32,
        subflow: u8,
        from_sender: bool,
        seg: &Segment,
        wire_bytes: u32,
        ecn: Ecn,
    ) -> io::Result<()> {
        let src_ip = node_ipv4(src_node);
        let dst_ip = node_ipv4(dst_node);
        let receiver_port = RECEIVER_PORT + subflow as u16;
        let (src_port, dst_port) = if from_sender {
            (sender_port(flow_id), receiver_port)
        } else {
            (receiver_port, sender_port(flow_id))
        };
        let buf = &mut self.scratch;
        let ip = 0; // the packet starts with its IPv4 header
        let tcp = ip + IPV4_HEADER;
        let end = put_tcp_options(buf, tcp + TCP_BASE_HEADER, seg, self.mss);
        let captured = (end - ip) as u32;
        put_tcp_header(buf, tcp, end - tcp, (src_port, dst_port), seg);
        let ip_total: u16 = (captured as u64 + seg.payload_bytes as u64).min(65535) as u16;
        let id = self.ip_id;
        self.ip_id = self.ip_id.wrapping_add(1);
        put_ipv4_header(buf, ip, ip_total, id, ecn, (src_ip, dst_ip));
        // TCP checksum: pseudo-header + header (the payload would be zeros).
        let tcp_len = ip_total as u32 - IPV4_HEADER as u32;
        let mut sum = sum_be16(0, &src_ip);
        sum = sum_be16(sum, &dst_ip);
        sum += 6 + tcp_len;
        sum = sum_be16(sum, &buf[tcp..end]);
        let tcp_csum = fold(sum);
        buf[tcp + 16..tcp + 18].copy_from_slice(&tcp_csum.to_be_bytes());

        let orig_len = wire_bytes.max(ip_total as u32).max(captured);
        self.out.write_record(time_ns, &buf[ip..end], orig_len)
    }

    /// Flushes buffered records to the file.
    pub fn finish(self) -> io::Result<()> {
        self.out.finish().map(drop)
    }
}

/// Writes `seg`'s TCP options from `opt_start`, padded to a multiple of 4
/// bytes; returns where they end.
fn put_tcp_options(buf: &mut [u8], opt_start: usize, seg: &Segment, mss: u16) -> usize {
    let ts = seg.ts_val_ns.map(|val| {
        let ecr = seg.ts_ecr_ns.unwrap_or(0);
        ((val / 1000) as u32, (ecr / 1000) as u32)
    });
    let mut o = if seg.is_syn() {
        put_syn_options(buf, opt_start, ts, mss)
    } else {
        put_data_options(buf, opt_start, ts, seg)
    };
    // The layouts are already aligned; keep the invariant anyway.
    while (o - opt_start) & 3 != 0 {
        buf[o] = OPT_NOP;
        o += 1;
    }
    debug_assert!(o - opt_start <= TCP_MAX_OPTIONS);
    o
}

/// A SYN's options: MSS, SACK-permitted, [timestamps], NOP, window scale
/// (Linux's order).
fn put_syn_options(buf: &mut [u8], mut o: usize, ts: Option<(u32, u32)>, mss: u16) -> usize {
    buf[o] = OPT_MSS;
    buf[o + 1] = 4;
    buf[o + 2..o + 4].copy_from_slice(&mss.to_be_bytes());
    o += 4;
    if let Some((val, ecr)) = ts {
        buf[o] = OPT_SACK_PERM;
        buf[o + 1] = 2;
        o += 2;
        o = put_timestamp(buf, o, val, ecr);
    } else {
        buf[o] = OPT_NOP;
        buf[o + 1] = OPT_NOP;
        buf[o + 2] = OPT_SACK_PERM;
        buf[o + 3] = 2;
        o += 4;
    }
    buf[o] = OPT_NOP;
    buf[o + 1] = OPT_WSCALE;
    buf[o + 2] = 3;
    buf[o + 3] = WINDOW_SHIFT;
    o + 4
}

/// Any other segment's options: [NOP, NOP, timestamps], [NOP, NOP, SACK
/// blocks].
fn put_data_options(buf: &mut [u8], mut o: usize, ts: Option<(u32, u32)>, seg: &Segment) -> usize {
    if let Some((val, ecr)) = ts {
        buf[o] = OPT_NOP;
        buf[o + 1] = OPT_NOP;
        o += 2;
        o = put_timestamp(buf, o, val, ecr);
    }
    let n = (seg.sack_len as usize).min(MAX_SACK_BLOCKS);
    if n > 0 {
        buf[o] = OPT_NOP;
        buf[o + 1] = OPT_NOP;
        buf[o + 2] = OPT_SACK;
        buf[o + 3] = (2 + 8 * n) as u8;
        o += 4;
        for b in &seg.sack[..n] {
            buf[o..o + 4].copy_from_slice(&(b.start as u32).to_be_bytes());
            buf[o + 4..o + 8].copy_from_slice(&(b.end as u32).to_be_bytes());
            o += 8;
        }
    }
    o
}

/// The TCP fixed header at `tcp`, `tcp_hdr_len` bytes with the options; its
/// checksum is left zero.
fn put_tcp_header(buf: &mut [u8], tcp: usize, tcp_hdr_len: usize, ports: (u16, u16), seg: &Segment) {
    let (src_port, dst_port) = ports;
    let window: u16 = if seg.is_syn() {
        seg.rwnd_bytes.min(65535) as u16
    } else {
        (seg.rwnd_bytes >> WINDOW_SHIFT).min(65535) as u16
    };
    let ack: u32 = if seg.has_ack() { seg.ack as u32 } else { 0 };
    buf[tcp..tcp + 2].copy_from_slice(&src_port.to_be_bytes());
    buf[tcp + 2..tcp + 4].copy_from_slice(&dst_port.to_be_bytes());
    buf[tcp + 4..tcp + 8].copy_from_slice(&(seg.seq as u32).to_be_bytes());
    buf[tcp + 8..tcp + 12].copy_from_slice(&ack.to_be_bytes());
    buf[tcp + 12] = ((tcp_hdr_len / 4) as u8) << 4;
    buf[tcp + 13] = seg.flags.0;
    buf[tcp + 14..tcp + 16].copy_from_slice(&window.to_be_bytes());
    buf[tcp + 16..tcp + 18].copy_from_slice(&[0, 0]); // checksum, set last
    buf[tcp + 18..tcp + 20].copy_from_slice(&[0, 0]); // urgent pointer
}

/// The IPv4 header at `ip`, with its checksum.
fn put_ipv4_header(buf: &mut [u8], ip: usize, ip_total: u16, id: u16, ecn: Ecn, addrs: ([u8; 4], [u8; 4])) {
    let (src_ip, dst_ip) = addrs;
    buf[ip] = 0x45; // version 4, IHL 5
    buf[ip + 1] = ecn.bits(); // DSCP 0, ECN (RFC 3168 §5)
    buf[ip + 2..ip + 4].copy_from_slice(&ip_total.to_be_bytes());
    buf[ip + 4..ip + 6].copy_from_slice(&id.to_be_bytes());
    buf[ip + 6..ip + 8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF
    buf[ip + 8] = 64; // TTL
    buf[ip + 9] = 6; // TCP
    buf[ip + 10..ip + 12].copy_from_slice(&[0, 0]);
    buf[ip + 12..ip + 16].copy_from_slice(&src_ip);
    buf[ip + 16..ip + 20].copy_from_slice(&dst_ip);
    let ip_csum = fold(sum_be16(0, &buf[ip..ip + IPV4_HEADER]));
    buf[ip + 10..ip + 12].copy_from_slice(&ip_csum.to_be_bytes());
}

fn put_timestamp(buf: &mut [u8], o: usize, val: u32, ecr: u32) -> usize {
    buf[o] = OPT_TIMESTAMP;
    buf[o + 1] = 10;
    buf[o + 2..o + 6].copy_from_slice(&val.to_be_bytes());
    buf[o + 6..o + 10].copy_from_slice(&ecr.to_be_bytes());
    o + 10
}

/// Adds `data` as big-endian 16-bit words (odd trailing byte zero-padded).
/// At most 80 bytes are summed per packet, so a `u32` cannot overflow.
fn sum_be16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        sum += (*last as u32) << 8;
    }
    sum
}

/// Folds carries and returns the ones'-complement of the sum.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latlab_proto::{Flags, SackBlock};
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn temp_path(tag: &str) -> PathBuf {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        std::env::temp_dir().join(format!(
            "latlab-pcap-{tag}-{}-{}-{nanos}.pcap",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ))
    }

    #[derive(Debug, PartialEq)]
    enum Opt {
        Mss(u16),
        SackPerm,
        WScale(u8),
        Ts(u32, u32),
        Sack(Vec<(u32, u32)>),
    }

    struct Rec {
        secs: u32,
        nanos: u32,
        incl: u32,
        orig: u32,
        data: Vec<u8>,
    }

    struct Tcp {
        src_ip: [u8; 4],
        dst_ip: [u8; 4],
        ip_total: u16,
        src_port: u16,
        dst_port: u16,
        seq: u32,
        ack: u32,
        flags: u8,
        window: u16,
        opts: Vec<Opt>,
    }

    fn parse_file(bytes: &[u8]) -> Vec<Rec> {
        let mut recs = Vec::new();
        let mut p = 24;
        while p < bytes.len() {
            let u = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
            let incl = u(p + 8);
            let rec = Rec {
                secs: u(p),
                nanos: u(p + 4),
                incl,
                orig: u(p + 12),
                data: bytes[p + 16..p + 16 + incl as usize].to_vec(),
            };
            p += 16 + incl as usize;
            recs.push(rec);
        }
        assert_eq!(p, bytes.len(), "trailing garbage");
        recs
    }

    fn be16(d: &[u8], i: usize) -> u16 {
        u16::from_be_bytes([d[i], d[i + 1]])
    }
    fn be32(d: &[u8], i: usize) -> u32 {
        u32::from_be_bytes(d[i..i + 4].try_into().unwrap())
    }

    fn parse_packet(d: &[u8]) -> Tcp {
        assert_eq!(d[0], 0x45);
        assert_eq!(d[8], 64, "TTL");
        assert_eq!(d[9], 6, "protocol");
        assert_eq!(fold(sum_be16(0, &d[..20])), 0, "IPv4 header checksum invalid");
        let t = &d[20..];
        let hdr_len = (t[12] >> 4) as usize * 4;
        assert!((20..=60).contains(&hdr_len));
        assert_eq!(
            hdr_len,
            t.len(),
            "data offset must cover exactly the captured header"
        );
        let mut opts = Vec::new();
        let mut i = 20;
        while i < hdr_len {
            match t[i] {
                OPT_EOL => break,
                OPT_NOP => i += 1,
                kind => {
                    let len = t[i + 1] as usize;
                    assert!(len >= 2 && i + len <= hdr_len, "bad option length");
                    let b = &t[i + 2..i + len];
                    opts.push(match (kind, len) {
                        (OPT_MSS, 4) => Opt::Mss(be16(b, 0)),
                        (OPT_SACK_PERM, 2) => Opt::SackPerm,
                        (OPT_WSCALE, 3) => Opt::WScale(b[0]),
                        (OPT_TIMESTAMP, 10) => Opt::Ts(be32(b, 0), be32(b, 4)),
                        (OPT_SACK, l) if (l - 2) % 8 == 0 => {
                            Opt::Sack(b.chunks(8).map(|c| (be32(c, 0), be32(c, 4))).collect())
                        }
                        other => panic!("unexpected option {other:?}"),
                    });
                    i += len;
                }
            }
        }
        Tcp {
            src_ip: d[12..16].try_into().unwrap(),
            dst_ip: d[16..20].try_into().unwrap(),
            ip_total: be16(d, 2),
            src_port: be16(t, 0),
            dst_port: be16(t, 2),
            seq: be32(t, 4),
            ack: be32(t, 8),
            flags: t[13],
            window: be16(t, 14),
            opts,
        }
    }

    const SAMPLE_FILE_HEX: &str = concat!(
        "4d3cb2a1020004000000000000000000ffff000065000000010000000065cd1d3c0000003c0000004500003c00004000",
        "400626b80a0000010a000004271713890000000000000000a002faf0fa820000020405b40402080a000003e800000000",
        "010303070100000080fb651e3c0000003c0000004500003c00014000400626b70a0000040a0000011389271700000000",
        "00000001a012fe88ef090000020405b40402080a000007d0000003e801030307010000000092fe1e3400000034000000",
        "4500003400024000400626be0a0000010a00000427171389000000010000000180105b8d72b100000101080a00005208",
        "000007d0010000000092fe1e34000000dc050000450005dc00034000400621150a0000010a0000042717138900000001",
        "0000000180105b8d6d0900000101080a00005208000007d001000000c066001f34000000dc050000450005dc00044000",
        "400621140a0000010a00000427171389000005a90000000180105b8d676000000101080a00005209000007d001000000",
        "803b021f34000000dc050000450005dc00054000400621130a0000010a0000042717138900000b510000000180105b8d",
        "61b700000101080a0000520a000007d0010000004010041f34000000dc050000450005dc00064000400621120a000001",
        "0a00000427171389000010f90000000180105b8d5c0e00000101080a0000520b000007d001000000c06aa61f48000000",
        "480000004500004800074000400626a50a0000040a0000011389271700000001000005a9d010b71bed8000000101080a",
        "00007918000052080101051200000b51000016a100001b5800001f400100000000adb51f28000000d0050000450005d0",
        "000840004006211c0a0000010a00000427171389000005a90000000150105b8dfa5000000100000040efc41f28000000",
        "280000004500002800094000400626c30a0000010a00000427171389000016a10000000150115b8deeff0000",
    );

    fn seg(seq: u64, ack: u64, payload: u32, flags: Flags, rwnd: u64) -> Segment {
        Segment {
            seq,
            ack,
            payload_bytes: payload,
            flags,
            rwnd_bytes: rwnd,
            ..Default::default()
        }
    }

    /// SYN, SYN-ACK, ACK, 4 data segments, SACK ACK, retransmission (no
    /// timestamps), FIN.
    fn write_sample(path: &Path) {
        const MS: u64 = 1_000_000;
        let (snd, rcv, flow) = (0u32, 3u32, 7u32);
        let mut w = PcapWriter::create(path).unwrap();
        w.set_mss(1460);

        let mut s = seg(0, 0, 0, Flags::SYN, 64240);
        s.ts_val_ns = Some(1_000_000);
        w.write_tcp(1_500_000_000, snd, rcv, flow, true, &s, 60).unwrap();

        let mut s = seg(0, 1, 0, Flags::SYN_ACK, 65160);
        s.ts_val_ns = Some(2_000_000);
        s.ts_ecr_ns = Some(1_000_000);
        w.write_tcp(1_500_000_000 + 10 * MS, rcv, snd, flow, false, &s, 60)
            .unwrap();

        let mut s = seg(1, 1, 0, Flags::ACK, 3_000_000);
        s.ts_val_ns = Some(21_000_000);
        s.ts_ecr_ns = Some(2_000_000);
        w.write_tcp(1_500_000_000 + 20 * MS, snd, rcv, flow, true, &s, 52)
            .unwrap();

        for k in 0..4u64 {
            let mut s = seg(1 + k * 1448, 1, 1448, Flags::ACK, 3_000_000);
            s.ts_val_ns = Some(21_000_000 + k * 1000);
            s.ts_ecr_ns = Some(2_000_000);
            w.write_tcp(
                1_500_000_000 + 20 * MS + k * 120_000,
                snd,
                rcv,
                flow,
                true,
                &s,
                1500,
            )
            .unwrap();
        }

        // Segment 2 (1449..2897) lost: receiver SACKs 2897..5793.
        let mut s = seg(1, 1449, 0, Flags::ACK, 6_000_000);
        s.ts_val_ns = Some(31_000_000);
        s.ts_ecr_ns = Some(21_000_000);
        s.sack[0] = SackBlock {
            start: 2897,
            end: 5793,
        };
        s.sack[1] = SackBlock {
            start: 7000,
            end: 8000,
        };
        s.sack_len = 2;
        w.write_tcp(1_500_000_000 + 31 * MS, rcv, snd, flow, false, &s, 52)
            .unwrap();

        // Retransmission of the hole without timestamps, then FIN.
        let s = seg(1449, 1, 1448, Flags::ACK, 3_000_000);
        w.write_tcp(1_500_000_000 + 32 * MS, snd, rcv, flow, true, &s, 1488)
            .unwrap();
        let s = seg(5793, 1, 0, Flags::ACK | Flags::FIN, 3_000_000);
        w.write_tcp(1_500_000_000 + 33 * MS, snd, rcv, flow, true, &s, 40)
            .unwrap();
        w.finish().unwrap();
    }

    #[test]
    fn capture_round_trips() {
        let path = temp_path("rt");
        write_sample(&path);
        let bytes = std::fs::read(&path).unwrap();

        // Global header.
        assert_eq!(
            &bytes[..24],
            &[0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 101, 0, 0, 0]
        );

        let recs = parse_file(&bytes);
        assert_eq!(recs.len(), 10);
        let pkts: Vec<Tcp> = recs.iter().map(|r| parse_packet(&r.data)).collect();
        check_handshake(&recs, &pkts);
        check_data_and_acks(&recs, &pkts);
        check_ids_and_checksums(&recs);

        tshark_check(&path);
        let _ = std::fs::remove_file(&path);
    }

    /// [`write_sample`]'s SYN, SYN-ACK and first ACK.
    fn check_handshake(recs: &[Rec], pkts: &[Tcp]) {
        // Timestamps.
        assert_eq!((recs[0].secs, recs[0].nanos), (1, 500_000_000));
        assert_eq!((recs[1].secs, recs[1].nanos), (1, 510_000_000));

        // SYN: 20 + 20 + 20 bytes of options, no scaling of the window.
        let p = &pkts[0];
        assert_eq!(recs[0].incl, 60);
        assert_eq!(recs[0].orig, 60);
        assert_eq!(p.ip_total, 60);
        assert_eq!(p.src_ip, [10, 0, 0, 1]);
        assert_eq!(p.dst_ip, [10, 0, 0, 4]);
        assert_eq!((p.src_port, p.dst_port), (10007, 5001));
        assert_eq!((p.seq, p.ack, p.flags), (0, 0, 0x02));
        assert_eq!(p.window, 64240);
        assert_eq!(
            p.opts,
            vec![Opt::Mss(1460), Opt::SackPerm, Opt::Ts(1000, 0), Opt::WScale(7)]
        );

        // SYN-ACK: reverse direction swaps ports and addresses.
        let p = &pkts[1];
        assert_eq!((p.src_port, p.dst_port), (5001, 10007));
        assert_eq!(p.src_ip, [10, 0, 0, 4]);
        assert_eq!((p.seq, p.ack, p.flags), (0, 1, 0x12));
        assert_eq!(p.window, 65160);
        assert_eq!(p.opts[2], Opt::Ts(2000, 1000));

        // Pure ACK: scaled window, timestamps only.
        let p = &pkts[2];
        assert_eq!(recs[2].incl, 52);
        assert_eq!(p.window, (3_000_000u64 >> 7) as u16);
        assert_eq!(p.opts, vec![Opt::Ts(21000, 2000)]);
    }

    /// [`write_sample`]'s data segments, SACK ACK and segments without
    /// timestamps.
    fn check_data_and_acks(recs: &[Rec], pkts: &[Tcp]) {
        // Data: header captured, payload counted in the lengths.
        for (k, i) in (3..7).enumerate() {
            let p = &pkts[i];
            assert_eq!(recs[i].incl, 52);
            assert_eq!(recs[i].orig, 1500);
            assert_eq!(p.ip_total, 1500);
            assert_eq!(p.seq, 1 + k as u32 * 1448);
        }

        // SACK ACK: timestamps + 2 blocks = 12 + 20 option bytes.
        let p = &pkts[7];
        assert_eq!(recs[7].incl, 72);
        assert_eq!(recs[7].orig, 72, "orig_len covers the real header");
        assert_eq!(p.ack, 1449);
        assert_eq!(
            p.opts,
            vec![Opt::Ts(31000, 21000), Opt::Sack(vec![(2897, 5793), (7000, 8000)])]
        );

        // No timestamps: bare 20-byte header.
        assert_eq!(recs[8].incl, 40);
        assert!(pkts[8].opts.is_empty());
        assert_eq!(pkts[8].ip_total, 1488);
        assert_eq!(pkts[8].seq, 1449);
        assert_eq!((pkts[9].seq, pkts[9].flags), (5793, 0x11));
    }

    fn check_ids_and_checksums(recs: &[Rec]) {
        // IP identification increments.
        let ids: Vec<u16> = recs.iter().map(|r| be16(&r.data, 4)).collect();
        assert_eq!(ids, (0..10).collect::<Vec<u16>>());

        // TCP checksum equals that of the segment with a zero payload.
        for r in recs {
            let d = &r.data;
            let tcp_len = be16(d, 2) as u32 - 20;
            let mut s = sum_be16(0, &d[12..20]);
            s += 6 + tcp_len;
            s = sum_be16(s, &d[20..]);
            assert_eq!(fold(s), 0, "TCP checksum");
        }
    }

    /// The bytes of [`write_sample`]'s file, as this writer wrote them before
    /// the pcap format moved to `latlab_link::pcap`: the captures stay
    /// byte-identical (SYN options, timestamps, SACK blocks, checksums, record
    /// headers).
    #[test]
    fn sample_file_bytes_are_unchanged() {
        let path = temp_path("pinned");
        write_sample(&path);
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, SAMPLE_FILE_HEX);
    }

    #[test]
    fn extreme_inputs_do_not_panic() {
        let path = temp_path("extreme");
        let mut w = PcapWriter::create(&path).unwrap();
        let mut s = Segment {
            seq: u64::MAX,
            ack: u64::MAX,
            payload_bytes: u32::MAX,
            flags: Flags(0xff),
            rwnd_bytes: u64::MAX,
            ts_val_ns: Some(u64::MAX),
            ts_ecr_ns: Some(u64::MAX),
            sack_len: 255,
            ..Default::default()
        };
        w.write_tcp(u64::MAX, u32::MAX, u32::MAX, u32::MAX, true, &s, u32::MAX)
            .unwrap();
        s.flags = Flags::ACK;
        w.write_tcp(u64::MAX, u32::MAX, 0, u32::MAX, false, &s, u32::MAX)
            .unwrap();
        s.ts_val_ns = None;
        w.write_tcp(0, 0, 0, 0, true, &s, 0).unwrap();
        w.finish().unwrap();

        let bytes = std::fs::read(&path).unwrap();
        let recs = parse_file(&bytes);
        assert_eq!(recs.len(), 3);
        // SYN (flags 0xff): unscaled window clamps to 65535, SYN options only.
        let p = parse_packet(&recs[0].data);
        assert_eq!(p.window, 65535);
        assert_eq!(p.opts.len(), 4);
        assert_eq!(p.ip_total, 65535);
        assert_eq!(recs[0].orig, u32::MAX);
        // Full option space: timestamps + 3 SACK blocks = 40 bytes.
        let p = parse_packet(&recs[1].data);
        assert_eq!(recs[1].incl, 80);
        assert_eq!(p.window, 65535);
        assert!(matches!(&p.opts[1], Opt::Sack(v) if v.len() == 3));
        parse_packet(&recs[2].data);
        assert_eq!(recs[2].incl, 20 + 20 + 28);
        assert_eq!(recs[2].orig, 65535);
        let _ = std::fs::remove_file(&path);
    }

    #[test]
    fn node_addresses() {
        assert_eq!(node_ipv4(0), [10, 0, 0, 1]);
        assert_eq!(node_ipv4(254), [10, 0, 0, 255]);
        assert_eq!(node_ipv4(255), [10, 0, 1, 0]);
        assert_eq!(node_ipv4(0x00ff_fffe), [10, 255, 255, 255]);
        assert_eq!(node_ipv4(u32::MAX), [10, 0, 0, 0]);
        assert_eq!(sender_port(0), 10000);
        assert_eq!(sender_port(49999), 59999);
        assert_eq!(sender_port(u32::MAX), 10000 + (u32::MAX % 50000) as u16);
    }

    /// Decodes the capture with tshark when it is installed.
    fn tshark_check(path: &Path) {
        let out = match Command::new("tshark").arg("-r").arg(path).arg("-V").output() {
            Ok(o) => o,
            Err(e) => {
                println!("skipping tshark check: cannot run tshark ({e})");
                return;
            }
        };
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "tshark failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(!text.contains("Malformed"), "tshark: malformed packet\n{text}");
        assert!(!text.contains("Bogus"), "tshark: bogus field\n{text}");
        assert_eq!(text.matches("Transmission Control Protocol").count(), 10);
        assert!(text.contains("Source Port: 10007"));
        assert!(text.contains("Destination Port: 5001"));
        assert!(text.contains("TCP Option - SACK permitted"));
        assert!(text.contains("TCP Option - Window scale: 7 (multiply by 128)"));
        assert!(text.contains("TCP Option - SACK 2897-5793"));
        assert!(text.contains("TCP Option - Timestamps"));
        assert!(text.contains("Maximum segment size: 1460 bytes"));
    }
}
