"""Random gamut queries with data, seeded and reproducible (one seed, one case).

A case is a Query (mmlt_ast), its inputs, scalar bindings, --dim extents and, per output, the
comparison rule. The rule comes from an abstract interpretation of the query on the data's value
ranges (Info): a value is *deterministic* when every correct engine computes it bit for bit (integer
arithmetic; floating sums whose partial results are exact small dyadic numbers; single IEEE
operations in a fixed order); a float value that is not is compared with a relative bound. A value
that could change discretely with rounding (a comparison, a cast to an integer, a list order or key,
an `if`) must be deterministic: such queries are not generated.
"""
import math
import random

import numpy as np

from mmlt_ast import (AccRef, AxisV, Bin, Call, CMP_OPS, COMPUTE_OF, Emit, If, Inf, INT_RANGE, Let, Lit, Load,
                      LocalRef, Param, Printer, Query, STORAGE_RANGE, Store, Tern, TypeEnv, Un, Upd, children,
                      default_type, infer_acc_types, is_float, typeof, walk_expr)

LIMIT = {"f32": 2.0 ** 23, "f64": 2.0 ** 52}
# Open defects the generator steers around unless asked (Generator(known_defects=True)), so that a
# bounded run stays green; each is a case in tests/fuzz/cases and in the fuzzing notes.
KNOWN_DEFECTS = {
    # `f64(s)` / `f64(2.5)` / `i64(2)`: a cast of a weak value to its own default type stays weak
    # (src/sema/typing.cpp), so `f32(a) * f64(s)` is f32 where C promotion gives f64.
    "weak_cast": "tests/fuzz/cases/cast_of_weak_value.json",
    # A computed NaN's bits differ between engines (x86's default NaN is negative, CUDA's is
    # 0x7fffffff) but plain/distinct lists order and compare rows by bits: NaN stays out of them.
    "nan_bits": "tests/fuzz/cases/nan_payload_in_distinct.json",
}
HUGE = {"f32": 1e30, "f64": 1e290}
SIZES_SMALL = [1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 32, 33]
SIZES_DEVICE = SIZES_SMALL + [63, 64, 65, 127, 128, 129, 255, 257]
AXIS_NAMES = [("i", "j", "k", "b"), ("r", "c", "t", "n"), ("row", "col", "red", "bat"), ("x", "y", "z", "w")]


class Bad(Exception):
    """The generated query would compare something that rounding may change discretely."""


class Info:
    """Abstract value: type, weak, bound on |finite values|, fractional bits (None: any), det, fma."""
    __slots__ = ("t", "w", "B", "F", "det", "fma")

    def __init__(self, t, w, B, F, det=True, fma=False):
        self.t, self.w, self.B, self.F, self.det, self.fma = t, w, float(B), F, det, fma

    def intlike(self):
        if not is_float(self.t):
            return True
        return self.F is not None and self.B * 2.0 ** self.F <= LIMIT[self.t]


def frac_bits(values):
    a = np.asarray(values, dtype=np.float64).ravel()
    a = a[np.isfinite(a)]
    for f in range(0, 25):
        s = a * 2.0 ** f
        if np.all(np.floor(s) == s):
            return f
    return None


def lit_frac(v):
    return 0 if isinstance(v, int) else frac_bits([v])


def fmax(*fs):
    return None if any(f is None for f in fs) else max(fs)


def fsum(*fs):
    return None if any(f is None for f in fs) else sum(fs)


class Analyzer:
    """Info of expressions given operand data, accumulator and local infos (see module doc)."""

    def __init__(self, env, data, params, extents):
        self.env, self.data, self.params, self.extents = env, data, params, extents
        self.accs, self.locals = {}, {}

    def cap(self, t, B):
        if t in INT_RANGE:
            return min(B, float(-INT_RANGE[t][0]))
        return B

    def conv(self, i, t):
        if t == i.t:
            return i
        if t == "bool":
            return Info("bool", False, 1, 0, i.det)
        if is_float(t):
            return Info(t, False, i.B, i.F if is_float(i.t) else 0, i.det, i.fma and t == i.t)
        return Info(t, False, self.cap(t, i.B), 0, i.det)

    def leaf(self, e, int_ctx=False):
        t, w = typeof(e, self.env, int_ctx)
        if isinstance(e, Lit):
            return Info(t, w, abs(e.v), lit_frac(e.v))
        if isinstance(e, Inf):
            return Info(t, w, 0, 0)
        if isinstance(e, Param):
            v = self.params[e.name]
            return Info(t, w, abs(v), lit_frac(v))
        if isinstance(e, AxisV):
            return Info(t, w, self.extents[e.role], 0)
        if isinstance(e, Load):
            B, F = self.data[e.name]
            return Info(t, w, B, F if is_float(t) else 0)
        if isinstance(e, AccRef):
            return self.accs[e.name]
        if isinstance(e, LocalRef):
            return self.locals[e.name]
        return None

    def an(self, e, int_ctx=False):
        i = self.leaf(e, int_ctx)
        if i is not None:
            return i
        t, w = typeof(e, self.env, int_ctx)
        if isinstance(e, Un):
            a = self.an(e.a, e.op == "~")
            if e.op == "!":
                return Info("bool", False, 1, 0, self.need(a))
            a = self.conv(a, t)
            return Info(t, w, self.cap(t, a.B + 1), a.F, a.det, a.fma)
        if isinstance(e, Tern):
            c = self.an(e.c)
            a, b = self.conv(self.an(e.a), t), self.conv(self.an(e.b), t)
            return Info(t, w, max(a.B, b.B), fmax(a.F, b.F), self.need(c) and a.det and b.det, a.fma or b.fma)
        if isinstance(e, Call):
            return self.call(e, t, w)
        if isinstance(e, Bin):
            return self.binary(e, t, w)
        raise TypeError(e)

    def need(self, i):
        """A value used discretely (a condition, a comparison, a cast to an integer)."""
        if not i.det:
            raise Bad("a non-deterministic value is used discretely")
        return True

    def call(self, e, t, w):
        if e.fn in ("i32", "i64") or (e.fn in ("f32", "f64")):
            a = self.an(e.args[0])
            if e.fn in ("i32", "i64") and is_float(a.t):
                self.need(a)
            return self.conv(a, e.fn)
        args = [self.conv(self.an(a), t) for a in e.args]
        det = all(a.det for a in args)
        B = max(a.B for a in args)
        F = fmax(*[a.F for a in args])
        fn = e.fn
        if fn in ("abs", "min", "max", "clamp"):
            return Info(t, w, B, F, det, any(a.fma for a in args))
        if fn in ("floor", "ceil"):
            self.need(args[0])
            return Info(t, w, B + 1, 0, True)
        if fn == "sqrt":
            return Info(t, w, math.sqrt(B) + 1, None, det)
        if fn == "exp":
            return Info(t, w, math.exp(min(B, 700)), None, False)
        if fn == "log":
            return Info(t, w, math.log(B + 2) + 1, None, False)
        if fn == "tanh":
            return Info(t, w, 1, None, False)
        if fn == "pow":
            return Info(t, w, (args[0].B + 1) ** min(args[1].B, 64), None, False)
        raise TypeError(fn)

    def binary(self, e, t, w):
        op = e.op
        if op in ("&&", "||"):
            a, b = self.an(e.a), self.an(e.b)
            return Info("bool", False, 1, 0, self.need(a) and self.need(b))
        ic = op in ("%", "&", "|", "^", "<<", ">>")
        a, b = self.an(e.a, ic), self.an(e.b, ic)
        if op in CMP_OPS:
            self.need(a)
            self.need(b)
            return Info("bool", False, 1, 0, True)
        a, b = self.conv(a, t), self.conv(b, t)
        det = a.det and b.det
        if not is_float(t):
            if op in ("+", "-"):
                B = a.B + b.B
            elif op == "*":
                B = a.B * b.B
            elif op in ("/", "%"):
                B = a.B
            elif op in ("&", "|", "^"):
                B = 2 * max(a.B, b.B) + 1
            elif op == ">>":
                B = a.B
            else:
                B = float("inf")
            return Info(t, w, self.cap(t, B), 0, det)
        if op in ("+", "-"):
            r = Info(t, w, a.B + b.B, fmax(a.F, b.F), det)
            if not r.intlike() and (a.fma or b.fma):
                r.det = False
            return r
        if op == "*":
            r = Info(t, w, a.B * b.B, fsum(a.F, b.F), det)
            r.fma = not r.intlike()
            return r
        if op == "/":
            d = e.b
            if isinstance(d, Lit) and d.v != 0 and abs(d.v) >= 1 and math.log2(abs(d.v)).is_integer():
                n = int(math.log2(abs(d.v)))
                return Info(t, w, a.B / abs(d.v), None if a.F is None else a.F + n, det)
            if b.B == 0:
                return Info(t, w, float("inf"), None, det)
            self.need(b)   # a divisor near zero turns rounding into large errors
            return Info(t, w, a.B, None, det)
        raise TypeError(op)


class Operand:
    def __init__(self, name, dtype, pats, shape, data):
        self.name, self.dtype, self.pats, self.shape, self.data = name, dtype, pats, shape, data


class Case:
    """One generated case: query text, inputs, bindings, dims and comparison rules."""

    def __init__(self, seed, query, text, operands, params, dims, rules, feature_tags):
        self.seed, self.query, self.text = seed, query, text
        self.operands, self.params, self.dims, self.rules = operands, params, dims, rules
        self.tags = feature_tags


class Generator:
    def __init__(self, seed, device_sizes=False, known_defects=False):
        self.seed = seed
        self.known_defects = known_defects
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.sizes = SIZES_DEVICE if device_sizes else SIZES_SMALL

    # ---- names and data ----
    def fresh(self, base):
        n = base
        while n in self.used_names:
            n = f"{base}{self.r.randint(0, 99)}"
        self.used_names.add(n)
        return n

    def make_data(self, dtype, shape, kind):
        r, g = self.r, self.np
        if kind == "index":
            hi = r.randint(1, 6)
            return g.integers(0, hi, size=shape)
        if dtype == "bool" or kind == "bits":
            return g.integers(0, 2, size=shape)
        if kind == "wide" and dtype in STORAGE_RANGE:
            lo, hi = STORAGE_RANGE[dtype]
            if dtype in ("i32", "i64"):
                lo, hi = (-2 ** 20, 2 ** 20) if r.random() < 0.5 else (lo // 2, hi // 2)
            return g.integers(lo, hi, size=shape, endpoint=True)
        if kind == "frac" and is_float(COMPUTE_OF[dtype]):
            return g.standard_normal(size=shape) * 2
        if kind == "dyadic" and is_float(COMPUTE_OF[dtype]):
            return g.integers(-16, 17, size=shape) / 4.0
        if kind == "special" and is_float(COMPUTE_OF[dtype]):
            # Small integers with some NaN, +-inf and -0.0: IEEE arithmetic on them is still exact.
            v = g.integers(-3, 4, size=shape).astype(np.float64)
            pick = g.random(size=shape) < 0.08
            v[pick] = g.choice([np.nan, np.inf, -np.inf, -0.0], size=int(pick.sum()))
            self.tags.add("special")
            self.special_data = True
            return v
        lo = 0 if dtype == "u8" or kind == "pos" else -3
        return g.integers(lo, 4, size=shape)

    def operand(self, base, pats, dtype=None, kind=None):
        r = self.r
        name = self.fresh(base)
        if dtype is None:
            dtype = r.choices(["f32", "i32", "f64", "i64", "f16", "bf16", "i8", "u8", "i16", "bool"],
                              [8, 4, 2, 2, 2, 2, 2, 2, 1, 1])[0]
        if kind is None:
            kind = r.choices(["small", "bits", "wide", "frac", "dyadic", "pos", "special"], [8, 1, 1, 2, 1, 1, 1])[0]
        ext = {"i": self.M, "j": self.N, "k": self.K}
        shape = ([self.B] if self.q.batched else []) + [ext[p] for p in pats[0]]
        self.special_data = False
        data = store_as(self.make_data(dtype, shape, kind), dtype)
        if self.special_data:
            self.nonfinite_names.add(name)
        op = Operand(name, dtype, set(pats), tuple(shape), data)
        self.ops[name] = op
        return op

    # ---- expressions ----
    def loads(self, ctx):
        out = []
        for op in self.ops.values():
            for p in op.pats:
                if ctx == "inner" and p in ("ij", "ji"):
                    continue
                if ctx != "inner" and p not in ("i", "j", "ij", "ji"):
                    continue
                out.append(Load(op.name, p))
        return out

    def typed(self, e):
        return typeof(e, self.env)[0]

    def leaf(self, ctx, kind):
        r = self.r
        cands = []
        for ld in self.loads(ctx):
            t = COMPUTE_OF[self.ops[ld.name].dtype]
            if (kind == "int" and is_float(t)) or (kind == "float" and not is_float(t)) or \
               (kind == "bool" and t != "bool"):
                continue
            cands += [ld] * 3
        if kind != "bool":
            roles = ["i", "j"] + (["k"] if ctx == "inner" else []) + (["b"] if self.q.batched else [])
            if kind != "float":
                cands += [AxisV(rr) for rr in roles]
            for name in self.visible_locals(ctx):
                t = self.env.locals[name]
                if (kind == "int") == (not is_float(t)) or kind == "num":
                    cands.append(LocalRef(name))
            if ctx == "outer":
                for name, t in self.env.accs.items():
                    if (kind == "int") == (not is_float(t)) or kind == "num":
                        cands += [AccRef(name)] * 3
        if not cands or r.random() < 0.25:
            if kind == "bool":
                return Bin(r.choice(CMP_OPS), self.leaf(ctx, "num"), Lit(r.randint(-1, 2)))
            if kind == "int":
                ps = [p for p, v in self.params.items() if isinstance(v, int) and p not in self.range_params]
                if ps and r.random() < 0.3:
                    return Call(r.choice(["i32", "i64"]), [Param(r.choice(ps))])
                return Lit(r.choice([0, 1, 2, 3, -1, -2, 5, 7]))
            ps = [p for p in self.params if p not in self.range_params]
            if ps and r.random() < 0.4:
                return Param(r.choice(ps))
            if kind == "float":
                return Lit(r.choice([0.5, 1.5, 2.0, -0.25, 0.1, 3.0]))
            return Lit(r.choice([0, 1, 2, -1, 3, 0.5, 2.0]))
        return r.choice(cands)

    def visible_locals(self, ctx):
        return [n for n in self.scope if (self.local_ctx[n] == "inner") == (ctx == "inner")]

    def gen(self, ctx, kind, depth):
        r = self.r
        if depth <= 0 or r.random() < 0.3:
            return self.leaf(ctx, kind)
        d = depth - 1
        if kind == "bool":
            c = r.random()
            if c < 0.6:
                return Bin(r.choice(CMP_OPS), self.gen(ctx, "num", d), self.gen(ctx, "num", d))
            if c < 0.8:
                return Bin(r.choice(["&&", "||"]), self.gen(ctx, "bool", d), self.gen(ctx, "bool", d))
            if c < 0.9:
                return Un("!", self.gen(ctx, "bool", d))
            return self.gen(ctx, "int", d)
        sub = "int" if kind == "int" else "num"
        c = r.random()
        if c < 0.45:
            return Bin(r.choice(["+", "-", "*", "+", "*"]), self.gen(ctx, kind, d), self.gen(ctx, sub, d))
        if c < 0.55:
            return Tern(self.gen(ctx, "bool", d), self.gen(ctx, kind, d), self.gen(ctx, sub, d))
        if c < 0.65:
            fn = r.choice(["min", "max", "abs", "clamp", "max"])
            if fn == "abs":
                return Call(fn, [self.gen(ctx, kind, d)])
            if fn == "clamp":
                return Call(fn, [self.gen(ctx, kind, d), Lit(r.randint(-3, 0)), Lit(r.randint(1, 4))])
            return Call(fn, [self.gen(ctx, kind, d) for _ in range(r.choice([2, 2, 3]))])
        if c < 0.7:
            return Un("-", self.gen(ctx, kind, d))
        if kind == "int":
            c = r.random()
            if c < 0.3:
                return Bin(r.choice(["/", "%"]), self.gen(ctx, "int", d), self.gen(ctx, "int", d))
            if c < 0.6:
                return Bin(r.choice(["&", "|", "^"]), self.gen(ctx, "int", d), self.gen(ctx, "int", d))
            if c < 0.8:
                return Bin(r.choice(["<<", ">>"]), self.gen(ctx, "int", d),
                           Lit(r.randint(0, 4)) if r.random() < 0.7 else self.gen(ctx, "int", d))
            if c < 0.9:
                return Un("~", self.gen(ctx, "int", d))
            return Call(r.choice(["i32", "i64"]), [Call(r.choice(["floor", "ceil"]), [self.gen(ctx, "num", d)])])
        c = r.random()
        if c < 0.3:
            div = r.choice([Lit(2), Lit(4), Lit(3), Lit(0.5),
                            Bin("+", Call("abs", [self.gen(ctx, "num", d)]), Lit(1))])
            return Bin("/", self.gen(ctx, kind, d), div)
        if c < 0.5:
            return Call(r.choice(["f32", "f64", "f32"]), [self.gen(ctx, "num", d)])
        if c < 0.65:
            return Call(r.choice(["floor", "ceil"]), [self.gen(ctx, kind, d)])
        if c < 0.8 and self.inexact_ok:
            fn = r.choice(["sqrt", "exp", "log", "tanh", "pow"])
            a = self.gen(ctx, kind, d)
            if fn == "sqrt":
                return Call(fn, [Call("abs", [a])])
            if fn == "exp":
                return Call(fn, [Bin("/", Call("clamp", [a, Lit(-8), Lit(8)]), Lit(4))])
            if fn == "log":
                return Call(fn, [Bin("+", Call("abs", [a]), Lit(1))])
            if fn == "pow":
                return Call(fn, [Bin("+", Call("abs", [Call("clamp", [a, Lit(-8), Lit(8)])]), Lit(1)),
                                 Lit(r.choice([2, 0.5, 3]))])
            return Call(fn, [a])
        return self.gen(ctx, kind, d)

    def expr(self, ctx, kind, depth=3, det=False, tries=12, need=None):
        """An expression of the wanted kind that passes the analysis (deterministic if det) and reads
        what `need` says: 'var' something that varies (data, an axis, an accumulator), 'acc' an
        accumulator."""
        if need is None:
            need = "var" if kind == "bool" else None
        for _ in range(tries):
            e = self.gen(ctx, kind, self.r.randint(0 if need is None else 1, depth))
            if not self.known_defects and self.weak_cast(e):
                continue
            leaves = [n for n in walk_expr(e) if not children(n)]
            if need == "var" and not any(isinstance(n, (Load, AccRef, LocalRef, AxisV)) for n in leaves):
                continue
            if need == "acc" and not any(isinstance(n, AccRef) for n in leaves):
                continue
            try:
                i = self.an.an(e)
            except Bad:
                continue
            t = i.t
            if kind == "int" and is_float(t):
                continue
            if kind == "float" and not is_float(t):
                e = Call("f32" if self.r.random() < 0.7 or (i.w and not self.known_defects) else "f64", [e])
                i = self.an.an(e)
            if det and not i.det:
                continue
            if is_float(i.t) and i.B > HUGE[i.t] / 1e6:
                continue
            if kind == "bool":
                self.an.need(i)
            return e
        return {"int": Lit(1), "num": Lit(2), "float": Lit(1.5), "bool": Bin("<", AxisV("i"), AxisV("j"))}[kind]

    def weak_cast(self, e):
        for n in walk_expr(e):
            if isinstance(n, Call) and n.fn in ("f32", "f64", "i32", "i64"):
                t, w = typeof(n.args[0], self.env)
                if w and default_type(t, w) == n.fn:
                    return True
        return False

    # ---- query ----
    def generate(self):
        for attempt in range(40):
            try:
                return self._generate(attempt)
            except Bad:
                continue
        raise RuntimeError(f"seed {self.seed}: no valid query in 40 attempts")

    def _generate(self, attempt):
        r = self.r
        q = self.q = Query()
        self.tags = set()
        self.used_names = {"inf", "abs", "min", "max", "clamp", "sqrt", "exp", "log", "pow", "floor", "ceil",
                           "tanh", "f32", "f64", "i32", "i64", "batch", "where", "when", "in", "reduce", "let",
                           "if", "emit", "top", "bottom", "by", "per", "distinct", "as"}
        names = r.choice(AXIS_NAMES)
        q.names = dict(zip("ijkb", names))
        self.used_names |= set(names)
        template = r.choice(["gemm", "gemm", "tropical", "bitpack", "pushdown", "join", "knn", "general", "general",
                             "general", "select"])
        self.tags.add(template)
        q.batched = template not in ("bitpack",) and r.random() < 0.15
        self.B = r.choice([1, 2, 3]) if q.batched else 1
        self.M, self.N, self.K = (0 if r.random() < 0.02 else r.choice(self.sizes) for _ in range(3))
        if template == "bitpack":
            self.K = r.choice([64, 65, 96, 100, 128, 129, 200])
        selfjoin = template in ("knn", "general") and r.random() < 0.25
        if selfjoin:
            self.N = self.M
        self.inexact_ok = r.random() < 0.4
        self.ops, self.params, self.range_params = {}, {}, set()
        self.env = TypeEnv({})
        self.scope, self.local_ctx, self.inner_lets = [], {}, []
        self.rules, self.dims = {}, {}
        self.primary_used = False
        self.nonfinite_names = set()   # inputs with NaN or inf, accumulators and lets that may hold them
        # Inputs of the reduce body.
        bits = template == "bitpack"
        dt = r.choice(["i32", "bool", "u8", "i8"]) if bits else None
        trop = template == "tropical"
        tdt = r.choice(["i8", "i16", "u8", "i32", "f32", "i16"]) if trop else None
        if template == "gemm" and r.random() < 0.5:
            tdt = r.choice(["f16", "bf16", "i8", "u8", "f32", "f16", "bf16", "i8"])   # tensor-core inputs
        X = self.operand("A" if r.random() < 0.5 else "X", [r.choice(["ik", "ki"])], dtype=dt or tdt,
                         kind="bits" if bits else ("wide" if trop and r.random() < 0.3 else None))
        Y = self.operand("B" if r.random() < 0.5 else "Y", [r.choice(["kj", "jk"])], dtype=dt or tdt,
                         kind="bits" if bits else None)
        if selfjoin:
            X.pats.add("jk" if "ik" in X.pats else "kj")
            self.tags.add("selfjoin")
        for base, pat, p in (("u", "i", 0.25), ("v", "j", 0.25), ("w", "k", 0.2)):
            if not bits and r.random() < p:
                self.operand(base, [pat])
        if template in ("pushdown", "join") or r.random() < 0.2:
            self.operand("g", ["i"], dtype=r.choice(["i32", "i64", "u8", "i16"]), kind="index")
            self.operand("h", ["j"], dtype=r.choice(["i32", "i64", "u8", "i8"]), kind="index")
        if r.random() < 0.2:
            self.operand("Z", [r.choice(["ij", "ji"])])
        for _ in range(r.choice([0, 1, 1, 2])):
            v = r.choice([0, 1, 2, 3, -1, 5]) if r.random() < 0.7 else r.choice([0.5, 1.5, -2.5])
            self.params[self.fresh(r.choice(["thr", "alpha", "p", "s"]))] = v
        self.ranges_and_extents()
        self.env.dtypes = {n: o.dtype for n, o in self.ops.items()}
        data_info = {n: (finite_bound(o.data), frac_bits(o.data) if is_float(COMPUTE_OF[o.dtype]) else 0)
                     for n, o in self.ops.items()}
        self.an = Analyzer(self.env, data_info, self.params, self.axis_ends)
        self.accumulators(template, X, Y)
        self.fixpoint()
        self.when_clause(template)
        self.outputs(template)
        return self.finish()

    def ranges_and_extents(self):
        """Ranges: mostly inferred; sometimes literal, `[0, M]` (symbol) or `[1, N - 1)`."""
        r, q = self.r, self.q
        ext = {"i": self.M, "j": self.N, "k": self.K, "b": self.B}
        for role in ("i", "j", "k", "b") if q.batched else ("i", "j", "k"):
            if r.random() > 0.2:
                continue
            e = ext[role]
            c = r.random()
            close = r.choice(["]", ")"])
            if role == "b":
                q.ranges[role] = (0, r.randint(0, e), close)
            elif c < 0.4:
                lo = r.randint(0, e)
                q.ranges[role] = (lo, r.randint(lo, e), close)
            elif c < 0.7 or e < 3:
                sym = self.fresh(r.choice(["M", "N", "K", "L"]))
                self.range_params.add(sym)
                if r.random() < 0.5:
                    self.params[sym] = r.randint(0, e)
                q.ranges[role] = (0, (sym, 0), close)
            else:
                sym = self.fresh(r.choice(["M", "N", "K", "L"]))
                self.range_params.add(sym)
                q.ranges[role] = (1, (sym, -1), close)
        self.axis_ends = {}
        self.range_of = {}
        for role in ("i", "j", "k", "b"):
            rg = q.ranges.get(role)
            lo, hi = 0, ext[role]
            if rg:
                def val(x):
                    return x if isinstance(x, int) else self.params.get(x[0], ext[role]) + x[1]
                lo, hi = val(rg[0]), val(rg[1])
            self.range_of[role] = (lo, hi)
            self.axis_ends[role] = max(hi, 1)

    # ---- accumulators and the reduce body ----
    def accumulators(self, template, X, Y):
        r, q = self.r, self.q
        xl = Load(X.name, next(p for p in X.pats if "i" in p))
        yl = Load(Y.name, next(p for p in Y.pats if "j" in p))
        if any(p in ("jk", "kj") for p in X.pats):
            yl = Load(X.name, next(p for p in X.pats if "j" in p)) if r.random() < 0.5 else yl
        specs = []
        n_acc = r.choice([1, 1, 1, 2, 2, 3])
        for a in range(n_acc):
            name = self.fresh(r.choice(["acc", "s", "d", "m", "cnt", "r"]))
            if a == 0 and template in ("gemm", "pushdown", "join", "select"):
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
            decl = None
            if fam in ("|=", "&=", "^=") or (template == "bitpack" and a == 0):
                decl = r.choice(["i32", "i64"])   # an inferred type could be float
            elif fam in ("=", "mix") or r.random() < 0.4:
                decl = r.choice(["i32", "i64", "f32", "f64", "f32"])
            specs.append([name, decl, fam, val])
        # Inner lets used by the updates.
        for _ in range(r.choice([0, 0, 1, 2])):
            self.add_local(Let(self.fresh(r.choice(["t", "u1", "e", "q"])), self.expr("inner", "num")), "inner")
        self.declared = {n: d for n, d, _, _ in specs if d}
        for name, decl, fam, val in specs:
            self.env.accs[name] = decl or "f64"  # placeholder until inferred
        body = []
        for name, decl, fam, val in specs:
            body += self.updates(name, decl, fam, val)
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
        if r.random() < 0.25:
            body = [stmt]
            if r.random() < 0.3:
                lt = self.fresh("z")
                let = Let(lt, self.expr("inner", kind))
                self.env.locals[lt] = default_type(*typeof(let.e, self.env))
                self.an.locals[lt] = self.an.an(let.e)
                if self.nonfinite(let.e):
                    self.nonfinite_names.add(lt)
                body = [let, Upd(name, stmt.op, Bin("+", stmt.e, LocalRef(lt)))] if stmt.op != "=" else [let, stmt]
            return [If(self.expr("inner", "bool", det=True), body)]
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
            v = 0.0 if isinstance(init, Inf) or (isinstance(init, Un) and isinstance(init.a, Inf)) else abs(init_num(init))
            an.accs[name] = Info(t, False, self.an.cap(t, v), lit_frac(init_num(init)) if v else 0)
        saved = dict(an.locals)
        for _ in range(K):
            an.locals = dict(saved)
            self.step(q.inner, mon)
        an.locals = saved

    def step(self, ss, mon, guarded=False):
        an = self.an
        for s in ss:
            if isinstance(s, Let):
                an.locals[s.name] = an.conv(an.an(s.e), self.env.locals[s.name])
            elif isinstance(s, If):
                an.need(an.an(s.cond))
                before = dict(an.accs)
                self.step(s.body, mon, True)
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
        for kind in kinds:
            s = self.output(kind)
            if s is None:
                continue
            if r.random() < 0.25 and not isinstance(s, list):
                s = [If(self.expr("outer", "bool", det=True), [s])]
            stmts += s if isinstance(s, list) else [s]
        if not any(isinstance(x, (Store, Emit, If)) for x in stmts):
            stmts += [self.output("project")]
        q.outer = stmts

    def output(self, kind):
        r, q = self.r, self.q
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
        t = infos[0].t
        if op == "+=" and is_float(t):
            count = self.M * self.N * self.B
            B = max(i.B for i in infos) * count
            F = fmax(*[i.F for i in infos])
            det = det and F is not None and B * 2.0 ** F <= LIMIT[t]
        self.rules[name] = {"kind": "dense", "exact": bool(det)}

    def nonfinite(self, e):
        """Whether e may be NaN or infinite. (A computed NaN's sign and payload differ between
        engines, and plain/distinct lists order and compare rows by their bits.)"""
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
            if st.mode in ("plain", "distinct") and self.nonfinite(e) and not self.known_defects:
                raise Bad("NaN in an ordered list column")
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
                    g = g[..., lo:hi]
                    ext.append(int(g.max()) + 1 if g.size else 0)
            dims[name] = [e + self.r.choice([0, 0, 1, 3]) for e in ext]
        text = Printer(q, extra_parens=lambda: self.r.random() < 0.05).query(
            comment=f"differential fuzz case, seed {self.seed}")
        return Case(self.seed, q, text, ops, params, dims, self.rules, sorted(self.tags))


def finite_bound(data):
    a = np.asarray(data, dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(np.max(np.abs(a))) if a.size else 0.0


def walk_stmts(ss):
    for s in ss:
        yield s
        if isinstance(s, If):
            yield from walk_stmts(s.body)


def all_exprs(q):
    if q.when is not None:
        yield q.when
    for _, _, init in q.accs:
        yield init
    for s in list(walk_stmts(q.inner)) + list(walk_stmts(q.outer)):
        if isinstance(s, (Let, Upd, Store)):
            yield s.e
        elif isinstance(s, If):
            yield s.cond
        elif isinstance(s, Emit):
            for c, _ in s.cols:
                yield c
            if s.key is not None:
                yield s.key


def init_num(e):
    if isinstance(e, Lit):
        return e.v
    if isinstance(e, Inf):
        return float("inf")
    if isinstance(e, Un):
        return -init_num(e.a)
    raise TypeError(e)


def prod_exact(e):
    """`c ? x : y` with constants of one direction (|v| in {1, 2} or {1, 0.5}): every order of the
    product gives the same value, overflow and underflow included."""
    if not isinstance(e, Tern) or not isinstance(e.a, Lit) or not isinstance(e.b, Lit):
        return False
    m = {abs(e.a.v), abs(e.b.v)}
    return m <= {1, 2} or m <= {1, 0.5}


def store_as(values, dtype):
    """Values in the storage dtype (bf16: f32 values rounded to bf16, kept as f32 here)."""
    v = np.asarray(values)
    if dtype == "bool":
        return v.astype(np.bool_)
    if dtype == "bf16":
        f = v.astype(np.float32)
        bits = f.view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.astype(np.uint32).view(np.float32)
    np_t = {"u8": np.uint8, "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64,
            "f16": np.float16, "f32": np.float32, "f64": np.float64}[dtype]
    return v.astype(np_t)
