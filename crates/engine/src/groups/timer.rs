//! The group coordinator's keyed timer, after Kafka's `CoordinatorTimer`
//! as its tests drive it (`MockCoordinatorTimer`): scheduling a key
//! replaces that key's timeout, and expired timeouts run earliest first.
//!
//! Timeouts that share a deadline run in the order of Java's
//! `PriorityQueue` (a binary heap ordered by deadline only), which is not
//! the order they were scheduled in. The heap here moves its entries
//! exactly as `java.util.PriorityQueue` does (`offer`, `poll`,
//! `removeAt`), so ties break as they do in Kafka.

use crate::sorting::Gather;
use std::collections::BTreeMap;

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
struct Scheduled<Op> {
    id: u64,
    key: String,
    deadline_ms: u64,
    op: Op,
}

/// Timeouts by key, each with an operation to run when it expires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CoordinatorTimer<Op> {
    heap: Vec<Scheduled<Op>>,
    by_key: BTreeMap<String, u64>,
    next_id: u64,
}

impl<Op> Default for CoordinatorTimer<Op> {
    fn default() -> Self {
        CoordinatorTimer {
            heap: Vec::new(),
            by_key: BTreeMap::new(),
            next_id: 0,
        }
    }
}

impl<Op> CoordinatorTimer<Op> {
    /// Schedules `op` under `key` at `now_ms + delay_ms`, replacing the
    /// key's earlier timeout.
    pub fn schedule(&mut self, key: String, now_ms: u64, delay_ms: u64, op: Op) {
        self.cancel(&key);
        let id = self.next_id;
        self.next_id += 1;
        self.by_key.insert(key.clone(), id);
        self.heap.push(Scheduled {
            id,
            key,
            deadline_ms: now_ms.saturating_add(delay_ms),
            op,
        });
        self.sift_up(self.heap.len() - 1);
    }

    /// Cancels the key's timeout, if any.
    pub fn cancel(&mut self, key: &str) {
        if let Some(id) = self.by_key.remove(key) {
            if let Some(index) = self.heap.iter().position(|entry| entry.id == id) {
                self.remove_at(index);
            }
        }
    }

    /// Whether a timeout is scheduled under `key`.
    pub fn contains(&self, key: &str) -> bool {
        self.by_key.contains_key(key)
    }

    /// Takes the next timeout due at `now_ms`, if any: its key and operation.
    pub fn pop_expired(&mut self, now_ms: u64) -> Option<(String, Op)> {
        if self.heap.first()?.deadline_ms > now_ms {
            return None;
        }
        let entry = self.heap.swap_remove(0);
        if !self.heap.is_empty() {
            self.sift_down(0);
        }
        if self.by_key.get(&entry.key) == Some(&entry.id) {
            self.by_key.remove(&entry.key);
        }
        Some((entry.key, entry.op))
    }

    /// The earliest deadline, if any timeout is scheduled.
    pub fn next_deadline(&self) -> Option<u64> {
        self.heap.first().map(|entry| entry.deadline_ms)
    }

    /// Every scheduled key with its deadline.
    pub fn deadlines(&self) -> BTreeMap<String, u64> {
        self.heap
            .iter()
            .map(|entry| (entry.key.clone(), entry.deadline_ms))
            .gather()
    }

    /// `PriorityQueue#removeAt`: the last entry fills the hole and sifts
    /// down, or up if it did not move.
    fn remove_at(&mut self, index: usize) {
        let last = self.heap.len() - 1;
        if index == last {
            self.heap.pop();
            return;
        }
        self.heap.swap_remove(index);
        if self.sift_down(index) == index {
            self.sift_up(index);
        }
    }

    /// `siftUpUsingComparator`: moves the entry at `index` up while it is
    /// strictly earlier than its parent; returns where it ends.
    fn sift_up(&mut self, mut index: usize) -> usize {
        while index > 0 {
            let parent = (index - 1) / 2;
            if self.heap[index].deadline_ms >= self.heap[parent].deadline_ms {
                break;
            }
            self.heap.swap(index, parent);
            index = parent;
        }
        index
    }

    /// `siftDownUsingComparator`: moves the entry at `index` down past any
    /// strictly earlier child (the right child only when strictly earlier
    /// than the left); returns where it ends.
    fn sift_down(&mut self, mut index: usize) -> usize {
        let size = self.heap.len();
        let half = size / 2;
        while index < half {
            let mut child = 2 * index + 1;
            let right = child + 1;
            if right < size && self.heap[child].deadline_ms > self.heap[right].deadline_ms {
                child = right;
            }
            if self.heap[index].deadline_ms <= self.heap[child].deadline_ms {
                break;
            }
            self.heap.swap(index, child);
            index = child;
        }
        index
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(timer: &mut CoordinatorTimer<u32>, now: u64) -> Vec<u32> {
        std::iter::from_fn(|| timer.pop_expired(now).map(|(_, op)| op)).collect()
    }

    #[test]
    fn rescheduling_a_key_replaces_its_timeout() {
        let mut timer = CoordinatorTimer::default();
        timer.schedule("a".into(), 0, 100, 1);
        timer.schedule("a".into(), 0, 300, 2);
        assert_eq!(drain(&mut timer, 200), Vec::<u32>::new());
        assert_eq!(drain(&mut timer, 300), vec![2]);
        assert!(!timer.contains("a"));
    }

    #[test]
    fn earlier_deadlines_run_first() {
        let mut timer = CoordinatorTimer::default();
        for (key, delay) in [("c", 30), ("a", 10), ("b", 20)] {
            timer.schedule(key.into(), 0, delay, delay as u32);
        }
        assert_eq!(drain(&mut timer, 100), vec![10, 20, 30]);
    }

    #[test]
    fn ties_break_as_java_priority_queue_does() {
        // Java: offer a,b,c,d (all deadline 5) then poll -> a, d, c, b
        // (poll moves the last element to the root; equal keys never sift).
        let mut timer = CoordinatorTimer::default();
        for (op, key) in ["a", "b", "c", "d"].iter().enumerate() {
            timer.schedule((*key).into(), 0, 5, op as u32);
        }
        assert_eq!(drain(&mut timer, 5), vec![0, 3, 2, 1]);
    }
}
