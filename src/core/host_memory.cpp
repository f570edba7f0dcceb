// Host memory counters (/proc/self/status, mallinfo2) and glibc malloc's arena and trim knobs.
#include "core/host_memory.h"

#include <cstdio>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace gs {

namespace {

// "Key:   1234 kB" -> bytes (or the bare count for "Threads:").
bool read_status_field(const char* line, const char* key, uint64_t* out) {
  const size_t n = std::strlen(key);
  if (std::strncmp(line, key, n) != 0 || line[n] != ':') return false;
  unsigned long long value = 0;
  char unit[8] = {0};
  const int got = std::sscanf(line + n + 1, "%llu %7s", &value, unit);
  if (got < 1) return false;
  *out = got == 2 && std::strcmp(unit, "kB") == 0 ? static_cast<uint64_t>(value) * 1024 : static_cast<uint64_t>(value);
  return true;
}

}  // namespace

HostMemory read_host_memory() {
  HostMemory m;
  if (std::FILE* f = std::fopen("/proc/self/status", "re")) {
    char line[256];
    uint64_t threads = 0;
    while (std::fgets(line, sizeof line, f) != nullptr) {
      if (read_status_field(line, "VmRSS", &m.resident_bytes)) continue;
      if (read_status_field(line, "RssAnon", &m.resident_anon_bytes)) continue;
      if (read_status_field(line, "VmSwap", &m.swap_bytes)) continue;
      read_status_field(line, "Threads", &threads);
    }
    std::fclose(f);
    m.threads = static_cast<int64_t>(threads);
  }
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  const struct mallinfo2 mi = mallinfo2();
  m.have_malloc_counters = true;
  m.malloc_in_use_bytes = mi.uordblks + mi.hblkhd;
  m.malloc_free_bytes = mi.fordblks;
#endif
  return m;
}

bool limit_malloc_arenas(int max_arenas) {
  if (max_arenas < 1) return false;
#if defined(__GLIBC__)
  return mallopt(M_ARENA_MAX, max_arenas) == 1;
#else
  return false;
#endif
}

bool release_free_heap() {
#if defined(__GLIBC__)
  return malloc_trim(0) == 1;
#else
  return false;
#endif
}

}  // namespace gs
