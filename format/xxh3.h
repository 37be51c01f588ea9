// XXH3 from Debian's libxxhash, through its runtime x86 dispatch where the
// library has one. The plain XXH3_64bits_update runs the SSE2 loop (about
// 15 GB/s on 8 KiB updates here); its _dispatch twin picks AVX2 when the CPU
// has it (about 36 GB/s). Same algorithm, same bits: only the speed differs
// (bench/RESULTS.md, issue 24's small pages). Include this, not <xxhash.h>,
// where bulk bytes are hashed.
#pragma once

// XXH3_state_t's definition, so a state can live inside an object or on the
// stack instead of XXH3_createState's heap block (Debian ships the header
// and the library together, so the layout is the library's).
#ifndef XXH_STATIC_LINKING_ONLY
#define XXH_STATIC_LINKING_ONLY
#endif
#include <xxhash.h>

#if defined(AUXSTORE_XXH_DISPATCH)
#include <xxh_x86dispatch.h>
#endif
