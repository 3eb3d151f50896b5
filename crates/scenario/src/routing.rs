//! Static shortest-path routing, precomputed.
//!
//! Paths minimise hop count, then total propagation delay, then prefer the
//! lower link index, so the choice is deterministic. Only the (source,
//! destination) pairs that flows use are routed ([`Router`]): on a tree (every
//! built-in topology) by walking the unique path, elsewhere by one Dijkstra
//! over the reversed graph per destination, which gives every node's next
//! link toward it. A flow's path is then a plain slice of link indices, so
//! forwarding a packet costs an index, never a lookup.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The graph as routing sees it.
pub struct Graph {
    n_nodes: usize,
    /// For each node, the links entering it: (link index, from node, delay).
    incoming: Vec<Vec<(u32, u32, u64)>>,
}

impl Graph {
    /// `links[i] = (src, dst, delay_ns)`.
    pub fn new(n_nodes: usize, links: &[(u32, u32, u64)]) -> Self {
        let mut incoming = vec![Vec::new(); n_nodes];
        for (i, &(src, dst, delay)) in links.iter().enumerate() {
            incoming[dst as usize].push((i as u32, src, delay));
        }
        Graph { n_nodes, incoming }
    }

    /// For every node, the link to take toward `dst` (None: unreachable or `dst` itself).
    pub fn next_links_to(&self, dst: u32) -> Vec<Option<u32>> {
        // cost = (hops, delay_ns, link index of the first hop)
        let mut best: Vec<Option<(u32, u64, u32)>> = vec![None; self.n_nodes];
        let mut next = vec![None; self.n_nodes];
        let mut heap = BinaryHeap::new();
        best[dst as usize] = Some((0, 0, 0));
        heap.push(Reverse((0u32, 0u64, 0u32, dst)));
        while let Some(Reverse((hops, delay, via, node))) = heap.pop() {
            if best[node as usize] != Some((hops, delay, via)) {
                continue;
            }
            for &(link, from, link_delay) in &self.incoming[node as usize] {
                let cand = (hops + 1, delay + link_delay, link);
                if best[from as usize].is_none_or(|b| cand < b) {
                    best[from as usize] = Some(cand);
                    next[from as usize] = Some(link);
                    heap.push(Reverse((cand.0, cand.1, cand.2, from)));
                }
            }
        }
        next
    }
}

/// Follow next-link pointers from `src`; `link_dst[i]` is link i's far node.
pub fn path(next: &[Option<u32>], link_dst: &[u32], src: u32, dst: u32) -> Option<Vec<u32>> {
    let mut path = Vec::new();
    let mut at = src;
    while at != dst {
        let link = next[at as usize]?;
        path.push(link);
        at = link_dst[link as usize];
        if path.len() > next.len() {
            return None; // cannot happen with consistent next pointers; never loop
        }
    }
    Some(path)
}

/// Every flow's paths, end to end in one vector.
///
/// Each path is a run of link indices closed by [`RouteTable::END`]. A
/// packet carries the position of the link it is on, so forwarding reads
/// the next entry of this (small, contiguous) table and never touches the
/// flow, whose state is large and scattered: at 10k flows that was the
/// busiest cache miss of the event loop.
#[derive(Debug, Clone, Default)]
pub struct RouteTable {
    links: Vec<u32>,
}

impl RouteTable {
    /// Closes every path.
    pub const END: u32 = u32::MAX;

    /// Store a path; returns its position (where its first link is).
    pub fn push(&mut self, path: &[u32]) -> u32 {
        let at = self.links.len() as u32;
        self.links.extend_from_slice(path);
        self.links.push(Self::END);
        at
    }

    /// The link at `pos`, or [`RouteTable::END`] past a path's last link.
    #[inline]
    pub fn link_at(&self, pos: u32) -> u32 {
        self.links[pos as usize]
    }

    /// The path starting at `pos`.
    pub fn path(&self, pos: u32) -> &[u32] {
        let rest = &self.links[pos as usize..];
        let len = rest.iter().position(|&l| l == Self::END).unwrap_or(rest.len());
        &rest[..len]
    }
}

/// Trees of the general router kept at once: enough that flows toward a few
/// hundred destinations share them, bounded so that a large custom graph
/// never holds one tree per destination (quadratic memory).
const TREE_CACHE_ENTRIES: usize = 1 << 22;

/// Routes for the (source, destination) pairs that flows ask for.
///
/// Every built-in topology, and many custom ones, is a tree (duplex links,
/// no cycles): there the only simple path is the shortest one, and the
/// router walks it through the lowest common ancestor in time linear in the
/// path, with memory linear in the network. Any other graph gets the exact
/// shortest-path trees of [`Graph::next_links_to`] (fewest hops, then least
/// delay, then lowest link index), a bounded number of them cached.
pub struct Router {
    link_dst: Vec<u32>,
    kind: RouterKind,
}

enum RouterKind {
    Tree(TreeIndex),
    General {
        graph: Graph,
        /// Destination → next links, oldest first for eviction.
        cache: std::collections::VecDeque<(u32, Vec<Option<u32>>)>,
        max_trees: usize,
    },
}

impl Router {
    /// `links[i] = (src, dst, delay_ns)`.
    pub fn new(n_nodes: usize, links: &[(u32, u32, u64)]) -> Self {
        let link_dst = links.iter().map(|l| l.1).collect();
        let kind = match TreeIndex::new(n_nodes, links) {
            Some(t) => RouterKind::Tree(t),
            None => RouterKind::General {
                graph: Graph::new(n_nodes, links),
                cache: Default::default(),
                max_trees: (TREE_CACHE_ENTRIES / n_nodes.max(1)).max(1),
            },
        };
        Router { link_dst, kind }
    }

    /// Whether the graph was recognised as a tree (routes walked, not searched).
    pub fn is_tree(&self) -> bool {
        matches!(self.kind, RouterKind::Tree(_))
    }

    /// The links from `src` to `dst`, or None if `dst` cannot be reached.
    pub fn route(&mut self, src: u32, dst: u32) -> Option<Vec<u32>> {
        match &mut self.kind {
            RouterKind::Tree(t) => t.route(src, dst),
            RouterKind::General {
                graph,
                cache,
                max_trees,
            } => {
                let pos = match cache.iter().position(|(d, _)| *d == dst) {
                    Some(pos) => pos,
                    None => {
                        if cache.len() == *max_trees {
                            cache.pop_front();
                        }
                        cache.push_back((dst, graph.next_links_to(dst)));
                        cache.len() - 1
                    }
                };
                path(&cache[pos].1, &self.link_dst, src, dst)
            }
        }
    }
}

/// A forest of duplex links rooted per component: parent pointers, depths
/// and the links up and down each tree edge.
struct TreeIndex {
    parent: Vec<u32>,
    depth: Vec<u32>,
    /// Link from a node to its parent, and from its parent to it.
    up: Vec<Option<u32>>,
    down: Vec<Option<u32>>,
    component: Vec<u32>,
}

impl TreeIndex {
    /// None unless the links form a forest: no self-loop, at most one link
    /// per direction between two nodes, and no cycle in the undirected
    /// graph. Then the simple path between two nodes is unique, so it is
    /// also the one [`Graph::next_links_to`] would choose.
    fn new(n: usize, links: &[(u32, u32, u64)]) -> Option<Self> {
        // Undirected adjacency with, per neighbour pair, the links each way.
        let mut adj: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
        for (i, &(a, b, _)) in links.iter().enumerate() {
            if a == b {
                return None;
            }
            adj[a as usize].push((b, i as u32));
            adj[b as usize].push((a, i as u32));
        }
        const NONE: u32 = u32::MAX;
        let mut idx = TreeIndex {
            parent: vec![NONE; n],
            depth: vec![0; n],
            up: vec![None; n],
            down: vec![None; n],
            component: vec![NONE; n],
        };
        let mut stack = Vec::new();
        for root in 0..n as u32 {
            if idx.component[root as usize] != NONE {
                continue;
            }
            idx.component[root as usize] = root;
            stack.push(root);
            while let Some(u) = stack.pop() {
                for &(v, link) in &adj[u as usize] {
                    let (from, _, _) = links[link as usize];
                    let v_u = v as usize;
                    // A tree edge already known (u's parent, or a child found
                    // through the other direction's link): record this link's
                    // direction; a second link the same way is a parallel link.
                    let slot = if idx.parent[u as usize] == v {
                        Some(if from == u {
                            &mut idx.up[u as usize]
                        } else {
                            &mut idx.down[u as usize]
                        })
                    } else if idx.parent[v_u] == u {
                        Some(if from == u {
                            &mut idx.down[v_u]
                        } else {
                            &mut idx.up[v_u]
                        })
                    } else {
                        None
                    };
                    if let Some(slot) = slot {
                        match *slot {
                            Some(l) if l == link => {}
                            Some(_) => return None,
                            None => *slot = Some(link),
                        }
                        continue;
                    }
                    if idx.component[v_u] != NONE {
                        return None; // a cycle
                    }
                    idx.component[v_u] = root;
                    idx.parent[v_u] = u;
                    idx.depth[v_u] = idx.depth[u as usize] + 1;
                    if from == u {
                        idx.down[v_u] = Some(link);
                    } else {
                        idx.up[v_u] = Some(link);
                    }
                    stack.push(v);
                }
            }
        }
        Some(idx)
    }

    fn route(&self, src: u32, dst: u32) -> Option<Vec<u32>> {
        if self.component[src as usize] != self.component[dst as usize] {
            return None;
        }
        let (mut a, mut b) = (src, dst);
        let mut ups = Vec::new();
        let mut downs = Vec::new();
        while self.depth[a as usize] > self.depth[b as usize] {
            ups.push(self.up[a as usize]?);
            a = self.parent[a as usize];
        }
        while self.depth[b as usize] > self.depth[a as usize] {
            downs.push(self.down[b as usize]?);
            b = self.parent[b as usize];
        }
        while a != b {
            ups.push(self.up[a as usize]?);
            downs.push(self.down[b as usize]?);
            a = self.parent[a as usize];
            b = self.parent[b as usize];
        }
        ups.extend(downs.into_iter().rev());
        Some(ups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefers_fewer_hops_then_lower_delay() {
        // 0 -> 1 -> 3 (delays 5, 5), 0 -> 2 -> 3 (1, 1), 0 -> 3 direct (100)
        let links = [(0, 1, 5), (1, 3, 5), (0, 2, 1), (2, 3, 1), (0, 3, 100)];
        let g = Graph::new(4, &links);
        let next = g.next_links_to(3);
        let dsts: Vec<u32> = links.iter().map(|l| l.1).collect();
        assert_eq!(path(&next, &dsts, 0, 3), Some(vec![4]));
        let links2 = [(0, 1, 5), (1, 3, 5), (0, 2, 1), (2, 3, 1)];
        let g2 = Graph::new(4, &links2);
        let next2 = g2.next_links_to(3);
        let dsts2: Vec<u32> = links2.iter().map(|l| l.1).collect();
        assert_eq!(path(&next2, &dsts2, 0, 3), Some(vec![2, 3]));
        assert_eq!(path(&next2, &dsts2, 3, 0), None);
    }

    /// The old router: one full tree per destination, every tree kept.
    fn reference(n: usize, links: &[(u32, u32, u64)], src: u32, dst: u32) -> Option<Vec<u32>> {
        let dsts: Vec<u32> = links.iter().map(|l| l.1).collect();
        path(&Graph::new(n, links).next_links_to(dst), &dsts, src, dst)
    }

    fn lcg(state: &mut u64) -> u64 {
        *state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *state >> 33
    }

    fn check_all_pairs(n: usize, links: &[(u32, u32, u64)]) -> bool {
        let mut r = Router::new(n, links);
        for s in 0..n as u32 {
            for d in 0..n as u32 {
                if s != d {
                    assert_eq!(r.route(s, d), reference(n, links, s, d), "{s}->{d} in {links:?}");
                }
            }
        }
        r.is_tree()
    }

    #[test]
    fn router_picks_the_same_paths_as_full_trees_on_random_graphs() {
        let mut st = 7u64;
        let (mut trees, mut general) = (0, 0);
        for case in 0..400 {
            let n = 2 + (lcg(&mut st) % 12) as usize;
            let mut links = Vec::new();
            // A random tree, duplex (sometimes one way only), ...
            for v in 1..n as u32 {
                let p = (lcg(&mut st) % v as u64) as u32;
                let d = lcg(&mut st) % 50;
                match lcg(&mut st) % 6 {
                    0 => links.push((p, v, d)),
                    1 => links.push((v, p, d)),
                    _ => {
                        links.push((p, v, d));
                        links.push((v, p, lcg(&mut st) % 50));
                    }
                }
            }
            // ... plus, in half the cases, extra links that make cycles or
            // parallel links, with ties in delay.
            if case % 2 == 1 {
                for _ in 0..1 + lcg(&mut st) % 4 {
                    let a = (lcg(&mut st) % n as u64) as u32;
                    let b = (lcg(&mut st) % n as u64) as u32;
                    links.push((a, b, lcg(&mut st) % 3 * 10));
                }
            }
            // Shuffle link order so the lowest-index tie-break is exercised.
            for i in (1..links.len()).rev() {
                let j = (lcg(&mut st) % (i as u64 + 1)) as usize;
                links.swap(i, j);
            }
            if check_all_pairs(n, &links) {
                trees += 1;
            } else {
                general += 1;
            }
        }
        assert!(trees > 150 && general > 100, "trees {trees}, general {general}");
    }

    #[test]
    fn a_small_tree_cache_still_routes_exactly() {
        // A ring (not a tree) with more destinations than the cache holds.
        let n = 9u32;
        let links: Vec<(u32, u32, u64)> = (0..n)
            .flat_map(|i| [(i, (i + 1) % n, 1), ((i + 1) % n, i, 2)])
            .collect();
        let mut r = Router::new(n as usize, &links);
        assert!(!r.is_tree());
        if let RouterKind::General { max_trees, .. } = &mut r.kind {
            *max_trees = 2;
        }
        for round in 0..2 {
            for d in 0..n {
                for s in 0..n {
                    if s != d {
                        assert_eq!(
                            r.route(s, d),
                            reference(n as usize, &links, s, d),
                            "round {round}"
                        );
                    }
                }
            }
        }
    }
}
