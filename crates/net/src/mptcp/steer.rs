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
//!
//! The events alone are not enough to lift every throttle: a netlink
//! socket that overruns (ENOBUFS) drops SUB_CLOSED and CLOSED events, and a
//! rule whose release event is lost would stay on the device. So two more
//! inputs lift throttles without an event: the proxy's own close of a
//! connection ([`Steering::on_local_close`]: every rule of its token goes,
//! and late events of that token are ignored), and a reconciliation
//! against the subflows the kernel still has ([`Steering::reconcile`]).

use std::collections::{BTreeMap, BTreeSet, VecDeque};

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

/// How long the token of a connection the proxy closed stays retired:
/// events of that token read later (the netlink socket lags the proxy's
/// loop) must not bring the connection back and throttle a dead subflow.
/// Tokens are random 32-bit numbers, so a new connection reusing one
/// within this time is as good as impossible.
pub const RETIRED_TOKEN_KEEP_NS: u64 = 60_000_000_000;

#[derive(Debug)]
pub struct Steering {
    policy: Policy,
    conns: BTreeMap<u32, Connection>,
    /// Tokens closed by the proxy, with when; `retired_order` expires them.
    retired: BTreeMap<u32, u64>,
    retired_order: VecDeque<(u64, u32)>,
}

impl Steering {
    pub fn new(policy: Policy) -> Steering {
        Steering {
            policy,
            conns: BTreeMap::new(),
            retired: BTreeMap::new(),
            retired_order: VecDeque::new(),
        }
    }

    /// Connections tracked now (events seen, not closed).
    pub fn connections(&self) -> usize {
        self.conns.len()
    }

    /// Every subflow tracked now, of all connections.
    pub fn all_subflows(&self) -> impl Iterator<Item = FourTuple> + '_ {
        self.conns
            .values()
            .flat_map(|c| c.subflows.iter().map(|s| s.tuple))
    }

    /// Subflows a throttle was asked for and not yet lifted.
    pub fn throttled(&self) -> BTreeSet<FourTuple> {
        self.conns
            .values()
            .flat_map(|c| c.subflows.iter().filter(|s| s.throttled).map(|s| s.tuple))
            .collect()
    }

    /// The proxy closed the connection with this token: lift all its
    /// throttles now, whatever events come (or never come) later.
    pub fn on_local_close(&mut self, now_ns: u64, token: u32) -> Vec<Action> {
        self.expire_retired(now_ns);
        if let std::collections::btree_map::Entry::Vacant(e) = self.retired.entry(token) {
            e.insert(now_ns);
            self.retired_order.push_back((now_ns, token));
        }
        self.conns
            .remove(&token)
            .map(|conn| release_all(token, conn.subflows))
            .unwrap_or_default()
    }

    fn expire_retired(&mut self, now_ns: u64) {
        while let Some(&(t, token)) = self.retired_order.front() {
            if now_ns.saturating_sub(t) < RETIRED_TOKEN_KEEP_NS {
                break;
            }
            self.retired_order.pop_front();
            if self.retired.get(&token) == Some(&t) {
                self.retired.remove(&token);
            }
        }
    }

    /// Forget every subflow for which `alive` is false (the kernel no longer
    /// has it: its SUB_CLOSED or CLOSED event was lost) and lift its
    /// throttle; connections left with fewer than two subflows are lifted
    /// entirely, those left with none forgotten.
    pub fn reconcile(&mut self, mut alive: impl FnMut(&FourTuple) -> bool) -> Vec<Action> {
        let mut out = Vec::new();
        let tokens: Vec<u32> = self.conns.keys().copied().collect();
        for token in tokens {
            let gone: Vec<FourTuple> = self.conns[&token]
                .subflows
                .iter()
                .filter(|s| !alive(&s.tuple))
                .map(|s| s.tuple)
                .collect();
            for tuple in gone {
                out.extend(self.subflow_closed(token, &tuple));
            }
            if self.conns[&token].subflows.is_empty() {
                self.conns.remove(&token);
            }
        }
        out
    }

    /// One subflow of `token` is gone: its release, and the others' when
    /// fewer than two remain.
    fn subflow_closed(&mut self, token: u32, tuple: &FourTuple) -> Vec<Action> {
        let mut out = Vec::new();
        let Some(conn) = self.conns.get_mut(&token) else {
            return out;
        };
        if let Some(i) = conn.subflows.iter().position(|x| x.tuple == *tuple) {
            let gone = conn.subflows.remove(i);
            if gone.throttled {
                out.push(Action::Release {
                    token,
                    tuple: gone.tuple,
                });
            }
        }
        if conn.subflows.len() < 2 {
            conn.eligible_at_ns = None;
            for sf in &mut conn.subflows {
                if sf.throttled {
                    out.push(Action::Release {
                        token,
                        tuple: sf.tuple,
                    });
                }
                sf.throttled = false;
                sf.decided = false;
            }
        }
        out
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
            PmEvent::SubClosed(s) => out = self.subflow_closed(s.token, &s.tuple),
            PmEvent::Closed { token } => {
                self.retired.remove(token);
                if let Some(conn) = self.conns.remove(token) {
                    out = release_all(*token, conn.subflows);
                }
            }
            _ => {}
        }
        out
    }

    fn add(&mut self, now_ns: u64, delay_ns: u64, token: u32, tuple: FourTuple) {
        if self.retired.contains_key(&token) {
            return; // the proxy closed it already
        }
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

fn release_all(token: u32, subflows: Vec<Subflow>) -> Vec<Action> {
    subflows
        .into_iter()
        .filter(|s| s.throttled)
        .map(|s| Action::Release {
            token,
            tuple: s.tuple,
        })
        .collect()
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

    fn two_subflows_throttled(s: &mut Steering, token: u32, a: FourTuple, b: FourTuple) {
        s.on_event(0, &PmEvent::SubEstablished(sub(token, a)));
        s.on_event(0, &PmEvent::SubEstablished(sub(token, b)));
        assert_eq!(s.poll(0, |_| None).len(), 1);
    }

    #[test]
    fn the_proxys_close_releases_without_events_and_late_events_are_ignored() {
        let policy = Policy::from_flags(&["client=10.0.2.0/24,rate=5mbit".into()], 0).unwrap();
        let mut s = Steering::new(policy);
        let a = t("10.0.1.1:80", "10.0.1.2:1");
        let b = t("10.0.2.1:80", "10.0.2.2:2");
        two_subflows_throttled(&mut s, 3, a, b);
        assert_eq!(s.throttled(), BTreeSet::from([b]));
        // SUB_CLOSED and CLOSED lost: the proxy's close lifts the throttle.
        assert_eq!(
            s.on_local_close(MS, 3),
            vec![Action::Release { token: 3, tuple: b }]
        );
        assert_eq!((s.connections(), s.throttled().len()), (0, 0));
        // Events of the closed connection read afterwards bring nothing back.
        s.on_event(2 * MS, &PmEvent::SubEstablished(sub(3, a)));
        s.on_event(2 * MS, &PmEvent::SubEstablished(sub(3, b)));
        assert!(s.poll(3 * MS, |_| None).is_empty());
        assert_eq!(s.connections(), 0);
        // A second close, or one of an unknown token, is harmless.
        assert!(s.on_local_close(4 * MS, 3).is_empty());
        assert!(s.on_local_close(4 * MS, 99).is_empty());
        // After the keep time the token is forgotten.
        s.on_local_close(RETIRED_TOKEN_KEEP_NS + 5 * MS, 100);
        assert!(!s.retired.contains_key(&3));
        assert!(s.retired.contains_key(&100));
        // CLOSED retires nothing: the kernel is done with that token.
        s.on_event(6 * MS, &PmEvent::Closed { token: 100 });
        assert!(s.retired.is_empty());
    }

    #[test]
    fn reconcile_releases_what_the_kernel_no_longer_has() {
        let policy = Policy::from_flags(&["client=10.0.2.0/24,rate=5mbit".into()], 0).unwrap();
        let mut s = Steering::new(policy);
        let (a1, b1) = (t("10.0.1.1:80", "10.0.1.2:1"), t("10.0.2.1:80", "10.0.2.2:1"));
        let (a2, b2) = (t("10.0.1.1:80", "10.0.1.2:2"), t("10.0.2.1:80", "10.0.2.2:2"));
        let (a3, b3) = (t("10.0.1.1:80", "10.0.1.2:3"), t("10.0.2.1:80", "10.0.2.2:3"));
        two_subflows_throttled(&mut s, 1, a1, b1);
        two_subflows_throttled(&mut s, 2, a2, b2);
        two_subflows_throttled(&mut s, 3, a3, b3);
        // Connection 1 is gone entirely, connection 2 lost its first
        // subflow (one left: its throttle goes too), connection 3 is intact.
        let alive = BTreeSet::from([b2, a3, b3]);
        let mut out = s.reconcile(|x| alive.contains(x));
        out.sort_by_key(|a| match a {
            Action::Release { token, .. } | Action::Throttle { token, .. } => *token,
        });
        assert_eq!(
            out,
            vec![
                Action::Release { token: 1, tuple: b1 },
                Action::Release { token: 2, tuple: b2 }
            ]
        );
        assert_eq!(s.connections(), 2);
        assert_eq!(s.subflows(1), vec![]);
        assert_eq!(s.subflows(2), vec![b2]);
        assert_eq!(s.throttled(), BTreeSet::from([b3]));
        // Nothing more to do when nothing changed.
        assert!(s.reconcile(|x| alive.contains(x)).is_empty());
    }
}
