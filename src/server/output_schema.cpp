// Output schemas compiled through the server's grammar cache (decision 0072).
#include "server/output_schema.h"

namespace gs::server {

Result<std::shared_ptr<const text::JsonGrammar>> compile_output_schema(const nlohmann::json& schema,
                                                                       const std::string& path,
                                                                       text::JsonGrammarCache* cache) {
  // A null budget: each schema its own, as response_format's always had (decision 0051's shared
  // budget is the tools').
  return text::compile_schema(cache, schema, path, text::JsonSyntax::kJson, nullptr);
}

}  // namespace gs::server
