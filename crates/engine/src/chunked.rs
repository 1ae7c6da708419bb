//! A vector stored in shared chunks, so that copying a simulation for a
//! snapshot copies only the last chunk of each long list (logs, produced
//! records); older chunks are shared until someone writes to them
//! (copy-on-write).

use std::ops::{Index, IndexMut};
use std::rc::Rc;

use serde::{Serialize, Serializer};

/// Elements per chunk.
const CHUNK: usize = 1024;

/// A `Vec<T>` in shared, copy-on-write chunks of [`CHUNK`] elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedVec<T> {
    chunks: Vec<Rc<Vec<T>>>,
    len: usize,
}

impl<T> Default for ChunkedVec<T> {
    fn default() -> Self {
        ChunkedVec {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T: Clone> ChunkedVec<T> {
    /// An empty vector.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Appends an element.
    pub fn push(&mut self, value: T) {
        if self.len % CHUNK == 0 {
            self.chunks.push(Rc::new(Vec::with_capacity(CHUNK)));
        }
        Rc::make_mut(self.chunks.last_mut().expect("a chunk")).push(value);
        self.len += 1;
    }

    /// Appends every element.
    pub fn extend(&mut self, values: impl IntoIterator<Item = T>) {
        for value in values {
            self.push(value);
        }
    }

    /// The element at `index`.
    pub fn get(&self, index: usize) -> Option<&T> {
        (index < self.len).then(|| &self.chunks[index / CHUNK][index % CHUNK])
    }

    /// Shortens to `len` elements.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.len {
            return;
        }
        self.chunks.truncate(len.div_ceil(CHUNK));
        if len % CHUNK != 0 {
            Rc::make_mut(self.chunks.last_mut().expect("a chunk")).truncate(len % CHUNK);
        }
        self.len = len;
    }

    /// The elements in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.chunks.iter().flat_map(|chunk| chunk.iter())
    }

    /// The elements from `start` on, in order.
    pub fn iter_from(&self, start: usize) -> impl Iterator<Item = &T> + '_ {
        let first_chunk = start / CHUNK;
        self.chunks
            .iter()
            .skip(first_chunk)
            .enumerate()
            .flat_map(move |(index, chunk)| chunk.iter().skip(if index == 0 { start % CHUNK } else { 0 }))
    }

    /// The first index whose element is not `before` (elements for which
    /// `before` holds must all come first), as `slice::partition_point`.
    pub fn partition_point(&self, mut before: impl FnMut(&T) -> bool) -> usize {
        let (mut low, mut high) = (0, self.len);
        while low < high {
            let middle = low + (high - low) / 2;
            if before(&self[middle]) {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        low
    }

    /// A copy of `start..end`.
    pub fn copy_range(&self, start: usize, end: usize) -> Vec<T> {
        (start..end.min(self.len)).map(|index| self[index].clone()).collect()
    }
}

impl<T: Clone> Index<usize> for ChunkedVec<T> {
    type Output = T;

    fn index(&self, index: usize) -> &T {
        assert!(index < self.len, "index {index} out of {}", self.len);
        &self.chunks[index / CHUNK][index % CHUNK]
    }
}

impl<T: Clone> IndexMut<usize> for ChunkedVec<T> {
    fn index_mut(&mut self, index: usize) -> &mut T {
        assert!(index < self.len, "index {index} out of {}", self.len);
        &mut Rc::make_mut(&mut self.chunks[index / CHUNK])[index % CHUNK]
    }
}

impl<T: Clone + Serialize> Serialize for ChunkedVec<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.iter())
    }
}

#[cfg(test)]
mod tests {
    use super::ChunkedVec;

    #[test]
    fn behaves_like_a_vec_and_shares_chunks_with_copies() {
        let mut values = ChunkedVec::new();
        values.extend(0..3000);
        assert_eq!(values.len(), 3000);
        assert_eq!(values[2048], 2048);
        let copy = values.clone();
        values[5] = 99;
        assert_eq!(copy[5], 5, "the copy is unaffected");
        values.truncate(1500);
        assert_eq!(values.len(), 1500);
        assert_eq!(values.get(1500), None);
        values.push(7);
        assert_eq!(values[1500], 7);
        assert_eq!(values.copy_range(1498, 1600), vec![1498, 1499, 7]);
        values.truncate(1024);
        values.push(1);
        assert_eq!(values.iter().count(), 1025);
        assert_eq!(values.iter_from(1023).copied().collect::<Vec<_>>(), vec![1023, 1]);
        assert_eq!(values.iter_from(5).next(), Some(&99));
        assert_eq!(values.partition_point(|value| *value < 500), 500);
    }
}
