//! The media transport's wire format, version 1: one UDP datagram per
//! packet, big-endian fields.
//!
//! Every packet starts with an 8-byte header:
//!
//! | bytes | field                                               |
//! |-------|-----------------------------------------------------|
//! | 0..2  | magic `b"LM"` (latlab media)                        |
//! | 2     | version (1)                                         |
//! | 3     | type: 1 = data, 2 = feedback                        |
//! | 4..8  | session id (random per sender run)                  |
//!
//! A data packet (RFC 5348 §3.2.1: sequence number, timestamp, RTT) also
//! carries the sender's configuration, so that the receiver needs none of
//! its own and the two ends cannot disagree about s, NDUPACK or DFlow's
//! detector. It is padded with zeros to `packet_bytes`, which is s: the
//! media source sends packets of one constant size.
//!
//! | bytes  | field                                            |
//! |--------|--------------------------------------------------|
//! | 8..16  | seq                                              |
//! | 16..24 | send_ts_ns (sender's clock)                      |
//! | 24..32 | rtt_ns: the sender's R (0 before any feedback)   |
//! | 32..34 | packet_bytes: the whole datagram's length        |
//! | 34     | mode: 0 = TFRC, 1 = DFlow                        |
//! | 35     | flags: bit 0 = DFlow gradient test               |
//! | 36     | ndupack                                          |
//! | 37..40 | reserved (sent as zero, ignored)                 |
//! | 40..48 | cd_thresh_ns (DFlow)                             |
//! | 48..56 | current_period_ns (DFlow)                        |
//! | 56..64 | base_period_rtts, IEEE 754 binary64 (DFlow)      |
//!
//! A feedback packet (RFC 5348 §3.2.2) is exactly [`FEEDBACK_LEN`] bytes;
//! after the four RFC fields comes a receiver report the sender only
//! displays and records (one-way delay and loss are seen only at the
//! receiver):
//!
//! | bytes  | field                                            |
//! |--------|--------------------------------------------------|
//! | 8..16  | t_recvdata_ns: echo of the last send_ts_ns       |
//! | 16..24 | t_delay_ns: time from its arrival to this report |
//! | 24..32 | x_recv_bps, binary64                             |
//! | 32..40 | p, binary64, in [0, 1]                           |
//! | 40..48 | packets_received (report)                        |
//! | 48..56 | packets_lost (report)                            |
//! | 56..64 | queueing_delay_ns: latest OWD − min OWD (report) |
//! | 64..68 | delay_events (report)                            |
//! | 68..72 | malformed datagrams at the receiver (report)     |
//!
//! Parsing never panics: anything that is not one of these is a
//! [`WireError`], which the endpoints count per [`MalformedKind`] and drop.

use latlab_proto::tfrc::{DflowParams, TfrcConfig, TfrcData, TfrcFeedback, TfrcMode, MAX_NDUPACK};

pub const MAGIC: [u8; 2] = *b"LM";
pub const VERSION: u8 = 1;
pub const TYPE_DATA: u8 = 1;
pub const TYPE_FEEDBACK: u8 = 2;
pub const HEADER_LEN: usize = 8;
/// The fixed part of a data packet; the smallest allowed `packet_bytes`.
pub const DATA_HEADER_LEN: usize = 64;
pub const FEEDBACK_LEN: usize = 72;
/// The largest UDP payload over IPv4.
pub const MAX_PACKET_BYTES: usize = 65_507;

const MODE_TFRC: u8 = 0;
const MODE_DFLOW: u8 = 1;
const FLAG_GRADIENT_TEST: u8 = 1;

/// Why a datagram was rejected.
#[derive(Clone, Copy, Debug, PartialEq, thiserror::Error)]
pub enum WireError {
    #[error("truncated: {len} bytes, need at least {need}")]
    Truncated { len: usize, need: usize },
    #[error("bad magic {0:02x?}")]
    BadMagic([u8; 2]),
    #[error("unsupported version {0} (this is version {VERSION})")]
    WrongVersion(u8),
    #[error("unknown packet type {0}")]
    UnknownType(u8),
    #[error("length {actual} bytes does not match the {declared} the packet declares")]
    BadLength { declared: usize, actual: usize },
    #[error("invalid field {0}")]
    InvalidField(&'static str),
}

/// The counter a [`WireError`] goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MalformedKind {
    Truncated,
    BadMagic,
    WrongVersion,
    UnknownType,
    BadLength,
    InvalidField,
}

impl WireError {
    pub fn kind(&self) -> MalformedKind {
        match self {
            WireError::Truncated { .. } => MalformedKind::Truncated,
            WireError::BadMagic(_) => MalformedKind::BadMagic,
            WireError::WrongVersion(_) => MalformedKind::WrongVersion,
            WireError::UnknownType(_) => MalformedKind::UnknownType,
            WireError::BadLength { .. } => MalformedKind::BadLength,
            WireError::InvalidField(_) => MalformedKind::InvalidField,
        }
    }
}

/// Datagrams dropped, per reason. Well-formed packets that make no sense
/// where they arrive (data at the sender, feedback at the receiver, another
/// session's packets) are counted too, apart from the malformed ones.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct MalformedCounts {
    pub truncated: u64,
    pub bad_magic: u64,
    pub wrong_version: u64,
    pub unknown_type: u64,
    pub bad_length: u64,
    pub invalid_field: u64,
    /// Well-formed, but the other end's type (e.g. feedback at a receiver).
    pub wrong_direction: u64,
    /// Well-formed, but of another session.
    pub foreign_session: u64,
}

impl MalformedCounts {
    pub fn count(&mut self, kind: MalformedKind) {
        let c = match kind {
            MalformedKind::Truncated => &mut self.truncated,
            MalformedKind::BadMagic => &mut self.bad_magic,
            MalformedKind::WrongVersion => &mut self.wrong_version,
            MalformedKind::UnknownType => &mut self.unknown_type,
            MalformedKind::BadLength => &mut self.bad_length,
            MalformedKind::InvalidField => &mut self.invalid_field,
        };
        *c += 1;
    }

    /// Datagrams that failed to parse.
    pub fn malformed(&self) -> u64 {
        self.truncated
            + self.bad_magic
            + self.wrong_version
            + self.unknown_type
            + self.bad_length
            + self.invalid_field
    }

    /// Every dropped datagram.
    pub fn dropped(&self) -> u64 {
        self.malformed() + self.wrong_direction + self.foreign_session
    }
}

/// A data packet as carried on the wire.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DataPacket {
    pub session_id: u32,
    /// `payload_bytes` is the datagram's length (= s).
    pub data: TfrcData,
    /// The sender's configuration; the receiver builds its machine from it.
    pub config: TfrcConfig,
}

/// What the receiver reports besides the RFC 5348 feedback fields.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReceiverReport {
    pub packets_received: u64,
    pub packets_lost: u64,
    pub queueing_delay_ns: u64,
    pub delay_events: u32,
    pub malformed: u32,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FeedbackPacket {
    pub session_id: u32,
    pub feedback: TfrcFeedback,
    pub report: ReceiverReport,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Packet {
    Data(DataPacket),
    Feedback(FeedbackPacket),
}

fn put_header(buf: &mut [u8], kind: u8, session_id: u32) {
    buf[0..2].copy_from_slice(&MAGIC);
    buf[2] = VERSION;
    buf[3] = kind;
    buf[4..8].copy_from_slice(&session_id.to_be_bytes());
}

fn put_u64(buf: &mut [u8], at: usize, v: u64) {
    buf[at..at + 8].copy_from_slice(&v.to_be_bytes());
}

fn get_u64(buf: &[u8], at: usize) -> u64 {
    let mut b = [0; 8];
    b.copy_from_slice(&buf[at..at + 8]);
    u64::from_be_bytes(b)
}

fn get_u32(buf: &[u8], at: usize) -> u32 {
    let mut b = [0; 4];
    b.copy_from_slice(&buf[at..at + 4]);
    u32::from_be_bytes(b)
}

/// Write a data packet into `buf` and return its length,
/// `pkt.data.payload_bytes`. The padding after the header is zeroed.
///
/// Errors (nothing written) if `payload_bytes` is outside
/// [`DATA_HEADER_LEN`]..=[`MAX_PACKET_BYTES`] or larger than `buf`.
pub fn encode_data(pkt: &DataPacket, buf: &mut [u8]) -> Result<usize, WireError> {
    let len = pkt.data.payload_bytes as usize;
    if !(DATA_HEADER_LEN..=MAX_PACKET_BYTES).contains(&len) || len > buf.len() {
        return Err(WireError::InvalidField("packet_bytes"));
    }
    let buf = &mut buf[..len];
    put_header(buf, TYPE_DATA, pkt.session_id);
    put_u64(buf, 8, pkt.data.seq);
    put_u64(buf, 16, pkt.data.send_ts_ns);
    put_u64(buf, 24, pkt.data.rtt_ns);
    buf[32..34].copy_from_slice(&(len as u16).to_be_bytes());
    let d = pkt.config.dflow_params().unwrap_or_default();
    buf[34] = if pkt.config.dflow_params().is_some() {
        MODE_DFLOW
    } else {
        MODE_TFRC
    };
    buf[35] = if d.gradient_test { FLAG_GRADIENT_TEST } else { 0 };
    buf[36] = pkt.config.ndupack.min(u8::MAX as u32) as u8;
    buf[37..40].fill(0);
    put_u64(buf, 40, d.cd_thresh_ns);
    put_u64(buf, 48, d.current_period_ns);
    put_u64(buf, 56, d.base_period_rtts.to_bits());
    buf[DATA_HEADER_LEN..].fill(0);
    Ok(len)
}

/// Write a feedback packet into `buf` (at least [`FEEDBACK_LEN`] bytes)
/// and return its length.
pub fn encode_feedback(pkt: &FeedbackPacket, buf: &mut [u8]) -> Result<usize, WireError> {
    if buf.len() < FEEDBACK_LEN {
        return Err(WireError::Truncated {
            len: buf.len(),
            need: FEEDBACK_LEN,
        });
    }
    let buf = &mut buf[..FEEDBACK_LEN];
    put_header(buf, TYPE_FEEDBACK, pkt.session_id);
    let fb = &pkt.feedback;
    put_u64(buf, 8, fb.t_recvdata_ns);
    put_u64(buf, 16, fb.t_delay_ns);
    put_u64(buf, 24, fb.x_recv_bps.to_bits());
    put_u64(buf, 32, fb.p.to_bits());
    let r = &pkt.report;
    put_u64(buf, 40, r.packets_received);
    put_u64(buf, 48, r.packets_lost);
    put_u64(buf, 56, r.queueing_delay_ns);
    buf[64..68].copy_from_slice(&r.delay_events.to_be_bytes());
    buf[68..72].copy_from_slice(&r.malformed.to_be_bytes());
    Ok(FEEDBACK_LEN)
}

/// Parse one datagram.
pub fn parse(buf: &[u8]) -> Result<Packet, WireError> {
    if buf.len() < HEADER_LEN {
        return Err(WireError::Truncated {
            len: buf.len(),
            need: HEADER_LEN,
        });
    }
    if buf[0..2] != MAGIC {
        return Err(WireError::BadMagic([buf[0], buf[1]]));
    }
    if buf[2] != VERSION {
        return Err(WireError::WrongVersion(buf[2]));
    }
    let session_id = get_u32(buf, 4);
    match buf[3] {
        TYPE_DATA => parse_data(buf, session_id).map(Packet::Data),
        TYPE_FEEDBACK => parse_feedback(buf, session_id).map(Packet::Feedback),
        t => Err(WireError::UnknownType(t)),
    }
}

fn parse_data(buf: &[u8], session_id: u32) -> Result<DataPacket, WireError> {
    if buf.len() < DATA_HEADER_LEN {
        return Err(WireError::Truncated {
            len: buf.len(),
            need: DATA_HEADER_LEN,
        });
    }
    let declared = u16::from_be_bytes([buf[32], buf[33]]) as usize;
    if declared < DATA_HEADER_LEN {
        return Err(WireError::InvalidField("packet_bytes"));
    }
    if declared != buf.len() {
        // A shorter datagram than declared was cut somewhere; a longer one
        // is not ours. Either way the rate accounting would be wrong.
        return Err(WireError::BadLength {
            declared,
            actual: buf.len(),
        });
    }
    let ndupack = buf[36] as u32;
    if ndupack == 0 || ndupack > MAX_NDUPACK {
        return Err(WireError::InvalidField("ndupack"));
    }
    let dflow = DflowParams {
        cd_thresh_ns: get_u64(buf, 40),
        current_period_ns: get_u64(buf, 48),
        base_period_rtts: f64::from_bits(get_u64(buf, 56)),
        gradient_test: buf[35] & FLAG_GRADIENT_TEST != 0,
    };
    let mode = match buf[34] {
        MODE_TFRC => TfrcMode::Tfrc,
        MODE_DFLOW => {
            dflow
                .validate()
                .map_err(|_| WireError::InvalidField("dflow parameters"))?;
            TfrcMode::DFlow(dflow)
        }
        _ => return Err(WireError::InvalidField("mode")),
    };
    let config = TfrcConfig {
        mode,
        segment_bytes: declared as u32,
        ndupack,
        ..TfrcConfig::default()
    };
    Ok(DataPacket {
        session_id,
        data: TfrcData {
            seq: get_u64(buf, 8),
            send_ts_ns: get_u64(buf, 16),
            rtt_ns: get_u64(buf, 24),
            payload_bytes: declared as u32,
        },
        config,
    })
}

fn parse_feedback(buf: &[u8], session_id: u32) -> Result<FeedbackPacket, WireError> {
    if buf.len() < FEEDBACK_LEN {
        return Err(WireError::Truncated {
            len: buf.len(),
            need: FEEDBACK_LEN,
        });
    }
    if buf.len() != FEEDBACK_LEN {
        return Err(WireError::BadLength {
            declared: FEEDBACK_LEN,
            actual: buf.len(),
        });
    }
    let x_recv_bps = f64::from_bits(get_u64(buf, 24));
    let p = f64::from_bits(get_u64(buf, 32));
    if !(x_recv_bps.is_finite() && x_recv_bps >= 0.0) {
        return Err(WireError::InvalidField("x_recv_bps"));
    }
    if !(0.0..=1.0).contains(&p) {
        return Err(WireError::InvalidField("p"));
    }
    Ok(FeedbackPacket {
        session_id,
        feedback: TfrcFeedback {
            t_recvdata_ns: get_u64(buf, 8),
            t_delay_ns: get_u64(buf, 16),
            x_recv_bps,
            p,
        },
        report: ReceiverReport {
            packets_received: get_u64(buf, 40),
            packets_lost: get_u64(buf, 48),
            queueing_delay_ns: get_u64(buf, 56),
            delay_events: get_u32(buf, 64),
            malformed: get_u32(buf, 68),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    fn data_packet(config: TfrcConfig) -> DataPacket {
        DataPacket {
            session_id: 0xdead_beef,
            data: TfrcData {
                seq: 123_456_789_012,
                send_ts_ns: 987_654_321_000,
                rtt_ns: 42_000_000,
                payload_bytes: config.segment_bytes,
            },
            config,
        }
    }

    fn dflow_config() -> TfrcConfig {
        TfrcConfig {
            mode: TfrcMode::DFlow(DflowParams {
                base_period_rtts: 1000.0,
                current_period_ns: 40_000_000,
                cd_thresh_ns: 30_000_000,
                gradient_test: true,
            }),
            segment_bytes: 1200,
            ndupack: 5,
            ..TfrcConfig::default()
        }
    }

    fn feedback_packet() -> FeedbackPacket {
        FeedbackPacket {
            session_id: 7,
            feedback: TfrcFeedback {
                t_recvdata_ns: 5_000_000_000,
                t_delay_ns: 1_234,
                x_recv_bps: 1.9e6,
                p: 0.0125,
            },
            report: ReceiverReport {
                packets_received: 10_000,
                packets_lost: 17,
                queueing_delay_ns: 48_000_000,
                delay_events: 9,
                malformed: 3,
            },
        }
    }

    fn encoded_data(pkt: &DataPacket) -> Vec<u8> {
        let mut buf = vec![0xaa; MAX_PACKET_BYTES];
        let n = encode_data(pkt, &mut buf).unwrap();
        buf.truncate(n);
        buf
    }

    fn encoded_feedback(pkt: &FeedbackPacket) -> Vec<u8> {
        let mut buf = [0; FEEDBACK_LEN];
        let n = encode_feedback(pkt, &mut buf).unwrap();
        buf[..n].to_vec()
    }

    #[test]
    fn data_round_trips_in_both_modes_and_is_padded() {
        for config in [
            TfrcConfig::default(),
            dflow_config(),
            TfrcConfig {
                segment_bytes: DATA_HEADER_LEN as u32,
                ..TfrcConfig::dflow()
            },
            TfrcConfig {
                segment_bytes: MAX_PACKET_BYTES as u32,
                ..TfrcConfig::default()
            },
        ] {
            let pkt = data_packet(config);
            let buf = encoded_data(&pkt);
            assert_eq!(buf.len(), config.segment_bytes as usize);
            assert!(buf[DATA_HEADER_LEN..].iter().all(|&b| b == 0));
            assert_eq!(parse(&buf), Ok(Packet::Data(pkt)));
        }
    }

    #[test]
    fn feedback_round_trips() {
        let pkt = feedback_packet();
        let buf = encoded_feedback(&pkt);
        assert_eq!(buf.len(), FEEDBACK_LEN);
        assert_eq!(parse(&buf), Ok(Packet::Feedback(pkt)));
    }

    #[test]
    fn encoding_rejects_bad_sizes() {
        let mut pkt = data_packet(TfrcConfig::default());
        let mut small = [0; 100];
        pkt.data.payload_bytes = 200;
        assert_eq!(
            encode_data(&pkt, &mut small),
            Err(WireError::InvalidField("packet_bytes"))
        );
        pkt.data.payload_bytes = DATA_HEADER_LEN as u32 - 1;
        assert!(encode_data(&pkt, &mut [0; 2000]).is_err());
        assert!(encode_feedback(&feedback_packet(), &mut [0; FEEDBACK_LEN - 1]).is_err());
    }

    #[test]
    fn every_error_kind_is_reported() {
        let data = encoded_data(&data_packet(dflow_config()));
        let fb = encoded_feedback(&feedback_packet());
        let with = |base: &[u8], at: usize, bytes: &[u8]| {
            let mut b = base.to_vec();
            b[at..at + bytes.len()].copy_from_slice(bytes);
            b
        };
        let cases: Vec<(Vec<u8>, WireError)> = vec![
            (
                vec![],
                WireError::Truncated {
                    len: 0,
                    need: HEADER_LEN,
                },
            ),
            (
                data[..5].to_vec(),
                WireError::Truncated {
                    len: 5,
                    need: HEADER_LEN,
                },
            ),
            (
                data[..40].to_vec(),
                WireError::Truncated {
                    len: 40,
                    need: DATA_HEADER_LEN,
                },
            ),
            (
                fb[..60].to_vec(),
                WireError::Truncated {
                    len: 60,
                    need: FEEDBACK_LEN,
                },
            ),
            (with(&data, 0, b"XX"), WireError::BadMagic(*b"XX")),
            (with(&fb, 2, &[2]), WireError::WrongVersion(2)),
            (with(&data, 2, &[0]), WireError::WrongVersion(0)),
            (with(&data, 3, &[9]), WireError::UnknownType(9)),
            (
                data[..1000].to_vec(),
                WireError::BadLength {
                    declared: 1200,
                    actual: 1000,
                },
            ),
            (
                [&data[..], &[0u8; 4][..]].concat(),
                WireError::BadLength {
                    declared: 1200,
                    actual: 1204,
                },
            ),
            (
                [&fb[..], &[0u8][..]].concat(),
                WireError::BadLength {
                    declared: FEEDBACK_LEN,
                    actual: FEEDBACK_LEN + 1,
                },
            ),
            (with(&data, 32, &[0, 10]), WireError::InvalidField("packet_bytes")),
            (with(&data, 34, &[7]), WireError::InvalidField("mode")),
            (with(&data, 36, &[0]), WireError::InvalidField("ndupack")),
            (with(&data, 36, &[200]), WireError::InvalidField("ndupack")),
            (
                with(&data, 40, &[0; 8]),
                WireError::InvalidField("dflow parameters"),
            ),
            (
                with(&data, 56, &f64::NAN.to_bits().to_be_bytes()),
                WireError::InvalidField("dflow parameters"),
            ),
            (
                with(&fb, 24, &f64::NAN.to_bits().to_be_bytes()),
                WireError::InvalidField("x_recv_bps"),
            ),
            (
                with(&fb, 24, &(-1.0f64).to_bits().to_be_bytes()),
                WireError::InvalidField("x_recv_bps"),
            ),
            (
                with(&fb, 32, &1.5f64.to_bits().to_be_bytes()),
                WireError::InvalidField("p"),
            ),
            (
                with(&fb, 32, &f64::NAN.to_bits().to_be_bytes()),
                WireError::InvalidField("p"),
            ),
        ];
        let mut counts = MalformedCounts::default();
        for (buf, want) in &cases {
            let got = parse(buf);
            assert_eq!(got, Err(*want), "{buf:?}");
            counts.count(want.kind());
            // Every error has a message.
            assert!(!want.to_string().is_empty());
        }
        assert_eq!(counts.malformed(), cases.len() as u64);
        assert_eq!(
            (
                counts.truncated,
                counts.bad_magic,
                counts.wrong_version,
                counts.unknown_type,
                counts.bad_length,
                counts.invalid_field
            ),
            (4, 1, 2, 1, 3, 10)
        );
        // Plain TFRC ignores the (zeroed) DFlow fields.
        let tfrc = encoded_data(&data_packet(TfrcConfig::default()));
        assert!(parse(&with(&tfrc, 40, &[0; 24])).is_ok());
    }

    /// Random bytes, and valid packets with random corruption: parsing
    /// returns (never panics), and whatever it accepts re-encodes to a
    /// datagram of the same length that parses to the same packet.
    #[test]
    fn random_datagrams_never_panic() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let data = encoded_data(&data_packet(dflow_config()));
        let fb = encoded_feedback(&feedback_packet());
        let mut accepted = 0;
        let mut rejected = 0;
        for i in 0..20_000 {
            let mut buf: Vec<u8> = match i % 4 {
                // Pure garbage of any length.
                0 => {
                    let n = rng.random_range(0..1500);
                    (0..n).map(|_| rng.random()).collect()
                }
                // Garbage behind a valid-looking header.
                1 => {
                    let n = rng.random_range(0..200);
                    let mut b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                    if b.len() >= 4 {
                        b[0..3].copy_from_slice(&[b'L', b'M', VERSION]);
                        b[3] = rng.random_range(0..4);
                    }
                    b
                }
                2 => data.clone(),
                _ => fb.clone(),
            };
            if i % 4 >= 2 {
                // Flip a few bytes and maybe cut or extend.
                for _ in 0..rng.random_range(1..6) {
                    let at = rng.random_range(0..buf.len());
                    buf[at] = rng.random();
                }
                match rng.random_range(0..4) {
                    0 => buf.truncate(rng.random_range(0..buf.len())),
                    1 => buf.extend((0..rng.random_range(1..10)).map(|_| rng.random::<u8>())),
                    _ => {}
                }
            }
            match parse(&buf) {
                Ok(Packet::Data(d)) => {
                    accepted += 1;
                    let again = encoded_data(&d);
                    assert_eq!(again.len(), buf.len());
                    assert_eq!(parse(&again), Ok(Packet::Data(d)));
                }
                Ok(Packet::Feedback(f)) => {
                    accepted += 1;
                    assert_eq!(encoded_feedback(&f), buf);
                }
                Err(e) => {
                    rejected += 1;
                    let _ = e.kind();
                }
            }
        }
        assert!(accepted > 100 && rejected > 10_000, "{accepted} {rejected}");
    }
}
