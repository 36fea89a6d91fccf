"""Abstract values of query expressions for the differential fuzzer (mmlt_gen.py): bounds, exactness
and determinism of every value on the data's value ranges, which decide how an output is compared.

A value is *deterministic* when every correct engine computes it bit for bit: integer arithmetic;
floating sums whose partial results are exact small dyadic numbers (any order, FMA or not); single
IEEE operations (+ - * / sqrt, correctly rounded) in a fixed order. Reassociated sums of inexact
values, contracted products (FMA) and library functions (exp log tanh pow) are not: such a float
is compared with a relative bound, and must not be used discretely (Bad).
"""
import math

import numpy as np

from mmlt_ast import (AccRef, AxisV, Bin, Call, CMP_OPS, Inf, INT_RANGE, Lit, Load, LocalRef, Param, Tern, Un,
                      is_float, typeof)

LIMIT = {"f32": 2.0 ** 23, "f64": 2.0 ** 52}
HUGE = {"f32": 1e30, "f64": 1e290}


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
        # (F past f64's exponent range: never integer-like; 2.0 ** F would overflow)
        return self.F is not None and self.F < 1000 and self.B * 2.0 ** self.F <= LIMIT[self.t]


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

    def __init__(self, env, data, params, extents, nonfinite=None):
        self.env, self.data, self.params, self.extents = env, data, params, extents
        self.accs, self.locals = {}, {}
        self.nonfinite = nonfinite   # e -> whether e may be NaN or infinite (the generator's)

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
                # An infinite value converts to the type's end (docs/semantics.md): the bound of
                # the finite data does not hold (seed 454264978: sums of 2^63 in f64 kept "exact").
                if self.nonfinite is not None and self.nonfinite(e.args[0]):
                    return Info(e.fn, False, self.cap(e.fn, math.inf), 0, a.det)
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
            # (B + 1) ** e as a float can overflow (seed 498069987): past f64's range it is inf.
            e = min(args[1].B, 64)
            big = e * math.log(args[0].B + 1) > 700
            return Info(t, w, math.inf if big else (args[0].B + 1) ** e, None, False)
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


def finite_bound(data):
    a = np.asarray(data, dtype=np.float64)
    a = a[np.isfinite(a)]
    return float(np.max(np.abs(a))) if a.size else 0.0


def prod_exact(e):
    """`c ? x : y` with constants of one direction (|v| in {1, 2} or {1, 0.5}): every order of the
    product gives the same value, overflow and underflow included."""
    if not isinstance(e, Tern) or not isinstance(e.a, Lit) or not isinstance(e.b, Lit):
        return False
    m = {abs(e.a.v), abs(e.b.v)}
    return m <= {1, 2} or m <= {1, 0.5}
