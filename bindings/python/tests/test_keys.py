"""One key function across languages: prefix_hash gives exactly the keys of
tests/capi/prefix_hash_vectors.txt, the vectors the C and Rust tests check
too, so a Python engine and a C or Rust one share keys for the same tokens
and salt. key_to_prefix is a different thing: it maps an engine's own page
key (a string, bytes or int it already computed) to a prefix."""

import os

import numpy as np

import auxstore

VECTORS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tests", "capi",
                       "prefix_hash_vectors.txt")


def read_vectors():
    out = []
    with open(VECTORS) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            fields = line.split()
            block_size, salt, n_tokens = int(fields[0]), int(fields[1]), int(fields[2])
            tokens = [int(t) for t in fields[3:3 + n_tokens]]
            n_prefixes = int(fields[3 + n_tokens])
            want = [bytes.fromhex(h) for h in fields[4 + n_tokens:]]
            assert len(want) == n_prefixes, line
            out.append((block_size, salt, tokens, want))
    return out


def test_prefix_hash_matches_the_shared_vectors():
    vectors = read_vectors()
    assert len(vectors) >= 4
    for block_size, salt, tokens, want in vectors:
        assert auxstore.prefix_hash(tokens, block_size, salt) == want
        # The same keys from a numpy array of tokens (how an engine holds them).
        assert auxstore.prefix_hash(np.array(tokens, np.uint32), block_size, salt) == want


def test_key_to_prefix_is_the_engine_key_mapping_not_the_token_hash():
    block_size, salt, tokens, want = read_vectors()[0]
    assert auxstore.key_to_prefix(want[0]) == want[0]  # a prefix passes through as it is
    assert auxstore.key_to_prefix(want[0].hex()) == want[0]
