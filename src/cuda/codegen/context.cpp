// What the parts of one kernel's generation share (context.h).
#include "cuda/codegen/context.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <utility>

namespace gamut::cuda::cg {

using std::to_string;

namespace {

// The identifiers of rendered C++ text that stand alone (not after `.`, `::` or `->`, not a
// number's suffix).
std::set<std::string> plain_identifiers(const std::string& text) {
  std::set<std::string> out;
  auto ident = [](char ch) { return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_'; };
  for (size_t p = 0; p < text.size();) {
    if (!ident(text[p])) {
      ++p;
      continue;
    }
    size_t e = p;
    while (e < text.size() && ident(text[e])) ++e;
    const bool qualified = p > 0 && (text[p - 1] == '.' || text[p - 1] == ':' || text[p - 1] == '>');
    if (!qualified && !std::isdigit(static_cast<unsigned char>(text[p]))) out.insert(text.substr(p, e - p));
    p = e;
  }
  return out;
}

// The Let statements of `body` and of the bodies of its ifs, per local.
void lets_in(const std::vector<Stmt>& body, std::map<int, std::vector<const Stmt*>>& out) {
  for (const Stmt& s : body) {
    if (s.kind == StmtKind::Let) out[s.target].push_back(&s);
    lets_in(s.body, out);
  }
}

}  // namespace

KernelContext::KernelContext(const Plan& plan, const TileConfig& tile, ArgLayout args, bool packed16)
    : P(plan),
      T(tile),
      N(plan),
      A(std::move(args)),
      S(smem_plan(plan, tile, packed16)),
      inner_r(plan, N, Renderer::Ctx::Inner),
      outer_r(plan, N, Renderer::Ctx::Outer) {}

size_t KernelContext::resident_accs_offset() const {
  const int l = resident_top_form(P);
  if (!resident_top || l < 0) unsupported("internal error: no resident top / bottom list");
  return resident_top_offset + resident_top_bytes(T, P.lists[size_t(l)].per);
}

std::string KernelContext::smem_at(const std::string& name, size_t offset, const std::string& comment) {
  for (const SmemField& f : smem_fields)
    if (f.name == name) {
      if (f.offset != offset) unsupported("internal error: two shared-memory offsets named " + name);
      return "smem + Smem::" + name;
    }
  smem_fields.push_back({name, offset, comment});
  return "smem + Smem::" + name;
}

std::string KernelContext::out_smem_at(const std::string& name, size_t offset, const std::string& comment) {
  if (!persistent) return smem_at(name, offset, comment);
  smem_at(name, offset, comment + " (from out_smem)");
  return "out_smem + Smem::" + name;
}

std::string KernelContext::smem_struct() const {
  if (smem_fields.empty()) return "";
  Code c;
  c.line("// Byte offsets of the regions of the dynamic shared memory (smem; the outputs reuse the");
  c.line(persistent ? "// space from out_smem, after the stage ring)." : "// mainloop's space once it is done).");
  c.open("struct Smem");
  for (const SmemField& f : smem_fields)
    c.line("static constexpr unsigned " + f.name + " = " + to_string(f.offset) + ";  // " + f.comment);
  c.close(";");
  return c.str();
}

void KernelContext::let_functions(Code& c) {
  std::map<int, std::vector<const Stmt*>> lets;
  lets_in(P.outer, lets);
  std::map<int, std::string> calls;
  // The outer locals by name: a let's parameters are the locals its value names (looked up, not
  // each local tested against each let: 30,000 lets took 90 s).
  std::map<std::string, int> outer_local;
  for (size_t m = 0; m < P.locals.size(); ++m)
    if (!P.locals[m].inner) outer_local.emplace(N.local(int(m)), int(m));
  for (const auto& [n, stmts] : lets) {
    if (stmts.size() != 1 || P.locals[size_t(n)].inner) continue;
    if (calls.empty()) c.line("// The query's lets, each rendered once; the statements below call them.");
    const Stmt& s = *stmts[0];
    const std::string type = ctype_cpp(P.locals[size_t(n)].type);
    const std::string value = outer_r.expr_as(s.value, P.locals[size_t(n)].type);
    const std::set<std::string> used = plain_identifiers(value);
    std::string params, args;
    auto pass = [&](const std::string& t, const std::string& name) {
      if (!used.count(name)) return;
      params += (params.empty() ? "const " : ", const ") + t + " " + name;
      args += (args.empty() ? "" : ", ") + name;
    };
    for (const char* axis : {"i", "j", "b"}) pass("int", axis);
    for (size_t a = 0; a < P.accs.size(); ++a) pass(acc_type(int(a)), acc(int(a)));
    std::vector<int> named;  // in the locals' order, as the parameters are listed
    for (const std::string& id : used) {
      auto it = outer_local.find(id);
      if (it != outer_local.end() && it->second != n) named.push_back(it->second);
    }
    std::sort(named.begin(), named.end());
    for (int m : named) pass(ctype_cpp(P.locals[size_t(m)].type), N.local(m));
    c.line(outer_r.echo(s));
    c.open("const auto " + N.local(n, "of") + " = [&](" + params + ") -> " + type);
    c.line("return " + value + ";");
    c.close(";");
    calls[n] = N.local(n, "of") + "(" + args + ")";
  }
  outer_r.set_let_calls(std::move(calls));
}

void KernelContext::locals(bool inner, Code& out) const {
  for (size_t n = 0; n < P.locals.size(); ++n)
    if (P.locals[n].inner == inner)
      out.line(ctype_cpp(P.locals[n].type) + " " + N.local(int(n)) + " = " + ctype_cpp(P.locals[n].type) + "();");
}

std::string KernelContext::out_offset(int d, const std::string& jname, const std::vector<std::string>& keys) const {
  const std::vector<OutIndex> idx = output_index(P, d);
  std::string r;
  size_t key = 0;
  for (size_t p = 0; p < idx.size(); ++p) {
    std::string term;
    if (idx[p].kind == OutIndex::Key) {
      if (key >= keys.size()) unsupported("a computed index of " + P.dense[size_t(d)].name + " without its value");
      term = keys[key++];
    } else if (idx[p].kind == OutIndex::Lookup)
      term = "gm::to_i64(" + outer_r.load(idx[p].access) + ")";
    else if (idx[p].axis == AxisRole::Row)
      term = "gm::i64(i)";
    else if (idx[p].axis == AxisRole::Col)
      term = "gm::i64(" + jname + ")";
    else
      term = "gm::i64(b)";
    r += (r.empty() ? "" : " + ") + term + " * " + N.dense(d, "stride" + to_string(p));
  }
  return r.empty() ? "gm::i64(0)" : r;
}

std::set<int> KernelContext::outer_accesses() const {
  std::set<int> out;
  auto visit = [&](const Expr& e) {
    if (e.kind == ExprKind::Load) out.insert(e.index);
  };
  walk_stmts(P, P.outer, visit);
  walk_expr(P, P.when.mask, visit);
  for (const ListOutput& l : P.lists) walk_expr(P, l.key, visit);
  for (const JoinKey& k : P.when.keys) out.insert({k.row_access, k.col_access});
  for (const DenseOutput& d : P.dense)
    for (const OutIndex& x : d.index)
      if (x.kind == OutIndex::Lookup) out.insert(x.access);
  return out;
}

bool KernelContext::has_pass() const { return coords->keys_matched() ? P.when.mask != kNoExpr : P.when.present(); }

std::string KernelContext::when_condition() const {
  std::string r;
  for (const JoinKey& k : coords->keys_matched() ? std::vector<JoinKey>{} : P.when.keys) {
    const CType tr = access_ctype(P, k.row_access), tc = access_ctype(P, k.col_access);
    CType t = std::max(tr, tc);  // compared in the common type, as the CPU engine
    if (!is_float(t)) t = CType::I64;
    r += (r.empty() ? "" : " && ") + std::string("(") + Renderer::convert(outer_r.load(k.row_access), tr, t) +
         " == " + Renderer::convert(outer_r.load(k.col_access), tc, t) + ")";
  }
  if (P.when.mask != kNoExpr)
    r += (r.empty() ? "" : " && ") + Renderer::cond(outer_r.expr(P.when.mask), P.expr(P.when.mask).type);
  return r;
}

std::string KernelContext::pair_test(bool bounds) const {
  std::string t = bounds ? coords->in_range() : "";
  if (has_pass())
    t += (t.empty() ? "" : " && ") + std::string("((") + map.bit("pass", "m", "n") + " >> " + map.bit_shift("m", "n") +
         ") & 1u) != 0";
  return t;
}

void KernelContext::inside_and_edge(Code& c, const std::function<void(bool bounds)>& pairs) const {
  c.line("const bool tile_inside = " + map.tile_row0 + " + Shape::BM <= row_end && " + map.tile_col0 +
         " + Shape::BN <= col_end;");
  c.open("if (tile_inside)");
  pairs(false);
  c.close();
  c.open("else");
  pairs(true);
  c.close();
}

long KernelContext::tile_ranks_offset() const {
  const size_t off = cg::tile_ranks_offset(S), bytes = tile_ranks_bytes(T);
  return out_smem_offset + off + bytes <= smem_bytes ? long(off) : -1;
}

bool KernelContext::runs_along_j(int d) const { return coords->positions_are_indices() && output_runs_along_j(P, d); }

}  // namespace gamut::cuda::cg
