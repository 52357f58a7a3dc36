//! Fuzz target `strict_schema`: see `tinyagent::__fuzz::strict_schema` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent::__fuzz::strict_schema(data));
