// neon-dotprod.h — building a kernel template twice on AArch64: once without the ARMv8.2 dot
// product (sdot) and once with it, the set picked at run time by ggml_cpu_neon_has_dotprod
// (quants.h). NEON_DOTPROD_BEGIN and NEON_DOTPROD_END bracket the functions built with sdot;
// when the build's flags already enable it (NEON_DOTPROD_ALWAYS), only those are built.
#ifndef GGML_CPU_NEON_DOTPROD_H
#define GGML_CPU_NEON_DOTPROD_H

#if defined(__ARM_FEATURE_DOTPROD)
#define NEON_DOTPROD_ALWAYS 1
#define NEON_DOTPROD_BEGIN
#define NEON_DOTPROD_END
#elif defined(__clang__)
#define NEON_DOTPROD_BEGIN _Pragma("clang attribute push(__attribute__((target(\"dotprod\"))), apply_to = function)")
#define NEON_DOTPROD_END   _Pragma("clang attribute pop")
#else
#define NEON_DOTPROD_BEGIN _Pragma("GCC push_options") _Pragma("GCC target(\"arch=armv8.2-a+dotprod\")")
#define NEON_DOTPROD_END   _Pragma("GCC pop_options")
#endif

#endif // GGML_CPU_NEON_DOTPROD_H
