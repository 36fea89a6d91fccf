"""Random gamut queries with data, seeded and reproducible (one seed, one case).

A case is a Query (mmlt_ast), its inputs, scalar bindings, --dim extents and, per output, the
comparison rule. The rule comes from an abstract interpretation of the query on the data's value
ranges (Info): a value is *deterministic* when every correct engine computes it bit for bit (integer
arithmetic; floating sums whose partial results are exact small dyadic numbers; single IEEE
operations in a fixed order); a float value that is not is compared with a relative bound. A value
that could change discretely with rounding (a comparison, a cast to an integer, a list order or key,
an `if`) must be deterministic: queries that use an inexact value so are not generated.

Those uses are generated on float data instead, where the data make the value exact: a quarter of the
cases (tag `exactfloat`) have only integer-valued float inputs (up to 2^11, exact in TF32 too) and
put float sums of products, products and quotients into `if` conditions in the reduce body and the
output block, comparisons, casts to integers, top/bottom keys and distinct columns.

Sizes: 0 (rarely), 1 to 33, and in about one case in eight one or two axes of 48 to 129 where the
CPU engine and the NumPy model can afford the case (at most 2^20 multiply-adds); `device_sizes` adds
tile multiples +-1 up to 257 (and lists past 2^20 rows).

`f32_math` (the GPU side's --f32-math: ieee, tf32x3 or tf32): under tf32 / tf32x3 every input value
has at most 11 significant bits, so that what the analysis calls exact stays exact when the tensor
cores round f32 operands to TF32; sums of inexact products are compared with the bound of that math
(differential.py).
"""
import random

import numpy as np

from mmlt_ast import (AccRef, AxisV, Bin, Call, CMP_OPS, COMPUTE_OF, Lit, Load, LocalRef, Param, Query,
                      STORAGE_RANGE, Tern, TypeEnv, Un, children, is_float, typeof, walk_expr)
from mmlt_info import HUGE, Analyzer, Bad, finite_bound, frac_bits
from mmlt_stmts import QueryParts

# Open defects the generator steers around unless asked (Generator(known_defects=True)), so that a
# bounded run stays green; each is a case in tests/fuzz/cases and in the fuzzing notes.
KNOWN_DEFECTS = {}   # name -> regression case of an open defect the generator steers around
SIZES_SMALL = [1, 2, 3, 5, 7, 8, 9, 13, 16, 17, 31, 32, 33]
SIZES_MID = [48, 63, 64, 65, 96, 127, 128, 129]
SIZES_DEVICE = SIZES_SMALL + [63, 64, 65, 127, 128, 129, 255, 257]
# Multiply-adds (B * M * N * K) a case with mid sizes may take: the CPU engine and the NumPy model
# (a loop over k) run it in well under a second.
MID_WORK = 2 ** 20
F32_MATHS = ("ieee", "tf32x3", "tf32")
# Integer-valued float inputs stay within this (11 significant bits: exact in TF32, f16; bf16: 2^8).
EXACT_FLOAT_MAX = {"f32": 2 ** 11, "f64": 2 ** 11, "f16": 2 ** 11, "bf16": 2 ** 8}
AXIS_NAMES = [("i", "j", "k", "b"), ("r", "c", "t", "n"), ("row", "col", "red", "bat"), ("x", "y", "z", "w")]


class Operand:
    def __init__(self, name, dtype, pats, shape, data):
        self.name, self.dtype, self.pats, self.shape, self.data = name, dtype, pats, shape, data


class Generator(QueryParts):
    def __init__(self, seed, device_sizes=False, known_defects=False, f32_math="ieee", mid_sizes=True):
        if f32_math not in F32_MATHS:
            raise ValueError(f"f32_math {f32_math!r}: one of {', '.join(F32_MATHS)}")
        self.seed = seed
        self.known_defects = known_defects
        self.f32_math = f32_math
        self.mid_sizes = mid_sizes and not device_sizes
        self.r = random.Random(seed)
        self.np = np.random.default_rng(seed)
        self.sizes = SIZES_DEVICE if device_sizes else SIZES_SMALL
        self.exact_floats = False

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
        if kind == "wide" and self.f32_math != "ieee":
            # TF32 keeps 11 significant bits of an f32 operand (a cast integer one too).
            hi = min(STORAGE_RANGE.get(dtype, (0, 2 ** 11))[1], 2 ** 11)
            lo = max(STORAGE_RANGE.get(dtype, (-2 ** 11, 0))[0], -2 ** 11)
            return g.integers(lo, hi, size=shape, endpoint=True)
        if kind == "wide" and dtype in STORAGE_RANGE:
            lo, hi = STORAGE_RANGE[dtype]
            if dtype in ("i32", "i64"):
                lo, hi = (-2 ** 20, 2 ** 20) if r.random() < 0.5 else (lo // 2, hi // 2)
            return g.integers(lo, hi, size=shape, endpoint=True)
        if kind == "wide" and dtype in EXACT_FLOAT_MAX:
            # Integer-valued floats of up to 11 (bf16: 8) significant bits.
            hi = EXACT_FLOAT_MAX[dtype] >> r.choice([0, 2, 4, 6])
            return g.integers(-hi, hi, size=shape, endpoint=True)
        if kind == "frac" and is_float(COMPUTE_OF[dtype]):
            v = g.standard_normal(size=shape) * 2
            if self.f32_math != "ieee":
                # At most 11 significant bits (TF32's), so that only sums are inexact.
                m, e = np.frexp(v)
                v = np.ldexp(np.round(m * 2 ** 11) / 2 ** 11, e)
            return v
        if kind == "dyadic" and is_float(COMPUTE_OF[dtype]):
            return g.integers(-16, 17, size=shape) / 4.0
        if kind == "special" and is_float(COMPUTE_OF[dtype]):
            # Small integers with some NaN, +-inf and -0.0: IEEE arithmetic on them is still exact.
            v = g.integers(-3, 4, size=shape).astype(np.float64)
            pick = g.random(size=shape) < 0.08
            # (No infinities under tf32x3: an infinite operand's products are NaN there,
            # docs/tensor-cores.md "Known differences"; nor in the distance template, whose sums of
            # squares expand-squares computes from norms: an infinite norm gives inf - inf = NaN
            # where the written sum is +inf, the same section; seed 830119590.)
            no_inf = self.f32_math == "tf32x3" or "knn" in self.tags
            specials = [np.nan, -0.0] if no_inf else [np.nan, np.inf, -np.inf, -0.0]
            v[pick] = g.choice(specials, size=int(pick.sum()))
            self.tags.add("special")
            self.special_data = True
            return v
        lo = 0 if dtype == "u8" or kind == "pos" else -3
        return g.integers(lo, 4, size=shape)

    def operand(self, base, pats, dtype=None, kind=None):
        r = self.r
        name = self.fresh(base)
        if dtype is None and self.exact_floats:
            dtype = r.choices(["f32", "f64", "f16", "bf16", "i32"], [8, 2, 2, 2, 2])[0]
        if dtype is None:
            dtype = r.choices(["f32", "i32", "f64", "i64", "f16", "bf16", "i8", "u8", "i16", "bool"],
                              [8, 4, 2, 2, 2, 2, 2, 2, 1, 1])[0]
        if kind is None:
            kind = r.choices(["small", "bits", "wide", "frac", "dyadic", "pos", "special"], [8, 1, 1, 2, 1, 1, 1])[0]
        if self.exact_floats and is_float(COMPUTE_OF[dtype]) and kind == "frac":
            kind = r.choice(["small", "wide", "dyadic"])   # integer-valued (dyadic: quarters)
        ext = {"i": self.M, "j": self.N, "k": self.K}
        shape = ([self.B] if self.q.batched else []) + [ext[p] for p in pats[0]]
        self.special_data = False
        data = store_as(self.make_data(dtype, shape, kind), dtype)
        if self.special_data:
            self.nonfinite_names.add(name)
        op = Operand(name, dtype, list(pats), tuple(shape), data)   # a list: reproducible order
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

    def int_operand(self, ctx, d):
        """Right operand of % & | ^ << >>: sometimes a bare parameter, which is then an integer one."""
        ps = [p for p, v in self.params.items() if isinstance(v, int) and p not in self.range_params]
        if ps and self.r.random() < 0.3:
            return Param(self.r.choice(ps))
        return self.gen(ctx, "int", d)

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
                if r.random() < 0.5:
                    return Bin("/", self.gen(ctx, "int", d), self.gen(ctx, "int", d))
                return Bin("%", self.gen(ctx, "int", d), self.int_operand(ctx, d))
            if c < 0.6:
                return Bin(r.choice(["&", "|", "^"]), self.gen(ctx, "int", d), self.int_operand(ctx, d))
            if c < 0.8:
                return Bin(r.choice(["<<", ">>"]), self.gen(ctx, "int", d),
                           Lit(r.randint(0, 4)) if r.random() < 0.6 else self.int_operand(ctx, d))
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
            d = depth + 2 if self.r.random() < 0.1 else depth
            e = self.gen(ctx, kind, self.r.randint(0 if need is None else 1, d))
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
                e = Call("f32" if self.r.random() < 0.7 else "f64", [e])
                i = self.an.an(e)
            if det and not i.det:
                continue
            if is_float(i.t) and i.B > HUGE[i.t] / 1e6:
                continue
            if kind == "bool":
                self.an.need(i)
            return e
        return {"int": Lit(1), "num": Lit(2), "float": Lit(1.5), "bool": Bin("<", AxisV("i"), AxisV("j"))}[kind]

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
        if self.mid_sizes and r.random() < 0.125:
            self.mid_extents()
        if self.sizes is SIZES_DEVICE and r.random() < 0.03:
            self.M, self.N = 1031, r.choice([1031, 517])   # lists past the GPU's first 2^20 rows
        if template == "bitpack":
            self.K = r.choice([64, 65, 96, 100, 128, 129, 200])
        selfjoin = template in ("knn", "general") and r.random() < 0.25
        if selfjoin:
            self.N = self.M
        # Float arithmetic used discretely, on integer-valued float data (module doc).
        self.exact_floats = r.random() < 0.25
        if self.exact_floats:
            self.tags.add("exactfloat")
        self.inexact_ok = r.random() < 0.4 and not self.exact_floats
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
            X.pats.append("jk" if "ik" in X.pats else "kj")
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
        self.an = Analyzer(self.env, data_info, self.params, self.axis_ends, self.nonfinite)
        self.accumulators(template, X, Y)
        self.fixpoint()
        self.when_clause(template)
        self.outputs(template)
        return self.finish()

    def mid_extents(self):
        """One or two of M, N, K from SIZES_MID, the others shrunk until the case takes at most
        MID_WORK multiply-adds."""
        r = self.r
        ext = {"M": self.M, "N": self.N, "K": self.K}
        big = r.sample(["M", "N", "K"], r.choice([1, 1, 2]))
        for a in big:
            ext[a] = r.choice(SIZES_MID)
        while self.B * max(ext["M"], 1) * max(ext["N"], 1) * max(ext["K"], 1) > MID_WORK:
            small = [a for a in ext if a not in big and ext[a] > 1] or [a for a in ext if ext[a] > 1]
            a = max(small, key=lambda x: ext[x])
            ext[a] = max(1, ext[a] // 2)
        self.M, self.N, self.K = ext["M"], ext["N"], ext["K"]
        self.tags.add("midsize")

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
