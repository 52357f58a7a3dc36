//! Fuzz target `schema_validator`: see `tinyagent::__fuzz::schema_validator` for what it checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| tinyagent::__fuzz::schema_validator(data));
