//! Helpers shared by the integration tests: temporary folders, the test
//! model's geometry, deterministic bytes.
#![allow(dead_code)]
use auxstore::*;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

/// A fresh folder under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let nanos =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
        let p = std::env::temp_dir().join(format!(
            "auxstore-rs-{tag}-{}-{}-{nanos}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self) -> &Path {
        &self.0
    }
    pub fn join(&self, s: &str) -> PathBuf {
        self.0.join(s)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub const HD: u32 = 64;
pub const MAX_TOKENS: u32 = 1024;
pub const RATIO: u32 = 8;
pub const ROT: u32 = 32;
pub const DSA_DIM: u32 = 32;
pub const DSA_CAP: u32 = 1024;
pub const BLOCK: u32 = 16;
pub const SALT: u64 = 0x5eed;

pub fn geometry() -> Geometry {
    Geometry {
        qsa_hd: HD,
        qsa_max_tokens: MAX_TOKENS,
        qsa_ratio: RATIO,
        qsa_rot: ROT,
        qsa_theta: 10000.0,
        qsa_eps: 1e-6,
        dsa_index_head_dim: DSA_DIM,
        dsa_capacity: DSA_CAP,
    }
}

/// A store with small chunks (so layers span several).
pub fn open_store(dir: &TempDir) -> Store {
    let mut o = Options::new();
    o.chunk_bytes(64 * 1024).unwrap();
    Store::open(dir.join("store"), &o).unwrap()
}

pub fn small_pipeline_options() -> PipelineOptions {
    PipelineOptions { staging_bytes: 64 * 1024, ..PipelineOptions::default() }
}

/// xorshift64: deterministic "computed" bytes.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// A bf16 in about [-2, 2).
    pub fn bf16(&mut self) -> u16 {
        let f = (self.next() % 4_000_000) as f32 / 1_000_000.0 - 2.0;
        (f.to_bits() >> 16) as u16
    }
    pub fn bf16s(&mut self, n: usize) -> Vec<u16> {
        (0..n).map(|_| self.bf16()).collect()
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

pub fn tokens(seed: u32, n: usize) -> Vec<u32> {
    (0..n as u32).map(|i| seed * 100_000 + i).collect()
}

/// The prefix of the first `n` tokens of sequence `seed` (n a multiple of BLOCK).
pub fn prefix_of(seed: u32, n: usize) -> Prefix {
    *prefix_hashes(&tokens(seed, n), BLOCK, SALT).unwrap().last().unwrap()
}

/// A QSA v1 blob (seed 000): [ingested u64][pooled u64][raw_keys bf16].
pub fn qsa_blob(ingested: u64, pooled: u64, raw: &[u16]) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + raw.len() * 2);
    b.extend_from_slice(&ingested.to_le_bytes());
    b.extend_from_slice(&pooled.to_le_bytes());
    b.extend_from_slice(&bf16_to_bytes(raw));
    b
}

/// A DSA v1 blob (seed 001): [len u64][d u64][k_normed][gate][valid].
pub fn dsa_blob(len: u64, d: u64, k_normed: &[u8], gate: &[u8], valid: &[u8]) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(&len.to_le_bytes());
    b.extend_from_slice(&d.to_le_bytes());
    b.extend_from_slice(k_normed);
    b.extend_from_slice(gate);
    b.extend_from_slice(valid);
    b
}

/// One sequence's three layers (0 QSA, 1 DSA, 2 opaque) of `tokens` tokens.
pub struct SeqBlobs {
    pub raw: Vec<u16>,
    pub qsa: Vec<u8>,
    pub dsa: Vec<u8>,
    pub opaque: Vec<u8>,
}

pub fn seq_blobs(seed: u64, tokens: usize, pooled: u64) -> SeqBlobs {
    let mut r = Rng::new(seed);
    let raw = r.bf16s(tokens * HD as usize);
    let row = tokens * DSA_DIM as usize * 2;
    let (k, g, v) = (r.bytes(row), r.bytes(row), r.bytes(tokens));
    SeqBlobs {
        qsa: qsa_blob(tokens as u64, pooled, &raw),
        dsa: dsa_blob(tokens as u64, DSA_DIM as u64, &k, &g, &v),
        opaque: r.bytes(4096),
        raw,
    }
}

impl SeqBlobs {
    pub fn layers(&self) -> Vec<Layer<'_>> {
        vec![
            Layer::new(0, Kind::Qsa, &self.qsa),
            Layer::new(1, Kind::Dsa, &self.dsa),
            Layer::new(2, Kind::Opaque, &self.opaque),
        ]
    }
}

/// The QSA layer weights every test uses.
pub fn weights() -> (Vec<u16>, Vec<u16>) {
    (Rng::new(1000).bf16s(HD as usize), Rng::new(1001).bf16s(HD as usize))
}

pub fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..400 {
        if f() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("never happened: {what}");
}
