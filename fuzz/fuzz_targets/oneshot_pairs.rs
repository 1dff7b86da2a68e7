//! One-shot pair finding, every algorithm and variant (threaded or not,
//! fixed sweep axes, extreme cells and cutoffs), complete and bipartite,
//! against brute force: the input's decoding and the checks are
//! `check_fuzz_input` of the integration tests' helpers
//! (`crates/broadphase/tests/common`), which also replay the corpus.

#![no_main]

#[path = "../../crates/broadphase/tests/common/mod.rs"]
mod common;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| common::check_fuzz_input(bytes));
