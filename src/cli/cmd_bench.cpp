// gemmaserve bench: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_bench(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("bench", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve bench: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
