// gemmaserve serve: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_serve(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("serve", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve serve: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
