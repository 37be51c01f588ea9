// XXH3 from Debian's libxxhash, through its runtime x86 dispatch where the
// library has one. The plain XXH3_64bits_update runs the SSE2 loop (about
// 15 GB/s on 8 KiB updates here); its _dispatch twin picks AVX2 when the CPU
// has it (about 36 GB/s). Same algorithm, same bits: only the speed differs
// (bench/RESULTS.md, issue 24's small pages). Include this, not <xxhash.h>,
// where bulk bytes are hashed.
#pragma once

#include <xxhash.h>

#if defined(AUXSTORE_XXH_DISPATCH)
#include <xxh_x86dispatch.h>
#endif
