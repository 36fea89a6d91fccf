"""The statements of a generated query (mmlt_gen.Generator): accumulators and the reduce body,
`when`, the output block, and the comparison rule of every output (mmlt_info)."""
import math

from mmlt_ast import (AccRef, AxisV, Bin, Call, Emit, If, Inf, Let, Lit, Load, LocalRef, Param, Printer, Store, Tern, Un,
                      Upd, all_exprs, children, default_type, infer_acc_types, is_float, typeof, walk_expr,
                      walk_stmts)
from mmlt_exact import ExactFloats
from mmlt_info import HUGE, LIMIT, Bad, Info, fmax, fsum, lit_frac, prod_exact


class Case:
    """One generated case: query text, inputs, bindings, dims and comparison rules."""

    def __init__(self, seed, query, text, operands, params, dims, rules, feature_tags):
        self.seed, self.query, self.text = seed, query, text
        self.operands, self.params, self.dims, self.rules = operands, params, dims, rules
        self.tags = feature_tags


class QueryParts(ExactFloats):
    """Mixed into Generator: everything above the expression level."""

    def accumulators(self, template, X, Y):
        r, q = self.r, self.q
        xl = Load(X.name, next(p for p in X.pats if "i" in p))
        yl = Load(Y.name, next(p for p in Y.pats if "j" in p))
        if any(p in ("jk", "kj") for p in X.pats):
            yl = Load(X.name, next(p for p in X.pats if "j" in p)) if r.random() < 0.5 else yl
        specs = []
        # Cosine similarity's three f32 sums (the one-sided rewrite's reciprocal norms under bf16 / tf32).
        cosine = template == "knn" and self.inexact_ok and r.random() < 0.4
        n_acc = 3 if cosine else r.choice([1, 1, 1, 2, 2, 3])
        for a in range(n_acc):
            name = self.fresh(r.choice(["acc", "s", "d", "m", "cnt", "r"]))
            if cosine:
                fam, val = "+=", Bin("*", *((xl, yl), (xl, xl), (yl, yl))[a])
            elif a == 0 and template in ("gemm", "pushdown", "join", "select"):
                fam, val = "+=", Bin("*", xl, yl)
            elif a == 0 and template == "knn":
                dl = self.fresh("t")
                self.add_local(Let(dl, Bin("-", xl, yl)), "inner")
                fam, val = "+=", Bin("*", LocalRef(dl), LocalRef(dl))
            elif a == 0 and template == "tropical":
                fam, val = r.choice(["max=", "min="]), Bin("+", xl, yl)
            elif a == 0 and template == "bitpack":
                fam, val = "|=", Bin(r.choice(["&", "&&"]), xl, yl)
            else:
                fam, val = r.choice(["+=", "+=", "-=", "*=", "max=", "min=", "|=", "&=", "^=", "=", "=", "mix"]), None
            decl = "f32" if cosine else None
            if cosine:
                pass
            elif fam in ("|=", "&=", "^=") or (template == "bitpack" and a == 0):
                decl = r.choice(["i32", "i64"])   # an inferred type could be float
            elif fam in ("=", "mix") or r.random() < 0.4:
                decl = r.choice(["i32", "i64", "f32", "f64", "f32"])
            specs.append([name, decl, fam, val])
        # Inner lets used by the updates.
        for _ in range(r.choice([0, 0, 1, 2])):
            self.add_local(Let(self.fresh(r.choice(["t", "u1", "e", "q"])), self.expr("inner", "num")), "inner")
        self.cosine = [n for n, _, _, _ in specs] if cosine else None
        self.declared = {n: d for n, d, _, _ in specs if d}
        for name, decl, fam, val in specs:
            self.env.accs[name] = decl or "f64"  # placeholder until inferred
        body = []
        for name, decl, fam, val in specs:
            body += [Upd(name, fam, val)] if cosine else self.updates(name, decl, fam, val)
        q.inner = [s for s in self.inner_lets] + body
        q.accs = []
        for name, decl, fam, _ in specs:
            q.accs.append([name, decl, self.init(decl, fam)])
        # Inferred types; a float value into an inferred integer accumulator: declare it float.
        for _ in range(3):
            types = infer_acc_types(q, self.env.dtypes)
            self.env.accs = dict(types)
            changed = False
            for s in walk_stmts(q.inner):
                if isinstance(s, Upd) and not is_float(types[s.acc]) and is_float(self.typed(s.e)):
                    for a in q.accs:
                        if a[0] == s.acc and a[1] is None:
                            a[1] = self.typed(s.e)
                            changed = True
                        elif a[0] == s.acc and s.op in ("+=", "-=", "*="):
                            # A declared integer accumulator: the language rejects a float value
                            # summed into it (it would truncate at every step); convert it.
                            s.e = Call(a[1], [s.e])
                            changed = True
            if not changed:
                break
        self.env.accs = infer_acc_types(q, self.env.dtypes)
        for _ in range(len(q.accs) + 1):
            for name, _, init in q.accs:
                if isinstance(init, Inf) or (isinstance(init, Un) and isinstance(init.a, Inf)):
                    self.nonfinite_names.add(name)
            for s in walk_stmts(q.inner):
                if isinstance(s, Upd) and is_float(self.env.accs[s.acc]) and (
                        self.nonfinite(s.e) or (s.op == "*=" and self.K > 60)):
                    self.nonfinite_names.add(s.acc)
        for a in q.accs:
            if a[1] and is_float(a[1]) and isinstance(a[2], Lit) and not isinstance(a[2].v, float) and r.random() < 0.3:
                a[2] = Lit(float(a[2].v) + 0.5)
        self.scope = [n for n in self.scope if self.local_ctx[n] != "inner"]

    def add_local(self, let, ctx):
        self.env.locals[let.name] = default_type(*typeof(let.e, self.env))
        if self.nonfinite(let.e):
            self.nonfinite_names.add(let.name)
        self.an.locals[let.name] = self.an.an(let.e)
        self.scope.append(let.name)
        self.local_ctx[let.name] = ctx
        if ctx == "inner":
            self.inner_lets.append(let)

    def init(self, decl, fam):
        r = self.r
        if fam == "*=":
            return Lit(r.choice([1, 1, 2, -1]))
        if fam in ("max=", "min="):
            if r.random() < 0.6:
                return Un("-", Inf()) if fam == "max=" else Inf()
            return Lit(r.randint(-5, 5))
        if fam == "&=":
            return Lit(r.choice([-1, -1, 7, 255]))
        return Lit(r.choice([0, 0, 0, 1, -2, 3]))

    def updates(self, name, decl, fam, val):
        r = self.r
        kind = "int" if decl in ("i32", "i64") or fam in ("|=", "&=", "^=") else "num"
        acc = AccRef(name)
        if fam == "mix":
            a, b = r.sample(["+=", "max=", "min=", "*=", "-="], 2)
            out = self.updates(name, decl, a, None) + self.updates(name, decl, b, None)
            r.shuffle(out)
            return out
        if fam == "=":
            e = self.expr("inner", kind)
            form = r.random()
            if form < 0.25:
                v = Bin("+", acc, e)
            elif form < 0.45:
                v = Call(r.choice(["max", "min"]), [acc, e] if r.random() < 0.5 else [e, acc])
            elif form < 0.6:
                v = Tern(Bin(">", e, acc), e, acc)
            elif form < 0.75:
                v = Bin("+", Bin("*", acc, Lit(r.choice([2, -1, 3]) if kind == "int" else r.choice([0.5, 2, -1]))), e)
            elif form < 0.85 and kind == "int":
                v = Bin(r.choice(["^", "%", "|"]), Bin("+", acc, e), Lit(r.choice([7, 13, 255])))
            else:
                v = e
            others = [a for a, t in self.declared.items() if a != name]
            if others and r.random() < 0.3:
                v = Bin(r.choice(["+", "-"]), v, AccRef(r.choice(others)))
            stmt = Upd(name, "=", v)
        else:
            if val is None:
                if fam == "*=" and kind == "num":
                    c = self.expr("inner", "bool", det=True)
                    pair = r.choice([(2, 1), (-1, 1), (1, -2), (0.5, -1)])
                    val = Tern(c, Lit(pair[0]), Lit(pair[1]))
                else:
                    val = self.expr("inner", kind)
            stmt = Upd(name, fam, val)
        if r.random() < (0.5 if self.exact_floats else 0.25):
            body = [stmt]
            if r.random() < 0.3:
                lt = self.fresh("z")
                let = Let(lt, self.expr("inner", kind))
                self.env.locals[lt] = default_type(*typeof(let.e, self.env))
                self.an.locals[lt] = self.an.an(let.e)
                if self.nonfinite(let.e):
                    self.nonfinite_names.add(lt)
                body = [let, Upd(name, stmt.op, Bin("+", stmt.e, LocalRef(lt)))] if stmt.op != "=" else [let, stmt]
            cond = self.float_cond("inner") if self.exact_floats and r.random() < 0.6 else None
            return [If(cond or self.expr("inner", "bool", det=True), body)]
        return [stmt]

    def monoids(self):
        """Per accumulator: Sum Prod Max Min Or And Xor, or Seq (k in order)."""
        fam = {a[0]: set() for a in self.q.accs}
        read = set()
        for s in walk_stmts(self.q.inner):
            if isinstance(s, Upd):
                op, e = s.op, s.e
                if op == "=" and isinstance(e, Call) and e.fn in ("max", "min") and len(e.args) == 2 and \
                        any(isinstance(x, AccRef) and x.name == s.acc for x in e.args):
                    other = e.args[1] if isinstance(e.args[0], AccRef) and e.args[0].name == s.acc else e.args[0]
                    op, e = e.fn + "=", other
                fam[s.acc].add({"+=": "sum", "-=": "sum", "*=": "prod", "max=": "max", "min=": "min", "|=": "or",
                                "&=": "and", "^=": "xor", "=": "seq"}[op])
                for n in walk_expr(e):
                    if isinstance(n, AccRef):
                        read.add(n.name)
            for x in (s.e if isinstance(s, Let) else s.cond if isinstance(s, If) else None,):
                if x is not None:
                    for n in walk_expr(x):
                        if isinstance(n, AccRef):
                            read.add(n.name)
        return {a: (next(iter(f)) if len(f) == 1 and a not in read else "seq") for a, f in fam.items()}

    def fixpoint(self):
        """Abstract interpretation of the reduce loop over its k steps: bounds and determinism."""
        an, q = self.an, self.q
        mon = self.monoids()
        self.monoid = mon
        K = max(0, self.range_of["k"][1] - self.range_of["k"][0])
        for name, t, init in q.accs:
            t = self.env.accs[name]
            inf = isinstance(init, Inf) or (isinstance(init, Un) and isinstance(init.a, Inf))
            # An integer accumulator's +-inf is its type's end (INT_MIN for `max=`): a finite value
            # of the whole range, not 0 (seed 596661766: f32 sums of INT_MIN kept "exact").
            v = (math.inf if not is_float(t) else 0.0) if inf else abs(init_num(init))
            an.accs[name] = Info(t, False, self.an.cap(t, v), lit_frac(init_num(init)) if v and not inf else 0)
        saved = dict(an.locals)
        for _ in range(K):
            an.locals = dict(saved)
            self.step(q.inner, mon)
        an.locals = saved

    def step(self, ss, mon):
        an = self.an
        for s in ss:
            if isinstance(s, Let):
                an.locals[s.name] = an.conv(an.an(s.e), self.env.locals[s.name])
            elif isinstance(s, If):
                an.need(an.an(s.cond))
                before = dict(an.accs)
                self.step(s.body, mon)
                for n, i in an.accs.items():
                    b = before[n]
                    an.accs[n] = Info(i.t, False, max(i.B, b.B), fmax(i.F, b.F), i.det and b.det, i.fma or b.fma)
            elif isinstance(s, Upd):
                a = an.accs[s.acc]
                t = a.t
                v = an.an(s.e)
                if is_float(v.t) and not is_float(t):
                    an.need(v)
                v = an.conv(v, t)
                op = s.op
                m = mon[s.acc]
                if op == "=":
                    n = Info(t, False, v.B, v.F, v.det, v.fma)
                elif op in ("+=", "-="):
                    n = Info(t, False, an.cap(t, a.B + v.B), fmax(a.F, v.F), a.det and v.det)
                    if is_float(t) and not n.intlike() and (m == "sum" or v.fma):
                        n.det = False
                elif op == "*=":
                    n = Info(t, False, an.cap(t, a.B * v.B), fsum(a.F, v.F), a.det and v.det)
                    if is_float(t) and not n.intlike() and not (m == "prod" and prod_exact(s.e)):
                        n.det = False
                        n.fma = True
                    if is_float(t) and m == "prod" and prod_exact(s.e):
                        n.B = min(n.B, HUGE[t])
                elif op in ("max=", "min="):
                    n = Info(t, False, max(a.B, v.B), fmax(a.F, v.F), a.det and v.det)
                else:
                    n = Info(t, False, an.cap(t, 2 * max(a.B, v.B) + 1), 0, a.det and v.det)
                if is_float(t) and n.B > HUGE[t]:
                    raise Bad("accumulator overflows")
                an.accs[s.acc] = n

    # ---- when and outputs ----
    def when_clause(self, template):
        r, q = self.r, self.q
        g = next((o for o in self.ops.values() if o.name.startswith("g")), None)
        h = next((o for o in self.ops.values() if o.name.startswith("h")), None)
        join = None
        if g and h and (template == "join" or r.random() < 0.15):
            join = Bin("==", Load(g.name, "i"), Load(h.name, "j")) if r.random() < 0.8 else \
                Bin("==", Load(h.name, "j"), Load(g.name, "i"))
            self.tags.add("join")
        mask = None
        if r.random() < 0.15:
            mask = self.expr("when", "bool", det=True)
            self.tags.add("mask")
        if join is not None and mask is not None:
            q.when = Bin("&&", join, mask)
        else:
            q.when = join if join is not None else mask

    def outputs(self, template):
        r, q = self.r, self.q
        stmts = []
        if self.cosine:
            dot, nq, nx = (AccRef(n) for n in self.cosine)
            let = Let(self.fresh("cs"), Bin("/", dot, Call("sqrt", [Bin("*", nq, nx) if r.random() < 0.5 else Bin("*", nx, nq)])))
            self.add_local(let, "outer")
            # Under tensor-core maths (16-bit float inputs; f32 under tf32 / tf32x3) the engines
            # compute this quotient as dot * (1/sqrt(nq) * 1/sqrt(nx)), a few ulp from the written
            # form (docs/tensor-cores.md, "Reciprocal norms"): compared within a bound, never
            # discretely (seed 454265475: f16 inputs, 1 ulp).
            self.an.locals[let.name].det = False
            stmts.append(let)
            self.tags.add("cosine")
        for _ in range(r.choice([0, 0, 1, 2])):
            let = Let(self.fresh(r.choice(["v", "o", "y"])), self.expr("outer", "num"))
            self.add_local(let, "outer")
            stmts.append(let)
        kinds = []
        if template in ("gemm", "tropical", "bitpack"):
            kinds.append("project")
        elif template == "pushdown":
            kinds.append("agg2")
        elif template == "join":
            kinds.append("agg1")
        elif template == "knn":
            kinds.append(r.choice(["top_per", "top"]))
        elif template == "select":
            kinds.append(r.choice(["plain", "distinct", "top"]))
        for _ in range(r.choice([0, 1, 1, 2]) if kinds else r.choice([1, 1, 2, 3])):
            kinds.append(r.choice(["project", "agg1", "agg2", "aggaxis", "scalar", "plain", "distinct", "top",
                                   "top_per"]))
        if self.exact_floats:
            kinds += ["fdiscrete"] * r.choice([1, 1, 2])
        block = None   # an `if` that takes the next output too
        for kind in kinds:
            s = self.output(kind)
            if s is None:
                continue
            if block is not None and not isinstance(s, list):
                block.body.append(s)
                block = None
                continue
            if r.random() < 0.25 and not isinstance(s, list):
                s = [If(self.expr("outer", "bool", det=True), [s])]
                if r.random() < 0.4:
                    block = s[0]
            stmts += s if isinstance(s, list) else [s]
            # A second statement into the same aggregate (same operator and index), conditional.
            if isinstance(s, Store) and s.op != "=" and r.random() < 0.3:
                v2 = self.value(s.op)
                self.rule_dense(s.out, s.op, [s.e, v2])
                stmts.append(If(self.expr("outer", "bool", det=True), [Store(s.out, s.idx, s.op, v2)]))
        if not any(isinstance(x, (Store, Emit, If)) for x in stmts):
            stmts += [self.output("project")]
        q.outer = stmts

    def output(self, kind):
        r, q = self.r, self.q
        if kind == "fdiscrete":
            return self.output_fdiscrete()
        g = next((o for o in self.ops.values() if o.name.startswith("g")), None)
        h = next((o for o in self.ops.values() if o.name.startswith("h")), None)
        if kind == "project":
            name = self.fresh(r.choice(["C", "Out", "D"]))
            idx = [("ax", "i"), ("ax", "j")] if r.random() < 0.8 else [("ax", "j"), ("ax", "i")]
            v = self.primary() or self.value("=")
            st = Store(name, idx, "=", v)
            self.rule_dense(name, "=", [v])
            if r.random() < 0.2:
                v2 = self.value("=")
                self.rule_dense(name, "=", [v, v2])
                return [st, If(self.expr("outer", "bool", det=True), [Store(name, idx, "=", v2)])]
            return st
        if kind in ("agg1", "agg2", "aggaxis", "scalar"):
            if kind in ("agg1", "agg2") and not (g and h):
                kind = "aggaxis"
            if kind == "agg2":
                idx = [("vec", g.name, "i"), ("vec", h.name, "j")]
                if r.random() < 0.3:
                    idx = [("vec", g.name, "i"), ("ax", "j")]
            elif kind == "agg1":
                idx = [("vec", g.name, "i")] if r.random() < 0.6 else [("vec", h.name, "j")]
            elif kind == "aggaxis":
                idx = r.choice([[("ax", "i")], [("ax", "j")], [("ax", "i"), ("ax", "j")], [("ax", "j"), ("ax", "i")]])
            else:
                idx = []
            op = r.choice(["+=", "+=", "max=", "min=", "|=", "&="])
            v = (self.primary() if op in ("+=", "max=", "min=") else None) or self.value(op)
            name = self.fresh(r.choice(["T", "Agg", "S", "total"]) if idx else r.choice(["total", "sum0", "best"]))
            self.rule_dense(name, op, [v])
            if idx and r.random() < 0.3:
                self.dims[name] = None   # filled in finish(): extents plus a margin
            return Store(name, idx, op, v)
        # lists
        name = self.fresh(r.choice(["L", "Pairs", "Top", "Near", "Set"]))
        ncols = r.choice([1, 2, 3, 3, 4])
        cols, used = [], set()
        for c in range(ncols):
            pick = r.random()
            if pick < 0.35:
                role = r.choice(["i", "j"] + (["b"] if q.batched else []))
                e = AxisV(role)
            else:
                e = self.expr("outer", "int" if kind == "distinct" and r.random() < 0.7 else "num",
                              det=kind in ("plain", "distinct"))
            label = q.names[e.role] if isinstance(e, AxisV) else e.name if isinstance(e, (AccRef, LocalRef, Param)) else None
            alias = None
            if label in used or (label is None and r.random() < 0.2):
                alias = self.fresh("col")
            used.add(label)
            cols.append((e, alias))
        if kind in ("plain", "distinct"):
            st = Emit(name, cols, kind)
            a0 = AccRef(self.q.accs[0][0])
            if r.random() < 0.5 and self.an.an(a0).det:
                cond = Bin(r.choice([">", "<", ">=", "!="]), a0, self.leaf("outer", "num"))
            else:
                cond = self.expr("outer", "bool", det=True)
            self.rule_list(name, st)
            return [If(cond, [st])] if kind == "plain" or r.random() < 0.5 else st
        n = r.choice([1, 3, 10, 50, 0, 1000]) if r.random() < 0.8 else None
        if n is None:
            pn = self.fresh("n")
            self.params[pn] = r.choice([1, 2, 5])
            n = pn
        key = self.primary(det=True) or self.expr("outer", "num", det=True, need="var")
        per = r.choice(["i", "j"]) if kind == "top_per" else None
        st = Emit(name, cols, r.choice(["top", "bottom"]), n, key, per)
        self.rule_list(name, st)
        return st

    def primary(self, det=False):
        """The first output of a template reads its first accumulator as it is (Q2, Q4, Q7 ...)."""
        if self.primary_used or self.r.random() < 0.2:
            return None
        self.primary_used = True
        a = AccRef(self.q.accs[0][0])
        if det and not self.an.an(a).det:
            return None
        return a

    def value(self, op):
        kind = "int" if op in ("|=", "&=") else "num"
        need = "acc" if self.r.random() < 0.7 else "var"
        return self.expr("outer", kind, det=op in ("|=", "&="), need=need)

    def rule_dense(self, name, op, values):
        infos = [self.an.an(v) for v in values]
        det = all(i.det for i in infos)
        # The output's type: float when any value is (an integer value and a float one into the same
        # aggregate make it float); f32's precision when any value is f32.
        floats = [i.t for i in infos if is_float(i.t)]
        t = ("f32" if "f32" in floats else floats[0]) if floats else infos[0].t
        B = scale = max(i.B for i in infos)
        if op == "+=" and is_float(t):
            count = self.M * self.N * self.B
            scale = B * count ** 0.5
            B *= count
            F = fmax(*[i.F if is_float(i.t) else 0 for i in infos])
            det = det and F is not None and F < 1000 and B * 2.0 ** F <= LIMIT.get(t, LIMIT["f32"])
        self.rules[name] = {"kind": "dense", "exact": bool(det)}
        if not det and is_float(t):
            # The size of an element's terms (a term's bound, times the square root of their count for
            # an aggregate): an output whose terms cancel is compared relative to it, not to its own
            # small norm (rounding leaves an error relative to the terms).
            self.rules[name]["scale"] = float(min(scale, 1e300))
            if op == "+=":
                self.rules[name]["terms"] = int(count)   # pairs summed into one element (mmlt_case._close)

    def nonfinite(self, e):
        """Whether e may be NaN or infinite."""
        if not is_float(typeof(e, self.env)[0]):
            return False
        if isinstance(e, Inf):
            return True
        if isinstance(e, (Load, AccRef, LocalRef)):
            return e.name in self.nonfinite_names
        if isinstance(e, (Lit, Param, AxisV)):
            return False
        if isinstance(e, Bin) and e.op == "/" and not (isinstance(e.b, Lit) and e.b.v != 0):
            return True
        return any(self.nonfinite(c) for c in children(e))

    def rule_list(self, name, st):
        cols = []
        for e, _ in st.cols:
            i = self.an.an(e)
            cols.append(bool(i.det))
        if st.mode in ("plain", "distinct") and not all(cols):
            raise Bad("an ordered list column is not deterministic")
        self.rules[name] = {"kind": "list", "mode": st.mode, "exact_columns": cols}

    # ---- finishing ----
    def finish(self):
        q = self.q
        used_ops, used_params, used_pats = set(), set(), set()
        for e in all_exprs(q):
            for n in walk_expr(e):
                if isinstance(n, Load):
                    used_ops.add(n.name)
                    used_pats.add(n.pat)
                elif isinstance(n, Param):
                    used_params.add(n.name)
        for s in walk_stmts(q.outer):
            if isinstance(s, Store):
                for x in s.idx:
                    if x[0] == "vec":
                        used_ops.add(x[1])
                        used_pats.add(x[2])
            if isinstance(s, Emit) and isinstance(s.n, str):
                used_params.add(s.n)
        for role, rg in q.ranges.items():
            for x in rg[:2]:
                if not isinstance(x, int):
                    used_params.add(x[0])
        ops = {n: o for n, o in self.ops.items() if n in used_ops}
        covered = {p for pat in used_pats for p in pat} | ({"b"} if q.batched and ops else set())
        for role in ("i", "j", "k", "b") if q.batched else ("i", "j", "k"):
            rg = q.ranges.get(role)
            if role not in covered and (rg is None or any(not isinstance(x, int) and x[0] not in self.params
                                                          for x in rg[:2])):
                lo, hi = self.range_of[role]
                q.ranges[role] = (lo, hi, ")")
        params = {n: v for n, v in self.params.items() if n in used_params}
        dims = {}
        for name in self.dims:
            st = next(s for s in walk_stmts(q.outer) if isinstance(s, Store) and s.out == name)
            ext = []
            for x in st.idx:
                lo, hi = self.range_of[x[-1]]
                if x[0] == "ax":
                    ext.append(hi)
                else:
                    g = self.ops[x[1]].data
                    g = g[:self.range_of["b"][1], lo:hi] if q.batched else g[lo:hi]
                    ext.append(int(g.max()) + 1 if g.size else 0)
            dims[name] = [e + self.r.choice([0, 0, 1, 3]) for e in ext]
        comments = ["sum of products", "x", "per (i, j)", "TODO", "é ü", "k order", "a /* b"]
        text = Printer(q, extra_parens=lambda: self.r.random() < 0.05, spell=self.r.choice,
                       comment=lambda: self.r.choice(comments) if self.r.random() < 0.04 else None).query(
            comment=f"differential fuzz case, seed {self.seed}")
        return Case(self.seed, q, text, ops, params, dims, self.rules, sorted(self.tags))


def init_num(e):
    if isinstance(e, Lit):
        return e.v
    if isinstance(e, Inf):
        return float("inf")
    if isinstance(e, Un):
        return -init_num(e.a)
    raise TypeError(e)
