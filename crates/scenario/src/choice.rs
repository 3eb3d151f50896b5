//! Scenario keys with a fixed set of values, as enums parsed once.
//!
//! Each enum reads its value from a TOML string when the scenario is
//! parsed; an unknown value is refused there, with the key path (from the
//! parser) and every accepted value in the message. The simulator's
//! builder and the real-flow planner both match on these enums, so a value
//! is spelled in one place.

use std::fmt;

/// `"a"`, `"b"` or `"c"`: the accepted values, for an error message.
pub fn one_of(values: &[&str]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    match quoted.split_last() {
        None => String::new(),
        Some((last, [])) => last.clone(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
    }
}

/// An enum read from a string key: its names (and aliases), `name()`,
/// `FromStr` with an error listing the accepted values, and `Deserialize`
/// from a TOML string. The `@names` form leaves `Deserialize` to the caller
/// (for a key whose message for a value that is not a string differs).
macro_rules! choice {
    (
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        choice! {
            @names
            $(#[$meta])*
            pub enum $name ($what) {
                $( $(#[$vmeta])* $variant = $value $(| $alias)* ),+
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                s.parse().map_err(serde::de::Error::custom)
            }
        }
    };
    (
        @names
        $(#[$meta:meta])*
        pub enum $name:ident ($what:literal) {
            $( $(#[$vmeta:meta])* $variant:ident = $value:literal $(| $alias:literal)* ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $( $(#[$vmeta])* $variant ),+
        }

        impl $name {
            /// Every value a scenario may write, aliases included.
            pub const ACCEPTED: &'static [&'static str] = &[$( $value, $($alias,)* )+];

            /// The canonical name, as written in results.
            pub fn name(self) -> &'static str {
                match self {
                    $( $name::$variant => $value ),+
                }
            }
        }

        impl std::str::FromStr for $name {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                match s {
                    $( $value $(| $alias)* => Ok($name::$variant), )+
                    other => Err(format!(
                        "unknown {} {other:?}; expected {}",
                        $what,
                        $crate::choice::one_of(Self::ACCEPTED)
                    )),
                }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

choice! {
    /// A flow group's transport (`flows[].kind`).
    pub enum FlowKind ("flow kind") {
        Tcp = "tcp",
        /// An open-loop UDP source (`udp` table).
        Udp = "udp",
        /// TFRC, RFC 5348.
        Tfrc = "tfrc",
        /// TFRC with delay-based congestion events.
        Dflow = "dflow",
        /// Multipath TCP (`mptcp` table).
        Mptcp = "mptcp",
    }
}

choice! {
    /// How a UDP source sends (`flows[].udp.pattern`; docs/models/workloads.md).
    pub enum UdpPatternKind ("pattern") {
        /// Constant bit rate.
        Cbr = "cbr",
        /// Poisson arrivals.
        Poisson = "poisson",
        /// Long-range dependent: fractional Gaussian noise, Norros model.
        Lrd = "lrd",
    }
}

choice! {
    /// The TCP defaults a `tcp` table starts from (`tcp.preset`).
    pub enum TcpPreset ("preset") {
        /// 1000-byte data packets, 40-byte ACKs, one ACK per segment.
        Ns2 = "ns2",
        /// MSS 1448 + 52 header bytes, delayed ACKs, SACK.
        Linux = "linux",
    }
}

choice! {
    /// Loss recovery (`tcp.recovery`).
    pub enum LossRecovery ("recovery") {
        NewReno = "newreno",
        /// RFC 6675.
        Sack = "sack",
        /// Forward acknowledgement.
        Fack = "fack",
    }
}

choice! {
    /// The receiver's window controller (`tcp.rwnd_controller`;
    /// docs/models/receiver-window.md). Its constants (`rwnd_params`) are
    /// checked by latlab-proto's `RwndSpec`.
    pub enum RwndController ("receiver-window controller") {
        /// The fixed `rwnd_bytes` window.
        Fixed = "fixed",
        Autotuning = "autotuning",
        Drwa = "drwa",
        Rtac = "rtac",
    }
}

choice! {
    /// Which subflow an MPTCP connection sends on (`flows[].mptcp.scheduler`).
    pub enum MptcpScheduler ("MPTCP scheduler") {
        /// Lowest smoothed RTT with room (Linux's default scheduler).
        MinRtt = "minrtt" | "default",
        RoundRobin = "roundrobin",
    }
}

choice! {
    /// An LTE cell's radio scheduler (`cell.scheduler`).
    pub enum CellScheduler ("scheduler") {
        /// Proportional fair.
        Pf = "pf",
        /// Round robin.
        Rr = "rr",
    }
}

choice! {
    @names
    /// How an AP buffers its stations' packets (`ap.buffer`).
    #[derive(Default)]
    pub enum ApBufferSpec ("buffer") {
        /// One queue shared by every station, served in arrival order.
        #[default]
        Shared = "shared",
        /// One queue per station, served round robin one frame at a time.
        PerStation = "per-station",
    }
}

/// Unlike the keys above, a value that is not a string is named in the
/// message too ("expected ..., got 3").
impl<'de> serde::Deserialize<'de> for ApBufferSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match toml::Value::deserialize(d)? {
            toml::Value::String(s) => s.parse().map_err(serde::de::Error::custom),
            other => Err(serde::de::Error::custom(format!(
                "expected {}, got {other}",
                one_of(Self::ACCEPTED)
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_aliases_parse_and_unknown_ones_list_the_accepted() {
        assert_eq!("dflow".parse::<FlowKind>(), Ok(FlowKind::Dflow));
        assert_eq!("default".parse::<MptcpScheduler>(), Ok(MptcpScheduler::MinRtt));
        assert_eq!(MptcpScheduler::MinRtt.name(), "minrtt");
        assert_eq!(
            "quic".parse::<FlowKind>().unwrap_err(),
            "unknown flow kind \"quic\"; expected \"tcp\", \"udp\", \"tfrc\", \"dflow\" or \"mptcp\""
        );
        assert_eq!(
            "blest".parse::<MptcpScheduler>().unwrap_err(),
            "unknown MPTCP scheduler \"blest\"; expected \"minrtt\", \"default\" or \"roundrobin\""
        );
        assert_eq!(one_of(&["a"]), "\"a\"");
        assert_eq!(
            "fifo".parse::<ApBufferSpec>().unwrap_err(),
            "unknown buffer \"fifo\"; expected \"shared\" or \"per-station\""
        );
        assert_eq!(ApBufferSpec::default(), ApBufferSpec::Shared);
    }
}
