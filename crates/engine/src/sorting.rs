//! One sort for the whole engine and page, shared by every element type.
//!
//! The standard library's sorts are generic over the element and the
//! comparison, so each call site with its own closure gets its own copy of
//! driftsort or ipnsort: about 70 copies, some 250 KB of the simulator's
//! WebAssembly (issue 35, BENCHMARKS.md "One sort"). Here the work is done
//! once, on positions, by a merge sort that is not generic; what is left per
//! element type is a comparison closure and a loop of swaps.
//!
//! Every sort here is stable, so it gives exactly what `slice::sort_by`
//! gives. Where the code asked for an unstable sort of plain values (equal
//! elements indistinguishable), the result is the same too.
//!
//! `BTreeMap` and `BTreeSet` built with `collect` sort with the standard
//! library's sort as well; build them with [`Gather::gather`], [`map_of`]
//! or [`set_of`] (one insert each) instead.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

/// Sorts `items` stably by `compare`, as `slice::sort_by` does.
pub fn sort_by<T>(items: &mut [T], mut compare: impl FnMut(&T, &T) -> Ordering) {
    if items.len() < 2 {
        return;
    }
    let order = {
        let view: &[T] = items;
        sorted_positions(view.len(), &mut |left, right| {
            compare(&view[left], &view[right]) == Ordering::Less
        })
    };
    permute(items, &order);
}

/// Sorts `items` stably by the key `key` gives, as `slice::sort_by_key` does.
pub fn sort_by_key<T, K: Ord>(items: &mut [T], mut key: impl FnMut(&T) -> K) {
    sort_by(items, |left, right| key(left).cmp(&key(right)));
}

/// Sorts `items` into ascending order, as `slice::sort` does.
pub fn sort<T: Ord>(items: &mut [T]) {
    sort_by(items, T::cmp);
}

/// Sorts plain numbers into ascending order without a comparison closure:
/// the fast path for the assignors' packed keys (a million of them in
/// Kafka's scale case).
pub fn sort_u64(values: &mut [u64]) {
    let len = values.len();
    if len < 2 {
        return;
    }
    for start in (0..len).step_by(RUN) {
        let end = (start + RUN).min(len);
        for next in start + 1..end {
            let mut at = next;
            while at > start && values[at] < values[at - 1] {
                values.swap(at, at - 1);
                at -= 1;
            }
        }
    }
    if len <= RUN {
        return;
    }
    let mut from = values.to_vec();
    let mut to = vec![0; len];
    let mut width = RUN;
    while width < len {
        for start in (0..len).step_by(2 * width) {
            let middle = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            let (run, out) = (&from[start..end], &mut to[start..end]);
            let (mut left, mut right) = (0, middle - start);
            for slot in out.iter_mut() {
                if right < run.len() && (left == middle - start || run[right] < run[left]) {
                    *slot = run[right];
                    right += 1;
                } else {
                    *slot = run[left];
                    left += 1;
                }
            }
        }
        std::mem::swap(&mut from, &mut to);
        width *= 2;
    }
    values.copy_from_slice(&from);
}

/// A map with one insert per pair: a later pair with an equal key replaces
/// the earlier one's value, as `collect` does.
pub fn map_of<K: Ord, V>(pairs: impl IntoIterator<Item = (K, V)>) -> BTreeMap<K, V> {
    let mut map = BTreeMap::new();
    for (key, value) in pairs {
        map.insert(key, value);
    }
    map
}

/// A set with one insert per item.
pub fn set_of<T: Ord>(items: impl IntoIterator<Item = T>) -> BTreeSet<T> {
    let mut set = BTreeSet::new();
    for item in items {
        set.insert(item);
    }
    set
}

/// A `BTreeMap` or `BTreeSet` built one insert at a time (see [`Gather`]).
pub trait Ordered<T> {
    /// The collection holding every item of `items`.
    fn gather(items: impl Iterator<Item = T>) -> Self;
}

impl<K: Ord, V> Ordered<(K, V)> for BTreeMap<K, V> {
    fn gather(items: impl Iterator<Item = (K, V)>) -> Self {
        map_of(items)
    }
}

impl<T: Ord> Ordered<T> for BTreeSet<T> {
    fn gather(items: impl Iterator<Item = T>) -> Self {
        set_of(items)
    }
}

/// `collect` for ordered collections without the standard library's sort:
/// `iterator.gather()` where `collect()` would build a `BTreeMap` or a
/// `BTreeSet`.
pub trait Gather: Iterator + Sized {
    /// The map or set of this iterator's items.
    fn gather<B: Ordered<Self::Item>>(self) -> B {
        B::gather(self)
    }
}

impl<I: Iterator> Gather for I {}

/// Runs no longer than this are sorted by insertion before merging.
const RUN: usize = 12;

/// The positions `0..len` in the order a stable sort by `less` puts them:
/// a bottom-up merge sort over positions, the one copy of the algorithm.
fn sorted_positions(len: usize, less: &mut dyn FnMut(usize, usize) -> bool) -> Vec<usize> {
    let mut order: Vec<usize> = (0..len).collect();
    for start in (0..len).step_by(RUN) {
        let end = (start + RUN).min(len);
        for next in start + 1..end {
            let mut at = next;
            while at > start && less(order[at], order[at - 1]) {
                order.swap(at, at - 1);
                at -= 1;
            }
        }
    }
    let mut scratch = vec![0; len];
    let mut width = RUN;
    while width < len {
        for start in (0..len).step_by(2 * width) {
            let middle = (start + width).min(len);
            let end = (start + 2 * width).min(len);
            merge(&order[start..end], middle - start, &mut scratch[start..end], less);
        }
        std::mem::swap(&mut order, &mut scratch);
        width *= 2;
    }
    order
}

/// Merges the sorted halves `run[..middle]` and `run[middle..]` into `out`,
/// taking from the left half on ties (which keeps the sort stable).
fn merge(run: &[usize], middle: usize, out: &mut [usize], less: &mut dyn FnMut(usize, usize) -> bool) {
    let (mut left, mut right) = (0, middle);
    for slot in out.iter_mut() {
        let take_right = right < run.len() && (left == middle || less(run[right], run[left]));
        if take_right {
            *slot = run[right];
            right += 1;
        } else {
            *slot = run[left];
            left += 1;
        }
    }
}

/// Rearranges `items` so that position `i` holds what was at `order[i]`,
/// following each cycle of the permutation with swaps.
fn permute<T>(items: &mut [T], order: &[usize]) {
    let mut placed = vec![false; items.len()];
    for start in 0..items.len() {
        if placed[start] {
            continue;
        }
        let mut at = start;
        loop {
            placed[at] = true;
            let from = order[at];
            if from == start {
                break;
            }
            items.swap(at, from);
            at = from;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sort_matches_the_standard_stable_sort() {
        let mut state = 7u64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 33
        };
        for len in (0..40).chain([63, 64, 65, 100, 257, 1000]) {
            for spread in [1, 3, 10, 1000] {
                let items: Vec<(u64, usize)> = (0..len).map(|index| (next() % spread, index)).collect();
                let mut expected = items.clone();
                expected.sort_by_key(|item| item.0);
                let mut ours = items.clone();
                sort_by_key(&mut ours, |item| item.0);
                assert_eq!(ours, expected, "len {len}, spread {spread}");
                let mut descending = items.clone();
                sort_by(&mut descending, |left, right| right.0.cmp(&left.0));
                let mut wanted = items.clone();
                wanted.sort_by(|left, right| right.0.cmp(&left.0));
                assert_eq!(descending, wanted);
                let mut words: Vec<u64> = items.iter().map(|item| (item.0 << 32) | (item.1 as u64 % 7)).collect();
                let mut wanted_words = words.clone();
                wanted_words.sort_unstable();
                sort_u64(&mut words);
                assert_eq!(words, wanted_words);
                let mut plain = items;
                sort(&mut plain);
                wanted.sort();
                assert_eq!(plain, wanted);
            }
        }
    }

    #[test]
    fn maps_and_sets_keep_what_collect_keeps() {
        let pairs = [(3, "a"), (1, "b"), (3, "c"), (2, "d")];
        assert_eq!(map_of(pairs), pairs.into_iter().collect::<BTreeMap<_, _>>());
        assert_eq!(set_of([5, 1, 5, 2]), [5, 1, 5, 2].into_iter().collect::<BTreeSet<_>>());
        assert_eq!(pairs.into_iter().gather::<BTreeMap<_, _>>(), map_of(pairs));
    }
}
