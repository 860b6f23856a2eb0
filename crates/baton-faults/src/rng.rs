//! The trial's choices (when to kill, how long a job runs, how many ticks
//! race), drawn from its seed so that a replay makes the same ones:
//! splitmix64, which any seed (zero included) starts well.

/// A seeded generator.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// The generator of `seed`.
    pub(crate) fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 bits.
    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }

    /// One of `items`.
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[(self.next_u64() % items.len() as u64) as usize]
    }
}

/// A seed from the kernel, for a campaign not told one.
pub(crate) fn kernel_seed() -> u64 {
    let mut b = [0u8; 8];
    match rustix::rand::getrandom(&mut b, rustix::rand::GetRandomFlags::empty()) {
        Ok(8) => u64::from_le_bytes(b) % 1_000_000_000,
        _ => u64::from(std::process::id()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_seed_makes_one_sequence() {
        let (mut a, mut b) = (Rng::new(7), Rng::new(7));
        let xs: Vec<u64> = (0..5).map(|_| a.range(1, 6)).collect();
        let ys: Vec<u64> = (0..5).map(|_| b.range(1, 6)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| (1..=6).contains(x)));
        assert_ne!(Rng::new(8).next_u64(), Rng::new(7).next_u64());
    }
}
