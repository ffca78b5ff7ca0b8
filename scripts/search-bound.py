#!/usr/bin/python3
"""Can an exact search of k culprits among n layers stay within ceil(log2 C(n,k)) + k + 2
checks for every k at once (issue 27)? Two exact computations (docs/benchmarks.md, "k
culprits: the bound of issue 27"). The search itself gets B(k) = ceil(log2 C(n,k)) + k +
extra(k); issue 27's bound is extra 1 (the +2 is the original's check and one more for the
search, whose own check of K alone is the proof of the answer; whittle runs nothing twice
unless --confirm 2 is given). reducer/search.c computes the table of `prefix` at run time and
builds its -j 1 trees from it.

  search-bound.py prefix N KMAX [EXTRA1,EXTRA2,...]
      whittle's shape of search: the last culprit first (candidates "K + a prefix of the
      rest", K the culprits found), any bisection tree in each step. For a state (m layers
      left, i culprits found) T(m, i) is the most checks that may have been spent on
      reaching it with every placement below still within its budget: leaf "nothing left"
      (K alone fails: the proof) needs depth <= B(i) - t, leaf "the last culprit is at c"
      needs t + depth <= T(c, i + 1). Ordered leaves with depth limits fit one bisection
      tree iff their dyadic intervals, packed left to right at the deepest allowed level,
      end at or before 1; T(m, i) is the largest t for which they fit. The budgets are met
      for k <= KMAX iff T(N, 0) >= 0.
  search-bound.py any N [EXTRA]
      every adaptive search (any candidate, k = 1 or 2 culprits; exhaustive, N <= 6 in
      seconds): prints whether one meets B(1) and B(2) with that extra (default 0).
"""
import itertools
import math
import sys
from functools import lru_cache

D = 64
INF = 10 ** 6


def budget(n, k, extra):
    return math.ceil(math.log2(math.comb(n, k)) - 1e-12) + k + (extra[k - 1] if k - 1 < len(extra) else extra[-1])


def fits(limits, t):
    x = 0
    for l in limits:
        l = min(l - t, 40)
        if l < 0:
            return False
        u = 1 << (D - l)
        x = ((x + u - 1) // u) * u + u
        if x > (1 << D):
            return False
    return True


def prefix(n, kmax, extra):
    T = {}
    for i in range(kmax, -1, -1):
        for m in range(n + 1):
            L = ([budget(n, i, extra)] if i > 0 else []) + [T[(c, i + 1)] if i < kmax else INF for c in range(m)]
            if not L or all(l >= INF for l in L):
                T[(m, i)] = INF
                continue
            lo, hi = -80, 80
            while hi - lo > 1:
                mid = (lo + hi) // 2
                lo, hi = (mid, hi) if fits(L, mid) else (lo, mid)
            T[(m, i)] = lo
    return T[(n, 0)]


def any_search(n, extra=0):
    H = [frozenset(c) for k in (1, 2) for c in itertools.combinations(range(n), k)]
    hm = [sum(1 << x for x in h) for h in H]
    where = {m: i for i, m in enumerate(hm)}
    full = (1 << n) - 1
    lim = [budget(n, len(h), [extra]) for h in H]

    @lru_cache(maxsize=None)
    def ok(C, P, d):
        hs = [i for i in range(len(H)) if C >> i & 1]
        if any(d > lim[i] for i in hs):
            return False
        if len(hs) <= 1 and (not hs or P >> hs[0] & 1):
            return True
        for X in range(1, full):
            f = sum(1 << i for i in hs if hm[i] & ~X == 0)
            p = C & ~f
            proves = X in where and C >> where[X] & 1 and not P >> where[X] & 1
            if (not f or not p) and not proves:
                continue
            P2 = P | (1 << where[X] if X in where else 0)
            if ok(f, P2 & f, d + 1) and ok(p, P & p, d + 1):
                return True
        return False

    P0 = 1 << where[full] if full in where else 0
    return ok((1 << len(H)) - 1, P0, 0)


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "prefix":
        n, kmax = int(sys.argv[2]), int(sys.argv[3])
        extra = [int(x) for x in sys.argv[4].split(",")] if len(sys.argv) > 4 else [0]
        t = prefix(n, kmax, extra)
        print("n=%d k<=%d extra=%s budgets=%s T=%d %s" % (n, kmax, extra, [budget(n, k, extra) for k in range(1, kmax + 1)], t,
                                                     "met" if t >= 0 else "not met"))
    elif len(sys.argv) in (3, 4) and sys.argv[1] == "any":
        n = int(sys.argv[2])
        extra = int(sys.argv[3]) if len(sys.argv) == 4 else 0
        print("n=%d k in {1,2} extra=%d: %s" % (n, extra, "met" if any_search(n, extra) else "not met by any search"))
    else:
        sys.exit(__doc__)
