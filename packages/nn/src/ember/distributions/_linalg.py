"""A small Cholesky factorisation and lower-triangular solve over ember ops, for
MultivariateNormal (ember.linalg has neither yet; they belong to the linear-algebra
issue, which may replace these with kernels). One ember op per column/row: O(n) calls of
O(n^2) work each, differentiable by autograd, on every device. Batched over leading
dimensions."""
import ember as em


def cholesky(a, op="cholesky"):
    """The lower-triangular L with L @ L.mT == a, for symmetric positive-definite `a`
    (..., n, n); raises ValueError naming the first leading minor that is not positive
    definite (as torch.linalg.cholesky does)."""
    if a.dim() < 2 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"{op}: expected a batch of square matrices, got shape "
                         f"{tuple(a.shape)}")
    n = a.shape[-1]
    cols = []
    for j in range(n):
        s = a[..., j:, j]
        if j:
            prev = em.stack(cols, -1)[..., j:, :]                   # (..., n-j, j)
            s = s - (prev @ em.stack(cols, -1)[..., j, :].unsqueeze(-1)).squeeze(-1)
        pivot = s[..., 0]
        if not bool((pivot > 0).all()):
            raise ValueError(f"{op}: the factorization could not be completed because the "
                             f"input is not positive-definite (the leading minor of order "
                             f"{j + 1} is not positive-definite)")
        col = s / pivot.sqrt().unsqueeze(-1)
        if j:
            col = em.cat([em.zeros(*col.shape[:-1], j, dtype=col.dtype, device=col.device),
                          col], -1)
        cols.append(col)
    return em.stack(cols, -1)


def cholesky_ok(a):
    """Boolean tensor of the batch shape: whether each matrix has a Cholesky factor."""
    n = a.shape[-1]
    ok = em.ones(a.shape[:-2], dtype=em.bool, device=a.device)
    cols = []
    with em.no_grad():
        for j in range(n):
            s = a[..., j:, j]
            if j:
                prev = em.stack(cols, -1)
                s = s - (prev[..., j:, :] @ prev[..., j, :].unsqueeze(-1)).squeeze(-1)
            pivot = s[..., 0]
            ok = ok & (pivot > 0)
            safe = em.where(pivot > 0, pivot, em.ones_like(pivot))
            col = s / safe.sqrt().unsqueeze(-1)
            if j:
                col = em.cat([em.zeros(*col.shape[:-1], j, dtype=col.dtype,
                                       device=col.device), col], -1)
            cols.append(col)
    return ok


def solve_lower(L, b):
    """x with L @ x == b for lower-triangular L (..., n, n) and b (..., n, k), by forward
    substitution; L and b broadcast over their batch dimensions."""
    n = L.shape[-1]
    batch = em.broadcast_shapes(L.shape[:-2], b.shape[:-2])
    L = L.expand(*batch, n, n)
    b = b.expand(*batch, *b.shape[-2:])
    rows = []
    for i in range(n):
        r = b[..., i, :]
        if i:
            r = r - (L[..., i, :i].unsqueeze(-2) @ em.stack(rows, -2)).squeeze(-2)
        rows.append(r / L[..., i, i].unsqueeze(-1))
    return em.stack(rows, -2)


def solve_lower_vec(L, v):
    """x with L @ x == v for vectors v (..., n)."""
    return solve_lower(L, v.unsqueeze(-1)).squeeze(-1)
