//! Pick arrays as ranges of a few shared orders of the hosts ("chains").
//!
//! Selectors whose key sets nest (`{a} ⊂ {a, b} ⊂ {a, b, c}`) form a chain. Sorted by their
//! value of `a`, then of `b`, then of `c` (hosts without a key last), the hosts of every subset
//! of every selector of the chain are one contiguous range of that order. The chain's sets then
//! share one array of n slots instead of one per selector. All 15 selectors of 4 keys fit in 6
//! chains (the most selectors of which none nests in another: Dilworth), so the 4 keys × 3
//! values scheme keeps 6 slots per host instead of 15. A chain costs one counting sort per
//! build, where each set used to extract its members from a bitset.
//!
//! Chains assume one value per key and host; with `list_as_any` (a host in several subsets of
//! a selector) every set keeps members of its own, as does a selector whose chain's values
//! need more buckets than [`MAX_BITS`] (or the host count) allows.

use alloc::{vec, vec::Vec};

use super::Index;
use crate::subset::Selector;

/// Bits of a chain's sort key, its counting sort's buckets, when the hosts are fewer; else as
/// many bits as the host count has.
const MAX_BITS: u32 = 12;

/// Chains of selectors whose key sets nest, and each selector's chain.
pub(super) struct Plan {
    /// Per chain, its keys in sort order: its first selector's keys, then what each next one
    /// adds.
    keys: Vec<Vec<u32>>,
    /// Per selector, its chain.
    of: Vec<Option<usize>>,
}

impl Plan {
    /// Chains by a greedy cover: selectors by key count, each on the first chain it extends.
    pub fn new(selectors: &[Selector], list_as_any: bool) -> Plan {
        let mut plan = Plan {
            keys: Vec::new(),
            of: vec![None; selectors.len()],
        };
        if list_as_any {
            return plan;
        }
        let mut order: Vec<usize> = (0..selectors.len()).collect();
        order.sort_by_key(|&i| selectors[i].keys.len());
        let mut tops: Vec<usize> = Vec::new();
        for i in order {
            let keys = &selectors[i].keys;
            let extends = |&t: &usize| selectors[t].keys.iter().all(|k| keys.contains(k));
            let c = match tops.iter().position(extends) {
                Some(c) => c,
                None => {
                    plan.keys.push(Vec::new());
                    tops.push(i);
                    tops.len() - 1
                }
            };
            tops[c] = i;
            let chain = &mut plan.keys[c];
            for &k in keys.iter() {
                if !chain.contains(&k) {
                    chain.push(k);
                }
            }
            plan.of[i] = Some(c);
        }
        plan
    }

    #[cfg(test)]
    pub fn chains(&self) -> usize {
        self.keys.len()
    }
}

/// A chain's hosts in order, with what finds a subset's range in it.
struct Sorted {
    /// Where the chain starts in `SubsetLb::chains`.
    base: u32,
    /// Per sort key, where its hosts start (one more at the end: the chain's length).
    starts: Vec<u32>,
    /// Per chain key that fits the sort key, the shift of its field.
    shifts: Vec<u32>,
}

/// The chains of one build, each sorted when a set first needs it.
pub(super) struct Chains {
    plan: Plan,
    sorted: Vec<Option<Sorted>>,
    /// Per key id, each host's rank among the key's values (the value count if it has none);
    /// made once for all chains with that key (empty: not made yet).
    ranks: Vec<Vec<u32>>,
}

impl Chains {
    pub fn new(plan: Plan) -> Chains {
        let sorted = plan.keys.iter().map(|_| None).collect();
        Chains {
            plan,
            sorted,
            ranks: Vec::new(),
        }
    }

    /// Where in `chains` the `len` hosts of the subset with value ids `kvs` (one per key of
    /// `selector`, in its key order) are, sorting their chain into `chains` first if needed;
    /// `None` if the selector has no usable chain: its sets then keep their own members.
    pub fn range(
        &mut self,
        selector: &Selector,
        index: u8,
        kvs: &[u32],
        len: usize,
        hosts: &Index,
        chains: &mut Vec<u32>,
    ) -> Option<u32> {
        let c = self.plan.of[usize::from(index)]?;
        if self.sorted[c].is_none() {
            let sorted = self.sort(c, hosts, chains)?;
            self.sorted[c] = Some(sorted);
        }
        let sorted = self.sorted[c].as_ref()?;
        let depth = selector.keys.len();
        if depth == 0 || depth > sorted.shifts.len() {
            return None;
        }
        let mut prefix = 0usize;
        for (&key, &shift) in self.plan.keys[c].iter().zip(&sorted.shifts).take(depth) {
            let kv = kvs[selector.keys.binary_search(&key).ok()?];
            let rank = hosts.values(key).binary_search(&kv).ok()?;
            prefix |= rank << shift;
        }
        let start = *sorted.starts.get(prefix)?;
        let end = *sorted
            .starts
            .get(prefix + (1 << sorted.shifts[depth - 1]))?;
        // Every host in the range has the subset's values (ranks are of values a host has),
        // so as many as the bitsets counted are the subset's hosts. Not as many: a host broke
        // the one value per key, and the subset keeps its own members.
        (end - start == len as u32).then_some(sorted.base + start)
    }

    /// Chain `c`'s hosts sorted by their ranks of its keys, the first most significant, as
    /// many keys as fit a counting sort's buckets, appended to `chains`; only the hosts with
    /// its first key, which every selector of the chain has (a rare key makes a short chain).
    fn sort(&mut self, c: usize, hosts: &Index, chains: &mut Vec<u32>) -> Option<Sorted> {
        let n = hosts.hosts();
        let keys = &self.plan.keys[c];
        let most = MAX_BITS.max(usize::BITS - n.leading_zeros());
        let (mut shifts, mut total) = (Vec::new(), 0u32);
        for &key in keys {
            let bits = u32::BITS - (hosts.values(key).len() as u32).leading_zeros();
            if total + bits > most {
                break;
            }
            total += bits;
            shifts.push(bits);
        }
        if shifts.is_empty() {
            return None;
        }
        let mut used = 0;
        for shift in shifts.iter_mut() {
            used += *shift;
            *shift = total - used;
        }
        let mut sort_keys = vec![0u32; n];
        for (&key, &shift) in keys.iter().zip(&shifts) {
            for (k, &rank) in sort_keys
                .iter_mut()
                .zip(ranks_of(&mut self.ranks, key, hosts))
            {
                *k |= rank << shift;
            }
        }
        // A counting sort: slots in ascending order within a bucket.
        let mut starts = vec![0u32; (1 << total) + 1];
        for &k in &sort_keys {
            starts[k as usize + 1] += 1;
        }
        for b in 0..1 << total {
            starts[b + 1] += starts[b];
        }
        // Hosts without the first key sort last, from the first key's missing rank on.
        let cutoff = (hosts.values(keys[0]).len() as u32) << shifts[0];
        let base = u32::try_from(chains.len()).ok()?;
        chains.resize(chains.len() + starts[cutoff as usize] as usize, 0);
        let chain = &mut chains[base as usize..];
        let mut at = starts.clone();
        for (s, &k) in sort_keys.iter().enumerate() {
            if k < cutoff {
                let to = &mut at[k as usize];
                chain[*to as usize] = s as u32;
                *to += 1;
            }
        }
        Some(Sorted {
            base,
            starts,
            shifts,
        })
    }
}

/// Each host's rank among `key`'s values, made once (see `Chains::ranks`).
fn ranks_of<'r>(made: &'r mut Vec<Vec<u32>>, key: u32, hosts: &Index) -> &'r [u32] {
    let k = key as usize;
    if made.len() <= k {
        made.resize_with(k + 1, Vec::new);
    }
    if made[k].is_empty() {
        let values = hosts.values(key);
        let mut ranks = vec![values.len() as u32; hosts.hosts()];
        for (rank, &kv) in values.iter().enumerate() {
            for &s in hosts.list(kv) {
                ranks[s as usize] = rank as u32;
            }
        }
        made[k] = ranks;
    }
    &made[k]
}

#[cfg(test)]
mod tests;
