#include "rewrite/passes.h"

namespace gamut {

bool apply_rewrites(Plan& plan) {
  // No rewrites yet: aggregate push-down ((G^T A)(B H)) arrives with the fused-relational work.
  (void)plan;
  return false;
}

}  // namespace gamut
