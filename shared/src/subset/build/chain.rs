//! Pick arrays as ranges of a few shared orders of the hosts ("chains").
//!
//! Selectors whose key sets nest (`{a} ⊂ {a, b} ⊂ {a, b, c}`) form a chain. Sorted by their
//! value of `a`, then of `b`, then of `c` (hosts without a key last), the hosts of every subset
//! of every selector of the chain are one contiguous range of that order. The chain's sets then
//! share one array of n slots instead of one per selector. All 15 selectors of 4 keys fit in 6
//! chains (the most selectors of which none nests in another: Dilworth), so the 4 keys × 3
//! values scheme keeps 6 slots per host instead of 15. The hosts are grouped once by their
//! values of every chain key (`Combos`, one counting sort), and each chain is its groups in its
//! key order, copied run by run; when all the chains' keys have too many values for that (a key
//! unique per host), each chain takes a counting sort of its own.
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

/// Most chains a build makes room for before the first is sorted.
const RESERVED_CHAINS: usize = 8;

/// The chains of one build, each sorted when a set first needs it.
pub(super) struct Chains {
    plan: Plan,
    sorted: Vec<Option<Sorted>>,
    /// Per key id, each host's rank among the key's values (the value count if it has none);
    /// made once for all chains with that key (empty: not made yet).
    ranks: Vec<Vec<u32>>,
    /// The hosts grouped by their ranks of every chain key, made at the first sort (`None`
    /// until then, `Some(None)` if the ranks do not fit a counting sort's buckets).
    combos: Option<Option<Combos>>,
}

impl Chains {
    pub fn new(plan: Plan) -> Chains {
        let sorted = plan.keys.iter().map(|_| None).collect();
        Chains {
            plan,
            sorted,
            ranks: Vec::new(),
            combos: None,
        }
    }

    /// [`Chains::new`] that sorts each chain by itself, never by groups, for tests.
    #[cfg(test)]
    pub fn ungrouped(plan: Plan) -> Chains {
        Chains {
            combos: Some(None),
            ..Chains::new(plan)
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
        let keys = &self.plan.keys[c];
        let (mut shifts, mut total) = (Vec::new(), 0u32);
        for &key in keys {
            let bits = rank_bits(hosts, key);
            if total + bits > most_bits(hosts) {
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
        // Hosts without the first key sort last, from the first key's missing rank on.
        let cutoff = (hosts.values(keys[0]).len() as u32) << shifts[0];
        let base = u32::try_from(chains.len()).ok()?;
        if self.combos.is_none() {
            self.combos = Some(Combos::new(&self.plan, hosts));
            // Room for the chains at once: grown by doubling, the buffer was copied about its
            // final size over (4% of a 100k-host build's cache misses). Capped, as a chain
            // may be short or never needed; the build shrinks the buffer when done.
            chains.reserve(self.plan.keys.len().min(RESERVED_CHAINS) * hosts.hosts());
        }
        let starts = match self.combos.as_ref().and_then(Option::as_ref) {
            Some(combos) => combos.chain(keys, &shifts, total, cutoff, chains),
            None => {
                let sort_keys = self.sort_keys(c, &shifts, hosts);
                counting_sort(&sort_keys, total, cutoff, chains)
            }
        };
        Some(Sorted {
            base,
            starts,
            shifts,
        })
    }

    /// Each host's sort key in chain `c`: its ranks of the chain's first keys at `shifts`.
    fn sort_keys(&mut self, c: usize, shifts: &[u32], hosts: &Index) -> Vec<u32> {
        let mut sort_keys = vec![0u32; hosts.hosts()];
        for (&key, &shift) in self.plan.keys[c].iter().zip(shifts) {
            let ranks = ranks_of(&mut self.ranks, key, hosts);
            for (k, &rank) in sort_keys.iter_mut().zip(ranks) {
                *k |= rank << shift;
            }
        }
        sort_keys
    }
}

/// Bits of a key's ranks, its missing rank (the value count) included.
fn rank_bits(hosts: &Index, key: u32) -> u32 {
    u32::BITS - (hosts.values(key).len() as u32).leading_zeros()
}

/// Bits a counting sort's keys may have: [`MAX_BITS`], or as many as the host count has.
fn most_bits(hosts: &Index) -> u32 {
    MAX_BITS.max(usize::BITS - hosts.hosts().leading_zeros())
}

/// Slots `0..` sorted by `sort_keys` (of `total` bits), ascending within a key, appended to
/// `chains` but for those of keys from `cutoff` on; returns where each key's slots start (one
/// more at the end).
fn counting_sort(sort_keys: &[u32], total: u32, cutoff: u32, chains: &mut Vec<u32>) -> Vec<u32> {
    let mut starts = vec![0u32; (1 << total) + 1];
    for &k in sort_keys {
        starts[k as usize + 1] += 1;
    }
    for b in 0..1 << total {
        starts[b + 1] += starts[b];
    }
    let base = chains.len();
    chains.resize(base + starts[cutoff as usize] as usize, 0);
    let chain = &mut chains[base..];
    let mut at = starts.clone();
    for (s, &k) in sort_keys.iter().enumerate() {
        if k < cutoff {
            let to = &mut at[k as usize];
            chain[*to as usize] = s as u32;
            *to += 1;
        }
    }
    starts
}

/// The hosts grouped by their ranks of every key of every chain at once, one group per
/// combination present: a chain's order is then its groups in its key order, copied run by
/// run. Sorting each chain by its own counting sort took a pass over every host to make its
/// keys and two more to sort them (the 4 keys x 3 values scheme has 6 chains).
struct Combos {
    /// Per key of the chains, its shift in a host's code (its ranks side by side).
    fields: Vec<(u32, u32)>,
    /// Bits of a code.
    total: u32,
    /// Slots by code, ascending within a code.
    order: Vec<u32>,
    /// Where each code's slots start in `order` (one more at the end).
    starts: Vec<u32>,
    /// The codes some host has, ascending.
    present: Vec<u32>,
}

impl Combos {
    /// The groups of `hosts`, or `None` if all the chains' ranks do not fit a counting sort's
    /// buckets (a key unique per host).
    fn new(plan: &Plan, hosts: &Index) -> Option<Combos> {
        let mut fields: Vec<(u32, u32)> = Vec::new();
        let mut total = 0;
        for &key in plan.keys.iter().flatten() {
            if fields.iter().all(|&(k, _)| k != key) {
                fields.push((key, total));
                total += rank_bits(hosts, key);
            }
        }
        if total > most_bits(hosts) {
            return None;
        }
        // Each host's ranks written into its code from the index's lists, over the missing
        // ranks (as `ranks_of` makes them, the last value of a key a host has twice wins),
        // without a rank array per key.
        let missing = fields.iter().fold(0, |code, &(key, shift)| {
            code | (hosts.values(key).len() as u32) << shift
        });
        let mut codes = vec![missing; hosts.hosts()];
        for (at, &(key, shift)) in fields.iter().enumerate() {
            let field = ((1u32 << width(&fields, at, total)) - 1) << shift;
            for (rank, &kv) in hosts.values(key).iter().enumerate() {
                let rank = (rank as u32) << shift;
                hosts.each_slot(kv, |s| {
                    let code = &mut codes[s as usize];
                    *code = (*code & !field) | rank;
                });
            }
        }
        let mut order = Vec::new();
        let starts = counting_sort(&codes, total, 1 << total, &mut order);
        let present = (0..1u32 << total)
            .filter(|&code| starts[code as usize + 1] > starts[code as usize])
            .collect();
        Some(Combos {
            fields,
            total,
            order,
            starts,
            present,
        })
    }

    /// The chain of `keys` (their sort keys' `shifts`, of `total` bits): its groups appended
    /// to `chains` in the chain's key order (then by code), those of sort keys from `cutoff`
    /// on left out; returns where each sort key's slots start, as [`counting_sort`] does.
    /// Groups are placed by a counting sort of their own: a table may have as many as hosts.
    fn chain(
        &self,
        keys: &[u32],
        shifts: &[u32],
        total: u32,
        cutoff: u32,
        chains: &mut Vec<u32>,
    ) -> Vec<u32> {
        // Per chain key, where its rank lies in a code and goes in the chain's sort key.
        let fields: Vec<(u32, u32, u32)> = keys
            .iter()
            .zip(shifts)
            .filter_map(|(&key, &to)| {
                let at = self.fields.iter().position(|&(k, _)| k == key)?;
                let width = width(&self.fields, at, self.total);
                Some((self.fields[at].1, width, to))
            })
            .collect();
        let sort_key = |code: u32| {
            let ranks = fields
                .iter()
                .map(|&(from, width, to)| ((code >> from) & ((1 << width) - 1)) << to);
            ranks.fold(0, |key, rank| key | rank)
        };
        let keyed: Vec<(u32, &[u32])> = (self.present.iter())
            .map(|&code| (sort_key(code), self.group(code)))
            .collect();
        let mut starts = vec![0u32; (1 << total) + 1];
        for &(key, group) in &keyed {
            starts[key as usize + 1] += group.len() as u32;
        }
        for b in 0..1 << total {
            starts[b + 1] += starts[b];
        }
        // The groups in key order by a counting sort of their own, then copied in that order:
        // placing them in a chain made of zeros first wrote every slot twice.
        let group_keys: Vec<u32> = keyed.iter().map(|&(key, _)| key).collect();
        let mut order = Vec::with_capacity(keyed.len());
        counting_sort(&group_keys, total, cutoff, &mut order);
        for i in order {
            chains.extend_from_slice(keyed[i as usize].1);
        }
        starts
    }

    /// The slots of `code`.
    fn group(&self, code: u32) -> &[u32] {
        let (a, b) = (self.starts[code as usize], self.starts[code as usize + 1]);
        &self.order[a as usize..b as usize]
    }
}

/// Bits of field `at` of `fields` (each a key and its shift, ascending), of `total` in all.
fn width(fields: &[(u32, u32)], at: usize, total: u32) -> u32 {
    let end = fields.get(at + 1).map_or(total, |&(_, shift)| shift);
    end - fields[at].1
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
            hosts.each_slot(kv, |s| ranks[s as usize] = rank as u32);
        }
        made[k] = ranks;
    }
    &made[k]
}

#[cfg(test)]
mod tests;
