//! One key function across languages: `prefix_hashes` gives exactly the keys
//! of tests/capi/prefix_hash_vectors.txt, the vectors the C and Python tests
//! check too, so a Rust engine and a Python one share keys for the same
//! tokens and salt.
use auxstore::*;

const VECTORS: &str = include_str!("../../../../tests/capi/prefix_hash_vectors.txt");

fn hex(p: &Prefix) -> String {
    p.0.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn prefix_hashes_match_the_shared_vectors() {
    let mut vectors = 0;
    for line in VECTORS.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()) {
        let mut f = line.split_whitespace();
        let mut next = || f.next().expect("a complete vector line");
        let block_size: u32 = next().parse().unwrap();
        let salt: u64 = next().parse().unwrap();
        let n_tokens: usize = next().parse().unwrap();
        let tokens: Vec<u32> = (0..n_tokens).map(|_| next().parse().unwrap()).collect();
        let n_prefixes: usize = next().parse().unwrap();
        let want: Vec<String> = (0..n_prefixes).map(|_| next().to_string()).collect();
        let got: Vec<String> = prefix_hashes(&tokens, block_size, salt).unwrap().iter().map(hex).collect();
        assert_eq!(got, want, "vector {vectors}: block size {block_size}, salt {salt}");
        vectors += 1;
    }
    assert!(vectors >= 4, "the vectors file has {vectors} vectors");
}
