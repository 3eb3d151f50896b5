//! Random scenarios shared by the property and golden-digest tests.

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

fn random_queue(rng: &mut Pcg64Mcg) -> String {
    match rng.random_range(0..4) {
        0 => format!(
            "{{ kind = \"droptail\", limit_bytes = {} }}",
            rng.random_range(3_000..60_000)
        ),
        1 => format!(
            "{{ kind = \"droptail\", limit_packets = {} }}",
            rng.random_range(2..200)
        ),
        2 => {
            let max_th = rng.random_range(5.0..50.0f64);
            format!(
                "{{ kind = \"red\", limit_packets = {}, min_th = {}, max_th = {max_th}, max_p = 0.1, w_q = 0.002, gentle = {} }}",
                (max_th * 2.0) as u64 + 1,
                max_th * 0.4,
                rng.random_bool(0.5)
            )
        }
        _ => format!(
            "{{ kind = \"codel\", limit_packets = {} }}",
            rng.random_range(20..500)
        ),
    }
}

/// A random scenario: a chain of routers with random cross links, hosts on
/// the chain, random queues, loss, TCP options and flows.
pub fn random_scenario(case: u64) -> String {
    let mut rng = Pcg64Mcg::seed_from_u64(case);
    let routers = rng.random_range(2..5);
    let hosts = rng.random_range(2..7);
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    for r in 0..routers {
        nodes.push(format!("{{ name = \"r{r}\" }}"));
        if r > 0 {
            links.push(format!(
                "{{ from = \"r{}\", to = \"r{r}\", rate_bps = {}, delay_ms = {}, loss = {}, queue = {} }}",
                r - 1,
                rng.random_range(1e6..50e6),
                rng.random_range(0.0..30.0),
                if rng.random_bool(0.3) {
                    rng.random_range(0.0..0.05)
                } else {
                    0.0
                },
                random_queue(&mut rng)
            ));
        }
    }
    for h in 0..hosts {
        nodes.push(format!("{{ name = \"h{h}\" }}"));
        links.push(format!(
            "{{ from = \"h{h}\", to = \"r{}\", rate_bps = {}, delay_ms = {}, queue = {} }}",
            rng.random_range(0..routers),
            rng.random_range(1e6..100e6),
            rng.random_range(0.0..10.0),
            random_queue(&mut rng)
        ));
    }
    let mut flows = String::new();
    for g in 0..rng.random_range(1..4) {
        let src = rng.random_range(0..hosts);
        let mut dst = rng.random_range(0..hosts);
        if dst == src {
            dst = (src + 1) % hosts;
        }
        let size = if rng.random_bool(0.5) {
            format!("size_bytes = {}", rng.random_range(1..300_000))
        } else {
            String::new()
        };
        let recovery = [
            "recovery = \"newreno\"",
            "recovery = \"sack\"",
            "recovery = \"fack\"",
        ][rng.random_range(0..3)];
        // A small share of groups are TFRC or DFlow (rate-paced datagrams
        // with feedback), so conservation and determinism cover them too.
        if rng.random_bool(0.15) {
            let dflow = rng.random_bool(0.5);
            let tfrc = if dflow {
                format!(
                    "tfrc = {{ segment_bytes = {}, cd_thresh_ms = {}, base_period_rtts = {}, gradient_test = {} }}",
                    rng.random_range(200..1500),
                    rng.random_range(5.0..80.0),
                    rng.random_range(1.0..2000.0),
                    rng.random_bool(0.3)
                )
            } else {
                format!(
                    "tfrc = {{ segment_bytes = {}, oscillation_reduction = {} }}",
                    rng.random_range(200..1500),
                    rng.random_bool(0.3)
                )
            };
            flows.push_str(&format!(
                r#"
[[flows]]
name = "g{g}"
kind = "{kind}"
count = {count}
src = "h{src}"
dst = "h{dst}"
start_s = {{ uniform = [0, 2] }}
{tfrc}
"#,
                kind = if dflow { "dflow" } else { "tfrc" },
                count = rng.random_range(1..4),
            ));
            continue;
        }
        flows.push_str(&format!(
            r#"
[[flows]]
name = "g{g}"
count = {count}
src = "h{src}"
dst = "h{dst}"
cc = "{cc}"
start_s = {{ uniform = [0, 2] }}
{size}
tcp = {{ {recovery}, delayed_ack = {dack}, pacing = {pacing}, initial_window_segments = {iw} }}
"#,
            count = rng.random_range(1..6),
            cc = if rng.random_bool(0.5) { "newreno" } else { "cubic" },
            dack = rng.random_bool(0.5),
            pacing = rng.random_bool(0.3),
            iw = rng.random_range(1..11),
        ));
    }
    format!(
        r#"
name = "random-{case}"
seed = {seed}
duration_s = {dur}
sample_interval_ms = 250
[tcp]
preset = "{preset}"
[topology]
kind = "custom"
nodes = [{nodes}]
links = [{links}]
{flows}
"#,
        seed = rng.random::<u32>(),
        dur = rng.random_range(3.0..12.0),
        preset = if rng.random_bool(0.5) { "ns2" } else { "linux" },
        nodes = nodes.join(", "),
        links = links.join(",\n  "),
    )
}
