// qwen3: the command-line front end. Errors from the library are caught here, and only here.
#include <cstdio>
#include <exception>

#include "cli/commands.h"
#include "qwen3/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "qwen3: Qwen3 inference on the CPU, from a Hugging Face model folder, a Hub id fetched "
      "with `qwen3 pull`, or a GGUF file (llama.cpp's format)"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "Print help for every subcommand");
  qwen3::cli::add_run_command(app);
  qwen3::cli::add_chat_command(app);
  qwen3::cli::add_generate_command(app);
  qwen3::cli::add_verify_command(app);
  qwen3::cli::add_random_model_command(app);
  qwen3::cli::add_bench_command(app);
  qwen3::cli::add_tokenize_command(app);
  qwen3::cli::add_template_command(app);
  qwen3::cli::add_serve_command(app);
  qwen3::cli::add_quantize_command(app);
  qwen3::cli::add_quant_eval_command(app);
  qwen3::cli::add_pull_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());  // one line, as every other error
    return e.get_exit_code();
  } catch (const qwen3::Error& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
  return 0;
}
