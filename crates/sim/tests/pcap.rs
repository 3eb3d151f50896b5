//! A captured link opens in tshark, with one frame per packet the link sent.

use latlab_sim::{assemble, parse};
use std::process::Command;

#[test]
fn captured_link_reads_back_in_tshark() {
    let dir = std::env::temp_dir().join(format!("latlab-pcap-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let toml = r#"
duration_s = 3
[tcp]
preset = "linux"
[topology]
kind = "custom"
nodes = [{ name = "a" }, { name = "b" }]
links = [{ from = "a", to = "b", rate_bps = 5e6, delay_ms = 20, loss = 0.02, queue = { kind = "droptail", limit_packets = 20 } }]
[[flows]]
src = "a"
dst = "b"
count = 2
size_bytes = 300000
[outputs]
pcap = ["a->b"]
"#;
    let sc = parse(toml, "pcap.toml").unwrap();
    let mut sim = assemble::build(&sc, "pcap.toml", Some(&dir)).unwrap();
    sim.run();
    assert!(sim.pcap_error.is_none(), "{:?}", sim.pcap_error);
    let link = sim.links.iter().find(|l| l.name == "a->b").unwrap();
    let sent = link.counters.departures_pkts;
    let file = dir.join("a_to_b.pcap");
    let bytes = std::fs::read(&file).unwrap();
    // Nanosecond pcap magic, little-endian.
    assert_eq!(&bytes[..4], &0xa1b2_3c4du32.to_le_bytes());

    let out = match Command::new("tshark")
        .args(["-r"])
        .arg(&file)
        .args(["-T", "fields", "-e", "tcp.srcport", "-e", "tcp.len"])
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            println!("skipping the tshark check: cannot run tshark ({e})");
            return;
        }
    };
    assert!(
        out.status.success(),
        "tshark failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let frames = text.lines().count() as u64;
    assert_eq!(frames, sent, "tshark read {frames} frames, the link sent {sent}");
    // Data segments carry the Linux preset's 1448-byte payload.
    assert!(
        text.lines().any(|l| l.ends_with("\t1448")),
        "no full-size data segment decoded"
    );
    let malformed = Command::new("tshark")
        .args(["-r"])
        .arg(&file)
        .args(["-Y", "_ws.malformed"])
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&malformed.stdout).trim().is_empty(),
        "tshark reports malformed frames"
    );
    std::fs::remove_dir_all(&dir).ok();
}
