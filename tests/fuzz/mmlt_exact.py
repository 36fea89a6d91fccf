"""Float arithmetic used discretely, for the fuzzer's exactfloat cases (integer-valued float data):
values, conditions and discrete outputs whose float results are exact (mixed into mmlt_stmts.QueryParts)."""
from mmlt_ast import AccRef, AxisV, Bin, CMP_OPS, Call, Emit, If, Lit, Load, LocalRef, Store, is_float, walk_expr
from mmlt_info import Bad, HUGE


class ExactFloats:
    def float_value(self, ctx):
        """A float value computed from the data (a float accumulator times, over or plus something in
        the output block; products, sums and quotients of float loads in the reduce body) that the
        analysis finds exact on this case's data; None when none comes."""
        r = self.r
        faccs = [a for a, t in self.env.accs.items() if is_float(t)] if ctx == "outer" else []
        for _ in range(10):
            if faccs and r.random() < 0.75:
                base = AccRef(r.choice(faccs))
                form = r.random()
                if form < 0.3:
                    e = base
                elif form < 0.55:
                    e = Bin(r.choice(["*", "/"]), base, Lit(r.choice([3, 0.5, 2, 1.5, 7, 4])))
                elif form < 0.8:
                    e = Bin(r.choice(["+", "-"]), base, self.gen(ctx, "num", 1))
                else:
                    e = Bin("*", base, self.gen(ctx, "num", 1))
            else:
                e = self.gen(ctx, "float", 2)
            if not any(isinstance(n, (Load, AccRef, LocalRef)) for n in walk_expr(e)):
                continue
            try:
                i = self.an.an(e)
            except Bad:
                continue
            if is_float(i.t) and i.det and i.B <= HUGE[i.t] / 1e6:
                return e
        return None

    def float_cond(self, ctx):
        """A comparison of a float value (float_value) with a number or another float value."""
        r = self.r
        for _ in range(4):
            a = self.float_value(ctx)
            if a is None:
                return None
            b = self.float_value(ctx) if r.random() < 0.3 else None
            if b is None:
                b = Lit(r.choice([0, 1, 2, -1, 3, 0.5, 10, -4]))
            c = Bin(r.choice(CMP_OPS), a, b)
            try:
                self.an.need(self.an.an(c))
            except Bad:
                continue
            return c
        return None

    def output_fdiscrete(self):
        """One discrete use of float arithmetic: a store under a float comparison, a cast to an
        integer, a top/bottom list keyed by it, or a distinct list of it."""
        r, q = self.r, self.q
        form = r.choice(["if", "if", "cast", "key", "distinct"])
        v = self.float_value("outer")
        if v is None:
            return None
        if form == "if":
            cond = self.float_cond("outer")
            if cond is None:
                return None
            name = self.fresh(r.choice(["C", "Out", "D"]))
            idx = [("ax", "i"), ("ax", "j")]
            op = r.choice(["=", "+="]) if not q.batched else "="
            if op == "+=":
                idx = [("ax", r.choice(["i", "j"]))]
            self.rule_dense(name, op, [v])
            return [If(cond, [Store(name, idx, op, v)])]
        if form == "cast":
            if self.nonfinite(v):
                return None
            inner = v if r.random() < 0.5 else Call(r.choice(["floor", "ceil"]), [v])
            e = Call(r.choice(["i32", "i64"]), [inner])
            try:
                self.an.need(self.an.an(e))
            except Bad:
                return None
            name = self.fresh(r.choice(["C", "Out", "D"]))
            self.rule_dense(name, "=", [e])
            return Store(name, [("ax", "i"), ("ax", "j")], "=", e)
        if form == "key":
            name = self.fresh(r.choice(["Top", "Near", "L"]))
            cols = [(AxisV("i"), None), (AxisV("j"), None), (v, self.fresh("col"))]
            n = r.choice([1, 3, 10, 50])
            st = Emit(name, cols, r.choice(["top", "bottom"]), n, v, r.choice([None, None, "i", "j"]))
            self.rule_list(name, st)
            return st
        name = self.fresh(r.choice(["Set", "L"]))
        col = v if r.random() < 0.5 else Call("i32", [Call("floor", [v])])
        st = Emit(name, [(col, self.fresh("col"))], "distinct")
        try:
            self.an.need(self.an.an(col))
        except Bad:
            return None
        self.rule_list(name, st)
        return st

