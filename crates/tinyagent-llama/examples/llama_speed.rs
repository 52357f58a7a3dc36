//! Load time, prompt speed and generation speed of the default local model.
//!
//! ```sh
//! cargo run --release -p tinyagent-llama --example llama_speed            # 1 thread
//! cargo run --release -p tinyagent-llama --example llama_speed -- 2       # 2 threads
//! ```

use std::time::Instant;

use tinyagent::{Message, ModelRequest};
use tinyagent_llama::{LlamaConfig, LlamaModel, find_default_model};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let threads: u32 = std::env::args().nth(1).map_or(Ok(1), |s| s.parse())?;
    let path = find_default_model()?;
    let config = LlamaConfig::default().threads(threads);

    let started = Instant::now();
    let model = LlamaModel::load(&path, config)?;
    let load = started.elapsed();
    println!("model:      {}", path.display());
    println!("threads:    {threads}");
    println!(
        "load:       {:.0} ms (llama.cpp {:.0} ms)",
        load.as_secs_f64() * 1000.0,
        model.load_time().as_secs_f64() * 1000.0
    );

    // The weather agent's first prompt: instruction, tool list and output protocol.
    let req = ModelRequest::new(vec![Message::user("北京天气怎么样？")])
        .instruction("你是一个全能助手。")
        .tools(vec![tinyagent_demo::weather_tool().definition()]);
    let prompt = model.prompt(&req)?;

    let runs = 3;
    let (mut p_tokens, mut p_secs, mut g_tokens, mut g_secs) = (0, 0.0, 0, 0.0);
    for _ in 0..runs {
        let done = model.complete(&prompt, 64)?;
        p_tokens += done.speed.prompt_tokens;
        p_secs += done.speed.prompt_time.as_secs_f64();
        g_tokens += done.speed.output_tokens;
        g_secs += done.speed.generation_time.as_secs_f64();
    }
    println!(
        "prompt:     {:.0} tokens/s ({} tokens per run, {runs} runs)",
        p_tokens as f64 / p_secs,
        p_tokens / runs
    );
    println!(
        "generation: {:.0} tokens/s ({} tokens per run, {runs} runs)",
        g_tokens as f64 / g_secs,
        g_tokens / runs
    );
    Ok(())
}
