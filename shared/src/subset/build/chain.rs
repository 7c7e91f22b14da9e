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
//! a selector) every set keeps members of its own, as does a selector whose chain's values do
//! not fit a 32-bit sort key.

use alloc::{vec, vec::Vec};

use super::Index;
use crate::subset::Selector;

/// Bits of the sort key per counting pass.
const DIGIT: u32 = 11;

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
    /// Per position, its host's sort key (high half) and slot (low half), ascending.
    keys: Vec<u64>,
    /// Per chain key that fits the sort key, the shift of its field.
    shifts: Vec<u32>,
}

/// The chains of one build, each sorted when a set first needs it.
pub(super) struct Chains {
    plan: Plan,
    sorted: Vec<Option<Sorted>>,
    /// Per key id, each host's rank among the key's values (the value count if it has none);
    /// made once for all chains with that key. Empty: not made; `None`: a host has two
    /// values (chains with that key are not used).
    ranks: Vec<Option<Vec<u32>>>,
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
        let mut prefix = 0u64;
        for (&key, &shift) in self.plan.keys[c].iter().zip(&sorted.shifts).take(depth) {
            let kv = kvs[selector.keys.binary_search(&key).ok()?];
            let rank = hosts.values(key).binary_search(&kv).ok()?;
            prefix |= (rank as u64) << shift;
        }
        let end = prefix + (1 << sorted.shifts[depth - 1]);
        let start = sorted.keys.partition_point(|&k| k >> 32 < prefix);
        // The bitsets counted `len` hosts with these values: the range is theirs exactly
        // when its last one still has them.
        let last = *sorted.keys.get((start + len).checked_sub(1)?)?;
        (last >> 32 < end).then(|| sorted.base + start as u32)
    }

    /// Chain `c`'s hosts sorted by their ranks of its keys, the first most significant (as
    /// many keys as fit in 32 bits), appended to `chains`.
    fn sort(&mut self, c: usize, hosts: &Index, chains: &mut Vec<u32>) -> Option<Sorted> {
        let keys = &self.plan.keys[c];
        let (mut shifts, mut total) = (Vec::new(), 0u32);
        for &key in keys {
            let bits = u32::BITS - (hosts.values(key).len() as u32).leading_zeros();
            if total + bits > 32 {
                break;
            }
            total += bits;
            shifts.push(bits);
        }
        let mut used = 0;
        for shift in shifts.iter_mut() {
            used += *shift;
            *shift = total - used;
        }
        for &key in &keys[..shifts.len()] {
            ranks_of(&mut self.ranks, key, hosts);
        }
        let columns: Vec<(&[u32], u32)> = keys
            .iter()
            .zip(&shifts)
            .map(|(&k, &shift)| Some((self.ranks[k as usize].as_deref()?, shift)))
            .collect::<Option<_>>()?;
        let mut packed: Vec<u64> = (0..hosts.hosts() as u64).collect();
        for (column, shift) in columns {
            for (p, &rank) in packed.iter_mut().zip(column) {
                *p |= u64::from(rank) << (shift + 32);
            }
        }
        let keys = radix_sort(packed, total);
        let base = u32::try_from(chains.len()).ok()?;
        chains.extend(keys.iter().map(|&p| p as u32));
        Some(Sorted { base, keys, shifts })
    }
}

/// Makes each host's rank among `key`'s values, if not made yet (see `Chains::ranks`).
fn ranks_of(made: &mut Vec<Option<Vec<u32>>>, key: u32, hosts: &Index) {
    let k = key as usize;
    if made.len() <= k {
        made.resize_with(k + 1, || Some(Vec::new()));
    }
    if made[k].as_ref().is_none_or(|r| !r.is_empty()) {
        return;
    }
    let values = hosts.values(key);
    let none = values.len() as u32;
    let mut ranks = vec![none; hosts.hosts()];
    for (rank, &kv) in values.iter().enumerate() {
        for &s in hosts.list(kv) {
            if ranks[s as usize] != none {
                made[k] = None;
                return;
            }
            ranks[s as usize] = rank as u32;
        }
    }
    made[k] = Some(ranks);
}

/// `packed` sorted stably by bits `32..32 + bits` (the rest is zero there): least
/// significant digit first, a counting pass per digit.
fn radix_sort(packed: Vec<u64>, bits: u32) -> Vec<u64> {
    let (mut packed, mut next) = (packed, Vec::new());
    let mut low = 32;
    while low < 32 + bits {
        let width = DIGIT.min(32 + bits - low);
        let digit = |p: u64| ((p >> low) & ((1 << width) - 1)) as usize;
        let mut at = vec![0u32; (1 << width) + 1];
        for &p in &packed {
            at[digit(p) + 1] += 1;
        }
        for d in 0..1 << width {
            at[d + 1] += at[d];
        }
        next.resize(packed.len(), 0);
        for &p in &packed {
            let to = &mut at[digit(p)];
            next[*to as usize] = p;
            *to += 1;
        }
        core::mem::swap(&mut packed, &mut next);
        low += width;
    }
    packed
}

#[cfg(test)]
mod tests;
