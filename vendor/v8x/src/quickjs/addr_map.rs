//! A cheap hasher for the backend's maps keyed by an address.
//!
//! The backend records several facts per object or per heap allocation in
//! maps keyed by its address (templates, native functions, external strings,
//! `v8::External` values). Each op binding of a fresh isolate inserts into
//! several of them, and the standard library's SipHash was a visible share
//! of that. Addresses are chosen by the allocator, not by a script or a
//! server, so a keyed hash buys no protection here: a multiply-and-fold of
//! the address is enough to spread them over the table.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by an address (`usize`) with [`AddrHasher`].
pub(crate) type AddrMap<V> = HashMap<usize, V, BuildHasherDefault<AddrHasher>>;

/// Hashes the address it is given by multiplying it with a 64-bit odd
/// constant and folding the high half into the low half, so both the bucket
/// index (low bits) and the tag hashbrown keeps per slot (high bits) depend
/// on every bit of the address, including the ones above its alignment.
#[derive(Default, Clone, Copy)]
pub(crate) struct AddrHasher {
  hash: u64,
}

const MULTIPLIER: u64 = 0x9E37_79B9_7F4A_7C15;

impl AddrHasher {
  #[inline]
  fn add(&mut self, word: u64) {
    let product = (self.hash ^ word).wrapping_mul(MULTIPLIER);
    self.hash = product ^ (product >> 32);
  }
}

impl Hasher for AddrHasher {
  #[inline]
  fn finish(&self) -> u64 {
    self.hash
  }

  #[inline]
  fn write_usize(&mut self, word: usize) {
    self.add(word as u64);
  }

  /// Only reached if a key other than `usize` is hashed; each byte is mixed
  /// in, so the result is still a function of every byte.
  fn write(&mut self, bytes: &[u8]) {
    for chunk in bytes.chunks(8) {
      let mut word = [0u8; 8];
      word[..chunk.len()].copy_from_slice(chunk);
      self.add(u64::from_le_bytes(word));
    }
  }
}
