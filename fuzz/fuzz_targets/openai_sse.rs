//! Fuzz target `openai_sse`: see `tinyagent_openai::__fuzz::sse` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent_openai::__fuzz::sse(data));
