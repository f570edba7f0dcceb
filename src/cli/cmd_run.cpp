// gemmaserve run: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_run(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("run", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve run: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
