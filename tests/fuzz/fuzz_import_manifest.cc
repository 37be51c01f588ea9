// libFuzzer target: the CLI's import manifest parser (tools/cli/
// import_manifest.h), which reads manifest.json of an export as untrusted
// text. An accepted plan must satisfy what the parser promises.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string_view>

#include "tools/cli/import_manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto plan = auxstore::cli::ParseImportManifest(text, 1u << 20);
  if (!plan.ok()) {
    if (plan.error().message().empty()) std::abort();
    return 0;
  }
  if (auxstore::NamespaceFingerprint(plan->spec) != plan->ns) std::abort();
  std::set<std::string> files;
  for (size_t i = 0; i < plan->layers.size(); ++i) {
    const auto& l = plan->layers[i];
    if (i > 0 && l.layer <= plan->layers[i - 1].layer) std::abort();
    if (l.file.empty() || l.file.find('/') != std::string::npos || l.file == "." ||
        l.file == ".." || !files.insert(l.file).second) {
      std::abort();
    }
  }
  return 0;
}
