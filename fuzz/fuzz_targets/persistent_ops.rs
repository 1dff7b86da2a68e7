//! Operation sequences on every persistent broad phase against the model
//! (brute force after every update, events, `validate()`, rejected calls,
//! queries): the first byte picks the setting (scalar, dimension, scale,
//! pair policy), the rest decode to operations. The model and the decoding
//! are the property-based tests' (`crates/broadphase/tests/model`); a failed
//! check panics, which libFuzzer reports with the input.

#![no_main]

#[allow(dead_code)]
#[path = "../../crates/broadphase/tests/model/mod.rs"]
mod model;

libfuzzer_sys::fuzz_target!(|bytes: &[u8]| {
    if let Some((&which, ops)) = bytes.split_first() {
        model::run_setting(which, &model::decode(ops));
    }
});
