//! Static shortest-path routing, precomputed.
//!
//! Paths minimise hop count, then total propagation delay, then prefer the
//! lower link index, so the choice is deterministic. One Dijkstra over the
//! reversed graph per distinct destination gives every node's next link
//! toward it; a flow's path is then a plain `Vec` of link indices, so
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
}
