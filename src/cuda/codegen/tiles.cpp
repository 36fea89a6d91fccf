// Tile coordinates (context.h): plain tiles of the (i, j) ranges, or the tiles of a key-grouped
// join's tile table (codegen/join_groups.h).
#include "cuda/codegen/tiles.h"

namespace gamut::cuda::cg {

namespace {

// The instance's ranges as ints: `const int NAME_begin = ..., NAME_end = ...;`.
std::string range_line(const ArgLayout& A, const char* name, int begin, int end) {
  return cat("const int ", name, "_begin = gm::arg_i32(", A.field(begin), "), ", name, "_end = gm::arg_i32(",
             A.field(end), ");");
}

// Blocks take tiles in order of the (batch instance, tile): the grid is tiles_m * tiles_n * batch.
// In clusters of two: the pair of blocks 2q, 2q + 1 takes row tiles 2p, 2p + 1 of one column
// tile, the pairs in that order over ceil(tiles_m / 2) x tiles_n (a last odd row tile's partner
// has no rows: its loads read zeros, its outputs store nothing).
class PlainTiles final : public TileCoordinates {
 public:
  PlainTiles(const Plan& plan, const ArgLayout& args, int cluster, bool bands, bool resident_top)
      : P(plan), A(args), pairs_(cluster == 2), bands_(bands), resident_top_(resident_top) {}

  void prologue(Code& c) const override {
    c.line(range_line(A, "row", ArgLayout::kRowBegin, ArgLayout::kRowEnd));
    c.line(range_line(A, "col", ArgLayout::kColBegin, ArgLayout::kColEnd));
    c.line(range_line(A, "red", ArgLayout::kRedBegin, ArgLayout::kRedEnd));
    c.line(pairs_
               ? "// Clusters of two blocks, one per row tile of a pair: the grid is " + blocks_per_instance() +
                     " * batch blocks."
               : std::string("// One block per (batch instance, tile): the grid is tiles_m * tiles_n * batch blocks."));
    c.line("const int tiles_m = (row_end - row_begin + Shape::BM - 1) / Shape::BM;");
    c.line("const int tiles_n = (col_end - col_begin + Shape::BN - 1) / Shape::BN;");
    if (pairs_) {
      c.line("int b, tile_m, tile_n;");
      locate(c, "int(blockIdx.x)", "tiles_m", "tiles_n");
      return;
    }
    c.line("int b = int(blockIdx.x) / (tiles_m * tiles_n), tile_m, tile_n;");
    c.line(tile_order() + "(int(blockIdx.x) - b * tiles_m * tiles_n, tiles_m, tiles_n, tile_m, tile_n);");
  }
  std::string blocks_per_instance() const override {
    return pairs_ ? "2 * ((tiles_m + 1) / 2) * tiles_n" : "tiles_m * tiles_n";
  }
  void refresh(Code& c, const std::string& block) const override {
    // The tile counts too, from opaque copies of the bounds: the compiler otherwise keeps
    // tiles_m, tiles_m * tiles_n, ... from the prologue through the k loop, three registers
    // that made the list kernels spill inside it at 128 registers (128x128x8/8x8).
    c.line("int rb_e = row_begin, re_e = row_end, cb_e = col_begin, ce_e = col_end;");
    c.line("gm::opaque(rb_e); gm::opaque(re_e); gm::opaque(cb_e); gm::opaque(ce_e);");
    c.line(
        "const int tm_e = (re_e - rb_e + Shape::BM - 1) / Shape::BM, tn_e = (ce_e - cb_e + Shape::BN - 1) / "
        "Shape::BN;");
    if (pairs_) return locate(c, block, "tm_e", "tn_e");
    c.line("b = " + block + " / (tm_e * tn_e);");
    c.line(tile_order() + "(" + block + " - b * tm_e * tn_e, tm_e, tn_e, tile_m, tile_n);");
  }
  std::string row_at(const std::string& pos) const override { return pos; }
  std::string col_at(const std::string& pos) const override { return pos; }
  std::string in_range() const override { return "i < row_end && j < col_end"; }
  std::string row_valid(const std::string& v) const override { return v + " < row_end"; }
  std::string col_valid(const std::string& v) const override { return v + " < col_end"; }
  std::string range_first(bool row) const override { return row ? "row_begin" : "col_begin"; }
  std::string range_end(bool row) const override { return row ? "row_end" : "col_end"; }
  bool positions_are_indices() const override { return true; }
  bool keys_matched() const override { return false; }

 private:
  // The block -> tile order: L2-friendly groups of row tiles, or, with top/bottom lists per i
  // (per j), all row (column) tiles first so that each group's threshold tightens early; with
  // resident B, row tiles first (a band shares its column tile); with resident thresholds the
  // other way round: a block's consecutive tiles share the list's groups.
  std::string tile_order() const {
    if (bands_) return "gm::tile_coords_spread<false>";
    if (resident_top_) {
      const int l = resident_top_form(P);
      return P.lists[size_t(l)].per == PerGroup::Col ? "gm::tile_coords_spread<false>" : "gm::tile_coords_spread<true>";
    }
    for (const ListOutput& l : P.lists)
      if ((l.mode == ListMode::Top || l.mode == ListMode::Bottom) && l.per != PerGroup::None)
        return l.per == PerGroup::Col ? "gm::tile_coords_spread<true>" : "gm::tile_coords_spread<false>";
    return "gm::tile_coords<8>";
  }
  // Clusters of two: block `block` is rank block % 2 of pair block / 2.
  void locate(Code& c, const std::string& block, const std::string& tm, const std::string& tn) const {
    c.line("b = " + block + " / 2 / (((" + tm + ") + 1) / 2 * " + tn + ");");
    c.line(tile_order() + "(" + block + " / 2 - b * (((" + tm + ") + 1) / 2 * " + tn + "), ((" + tm + ") + 1) / 2, " +
           tn + ", tile_m, tile_n);");
    c.line("tile_m = 2 * tile_m + " + block + " % 2;");
  }
  const Plan& P;
  const ArgLayout& A;
  bool pairs_;
  bool bands_;
  bool resident_top_;
};

// A key-grouped join: one block per tile of the table, a tile spanning key-ordered positions
// of one key, mapped back to row / column indices through jrow / jcol (-1 past the tile's end).
// The block is the whole tile: b, tile_m, tile_n stay 0.
class GroupedJoinTiles final : public TileCoordinates {
 public:
  explicit GroupedJoinTiles(const ArgLayout& args) : A(args) {}

  void prologue(Code& c) const override {
    c.line("// A key-grouped join: one block per tile of the table; a tile spans key-ordered positions");
    c.line("// [row_begin, row_end) x [col_begin, col_end) of one key, mapped to indices by jrow / jcol.");
    c.line("const int* const jt = reinterpret_cast<const int*>(" + A.field(A.join_tiles) +
           ") + 4 * gm::i64(blockIdx.x);");
    c.line("const int row_begin = __ldg(jt), row_end = __ldg(jt + 1);");
    c.line("const int col_begin = __ldg(jt + 2), col_end = __ldg(jt + 3);");
    c.line("const int* const jrow = reinterpret_cast<const int*>(" + A.field(A.join_rows) + ");");
    c.line("const int* const jcol = reinterpret_cast<const int*>(" + A.field(A.join_cols) + ");");
    c.line(range_line(A, "red", ArgLayout::kRedBegin, ArgLayout::kRedEnd));
    c.line("const int tiles_m = 1, tiles_n = 1;");
    c.line("int b = 0, tile_m = 0, tile_n = 0;");
  }
  void refresh(Code&, const std::string&) const override {}
  std::string blocks_per_instance() const override { return "1"; }
  std::string row_at(const std::string& pos) const override {
    return "(" + pos + " < row_end ? __ldg(jrow + " + pos + ") : -1)";
  }
  std::string col_at(const std::string& pos) const override {
    return "(" + pos + " < col_end ? __ldg(jcol + " + pos + ") : -1)";
  }
  std::string in_range() const override { return "i >= 0 && j >= 0"; }
  std::string row_valid(const std::string& v) const override { return v + " >= 0"; }
  std::string col_valid(const std::string& v) const override { return v + " >= 0"; }
  // The Instance's range (row_begin / row_end here are one tile's positions).
  std::string range_first(bool row) const override {
    return "gm::arg_i32(" + A.field(row ? ArgLayout::kRowBegin : ArgLayout::kColBegin) + ")";
  }
  std::string range_end(bool row) const override {
    return "gm::arg_i32(" + A.field(row ? ArgLayout::kRowEnd : ArgLayout::kColEnd) + ")";
  }
  bool positions_are_indices() const override { return false; }
  bool keys_matched() const override { return true; }

 private:
  const ArgLayout& A;
};

}  // namespace

std::unique_ptr<TileCoordinates> make_tile_coordinates(const Plan& plan, const ArgLayout& args, bool grouped_join,
                                                       int cluster, bool bands, bool resident_top) {
  if (grouped_join) {
    if (!join_grouping_form(plan)) unsupported("a key-grouped join for this plan");
    return std::make_unique<GroupedJoinTiles>(args);
  }
  return std::make_unique<PlainTiles>(plan, args, cluster, bands, resident_top);
}

}  // namespace gamut::cuda::cg
