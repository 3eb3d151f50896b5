//! Sans-IO bookkeeping for "force steering" (the proxy throttles a
//! subflow, MPTCP's scheduler and coupled congestion control move the
//! traffic to the others): feed it the path manager's events and the clock,
//! and it says which subflow to throttle to which rate, and when to lift a
//! throttle.
//!
//! A connection becomes eligible when it has at least two established
//! subflows; `policy.delay_ms` later each of its subflows is decided once by
//! [`Policy::decide`] (subflows established later are decided at the next
//! poll). When a subflow closes its throttle is lifted; when fewer than two
//! subflows remain, every throttle of the connection is lifted (one path
//! must not stay slowed with nowhere to steer to) and the delay starts
//! again at the next second subflow.

use std::collections::BTreeMap;

use super::pm_events::PmEvent;
use super::policy::{Policy, SubflowView};
use super::FourTuple;

/// What the caller should do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    Throttle {
        token: u32,
        tuple: FourTuple,
        rate_bps: u64,
    },
    Release {
        token: u32,
        tuple: FourTuple,
    },
}

#[derive(Debug)]
struct Subflow {
    tuple: FourTuple,
    decided: bool,
    throttled: bool,
}

#[derive(Debug, Default)]
struct Connection {
    subflows: Vec<Subflow>,
    /// When the connection may be throttled (two subflows + delay), ns.
    eligible_at_ns: Option<u64>,
}

#[derive(Debug)]
pub struct Steering {
    policy: Policy,
    conns: BTreeMap<u32, Connection>,
}

impl Steering {
    pub fn new(policy: Policy) -> Steering {
        Steering {
            policy,
            conns: BTreeMap::new(),
        }
    }

    /// Established subflows of a connection, as known from the events.
    pub fn subflows(&self, token: u32) -> Vec<FourTuple> {
        self.conns
            .get(&token)
            .map(|c| c.subflows.iter().map(|s| s.tuple).collect())
            .unwrap_or_default()
    }

    /// Take in one event; lifting throttles happens here at once.
    pub fn on_event(&mut self, now_ns: u64, ev: &PmEvent) -> Vec<Action> {
        let delay_ns = self.policy.delay_ms.saturating_mul(1_000_000);
        let mut out = Vec::new();
        match ev {
            // The initial subflow: CREATED and ESTABLISHED both carry it.
            PmEvent::Created(c) | PmEvent::Established(c) => {
                self.add(now_ns, delay_ns, c.token, c.tuple);
            }
            PmEvent::SubEstablished(s) => self.add(now_ns, delay_ns, s.token, s.tuple),
            PmEvent::SubClosed(s) => {
                if let Some(conn) = self.conns.get_mut(&s.token) {
                    if let Some(i) = conn.subflows.iter().position(|x| x.tuple == s.tuple) {
                        let gone = conn.subflows.remove(i);
                        if gone.throttled {
                            out.push(Action::Release {
                                token: s.token,
                                tuple: gone.tuple,
                            });
                        }
                    }
                    if conn.subflows.len() < 2 {
                        conn.eligible_at_ns = None;
                        for sf in &mut conn.subflows {
                            if sf.throttled {
                                out.push(Action::Release {
                                    token: s.token,
                                    tuple: sf.tuple,
                                });
                            }
                            sf.throttled = false;
                            sf.decided = false;
                        }
                    }
                }
            }
            PmEvent::Closed { token } => {
                if let Some(conn) = self.conns.remove(token) {
                    out.extend(
                        conn.subflows
                            .into_iter()
                            .filter(|s| s.throttled)
                            .map(|s| Action::Release {
                                token: *token,
                                tuple: s.tuple,
                            }),
                    );
                }
            }
            _ => {}
        }
        out
    }

    fn add(&mut self, now_ns: u64, delay_ns: u64, token: u32, tuple: FourTuple) {
        let conn = self.conns.entry(token).or_default();
        if conn.subflows.iter().any(|s| s.tuple == tuple) {
            return;
        }
        conn.subflows.push(Subflow {
            tuple,
            decided: false,
            throttled: false,
        });
        if conn.subflows.len() >= 2 && conn.eligible_at_ns.is_none() {
            conn.eligible_at_ns = Some(now_ns.saturating_add(delay_ns));
        }
    }

    /// The earliest time [`Self::poll`] has something to decide, ns.
    pub fn next_deadline_ns(&self) -> Option<u64> {
        self.conns
            .values()
            .filter(|c| c.subflows.iter().any(|s| !s.decided))
            .filter_map(|c| c.eligible_at_ns)
            .min()
    }

    /// Decide the subflows of every connection whose delay has passed.
    /// `interface_of` names the proxy's egress device toward a subflow's
    /// client (for rules on `interface`); `None` if unknown.
    pub fn poll(
        &mut self,
        now_ns: u64,
        mut interface_of: impl FnMut(&FourTuple) -> Option<String>,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        for (&token, conn) in &mut self.conns {
            if conn.eligible_at_ns.is_none_or(|t| t > now_ns) {
                continue;
            }
            for sf in conn.subflows.iter_mut().filter(|s| !s.decided) {
                sf.decided = true;
                let dev = interface_of(&sf.tuple);
                let view = SubflowView {
                    tuple: &sf.tuple,
                    interface: dev.as_deref(),
                };
                if let Some(rate_bps) = self.policy.decide(&view) {
                    sf.throttled = true;
                    out.push(Action::Throttle {
                        token,
                        tuple: sf.tuple,
                        rate_bps,
                    });
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mptcp::pm_events::{ConnectionEvent, SubflowEvent};

    fn t(local: &str, remote: &str) -> FourTuple {
        FourTuple {
            local: local.parse().unwrap(),
            remote: remote.parse().unwrap(),
        }
    }

    fn sub(token: u32, tuple: FourTuple) -> SubflowEvent {
        SubflowEvent {
            token,
            family: 2,
            tuple,
            loc_id: 0,
            rem_id: 1,
            backup: false,
            if_idx: None,
            error: None,
            reset_reason: None,
            reset_flags: None,
        }
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn throttles_after_two_subflows_and_the_delay_then_releases() {
        let policy = Policy::from_flags(&["client=10.0.2.0/24,rate=5mbit".into()], 100).unwrap();
        let mut s = Steering::new(policy);
        let first = t("10.0.1.1:80", "10.0.1.2:40000");
        let second = t("10.0.2.1:80", "10.0.2.2:40001");
        let created = PmEvent::Created(ConnectionEvent {
            token: 7,
            family: 2,
            tuple: first,
            server_side: true,
            flags: 0,
        });
        assert!(s.on_event(0, &created).is_empty());
        assert!(s.poll(10 * MS, |_| None).is_empty());
        assert_eq!(s.next_deadline_ns(), None); // one subflow: never eligible
        assert!(s
            .on_event(20 * MS, &PmEvent::SubEstablished(sub(7, second)))
            .is_empty());
        assert_eq!(s.next_deadline_ns(), Some(120 * MS));
        assert!(s.poll(119 * MS, |_| None).is_empty());
        assert_eq!(
            s.poll(120 * MS, |_| None),
            vec![Action::Throttle {
                token: 7,
                tuple: second,
                rate_bps: 5_000_000
            }]
        );
        assert!(s.poll(200 * MS, |_| None).is_empty()); // decided once
        assert_eq!(s.subflows(7), vec![first, second]);
        // The unthrottled path closes: one subflow left, lift the throttle.
        let out = s.on_event(300 * MS, &PmEvent::SubClosed(sub(7, first)));
        assert_eq!(
            out,
            vec![Action::Release {
                token: 7,
                tuple: second
            }]
        );
        assert!(s.on_event(400 * MS, &PmEvent::Closed { token: 7 }).is_empty());
        assert!(s.subflows(7).is_empty());
    }

    #[test]
    fn closing_a_throttled_connection_releases_and_interface_rules_use_the_lookup() {
        let policy = Policy::from_flags(&["interface=eth1,rate=1M".into()], 0).unwrap();
        let mut s = Steering::new(policy);
        let a = t("10.0.1.1:80", "10.0.1.2:1");
        let b = t("10.0.2.1:80", "10.0.2.2:2");
        s.on_event(0, &PmEvent::SubEstablished(sub(1, a)));
        s.on_event(0, &PmEvent::SubEstablished(sub(1, b)));
        let out = s.poll(0, |x| Some(if x == &b { "eth1".into() } else { "eth0".into() }));
        assert_eq!(
            out,
            vec![Action::Throttle {
                token: 1,
                tuple: b,
                rate_bps: 1_000_000
            }]
        );
        assert_eq!(
            s.on_event(5, &PmEvent::Closed { token: 1 }),
            vec![Action::Release { token: 1, tuple: b }]
        );
    }
}
