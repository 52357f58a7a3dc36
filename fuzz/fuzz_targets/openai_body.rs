//! Fuzz target `openai_body`: see `tinyagent_openai::__fuzz::body` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent_openai::__fuzz::body(data));
