// Aggregate outputs (C[g[i], h[j]] op= v, C[g[i]], C[i], a scalar). Per statement a run
// combiner in registers (gm::AggRun) merges equal consecutive keys; per output a sink commits
// the runs: a shared-memory hash table (gm::TableSink) that merges the block's values before
// one global atomic per key, or global atomics (gm::GlobalSink) where every (b, i, j) has its
// own element. Shared memory: one table per output that uses one (plan_aggregate_tables).
//
// The direct-table loop: when every aggregate output fits its table (TableSink direct, at most
// SLOTS elements; Q3's counts per pair of areas), the pairs commit with one shared atomic each,
// at the slot the row and column parts of the output position give. The row part is computed
// once per map row, the column part once per map column (held in registers), and no run combiner
// or probing code is rendered per pair: the general loop's per-pair code (loads of g[i], h[j],
// key compare, hashed commit) is large enough that the warps wait on the instruction cache.
// The general loop stays for outputs larger than the table.
//
// Computed indices (`Hist[b] += 1`): each store evaluates its index expressions first; a value
// outside its position's extent is recorded in the output's gm::KeyMisses (the host then makes
// the run a data error) and the pair stores nothing. A histogram of at most SLOTS bins is the
// direct table: a shared-memory histogram per block, merged into global memory after the
// block's tile; a larger one takes the hash table, whose crowded keys go to global atomics.
#include "cuda/outputs/output_operator.h"

namespace gamut::cuda::cg {

using std::to_string;

namespace {

// Which side of the output position a term of output_index belongs to (Key: computed per pair).
enum class Side { Row, Col, Key, None };
Side side_of(const Plan& P, const OutIndex& x) {
  if (x.kind == OutIndex::Key) return Side::Key;
  if (x.kind == OutIndex::Axis)
    return x.axis == AxisRole::Col ? Side::Col : Side::Row;  // the batch index goes with the row
  const Pattern p = P.accesses[size_t(x.access)].pattern;
  return p == Pattern::RowVec ? Side::Row : p == Pattern::ColVec ? Side::Col : Side::None;
}

class Aggregates final : public OutputOperator {
 public:
  explicit Aggregates(KernelContext& ctx) : X(ctx), P(ctx.P) { number(P.outer); }

  std::vector<std::string> headers() const override {
    for (const DenseOutput& d : P.dense)
      if (!d.is_project()) return {"gamut_aggregate.cuh"};
    return {};
  }

  void declare(Code& c) override {
    for (size_t d = 0; d < P.dense.size(); ++d) {
      const DenseOutput& o = P.dense[d];
      if (o.is_project()) continue;
      if (o.type == CType::Bool) unsupported("an aggregate of bool values");
      const std::string n = to_string(d), t = X.out_type(int(d));
      if (X.S.table_off[d] >= 0) {
        tables_ = true;
        c.line("gm::TableSink<" + t + ", " + store_op_code(o.op) + ", " + to_string(X.S.table_slots) +
               ", Shape::THREADS> sk" + n + ";  // " + P.dense[d].name + ": (element, operator, table slots, threads)");
        c.line("sk" + n + ".init(" +
               X.out_smem_at(X.N.dense(int(d)) + "_table", size_t(X.S.table_off[d]),
                             P.dense[d].name + "'s table (gm::TableSink)") +
               ", " + X.N.dense(int(d)) + ", gm::u64(" + X.arg(X.A.dense[d].elems) + "));");
      } else {
        c.line("gm::GlobalSink<" + t + ", " + store_op_code(o.op) + "> sk" + n + "{" + X.N.dense(int(d)) + "};");
      }
    }
    for (const auto& [s, id] : aggs_) {
      const DenseOutput& o = P.dense[size_t(s->target)];
      c.line("gm::AggRun<" + X.out_type(s->target) + ", " + store_op_code(o.op) + "> ar" + to_string(id) + ";");
      c.line("ar" + to_string(id) + ".reset();");
    }
  }
  std::string barrier_after_declare() const override { return tables_ ? "tables initialised" : ""; }
  void pair_begin(Code& c) override {
    for (const auto& [s, id] : aggs_)
      c.line("bool af" + to_string(id) + " = false; gm::u64 ak" + to_string(id) + " = 0; " + X.out_type(s->target) +
             " av" + to_string(id) + " = " + X.out_type(s->target) + "(0);");
  }
  bool leaf(const Stmt& s, Code& out) override {
    if (s.kind != StmtKind::Store || P.dense[size_t(s.target)].is_project()) return false;
    const int d = s.target;
    const std::string v = X.outer_r.expr_as(s.value, P.dense[size_t(d)].type);
    std::string id;
    for (const auto& [st, n] : aggs_)
      if (st == &s) id = to_string(n);
    const std::vector<std::string> keys = computed_keys(s, out);
    out.line("af" + id + " = true;");
    out.line("ak" + id + " = gm::u64(" + X.out_offset(d, "j", keys) + ");");
    out.line("av" + id + " = " + v + ";");
    if (!keys.empty()) out.close();
    return true;
  }
  void pair_end(Code& c) override {
    for (const auto& [s, id] : aggs_)
      c.line("ar" + to_string(id) + ".step(af" + to_string(id) + ", ak" + to_string(id) + ", av" + to_string(id) +
             ", sk" + to_string(s->target) + ");");
  }
  void finish(Code& c) override {
    for (const auto& [s, id] : aggs_) c.line("ar" + to_string(id) + ".finish(sk" + to_string(s->target) + ");");
    if (!tables_) return;
    c.line("gm::tile_sync<Shape::THREADS>();  // every commit is in its table");
    for (size_t d = 0; d < P.dense.size(); ++d)
      if (X.S.table_off[d] >= 0) c.line("sk" + to_string(d) + ".flush();");
  }

  std::string direct_condition() const override {
    if (aggs_.empty() || !P.lists.empty() || !X.coords->positions_are_indices()) return "";
    for (size_t d = 0; d < P.dense.size(); ++d) {
      if (P.dense[d].is_project() || X.S.table_off[d] < 0) return "";
      for (const OutIndex& x : output_index(P, int(d)))
        if (side_of(P, x) == Side::None) return "";
    }
    std::string all;
    for (size_t d = 0; d < P.dense.size(); ++d) all += (all.empty() ? "sk" : " && sk") + to_string(d) + ".direct";
    return all;
  }

  // Inside tiles take a copy without the bounds tests (KernelContext::inside_and_edge).
  void direct_loop(Code& c) override {
    X.inside_and_edge(c, [&](bool bounds) { direct_pairs(c, bounds); });
  }

 private:
  // The direct loop's pairs, with or without the bounds tests.
  void direct_pairs(Code& c, bool bounds) {
    const AccumulatorMap& M = X.map;
    // The column parts: one per map column, in registers through the loop.
    for (size_t d = 0; d < P.dense.size(); ++d) c.line("unsigned kc" + to_string(d) + "[" + M.cols + "];");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < " + M.cols + "; ++n)");
    c.line("const int j = " + M.tile_col0 + " + " + M.col("n") + ";");
    for (size_t d = 0; d < P.dense.size(); ++d)
      c.line("kc" + to_string(d) + "[n] = " +
             (bounds ? "j < col_end ? " + direct_part(int(d), false) + " : 0u" : direct_part(int(d), false)) + ";");
    c.close();
    c.line("#pragma unroll");
    c.open("for (int m = 0; m < " + M.rows + "; ++m)");
    c.line("const int i = " + M.tile_row0 + " + " + M.row("m") + ";");
    for (size_t d = 0; d < P.dense.size(); ++d)
      c.line("const unsigned kr" + to_string(d) + " = " +
             (bounds ? "i < row_end ? " + direct_part(int(d), true) + " : 0u" : direct_part(int(d), true)) + ";");
    c.line("#pragma unroll");
    c.open("for (int n = 0; n < " + M.cols + "; ++n)");
    c.line("const int j = " + M.tile_col0 + " + " + M.col("n") + ";");
    const std::string test = X.pair_test(bounds);
    if (!test.empty()) c.open("if (" + test + ")");
    for (size_t a = 0; a < P.accs.size(); ++a)
      c.line("const " + X.acc_type(int(a)) + " " + X.acc(int(a)) + " = " + M.value(int(a)) + ";");
    X.locals(false, c);
    X.outer_r.stmts(P.outer, c, [&](const Stmt& s, Code& out) {
      if (s.kind != StmtKind::Store) unsupported("a list in a direct-table epilogue");
      const int d = s.target;
      const std::string n = to_string(d);
      const std::vector<std::string> keys = computed_keys(s, out);
      out.line("sk" + n + ".add_direct(kr" + n + " + kc" + n + "[n]" + key_part(d, keys) + ", " +
               X.outer_r.expr_as(s.value, P.dense[size_t(d)].type) + ");");
      if (!keys.empty()) out.close();
    });
    if (!test.empty()) c.close();  // if
    c.close();                     // n
    c.close();                     // m
  }

  // Aggregate Store statements, in source order, with their run combiner's number.
  void number(const std::vector<Stmt>& body) {
    for (const Stmt& s : body) {
      if (s.kind == StmtKind::Store && !P.dense[size_t(s.target)].is_project())
        aggs_.push_back({&s, int(aggs_.size())});
      number(s.body);
    }
  }

  // Store s's computed indices as locals `ki<s>_<q>` (s: its run combiner's number), and an open block that runs where
  // all are in their extents (closed by the caller); none: no names, no block.
  std::vector<std::string> computed_keys(const Stmt& s, Code& out) const {
    const int d = s.target;
    const std::vector<OutIndex> idx = output_index(P, d);
    std::vector<std::string> names;
    std::string test;
    int id = -1;
    for (const auto& [st, n] : aggs_)
      if (st == &s) id = n;
    for (size_t p = 0, q = 0; p < idx.size(); ++p) {
      if (idx[p].kind != OutIndex::Key) continue;
      const std::string k = "ki" + to_string(id) + "_" + to_string(q);
      out.line("const gm::i64 " + k + " = " + X.outer_r.expr_as(s.columns.at(q), CType::I64) + ";  // " +
               P.dense[size_t(d)].name + "'s computed index " + to_string(p));
      test += (test.empty() ? "" : " & ") + std::string("gm::key_in_range(") + k + ", " +
              X.N.dense(d, "extent" + to_string(p)) + ", " + X.N.dense(d, "misses") + " + " + to_string(q) + ")";
      names.push_back(k);
      ++q;
    }
    // (`&`, not `&&`: every index out of range is recorded.)
    if (!names.empty()) out.open("if (" + test + ")");
    return names;
  }

  // The computed part of output d's direct slot: " + unsigned(KEY) * unsigned(STRIDE)" per key.
  std::string key_part(int d, const std::vector<std::string>& keys) const {
    const std::vector<OutIndex> idx = output_index(P, d);
    std::string r;
    for (size_t p = 0, q = 0; p < idx.size(); ++p)
      if (idx[p].kind == OutIndex::Key)
        r += " + unsigned(" + keys.at(q++) + ") * unsigned(" + X.N.dense(d, "stride" + to_string(p)) + ")";
    return r;
  }

  // The row (column) part of output d's position.
  std::string direct_part(int d, bool row) const {
    const std::vector<OutIndex> idx = output_index(P, d);
    std::string r;
    for (size_t p = 0; p < idx.size(); ++p) {
      if (side_of(P, idx[p]) == Side::Key) continue;
      if ((side_of(P, idx[p]) == Side::Row) != row) continue;
      std::string term;
      if (idx[p].kind == OutIndex::Lookup)
        term = "unsigned(gm::to_i64(" + X.outer_r.load(idx[p].access) + "))";
      else
        term = idx[p].axis == AxisRole::Row   ? "unsigned(i)"
               : idx[p].axis == AxisRole::Col ? "unsigned(j)"
                                              : "unsigned(b)";
      r += (r.empty() ? "" : " + ") + term + " * unsigned(" + X.N.dense(d, "stride" + to_string(p)) + ")";
    }
    // Positions were checked on the host (every index in range), and the output has at most
    // SLOTS elements here, so each part fits an unsigned: its products and sums modulo 2^32 are
    // the 64-bit ones (one 32-bit multiply each).
    return r.empty() ? "0u" : r;
  }

  KernelContext& X;
  const Plan& P;
  std::vector<std::pair<const Stmt*, int>> aggs_;
  bool tables_ = false;
};

}  // namespace

std::unique_ptr<OutputOperator> make_aggregate_operator(KernelContext& ctx) {
  return std::make_unique<Aggregates>(ctx);
}

size_t plan_aggregate_tables(const Plan& plan, size_t from, SmemPlan& s) {
  size_t off = from;
  for (s.table_slots = kTableSlots;; s.table_slots /= 2) {
    s.table_off.assign(plan.dense.size(), -1);
    off = from;
    for (size_t d = 0; d < plan.dense.size(); ++d) {
      if (!output_uses_table(plan, int(d))) continue;
      s.table_off[d] = long(off);
      off += round16(size_t(s.table_slots) * (8 + ctype_bytes(plan.dense[d].type)));
    }
    if (off - from <= kTableBudget || s.table_slots <= 32) break;
  }
  return off;
}

}  // namespace gamut::cuda::cg
