"""An independent NumPy model of gamut's semantics (spec + docs/semantics.md) for the queries the
generator writes: evaluates a Query on its inputs and returns the outputs as gamut writes them
(dense arrays; lists as structured arrays in the spec's order). It loops over k and vectorises over
(b, i, j), so `=` updates in k order, `if` and `let` need no special forms.
"""
import numpy as np

from mmlt_ast import (AccRef, AxisV, Bin, Call, CASTS, CMP_OPS, COMPUTE_OF, Emit, If, Inf, INT_RANGE,
                      Let, Lit, Load, LocalRef, Param, Store, Tern, TypeEnv, Un, Upd, common, default_type,
                      infer_acc_types, is_float, operand_types, typeof)

NP = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32, "f64": np.float64}
BITS = {"i32": 32, "i64": 64}


class ModelError(Exception):
    """The model refuses the case (a binding or shape problem the generator should not write)."""


def conv(x, f, t):
    """C conversion of an array from compute type f to t (docs/semantics.md: float to integer
    truncates, saturates, NaN -> 0; integers wrap; any non-zero (NaN too) is true)."""
    x = np.asarray(x)
    if f == t:
        return x
    if t == "bool":
        return x != 0
    if is_float(t):
        return x.astype(NP[t])
    if is_float(f):
        lo, hi = INT_RANGE[t]
        r = np.trunc(x.astype(np.float64))
        nan = np.isnan(r)
        big, small = r >= float(hi) + 1.0 if t == "i32" else r >= 2.0 ** 63, r <= float(lo)
        safe = np.where(nan | big | small, 0.0, r)
        out = safe.astype(NP[t])
        out = np.where(big, NP[t](hi), out)
        out = np.where(small, NP[t](lo), out)
        return np.where(nan, NP[t](0), out).astype(NP[t])
    return x.astype(NP[t])


def ordered_key(x):
    """Float -> integer key in IEEE total order of values (-0 below +0)."""
    x = np.asarray(x)
    it = np.int32 if x.dtype == np.float32 else np.int64
    s = x.view(it)
    mag = np.iinfo(it).max
    return np.where(s < 0, s ^ it(mag), s)


def from_ordered_key(k, dtype):
    it = np.int32 if dtype == np.float32 else np.int64
    mag = np.iinfo(it).max
    s = np.where(k < 0, k ^ it(mag), k).astype(it)
    return s.view(dtype)


def fmax2(a, b, lower=False):
    """max (or min) that ignores NaN and orders -0 below +0."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    if not is_float_dtype(a):
        return np.minimum(a, b) if lower else np.maximum(a, b)
    ka, kb = ordered_key(a), ordered_key(b)
    pick_a = (ka < kb) if lower else (ka > kb)
    r = np.where(pick_a, a, b)
    return np.where(np.isnan(a), b, np.where(np.isnan(b), a, r))


def is_float_dtype(a):
    return a.dtype.kind == "f"


def idiv(a, b, mod=False):
    """C integer division truncating toward zero; by zero gives 0; INT_MIN / -1 wraps."""
    a, b = np.broadcast_arrays(np.asarray(a), np.asarray(b))
    zero = b == 0
    bs = np.where(zero, 1, b).astype(a.dtype)
    q = np.floor_divide(a, bs)
    r = a - q * bs
    q = q + ((r != 0) & ((a < 0) != (bs < 0))).astype(a.dtype)
    if mod:
        return np.where(zero, 0, a - q * bs).astype(a.dtype)
    return np.where(zero, 0, q).astype(a.dtype)


class Model:
    def __init__(self, q, inputs, params, dims=None):
        """inputs: name -> (storage dtype, ndarray of the values); params: name -> int or float."""
        self.q = q
        self.inputs = inputs
        self.params = dict(params)
        self.dims = dims or {}
        self.env = TypeEnv({n: d for n, (d, _) in inputs.items()})
        self.env.accs = infer_acc_types(q, self.env.dtypes)
        # Loads widen the storage type (u8 i8 i16 -> i32, f16 bf16 -> f32); bf16 arrives as f32 values.
        self.compute = {n: np.asarray(a).astype(NP[COMPUTE_OF[d]]) for n, (d, a) in inputs.items()}
        self.resolve_ranges()

    # ---- ranges and shapes ----
    def uses(self):
        """(operand, pattern) pairs read anywhere, and index vectors of output targets."""
        out = set()

        def ex(e):
            from mmlt_ast import walk_expr
            for n in walk_expr(e):
                if isinstance(n, Load):
                    out.add((n.name, n.pat))

        def st(ss):
            for s in ss:
                if isinstance(s, (Let, Upd)):
                    ex(s.e)
                elif isinstance(s, If):
                    ex(s.cond)
                    st(s.body)
                elif isinstance(s, Store):
                    ex(s.e)
                    for x in s.idx:
                        if x[0] == "vec":
                            out.add((x[1], x[2]))
                elif isinstance(s, Emit):
                    for c, _ in s.cols:
                        ex(c)
                    if s.key is not None:
                        ex(s.key)
        if self.q.when is not None:
            ex(self.q.when)
        st(self.q.inner)
        st(self.q.outer)
        return out

    def resolve_ranges(self):
        q = self.q
        lead = 1 if q.batched else 0
        extents = {r: [] for r in "bijk"}
        for name, pat in self.uses():
            shape = self.compute[name].shape
            if len(shape) != lead + len(pat):
                raise ModelError(f"{name}: rank {len(shape)} for pattern {pat}")
            if q.batched:
                extents["b"].append(shape[0])
            for d, r in enumerate(pat):
                extents[r].append(shape[lead + d])
        self.range = {}
        for role in ("i", "j", "k", "b") if q.batched else ("i", "j", "k"):
            ex = extents[role]
            r = q.ranges.get(role)
            if r is None:
                if not ex or len(set(ex)) != 1:
                    raise ModelError(f"axis {role}: extents {ex}")
                self.range[role] = (0, ex[0])
                continue

            def value(x):
                if isinstance(x, int):
                    return x
                name, off = x
                if name not in self.params:
                    if not ex:
                        raise ModelError(f"range symbol {name} unbound")
                    self.params[name] = min(ex)
                return int(self.params[name]) + off
            lo, hi = value(r[0]), value(r[1])
            if lo < 0 or hi < lo or any(e < hi for e in ex):
                raise ModelError(f"axis {role}: range [{lo}, {hi}) extents {ex}")
            self.range[role] = (lo, hi)
        self.B = self.range["b"][1] if q.batched else 1

    # ---- expressions ----
    def axis_array(self, role):
        lo, hi = self.range[role] if role != "b" else (0, self.B)
        a = np.arange(lo, hi, dtype=np.int32)
        return a.reshape({"b": (-1, 1, 1), "i": (1, -1, 1), "j": (1, 1, -1)}[role])

    def load(self, name, pat):
        x = self.compute[name]
        x = x[:self.B] if self.q.batched else x[None]
        (rb, re), (cb, ce) = self.range["i"], self.range["j"]
        k = self.k
        if pat == "ik":
            return x[:, rb:re, k][:, :, None]
        if pat == "ki":
            return x[:, k, rb:re][:, :, None]
        if pat == "kj":
            return x[:, k, cb:ce][:, None, :]
        if pat == "jk":
            return x[:, cb:ce, k][:, None, :]
        if pat == "i":
            return x[:, rb:re][:, :, None]
        if pat == "j":
            return x[:, cb:ce][:, None, :]
        if pat == "k":
            return x[:, k][:, None, None]
        if pat == "ij":
            return x[:, rb:re, cb:ce]
        if pat == "ji":
            return x[:, cb:ce, rb:re].transpose(0, 2, 1)
        raise ValueError(pat)

    def ev(self, e, int_ctx=False):
        """Value of e in its own compute type (typeof)."""
        env = self.env
        t, _ = typeof(e, env, int_ctx)
        if isinstance(e, Lit):
            return conv(np.asarray(e.v, dtype=np.float64 if isinstance(e.v, float) else np.int64),
                        "f64" if isinstance(e.v, float) else "i64", t)
        if isinstance(e, Inf):
            return np.asarray(np.inf)
        if isinstance(e, Param):
            v = self.params[e.name]
            if t == "i64":
                if not isinstance(v, int):
                    raise ModelError(f"parameter {e.name} must be an integer")
                return np.asarray(v, dtype=np.int64)
            return np.asarray(float(v))
        if isinstance(e, AxisV):
            if e.role == "k":
                return np.asarray(self.k, dtype=np.int32)
            return self.axis_array(e.role)
        if isinstance(e, Load):
            return self.load(e.name, e.pat)
        if isinstance(e, AccRef):
            return self.accs[e.name]
        if isinstance(e, LocalRef):
            return self.locals[e.name]
        ots = operand_types(e, env)
        if isinstance(e, Un):
            a = self.arg(e.a, ots[0], e.op == "~")
            if e.op == "!":
                return ~a
            if e.op == "~":
                return np.invert(a)
            return np.negative(a)
        if isinstance(e, Tern):
            c = self.arg(e.c, "bool")
            return np.where(c, self.arg(e.a, ots[1]), self.arg(e.b, ots[2])).astype(NP[t])
        if isinstance(e, Call):
            if e.fn in CASTS:
                return self.arg(e.args[0], e.fn)
            args = [self.arg(a, ots[0]) for a in e.args]
            fn = e.fn
            if fn == "abs":
                return np.abs(args[0])
            if fn in ("min", "max"):
                r = args[0]
                for a in args[1:]:
                    r = fmax2(r, a, lower=fn == "min")
                return r
            if fn == "clamp":
                return fmax2(fmax2(args[0], args[1]), args[2], lower=True)
            if fn == "pow":
                return np.power(args[0], args[1])
            f = {"sqrt": np.sqrt, "exp": np.exp, "log": np.log, "floor": np.floor, "ceil": np.ceil,
                 "tanh": np.tanh}[fn]
            return f(args[0]).astype(NP[t])
        if isinstance(e, Bin):
            op = e.op
            ic = op in ("%", "&", "|", "^", "<<", ">>")
            a = self.arg(e.a, ots[0], ic)
            b = self.arg(e.b, ots[1], ic)
            if op in CMP_OPS:
                return {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
                        "==": np.equal, "!=": np.not_equal}[op](a, b)
            if op == "&&":
                return a & b
            if op == "||":
                return a | b
            if op == "+":
                return np.add(a, b)
            if op == "-":
                return np.subtract(a, b)
            if op == "*":
                return np.multiply(a, b)
            if op == "/":
                return np.true_divide(a, b).astype(NP[t]) if is_float(t) else idiv(a, b)
            if op == "%":
                return idiv(a, b, mod=True)
            if op == "&":
                return np.bitwise_and(a, b)
            if op == "|":
                return np.bitwise_or(a, b)
            if op == "^":
                return np.bitwise_xor(a, b)
            w = BITS[t]
            cnt = np.bitwise_and(b, NP[t](w - 1))
            return np.left_shift(a, cnt) if op == "<<" else np.right_shift(a, cnt)
        raise TypeError(e)

    def arg(self, e, t, int_ctx=False):
        return conv(self.ev(e, int_ctx), typeof(e, self.env, int_ctx)[0], t)

    # ---- statements ----
    def full(self, x, t):
        return np.broadcast_to(np.asarray(x, dtype=NP[t]), self.S).copy()

    def inner(self, ss, mask):
        for s in ss:
            if isinstance(s, Let):
                t, w = typeof(s.e, self.env)
                t = default_type(t, w)
                self.env.locals[s.name] = t
                self.locals[s.name] = conv(self.ev(s.e), typeof(s.e, self.env)[0], t)
            elif isinstance(s, If):
                c = np.broadcast_to(self.arg(s.cond, "bool"), self.S)
                self.inner(s.body, mask & c)
            elif isinstance(s, Upd):
                t = self.env.accs[s.acc]
                v = self.arg(s.e, t)
                a = self.accs[s.acc]
                op = s.op
                if op == "=":
                    n = v
                elif op == "+=":
                    n = np.add(a, v)
                elif op == "-=":
                    n = np.subtract(a, v)
                elif op == "*=":
                    n = np.multiply(a, v)
                elif op in ("max=", "min="):
                    n = fmax2(a, v, lower=op == "min=")
                elif op == "|=":
                    n = np.bitwise_or(a, v)
                elif op == "&=":
                    n = np.bitwise_and(a, v)
                else:
                    n = np.bitwise_xor(a, v)
                self.accs[s.acc] = np.where(mask, n, a).astype(NP[t])

    def run(self):
        q = self.q
        with np.errstate(all="ignore"):
            return self._run(q)

    def _run(self, q):
        (rb, re), (cb, ce), (kb, ke) = self.range["i"], self.range["j"], self.range["k"]
        self.S = (self.B, re - rb, ce - cb)
        self.locals = {}
        self.accs = {}
        for name, _, init in q.accs:
            t = self.env.accs[name]
            v = init_value(init)
            self.accs[name] = self.full(scalar_conv(v, t), t)
        self.k = None
        all_true = np.ones(self.S, dtype=bool)
        for k in range(kb, ke):
            self.k = k
            self.inner(q.inner, all_true)
        self.k = None
        mask = all_true
        if q.when is not None:
            mask = mask & np.broadcast_to(self.arg(q.when, "bool"), self.S)
        self.prepare_outputs(q.outer)
        self.rows = {}
        self.outer(q.outer, mask)
        res = {}
        for name, o in self.dense.items():
            a = o["array"]
            res[name] = a if q.batched else a[0]
        for name, l in self.lists.items():
            res[name] = self.finish_list(l)
        return res

    # ---- outputs ----
    def prepare_outputs(self, ss):
        """Output types (common type of every stored value) and shapes; lists' columns."""
        self.dense, self.lists = {}, {}
        stores, emits = [], []

        def walk(ss, scope):
            for s in ss:
                if isinstance(s, Let):
                    t, w = typeof(s.e, self.env)
                    self.env.locals[s.name] = default_type(t, w)
                elif isinstance(s, If):
                    walk(s.body, scope)
                elif isinstance(s, Store):
                    stores.append(s)
                    tw = typeof(s.e, self.env)
                    d = self.dense.setdefault(s.out, {"op": s.op, "idx": s.idx, "tw": None})
                    d["tw"] = tw if d["tw"] is None else common(*d["tw"], *tw)
                elif isinstance(s, Emit):
                    emits.append(s)
        walk(ss, None)
        re, ce = self.range["i"][1], self.range["j"][1]
        for name, d in self.dense.items():
            t = default_type(*d["tw"])
            if t == "bool" and d["op"] != "=":
                t = "i32"
            d["type"] = t
            shape = [self.B]
            for x in d["idx"]:
                if x[0] == "ax":
                    shape.append(re if x[1] == "i" else ce)
                else:
                    g = self.vector_values(x[1], x[2])
                    shape.append(int(g.max()) + 1 if g.size else 0)
            if name in self.dims:
                given = list(self.dims[name])
                for n, (g, have) in enumerate(zip(given, shape[1:])):
                    if g < have:
                        raise ModelError(f"--dim {name}: {g} < {have}")
                shape = [self.B] + given
            d["array"] = np.full(shape, identity(d["op"], t), dtype=NP[t])
        for s in emits:
            cols = []
            for n, (c, alias) in enumerate(s.cols):
                t, w = typeof(c, self.env)
                name = alias or (c.name if isinstance(c, (AccRef, LocalRef, Param)) else
                                 self.q.names[c.role] if isinstance(c, AxisV) else f"c{n}")
                cols.append((name, default_type(t, w)))
            self.lists[s.name] = {"emit": s, "cols": cols, "chunks": []}

    def vector_values(self, name, role):
        x = self.compute[name]
        x = x[:self.B] if self.q.batched else x[None]
        lo, hi = self.range[role]
        return x[:, lo:hi].astype(np.int64)

    def outer(self, ss, mask):
        for s in ss:
            if isinstance(s, Let):
                t = self.env.locals[s.name]
                self.locals[s.name] = np.broadcast_to(self.arg(s.e, t), self.S)
            elif isinstance(s, If):
                c = np.broadcast_to(self.arg(s.cond, "bool"), self.S)
                self.outer(s.body, mask & c)
            elif isinstance(s, Store):
                self.store(s, mask)
            elif isinstance(s, Emit):
                self.emit(s, mask)

    def store(self, s, mask):
        d = self.dense[s.out]
        t = d["type"]
        v = np.broadcast_to(self.arg(s.e, t), self.S)
        out = d["array"]
        (rb, re), (cb, ce) = self.range["i"], self.range["j"]
        if s.op == "=":
            if s.idx[0][1] == "i":
                view = out[:, rb:re, cb:ce]
            else:
                view = out[:, cb:ce, rb:re].transpose(0, 2, 1)
            view[...] = np.where(mask, v, view)
            return
        index = [np.broadcast_to(self.axis_array("b"), self.S)]
        for x in s.idx:
            if x[0] == "ax":
                index.append(np.broadcast_to(self.axis_array(x[1]).astype(np.int64), self.S))
            else:
                g = self.vector_values(x[1], x[2])
                g = g[:, :, None] if x[2] == "i" else g[:, None, :]
                index.append(np.broadcast_to(g, self.S))
        sel = tuple(ix[mask] for ix in index)
        vals = v[mask]
        scatter(out, sel, vals, s.op)

    def emit(self, s, mask):
        l = self.lists[s.name]
        cols = [np.broadcast_to(self.arg(c, t), self.S)[mask] for (c, _), (_, t) in zip(s.cols, l["cols"])]
        key = None
        if s.key is not None:
            kt, _ = typeof(s.key, self.env)
            kt = "i32" if kt == "bool" else default_type(kt, typeof(s.key, self.env)[1])
            key = np.broadcast_to(self.arg(s.key, kt), self.S)[mask]
        coords = [np.broadcast_to(self.axis_array(r), self.S)[mask] for r in ("b", "i", "j")]
        l["chunks"].append((cols, key, coords))

    def finish_list(self, l):
        s = l["emit"]
        names = [n for n, _ in l["cols"]]
        dt = np.dtype([(n, NP[t]) for n, t in l["cols"]])
        rows = []
        for cols, key, coords in l["chunks"]:
            for r in range(len(coords[0])):
                rows.append(([c[r] for c in cols], None if key is None else key[r], [int(x[r]) for x in coords]))
        if s.mode in ("plain", "distinct"):
            # One NaN, the quiet NaN (docs/semantics.md): every NaN of these lists has its bits.
            rows = [([one_nan(v) for v in r[0]], r[1], r[2]) for r in rows]
            if s.mode == "distinct":
                seen, uniq = set(), []
                for r in rows:
                    b = tuple(np.asarray(v).tobytes() for v in r[0])
                    if b not in seen:
                        seen.add(b)
                        uniq.append(r)
                rows = uniq
            rows.sort(key=lambda r: tuple(lex_key(v) for v in r[0]))
        else:
            n = s.n if isinstance(s.n, int) else int(self.params[s.n])
            top = s.mode == "top"

            def kk(r):
                v = r[1]
                if isinstance(v, (np.floating, float)):
                    if np.isnan(v):
                        return (1, 0.0)
                    return (0, -float(v) if top else float(v))
                return (0, -int(v) if top else int(v))
            b, i, j = 0, 1, 2
            if s.per is None:
                rows.sort(key=lambda r: (kk(r), r[2][b], r[2][i], r[2][j]))
                rows = rows[:n]
            else:
                g, o = (i, j) if s.per == "i" else (j, i)
                rows.sort(key=lambda r: (r[2][b], r[2][g], kk(r), r[2][o]))
                out, count = [], {}
                for r in rows:
                    gk = (r[2][b], r[2][g])
                    if count.get(gk, 0) < n:
                        out.append(r)
                        count[gk] = count.get(gk, 0) + 1
                rows = out
        arr = np.zeros(len(rows), dtype=dt)
        for c, nme in enumerate(names):
            arr[nme] = [r[0][c] for r in rows] if rows else []
        return arr


def one_nan(v):
    """A NaN as the quiet NaN of its type (plain and distinct lists hold one NaN)."""
    a = np.asarray(v)
    if a.dtype.kind == "f" and np.isnan(a):
        return a.dtype.type(np.nan)
    return v


def lex_key(v):
    v = np.asarray(v)
    if v.dtype.kind == "f":
        bits = int(v.view(np.uint32 if v.dtype == np.float32 else np.uint64))
        if np.isnan(v):
            return (1, 0.0, bits)
        return (0, float(v), bits)
    return (0, int(v), 0)


def identity(op, t):
    if op in ("=", "+=", "|="):
        return False if t == "bool" else 0
    if op == "&=":
        return -1
    if op == "max=":
        return -np.inf if is_float(t) else INT_RANGE[t][0]
    return np.inf if is_float(t) else INT_RANGE[t][1]


def scatter(out, sel, vals, op):
    if op == "+=":
        np.add.at(out, sel, vals)
    elif op == "|=":
        np.bitwise_or.at(out, sel, vals)
    elif op == "&=":
        np.bitwise_and.at(out, sel, vals)
    elif out.dtype.kind == "f":
        lower = op == "min="
        vals = np.where(np.isnan(vals), np.inf if lower else -np.inf, vals).astype(out.dtype)
        key = ordered_key(out)
        (np.minimum if lower else np.maximum).at(key, sel, ordered_key(vals))
        out[...] = from_ordered_key(key, out.dtype)
    else:
        (np.minimum if op == "min=" else np.maximum).at(out, sel, vals)


def init_value(e):
    """An accumulator's constant initial value: (python number, is_float)."""
    if isinstance(e, Lit):
        return e.v
    if isinstance(e, Inf):
        return float("inf")
    if isinstance(e, Un) and e.op == "-":
        v = init_value(e.a)
        return -v
    raise ModelError("initial value is not a constant")


def scalar_conv(v, t):
    if is_float(t):
        return NP[t](v)
    if isinstance(v, float):
        if v != v:
            return 0
        lo, hi = INT_RANGE[t]
        return int(max(lo, min(hi, v if abs(v) == float("inf") else int(v))))
    lo, hi = INT_RANGE[t]
    return ((v - lo) % (hi - lo + 1)) + lo

