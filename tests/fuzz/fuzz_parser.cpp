// libFuzzer target: any byte string through the lexer, parser and semantic analysis must give a
// plan or diagnostics, never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "sema/analyze.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gamut::Source src{"fuzz.mmlt", std::string(reinterpret_cast<const char*>(data), size)};
  gamut::Diagnostics diags(src);
  gamut::AstQuery ast = gamut::parse(src, diags);
  if (!diags.any()) {
    gamut::TypeEnv env;
    if (size % 2) env.inputs["A"] = gamut::DType::F32;  // typed and untyped analysis both
    gamut::Plan p = gamut::analyze(ast, src, env, diags);
    if (!diags.any()) (void)gamut::print_plan(p);
  }
  (void)diags.render();
  return 0;
}
