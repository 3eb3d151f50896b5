//! The pcap files both the simulator and the emulator write, one per
//! captured link: the file format and the file's name, written once.
//!
//! # File format
//!
//! Classic libpcap format with the nanosecond-resolution magic `0xa1b23c4d`
//! (written little-endian), version 2.4, thiszone and sigfigs 0, snaplen
//! 65535 and link type `LINKTYPE_RAW` (101): every record starts directly
//! with an IP header. A record header holds the timestamp split into
//! seconds (32 bits, so times past ~136 years wrap, no panic) and
//! nanoseconds, the captured length and the original length.
//!
//! The writer formats into any [`io::Write`]; what goes around it (a
//! buffered file, a `Vec` in tests) and what the packets hold (the
//! simulator's synthesised headers, the emulator's real bytes) is the
//! caller's. Writing a record never allocates.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// pcap magic for nanosecond-resolution timestamps.
pub const PCAP_MAGIC_NS: u32 = 0xa1b2_3c4d;
/// `LINKTYPE_RAW`: each record is a raw IPv4 (or IPv6) packet.
pub const LINKTYPE_RAW: u32 = 101;
/// Snapshot length written in the global header; longer packets are cut.
pub const SNAPLEN: u32 = 65535;
/// Bytes of the global header at the start of the file.
pub const GLOBAL_HEADER_BYTES: usize = 24;
/// Bytes of the header before each record's packet.
pub const RECORD_HEADER_BYTES: usize = 16;

/// The file name of link `link_name`'s capture: `a->b` becomes
/// `a_to_b.pcap`, and the `#` of a parallel link's name an `_`.
pub fn file_name(link_name: &str) -> String {
    format!("{}.pcap", link_name.replace("->", "_to_").replace('#', "_"))
}

/// The global header: magic, version 2.4, thiszone 0, sigfigs 0, snaplen,
/// link type.
pub fn global_header() -> [u8; GLOBAL_HEADER_BYTES] {
    let mut hdr = [0u8; GLOBAL_HEADER_BYTES];
    hdr[0..4].copy_from_slice(&PCAP_MAGIC_NS.to_le_bytes());
    hdr[4..6].copy_from_slice(&2u16.to_le_bytes()); // version major
    hdr[6..8].copy_from_slice(&4u16.to_le_bytes()); // version minor
                                                    // bytes 8..16: thiszone = 0, sigfigs = 0
    hdr[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
    hdr[20..24].copy_from_slice(&LINKTYPE_RAW.to_le_bytes());
    hdr
}

/// A record's header: the time (ns) as seconds and nanoseconds, the
/// captured length and the original (on-the-wire) length.
pub fn record_header(time_ns: u64, captured_len: u32, orig_len: u32) -> [u8; RECORD_HEADER_BYTES] {
    let mut rec = [0u8; RECORD_HEADER_BYTES];
    rec[0..4].copy_from_slice(&((time_ns / 1_000_000_000) as u32).to_le_bytes());
    rec[4..8].copy_from_slice(&((time_ns % 1_000_000_000) as u32).to_le_bytes());
    rec[8..12].copy_from_slice(&captured_len.to_le_bytes());
    rec[12..16].copy_from_slice(&orig_len.to_le_bytes());
    rec
}

/// Writes a pcap stream into `W`: the global header when made, then one
/// record per [`PcapWriter::write_record`].
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the global header into `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        out.write_all(&global_header())?;
        Ok(PcapWriter { out })
    }

    /// One record at `time_ns`: `packet` (cut to [`SNAPLEN`] bytes) for a
    /// packet that was `orig_len` bytes long on the wire.
    pub fn write_record(&mut self, time_ns: u64, packet: &[u8], orig_len: u32) -> io::Result<()> {
        let captured = packet.len().min(SNAPLEN as usize);
        self.out
            .write_all(&record_header(time_ns, captured as u32, orig_len))?;
        self.out.write_all(&packet[..captured])
    }

    /// Flushes and returns the writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

/// A capture file: buffered, as one record is small.
pub type PcapFile = PcapWriter<BufWriter<File>>;

/// Creates (truncates) `path` and writes the global header.
pub fn create(path: &Path) -> io::Result<PcapFile> {
    let file = File::create(path)?;
    PcapWriter::new(BufWriter::with_capacity(1 << 16, file))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format the simulator's and the emulator's own writers wrote
    /// before they shared this one, byte for byte: a change fails here.
    #[test]
    fn bytes_are_the_classic_nanosecond_raw_format() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_record(1_500_000_000_123, &[0x45, 0, 0, 20], 4).unwrap();
        w.write_record(4_294_967_296_000_000_007, &[0x60, 1, 2], 1500)
            .unwrap();
        let b = w.finish().unwrap();
        let expected: Vec<u8> = [
            // global header
            &[0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0][..],
            &[0; 8],
            &[0xff, 0xff, 0, 0, 101, 0, 0, 0],
            // record 1: 1500 s, 123 ns, 4 of 4 bytes
            &[0xdc, 0x05, 0, 0, 123, 0, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0],
            &[0x45, 0, 0, 20],
            // record 2: seconds wrap past 2^32 to 0; 7 ns; 3 of 1500 bytes
            &[0, 0, 0, 0, 7, 0, 0, 0, 3, 0, 0, 0, 0xdc, 0x05, 0, 0],
            &[0x60, 1, 2],
        ]
        .concat();
        assert_eq!(b, expected);
    }

    #[test]
    fn long_packets_are_cut_to_the_snaplen() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let packet = vec![7u8; SNAPLEN as usize + 10];
        w.write_record(0, &packet, packet.len() as u32).unwrap();
        let b = w.finish().unwrap();
        let rec = &b[GLOBAL_HEADER_BYTES..];
        assert_eq!(u32::from_le_bytes(rec[8..12].try_into().unwrap()), SNAPLEN);
        assert_eq!(u32::from_le_bytes(rec[12..16].try_into().unwrap()), SNAPLEN + 10);
        assert_eq!(rec.len(), RECORD_HEADER_BYTES + SNAPLEN as usize);
    }

    #[test]
    fn file_names_replace_arrows_and_hashes() {
        assert_eq!(file_name("a->b#2"), "a_to_b_2.pcap");
        assert_eq!(file_name("gw->isp"), "gw_to_isp.pcap");
    }
}
