// Loading a Gemma 4 file: open, read the config, bind the weights.
#include "model/gemma4_model.h"

namespace gs {

Result<std::shared_ptr<Gemma4Model>> Gemma4Model::load(const std::string& path, Backend& backend) {
  std::shared_ptr<gguf::GgufFile> file;
  GS_ASSIGN_OR_RETURN(file, gguf::GgufFile::open_model(path));
  return from_file(std::move(file), backend);
}

Result<std::shared_ptr<Gemma4Model>> Gemma4Model::from_file(std::shared_ptr<gguf::GgufFile> file, Backend& backend) {
  std::shared_ptr<Gemma4Model> m(new Gemma4Model());
  m->file_ = std::move(file);
  m->backend_ = &backend;
  auto config = load_gemma4_config(*m->file_);
  if (!config.ok()) {
    // The reader's own errors (a key of the wrong type) already start with the path.
    const std::string& path = m->file_->path();
    const std::string& msg = config.status().message();
    if (msg.rfind(path + ": ", 0) == 0) return config.status();
    return Status(config.status().code(), fmt::format("{}: {}", path, msg));
  }
  m->config_ = std::move(config).value();
  GS_ASSIGN_OR_RETURN(m->weights_, bind_gemma4_weights(*m->file_, m->config_, backend));
  return m;
}

}  // namespace gs
