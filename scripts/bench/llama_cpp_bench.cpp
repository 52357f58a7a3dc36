// llama.cpp's own speed on a GGUF file, measured the way llama.cpp's llama-bench measures it
// (the vendored llama.cpp source ships without llama-bench): a prompt test, reading N_PROMPT
// random tokens in one batch, and a generation test, decoding N_GEN tokens one at a time; a
// warm-up run of each first, then REPS runs, the memory cleared before each; mean and standard
// deviation of tokens per second. Built and run by scripts/llama-bench.sh.
//
//   llama_cpp_bench MODEL.gguf THREADS [N_PROMPT=256] [N_GEN=128] [REPS=5]
#include "llama.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

static double now_s() {
    using clock = std::chrono::steady_clock;
    return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

static void quiet(ggml_log_level, const char *, void *) {}

int main(int argc, char ** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s MODEL.gguf THREADS [N_PROMPT] [N_GEN] [REPS]\n", argv[0]);
        return 2;
    }
    const char * path = argv[1];
    const int threads = std::atoi(argv[2]);
    const int n_prompt = argc > 3 ? std::atoi(argv[3]) : 256;
    const int n_gen = argc > 4 ? std::atoi(argv[4]) : 128;
    const int reps = argc > 5 ? std::atoi(argv[5]) : 5;

    llama_log_set(quiet, nullptr);
    llama_backend_init();
    llama_model_params mparams = llama_model_default_params();
    llama_model * model = llama_model_load_from_file(path, mparams);
    if (!model) {
        std::fprintf(stderr, "cannot load %s\n", path);
        return 1;
    }
    const llama_vocab * vocab = llama_model_get_vocab(model);
    const int n_vocab = llama_vocab_n_tokens(vocab);

    llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = n_prompt + n_gen + 16;
    cparams.n_batch = cparams.n_ctx;
    cparams.n_ubatch = 512;
    cparams.n_threads = threads;
    cparams.n_threads_batch = threads;
    llama_context * ctx = llama_init_from_model(model, cparams);
    if (!ctx) {
        std::fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    std::mt19937 rng(42);
    auto random_token = [&]() { return (llama_token) (rng() % (unsigned) n_vocab); };

    auto prompt_test = [&]() {
        llama_memory_clear(llama_get_memory(ctx), true);
        std::vector<llama_token> tokens(n_prompt);
        tokens[0] = llama_vocab_bos(vocab);
        for (int i = 1; i < n_prompt; i++) tokens[i] = random_token();
        const double t0 = now_s();
        if (llama_decode(ctx, llama_batch_get_one(tokens.data(), n_prompt)) != 0) std::exit(1);
        llama_synchronize(ctx);
        return n_prompt / (now_s() - t0);
    };
    auto gen_test = [&]() {
        llama_memory_clear(llama_get_memory(ctx), true);
        llama_token token = llama_vocab_bos(vocab);
        const double t0 = now_s();
        for (int i = 0; i < n_gen; i++) {
            if (llama_decode(ctx, llama_batch_get_one(&token, 1)) != 0) std::exit(1);
            llama_synchronize(ctx);
            token = random_token();
        }
        return n_gen / (now_s() - t0);
    };
    auto report = [&](const char * name, int n, auto test) {
        test();  // warm-up
        std::vector<double> runs;
        for (int r = 0; r < reps; r++) runs.push_back(test());
        double mean = 0, sd = 0;
        for (double v : runs) mean += v;
        mean /= runs.size();
        for (double v : runs) sd += (v - mean) * (v - mean);
        sd = runs.size() > 1 ? std::sqrt(sd / (runs.size() - 1)) : 0;
        std::printf("| %s | %d | %s%d | %.1f ± %.1f |\n", path, threads, name, n, mean, sd);
    };
    std::printf("| model | threads | test | tokens/s |\n|---|---|---|---|\n");
    report("pp", n_prompt, prompt_test);
    report("tg", n_gen, gen_test);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
