//! Which subflow is throttled, and to what rate: an ordered list of rules,
//! the first rule that matches a subflow gives its rate. A rule matches on
//! any of the client's address (CIDR), the proxy's egress interface toward
//! the client, and the proxy's local port; every field a rule gives must
//! match, and a rule that gives none matches every subflow.
//!
//! Throttling starts once a connection has at least two established
//! subflows (one path alone must never be slowed: there would be nowhere to
//! steer the traffic to), after `delay_ms` (let the subflows' congestion
//! windows open first). See [`super::steer`].
//!
//! TOML (`Policy::from_toml`):
//!
//! ```toml
//! delay_ms = 200
//! [[rule]]
//! client = "10.0.2.0/24"   # the client's address, CIDR
//! interface = "veth2"      # the proxy's egress device
//! port = 8080              # the proxy's local port
//! rate = "5mbit"           # or rate_bps = 5000000
//! ```
//!
//! Flags (`Policy::from_flags`): one rule per flag,
//! `client=10.0.2.0/24,interface=veth2,rate=5mbit`.

use std::net::IpAddr;

use serde::Deserialize;

use super::FourTuple;

/// The largest rate accepted: 100 Gbit/s.
pub const MAX_RATE_BPS: u64 = 100_000_000_000;
/// HTB cannot shape below a few hundred bit/s meaningfully; refuse less
/// than one 1500-byte packet per second.
pub const MIN_RATE_BPS: u64 = 12_000;

/// An address prefix, e.g. 10.0.2.0/24 or fd00::/64.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub addr: IpAddr,
    pub prefix_len: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (addr, len) = match s.split_once('/') {
            Some((a, l)) => (a, Some(l)),
            None => (s, None),
        };
        let addr: IpAddr = addr
            .trim()
            .parse()
            .map_err(|_| format!("'{s}' is not an address or CIDR prefix (e.g. 10.0.2.0/24)"))?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix_len = match len {
            None => max,
            Some(l) => l
                .trim()
                .parse::<u8>()
                .ok()
                .filter(|&l| l <= max)
                .ok_or_else(|| format!("'{s}': the prefix length must be 0..={max}"))?,
        };
        Ok(Cidr { addr, prefix_len })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        // An IPv4 client seen through an IPv6 socket is ::ffff:a.b.c.d.
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.prefix_len),
            (IpAddr::V6(net), IpAddr::V6(ip)) => prefix_eq(&net.octets(), &ip.octets(), self.prefix_len),
            _ => false,
        }
    }
}

fn prefix_eq(a: &[u8], b: &[u8], bits: u8) -> bool {
    let (full, rest) = ((bits / 8) as usize, bits % 8);
    if a[..full] != b[..full] {
        return false;
    }
    rest == 0 || {
        let mask = 0xffu8 << (8 - rest);
        a[full] & mask == b[full] & mask
    }
}

/// Parse a rate in bit/s: `5000000`, `5e6`, `5mbit`, `500kbit`, `1gbit`,
/// `5M` (k, M, G are bit/s multiples of 1000; "bps" is refused because tc
/// reads it as bytes per second).
pub fn parse_rate_bps(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (num, mult) = if let Some(n) = t.strip_suffix("gbit").or_else(|| t.strip_suffix('g')) {
        (n, 1e9)
    } else if let Some(n) = t.strip_suffix("mbit").or_else(|| t.strip_suffix('m')) {
        (n, 1e6)
    } else if let Some(n) = t.strip_suffix("kbit").or_else(|| t.strip_suffix('k')) {
        (n, 1e3)
    } else if let Some(n) = t.strip_suffix("bit") {
        (n, 1.0)
    } else if t.ends_with("bps") {
        return Err(format!(
            "rate '{s}': write bit/s as e.g. 5mbit or 5000000 ('bps' would mean bytes/s to tc)"
        ));
    } else {
        (t.as_str(), 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("rate '{s}' is not a number of bit/s (e.g. 5mbit, 500kbit, 5000000)"))?;
    let bps = v * mult;
    if !bps.is_finite() || bps < MIN_RATE_BPS as f64 || bps > MAX_RATE_BPS as f64 {
        return Err(format!(
            "rate '{s}' must be between {MIN_RATE_BPS} bit/s and {MAX_RATE_BPS} bit/s"
        ));
    }
    Ok(bps.round() as u64)
}

/// One rule: match fields (all given ones must match) → rate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub client: Option<Cidr>,
    pub interface: Option<String>,
    pub port: Option<u16>,
    pub rate_bps: u64,
}

/// A subflow as the policy sees it: its 4-tuple on the proxy and the
/// proxy's egress device toward the client.
#[derive(Clone, Copy, Debug)]
pub struct SubflowView<'a> {
    pub tuple: &'a FourTuple,
    pub interface: Option<&'a str>,
}

impl Rule {
    pub fn matches(&self, s: &SubflowView<'_>) -> bool {
        self.client.is_none_or(|c| c.contains(s.tuple.remote.ip()))
            && self.interface.as_deref().is_none_or(|i| s.interface == Some(i))
            && self.port.is_none_or(|p| s.tuple.local.port() == p)
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    pub rules: Vec<Rule>,
    /// Wait this long after a connection's second subflow is established.
    pub delay_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    delay_ms: u64,
    #[serde(default)]
    rule: Vec<RuleFile>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleFile {
    client: Option<String>,
    interface: Option<String>,
    port: Option<u16>,
    rate: Option<String>,
    rate_bps: Option<u64>,
}

impl RuleFile {
    fn into_rule(self, where_: &str) -> Result<Rule, String> {
        let rate_bps = match (self.rate, self.rate_bps) {
            (Some(r), None) => parse_rate_bps(&r).map_err(|e| format!("{where_}: {e}"))?,
            (None, Some(b)) => {
                if !(MIN_RATE_BPS..=MAX_RATE_BPS).contains(&b) {
                    return Err(format!(
                        "{where_}: rate_bps = {b} must be between {MIN_RATE_BPS} and {MAX_RATE_BPS}"
                    ));
                }
                b
            }
            (Some(_), Some(_)) => return Err(format!("{where_}: give either rate or rate_bps, not both")),
            (None, None) => return Err(format!("{where_}: missing rate (e.g. rate = \"5mbit\")")),
        };
        let client = self
            .client
            .map(|c| Cidr::parse(&c))
            .transpose()
            .map_err(|e| format!("{where_}: client: {e}"))?;
        if self
            .interface
            .as_deref()
            .is_some_and(|i| i.is_empty() || i.len() > 15)
        {
            return Err(format!(
                "{where_}: interface must be a device name of 1-15 characters"
            ));
        }
        Ok(Rule {
            client,
            interface: self.interface,
            port: self.port,
            rate_bps,
        })
    }
}

impl Policy {
    pub fn from_toml(text: &str) -> Result<Policy, String> {
        let file: PolicyFile =
            toml::from_str(text).map_err(|e| format!("throttle policy: {}", e.message()))?;
        let rules = file
            .rule
            .into_iter()
            .enumerate()
            .map(|(i, r)| r.into_rule(&format!("throttle policy [[rule]] #{}", i + 1)))
            .collect::<Result<_, _>>()?;
        Ok(Policy {
            rules,
            delay_ms: file.delay_ms,
        })
    }

    /// One rule per flag: comma-separated `key=value` with keys client,
    /// interface, port, rate.
    pub fn from_flags(flags: &[String], delay_ms: u64) -> Result<Policy, String> {
        let mut rules = Vec::new();
        for (i, flag) in flags.iter().enumerate() {
            let where_ = format!("--throttle #{} '{flag}'", i + 1);
            let mut r = RuleFile {
                client: None,
                interface: None,
                port: None,
                rate: None,
                rate_bps: None,
            };
            for kv in flag.split(',').filter(|s| !s.trim().is_empty()) {
                let (k, v) = kv
                    .split_once('=')
                    .ok_or_else(|| format!("{where_}: '{kv}' is not KEY=VALUE"))?;
                let v = v.trim().to_string();
                match k.trim() {
                    "client" => r.client = Some(v),
                    "interface" => r.interface = Some(v),
                    "port" => {
                        r.port = Some(
                            v.parse()
                                .map_err(|_| format!("{where_}: port '{v}' is not a number 0..=65535"))?,
                        )
                    }
                    "rate" => r.rate = Some(v),
                    other => {
                        return Err(format!(
                            "{where_}: unknown key '{other}' (expected client, interface, port, rate)"
                        ))
                    }
                }
            }
            rules.push(r.into_rule(&where_)?);
        }
        Ok(Policy { rules, delay_ms })
    }

    /// The rate for a subflow: the first matching rule's, or `None`.
    pub fn decide(&self, subflow: &SubflowView<'_>) -> Option<u64> {
        self.rules.iter().find(|r| r.matches(subflow)).map(|r| r.rate_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuple(local: &str, remote: &str) -> FourTuple {
        FourTuple {
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
        }
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate_bps("5mbit"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("5M"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("500kbit"), Ok(500_000));
        assert_eq!(parse_rate_bps("1.5gbit"), Ok(1_500_000_000));
        assert_eq!(parse_rate_bps("5e6"), Ok(5_000_000));
        assert_eq!(parse_rate_bps("5000000"), Ok(5_000_000));
        assert!(parse_rate_bps("5mbps").unwrap_err().contains("bytes/s"));
        assert!(parse_rate_bps("fast").unwrap_err().contains("not a number"));
        assert!(parse_rate_bps("0").is_err());
        assert!(parse_rate_bps("1000gbit").is_err());
    }

    #[test]
    fn cidr() {
        let c = Cidr::parse("10.0.2.0/23").unwrap();
        assert!(c.contains("10.0.3.9".parse().unwrap()));
        assert!(!c.contains("10.0.4.1".parse().unwrap()));
        assert!(c.contains("::ffff:10.0.2.1".parse().unwrap()));
        assert!(Cidr::parse("fd00::/64")
            .unwrap()
            .contains("fd00::5".parse().unwrap()));
        assert!(Cidr::parse("0.0.0.0/0")
            .unwrap()
            .contains("1.2.3.4".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.1")
            .unwrap()
            .contains("10.0.0.1".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/33").unwrap_err().contains("0..=32"));
        assert!(Cidr::parse("nope/8").is_err());
    }

    #[test]
    fn toml_first_matching_rule_wins() {
        let p = Policy::from_toml(
            r#"
            delay_ms = 250
            [[rule]]
            client = "10.0.2.0/24"
            interface = "veth2"
            rate = "5mbit"
            [[rule]]
            port = 8080
            rate_bps = 1000000
            "#,
        )
        .unwrap();
        assert_eq!(p.delay_ms, 250);
        let t = tuple("10.0.12.1:8080", "10.0.2.2:40000");
        let view = |t, i| SubflowView {
            tuple: t,
            interface: i,
        };
        assert_eq!(p.decide(&view(&t, Some("veth2"))), Some(5_000_000));
        assert_eq!(p.decide(&view(&t, Some("veth1"))), Some(1_000_000));
        let t2 = tuple("10.0.12.1:9090", "10.0.1.2:40000");
        assert_eq!(p.decide(&view(&t2, Some("veth2"))), None);
    }

    #[test]
    fn toml_errors_name_the_key() {
        let e = Policy::from_toml("[[rule]]\nclient = \"10.0.0.0/8\"\n").unwrap_err();
        assert!(e.contains("#1") && e.contains("missing rate"), "{e}");
        let e = Policy::from_toml("[[rule]]\nrate = \"5mbit\"\nspeed = 3\n").unwrap_err();
        assert!(e.contains("speed"), "{e}");
        let e = Policy::from_toml("[[rule]]\nrate = \"5mbit\"\nclient = \"x\"\n").unwrap_err();
        assert!(e.contains("client"), "{e}");
        let e = Policy::from_toml("[[rule]]\nrate = \"5\"\n").unwrap_err();
        assert!(e.contains("between"), "{e}");
    }

    #[test]
    fn flags() {
        let p = Policy::from_flags(&["client=10.0.2.0/24,rate=5mbit".into(), "rate=1M".into()], 0).unwrap();
        let t = tuple("10.0.12.1:80", "10.0.2.2:1");
        let v = SubflowView {
            tuple: &t,
            interface: None,
        };
        assert_eq!(p.decide(&v), Some(5_000_000));
        assert_eq!(p.rules[1].rate_bps, 1_000_000);
        let e = Policy::from_flags(&["clint=1.2.3.4,rate=1M".into()], 0).unwrap_err();
        assert!(e.contains("unknown key 'clint'"), "{e}");
        let e = Policy::from_flags(&["port=x,rate=1M".into()], 0).unwrap_err();
        assert!(e.contains("port 'x'"), "{e}");
    }
}
