// gemmaserve entry point: dispatches to the subcommands.
#include <cstdio>
#include <string>
#include <vector>

#include "commands.h"
#include "core/log.h"

int main(int argc, char** argv) {
  gs::init_logging();
  CLI::App app{"gemmaserve: Gemma 4 GGUF inference engine and OpenAI-compatible server"};
  app.set_version_flag("--version", std::string("gemmaserve ") + GS_VERSION);
  app.require_subcommand(1);
  std::vector<gs::cli::CommandEntry> commands = {
      gs::cli::register_serve(app),   gs::cli::register_run(app),   gs::cli::register_bench(app),
      gs::cli::register_inspect(app), gs::cli::register_synth(app), gs::cli::register_tokenize(app),
  };
  CLI11_PARSE(app, argc, argv);
  for (auto& [sub, run] : commands) {
    if (sub->parsed()) return run();
  }
  std::fprintf(stderr, "gemmaserve: no subcommand\n");
  return 2;
}
