//! Fuzz target `mcp_content`: see `tinyagent_mcp::__fuzz::content` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent_mcp::__fuzz::content(data));
