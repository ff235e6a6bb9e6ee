// Runtime CPU dispatch for the model's own loops (delta rule, attention): a
// function marked QINFER_CLONES is compiled for AVX-512, AVX2+FMA and baseline
// x86-64, and the loader picks the best one for the CPU (GCC ifunc). Files that
// use it also ask for -O3-level vectorisation (the build's -O2 vectorises only
// loops of known trip count).
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__)
#define QINFER_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define QINFER_CLONES
#endif
