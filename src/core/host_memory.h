// Host (CPU-side) memory of this process: what the kernel counts, what malloc keeps, and
// glibc malloc's knobs that bound what it keeps (bug-case 64, decision 0036).
#pragma once

#include <cstdint>

namespace gs {

struct HostMemory {
  uint64_t resident_bytes = 0;       // VmRSS: every resident page (file-backed weights included)
  uint64_t resident_anon_bytes = 0;  // RssAnon: heap, stacks and other anonymous pages
  uint64_t swap_bytes = 0;           // VmSwap: anonymous pages swapped out
  int64_t threads = 0;               // threads of the process
  // glibc malloc's counters (mallinfo2), over every arena; false elsewhere (fields 0).
  bool have_malloc_counters = false;
  uint64_t malloc_in_use_bytes = 0;  // allocated and not yet freed (small chunks + mmapped)
  uint64_t malloc_free_bytes = 0;    // freed but still held by malloc (not given back)
};

// Reads /proc/self/status (Linux) and malloc's counters (glibc). Never fails: what cannot
// be read stays 0. Takes every malloc arena's lock in turn (a few microseconds each), so
// call it for a metrics scrape, not per token.
HostMemory read_host_memory();

// Caps glibc malloc's arenas at `max_arenas` (>= 1). glibc gives threads up to 8 arenas per
// core, each of which keeps the free memory of its own threads' peaks; a server with dozens of
// worker threads then grows towards that many peaks. Call before the threads start: arenas
// already made stay. Returns false where malloc is not glibc's or the value is refused
// (max_arenas < 1).
bool limit_malloc_arenas(int max_arenas);

// Gives free heap memory back to the kernel (glibc malloc_trim(0): also the free pages inside
// each arena, not only its top). Takes each arena's lock while it walks it (~1 ms with
// nothing to give back, 40-50 ms to give back ~95 MB of a fragmented 100 MB heap, measured
// on 2 busy cores), so call it when the process is idle. Returns true when
// memory was given back; false when none was, or where malloc is not glibc's.
bool release_free_heap();

}  // namespace gs
