// gemmaserve inspect: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_inspect(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("inspect", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve inspect: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
