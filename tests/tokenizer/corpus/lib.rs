//! A tiny interval map, for the tokenizer corpus.
use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntervalMap<V> {
    inner: BTreeMap<u64, (u64, V)>,
}

impl<V: Clone + fmt::Debug> IntervalMap<V> {
    pub fn new() -> Self {
        Self { inner: BTreeMap::new() }
    }

    /// Inserts `[lo, hi)`; returns `Err` when it overlaps an existing range.
    pub fn insert(&mut self, lo: u64, hi: u64, v: V) -> Result<(), String> {
        if let Some((&s, &(e, _))) = self.inner.range(..hi).next_back() {
            if e > lo && s < hi {
                return Err(format!("overlap with [{s}, {e})"));
            }
        }
        self.inner.insert(lo, (hi, v));
        Ok(())
    }

    pub fn get(&self, x: u64) -> Option<&V> {
        self.inner.range(..=x).next_back().and_then(|(_, (e, v))| (x < *e).then_some(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lookups() {
        let mut m = IntervalMap::new();
        m.insert(10, 20, 'a').unwrap();
        assert_eq!(m.get(15), Some(&'a'));
        assert!(m.insert(15, 25, 'b').is_err());
    }
}
