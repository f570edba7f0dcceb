// gemmaserve tokenize: placeholder until its issue lands.
#include <cstdio>

#include "commands.h"

namespace gs::cli {

CommandEntry register_tokenize(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("tokenize", "(not implemented yet)");
  return {sub, [] {
            std::fprintf(stderr, "gemmaserve tokenize: not implemented yet\n");
            return 2;
          }};
}

}  // namespace gs::cli
