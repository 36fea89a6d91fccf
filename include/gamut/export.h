// Symbol visibility of the gamut library: the shared library exports only what these headers
// declare with GAMUT_API (everything else is built with -fvisibility=hidden).
#pragma once

#if defined(_WIN32)
#define GAMUT_API
#else
#define GAMUT_API __attribute__((visibility("default")))
#endif
