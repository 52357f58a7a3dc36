//! Fuzz target `tool_input`: see `tinyagent::__fuzz::tool_input` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent::__fuzz::tool_input(data));
