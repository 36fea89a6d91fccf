"""Query trees for the differential fuzzer: expression and statement nodes, the printer (C
precedence, spec section 4) and the typing rules of the spec and docs/semantics.md (C promotion
with weakly typed literals and parameters). Written from the documents, not from gamut's code:
the NumPy model (mmlt_model.py) and the generator (mmlt_gen.py) both type queries with it.
"""

# ---- types ----
STORAGE = ["bool", "u8", "i8", "i16", "i32", "i64", "f16", "bf16", "f32", "f64"]
COMPUTE_OF = {"bool": "bool", "u8": "i32", "i8": "i32", "i16": "i32", "i32": "i32", "i64": "i64",
              "f16": "f32", "bf16": "f32", "f32": "f32", "f64": "f64"}
FLOATS = ("f32", "f64")
RANK = {"bool": 0, "i32": 0, "i64": 1, "f32": 2, "f64": 3}
OF_RANK = ["i32", "i64", "f32", "f64"]
INT_RANGE = {"i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1), "bool": (0, 1)}
STORAGE_RANGE = {"bool": (0, 1), "u8": (0, 255), "i8": (-128, 127), "i16": (-32768, 32767),
                 "i32": (-2**31, 2**31 - 1), "i64": (-2**63, 2**63 - 1)}


def is_float(t):
    return t in FLOATS


def arith(t):
    return "i32" if t == "bool" else t


def common(ta, wa, tb, wb):
    """Promotion of two operands: (type, weak)."""
    ta, tb = arith(ta), arith(tb)
    if wa and wb:
        return ("f64" if is_float(ta) or is_float(tb) else "i64"), True
    if wa != wb:
        strong, weak_t = (tb, ta) if wa else (ta, tb)
        if not is_float(weak_t):
            return strong, False
        return (strong if is_float(strong) else "f64"), False
    return OF_RANK[max(RANK[ta], RANK[tb])], False


# ---- expressions ----
class Node:
    __slots__ = ()


class Lit(Node):
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v          # int or float (a float literal is written with a '.')


class Inf(Node):
    __slots__ = ()


class Param(Node):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class AxisV(Node):
    __slots__ = ("role",)   # 'b' 'i' 'j' 'k'

    def __init__(self, role):
        self.role = role


class Load(Node):
    __slots__ = ("name", "pat")   # pat: 'ik' 'ki' 'kj' 'jk' 'i' 'j' 'k' 'ij' 'ji' (roles)

    def __init__(self, name, pat):
        self.name, self.pat = name, pat


class AccRef(Node):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class LocalRef(Node):
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class Un(Node):
    __slots__ = ("op", "a")   # '-' '!' '~'

    def __init__(self, op, a):
        self.op, self.a = op, a


class Bin(Node):
    __slots__ = ("op", "a", "b")

    def __init__(self, op, a, b):
        self.op, self.a, self.b = op, a, b


class Tern(Node):
    __slots__ = ("c", "a", "b")

    def __init__(self, c, a, b):
        self.c, self.a, self.b = c, a, b


class Call(Node):
    __slots__ = ("fn", "args")   # abs min max clamp sqrt exp log pow floor ceil tanh f32 f64 i32 i64

    def __init__(self, fn, args):
        self.fn, self.args = fn, list(args)


ARITH_OPS = ("+", "-", "*", "/")
INT_OPS = ("%", "&", "|", "^")
SHIFT_OPS = ("<<", ">>")
CMP_OPS = ("<", "<=", ">", ">=", "==", "!=")
LOGIC_OPS = ("&&", "||")
PREC = {"||": 1, "&&": 2, "|": 3, "^": 4, "&": 5, "==": 6, "!=": 6, "<": 7, "<=": 7, ">": 7, ">=": 7,
        "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "%": 10}
CASTS = ("f32", "f64", "i32", "i64")
TRANSCENDENTAL = ("sqrt", "exp", "log", "pow", "floor", "ceil", "tanh")


# ---- statements ----
class Let:
    def __init__(self, name, e):
        self.name, self.e = name, e


class Upd:
    def __init__(self, acc, op, e):
        self.acc, self.op, self.e = acc, op, e   # op: '+=' '-=' '*=' 'max=' 'min=' '|=' '&=' '^=' '='


class If:
    def __init__(self, cond, body):
        self.cond, self.body = cond, body


class Store:
    """TARGET OP e; idx: list of ('ax', role) or ('vec', name, role); [] for a scalar."""

    def __init__(self, out, idx, op, e):
        self.out, self.idx, self.op, self.e = out, idx, op, e


class Emit:
    def __init__(self, name, cols, mode="plain", n=None, key=None, per=None):
        self.name, self.cols, self.mode, self.n, self.key, self.per = name, cols, mode, n, key, per
        # cols: [(expr, alias or None)]; mode: plain top bottom distinct; n: int or param name


class Query:
    def __init__(self):
        self.names = {}       # role -> axis name ('i' 'j' 'k' and 'b' when batched)
        self.ranges = {}      # role -> None or (lo, hi, close) with lo/hi int or (param, offset)
        self.batched = False
        self.when = None
        self.accs = []        # (name, declared type or None, init Node)
        self.inner = []
        self.outer = []


# ---- printing ----
def _lit_text(v):
    if isinstance(v, bool):
        v = int(v)
    if isinstance(v, int):
        return str(v)
    t = repr(float(v))
    return t if ("." in t or "e" in t or "inf" in t) else t + ".0"


class Printer:
    """Text with C precedence; `extra_parens` adds redundant parentheses (a random source)."""

    def __init__(self, q, extra_parens=None, comment=None, spell=None):
        self.q = q
        self.spell = spell or (lambda options: options[0])   # picks one spelling of a float literal
        self.extra = extra_parens or (lambda: False)
        self.comment = comment or (lambda: None)   # text of a comment to add to a line, or None

    def idx(self, roles):
        names = [self.q.names[r] for r in roles]
        if self.q.batched:
            names = [self.q.names["b"]] + names
        return ", ".join(names)

    def expr(self, e, min_prec=0):
        s, p = self._expr(e)
        if p < min_prec or (p < 12 and self.extra()):
            return "(" + s + ")"
        return s

    def _expr(self, e):
        if isinstance(e, Lit):
            t = _lit_text(e.v)
            if isinstance(e.v, float) and t[0].isdigit() and "e" not in t:
                whole, frac = t.split(".")
                alts = [t, f"{t}e0", f"{whole}{frac}e-{len(frac)}"]
                if frac == "0":
                    alts.append(whole + ".")
                if whole == "0":
                    alts.append("." + frac)
                t = self.spell(alts)
            return t, (11 if t.startswith("-") else 12)
        if isinstance(e, Inf):
            return "inf", 12
        if isinstance(e, Param):
            return e.name, 12
        if isinstance(e, AxisV):
            return self.q.names[e.role], 12
        if isinstance(e, Load):
            return f"{e.name}[{self.idx(list(e.pat))}]", 12
        if isinstance(e, (AccRef, LocalRef)):
            return e.name, 12
        if isinstance(e, Un):
            a = self.expr(e.a, 11)
            sep = " " if a.startswith(("-", "!", "~")) else ""
            return e.op + sep + a, 11
        if isinstance(e, Bin):
            p = PREC[e.op]
            return f"{self.expr(e.a, p)} {e.op} {self.expr(e.b, p + 1)}", p
        if isinstance(e, Tern):
            return f"{self.expr(e.c, 1)} ? {self.expr(e.a, 0)} : {self.expr(e.b, 0)}", 0
        if isinstance(e, Call):
            return f"{e.fn}({', '.join(self.expr(a) for a in e.args)})", 12
        raise TypeError(e)

    def range_text(self, r):
        lo, hi, close = r

        def bound(x):
            if isinstance(x, int):
                return str(x)
            name, off = x
            return name if off == 0 else f"{name} {'+' if off > 0 else '-'} {abs(off)}"
        return f"[{bound(lo)}, {bound(hi)}{close}"

    def axis(self, role):
        r = self.q.ranges.get(role)
        n = self.q.names[role]
        return n if r is None else f"{n} in {self.range_text(r)}"

    def target(self, s):
        if not s.idx:
            return s.out
        parts = [self.q.names["b"]] if self.q.batched else []
        for x in s.idx:
            if x[0] == "ax":
                parts.append(self.q.names[x[1]])
            else:
                parts.append(f"{x[1]}[{self.idx([x[2]])}]")
        return f"{s.out}[{', '.join(parts)}]"

    def stmts(self, ss, ind, out):
        pad = "  " * ind
        for s in ss:
            if isinstance(s, Let):
                out.append(f"{pad}let {s.name} = {self.expr(s.e)};")
            elif isinstance(s, Upd):
                out.append(f"{pad}{s.acc} {s.op} {self.expr(s.e)};")
            elif isinstance(s, Store):
                out.append(f"{pad}{self.target(s)} {s.op} {self.expr(s.e)};")
            elif isinstance(s, If):
                if len(s.body) == 1 and not isinstance(s.body[0], Let) and not isinstance(s.body[0], If):
                    inner = []
                    self.stmts(s.body, 0, inner)
                    out.append(f"{pad}if ({self.expr(s.cond)}) {inner[0]}")
                else:
                    out.append(f"{pad}if ({self.expr(s.cond)}) {{")
                    self.stmts(s.body, ind + 1, out)
                    out.append(f"{pad}}}")
            elif isinstance(s, Emit):
                cols = ", ".join(self.expr(c) + (f" as {a}" if a else "") for c, a in s.cols)
                t = f"{pad}emit {s.name}({cols})"
                if s.mode in ("top", "bottom"):
                    t += f" {s.mode} {s.n} by {self.expr(s.key)}"
                    if s.per:
                        t += f" per {self.q.names[s.per]}"
                elif s.mode == "distinct":
                    t += " distinct"
                out.append(t + ";")

    def query(self, comment=None):
        q = self.q
        out = []
        if comment:
            out.append("# " + comment)
        head = ""
        if q.batched:
            head = f"batch ({self.axis('b')}) "
        head += f"where ({self.axis('i')}, {self.axis('j')})"
        if q.when is not None:
            head += f" when ({self.expr(q.when)})"
        out.append(head + " {")
        for name, t, init in q.accs:
            out.append(f"  {name}{': ' + t if t else ''} = {self.expr(init)};")
        out.append(f"  reduce ({self.axis('k')}) {{")
        self.stmts(q.inner, 2, out)
        out.append("  }")
        self.stmts(q.outer, 1, out)
        out.append("}")
        # Comments of every form (spec section 1): at line ends, and blocks between lines.
        text = []
        for line in out:
            c = self.comment()
            if c and line.rstrip().endswith(("{", ";", "}")):
                line += {0: "  # ", 1: "  // ", 2: "  /* "}[len(c) % 3] + c + (" */" if len(c) % 3 == 2 else "")
            text.append(line)
            if self.comment() and line.rstrip().endswith(";"):
                text.append("  /* " + (self.comment() or "") + "\n     */")
        return "\n".join(text) + "\n"


# ---- typing ----
class TypeEnv:
    """Names to compute types: operands (storage dtype), accumulators, locals."""

    def __init__(self, dtypes):
        self.dtypes = dict(dtypes)
        self.accs = {}
        self.locals = {}


def typeof(e, env, int_ctx=False):
    """(compute type, weak) of an expression."""
    if isinstance(e, Lit):
        return ("f64" if isinstance(e.v, float) else "i64"), True
    if isinstance(e, Inf):
        return "f64", True
    if isinstance(e, Param):
        return ("i64" if int_ctx else "f64"), True
    if isinstance(e, AxisV):
        return "i32", False
    if isinstance(e, Load):
        return COMPUTE_OF[env.dtypes[e.name]], False
    if isinstance(e, AccRef):
        return env.accs[e.name], False
    if isinstance(e, LocalRef):
        return env.locals[e.name], False
    if isinstance(e, Un):
        if e.op == "!":
            return "bool", False
        t, w = typeof(e.a, env, e.op == "~")
        return arith(t), w
    if isinstance(e, Bin):
        op = e.op
        if op in CMP_OPS or op in LOGIC_OPS:
            return "bool", False
        ic = op in INT_OPS or op in SHIFT_OPS
        ta, wa = typeof(e.a, env, ic)
        tb, wb = typeof(e.b, env, ic)
        if op in SHIFT_OPS:
            if wa and not wb:
                return common(ta, wa, tb, wb)[0], False
            return arith(ta), wa and wb
        return common(ta, wa, tb, wb)
    if isinstance(e, Tern):
        ta, wa = typeof(e.a, env)
        tb, wb = typeof(e.b, env)
        return common(ta, wa, tb, wb)
    if isinstance(e, Call):
        if e.fn in CASTS:
            return e.fn, False
        t, w = typeof(e.args[0], env)
        t = arith(t)
        for a in e.args[1:]:
            t, w = common(t, w, *typeof(a, env))
        if e.fn in TRANSCENDENTAL and not is_float(t):
            t = "f64"
        return t, w
    raise TypeError(e)


def operand_types(e, env):
    """The type each operand of node e is converted to before the operation."""
    if isinstance(e, Bin):
        if e.op in LOGIC_OPS:
            return ["bool", "bool"]
        if e.op in CMP_OPS:
            t = common(*typeof(e.a, env), *typeof(e.b, env))[0]
            return [t, t]
        t = typeof(e, env)[0]
        return [t, t]
    if isinstance(e, Tern):
        t = typeof(e, env)[0]
        return ["bool", t, t]
    if isinstance(e, Call):
        if e.fn in CASTS:
            return [e.fn]
        t = typeof(e, env)[0]
        return [t] * len(e.args)
    if isinstance(e, Un):
        return ["bool"] if e.op == "!" else [typeof(e, env)[0]]
    return []


def default_type(t, weak):
    """A weak value stored or bound by `let` takes its default type (i64 / f64)."""
    if weak:
        return "f64" if is_float(t) else "i64"
    return t


def walk_expr(e):
    yield e
    for c in children(e):
        yield from walk_expr(c)


def children(e):
    if isinstance(e, Un):
        return [e.a]
    if isinstance(e, Bin):
        return [e.a, e.b]
    if isinstance(e, Tern):
        return [e.c, e.a, e.b]
    if isinstance(e, Call):
        return e.args
    return []


def infer_acc_types(q, dtypes):
    """Accumulator types: declared, or f64 > floating > i64 > i32 over the inputs each one's
    updates read, through lets and enclosing `if` conditions (docs/semantics.md)."""
    let_reads = {}
    reads = {name: set() for name, _, _ in q.accs}

    def names(e):
        out = set()
        for n in walk_expr(e):
            if isinstance(n, Load):
                out.add(n.name)
            elif isinstance(n, LocalRef) and n.name in let_reads:
                out |= let_reads[n.name]
        return out

    def walk(ss, cond):
        for s in ss:
            if isinstance(s, Let):
                let_reads[s.name] = cond | names(s.e)
            elif isinstance(s, If):
                walk(s.body, cond | names(s.cond))
            elif isinstance(s, Upd):
                reads[s.acc] |= cond | names(s.e)
    walk(q.inner, set())
    types = {}
    for name, t, _ in q.accs:
        if t:
            types[name] = t
            continue
        ds = [dtypes[n] for n in reads[name]]
        types[name] = ("f64" if "f64" in ds else "f32" if any(is_float(COMPUTE_OF[d]) for d in ds)
                       else "i64" if "i64" in ds else "i32")
    return types


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
