"""scikit-learn's Array API dispatch on ember arrays (issue 20).

Covered: LinearDiscriminantAnalysis (solver="svd"), PCA (svd_solver "full", "randomized"
with power_iteration_normalizer="QR", "covariance_eigh"), Ridge (solver="svd") and
metrics. The settings a user needs: `sklearn.set_config(array_api_dispatch=True)` and the
environment variable SCIPY_ARRAY_API=1 set before scipy or sklearn is imported (sklearn
refuses dispatch otherwise); array-api-compat finds ember.array_api through
`x.__array_namespace__()`, its generic path. The checks run in one subprocess so the
variable is set before the import whatever this pytest process imported first; each
estimator's results on ember arrays are compared with the same estimator on NumPy arrays.
"""
import json
import os
import subprocess
import sys

import pytest

pytest.importorskip("sklearn")
pytest.importorskip("array_api_compat")

_SCRIPT = r'''
import json, sys, traceback
import numpy as np
import ember as em
import sklearn
from sklearn.decomposition import PCA
from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
from sklearn.linear_model import Ridge
from sklearn import metrics

rng = np.random.default_rng(0)
X = rng.standard_normal((60, 5))
y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64) + (X[:, 2] > 1)
yr = X @ np.array([1.0, -2.0, 0.5, 0.0, 3.0]) + 0.1 * rng.standard_normal(60)
yt, yp = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
a = rng.standard_normal(40)
b = a + 0.1 * rng.standard_normal(40)


def close(e, n, rtol=1e-7, atol=1e-9):
    e = np.asarray(e.numpy() if isinstance(e, em.Tensor) else e, dtype=float)
    np.testing.assert_allclose(e, np.asarray(n, dtype=float), rtol=rtol, atol=atol)


def run(fit):
    with sklearn.config_context(array_api_dispatch=True):
        got = fit(em.asarray)
    ref = fit(lambda v: v)
    return got, ref


def lda(solver):
    def check():
        def fit(conv):
            m = LinearDiscriminantAnalysis(solver=solver).fit(conv(X), conv(y))
            out = [m.predict(conv(X)), m.predict_proba(conv(X)), m.coef_]
            if solver == "svd":
                out.append(abs(m.transform(conv(X))))
            return out
        got, ref = run(fit)
        assert isinstance(got[0], em.Tensor)
        for g, r in zip(got, ref):
            close(g, r, rtol=1e-6, atol=1e-8)
    return check


def pca(solver):
    def check():
        def fit(conv):
            kw = {"power_iteration_normalizer": "QR"} if solver == "randomized" else {}
            m = PCA(3, svd_solver=solver, random_state=0, **kw).fit(conv(X))
            return [m.explained_variance_, abs(m.components_), abs(m.transform(conv(X)))]
        got, ref = run(fit)
        assert isinstance(got[0], em.Tensor)
        for g, r in zip(got, ref):
            close(g, r, rtol=1e-6, atol=1e-8)
    return check


def ridge():
    def fit(conv):
        m = Ridge(alpha=0.5, solver="svd").fit(conv(X), conv(yr))
        return [m.coef_, m.intercept_, m.predict(conv(X))]
    got, ref = run(fit)
    assert isinstance(got[0], em.Tensor)
    for g, r in zip(got, ref):
        close(g, r, rtol=1e-7, atol=1e-9)


METRICS = {
    "accuracy_score": lambda f, c: f(c(yt), c(yp)),
    "zero_one_loss": lambda f, c: f(c(yt), c(yp)),
    "f1_score": lambda f, c: f(c(yt), c(yp), average="macro"),
    "precision_score": lambda f, c: f(c(yt), c(yp), average="micro"),
    "recall_score": lambda f, c: f(c(yt), c(yp), average="weighted"),
    "confusion_matrix": lambda f, c: f(c(yt), c(yp)),
    "r2_score": lambda f, c: f(c(a), c(b)),
    "mean_squared_error": lambda f, c: f(c(a), c(b)),
    "mean_absolute_error": lambda f, c: f(c(a), c(b)),
    "explained_variance_score": lambda f, c: f(c(a), c(b)),
    "mean_absolute_percentage_error": lambda f, c: f(c(a), c(b)),
    "max_error": lambda f, c: f(c(a), c(b)),
    "pairwise.euclidean_distances": lambda f, c: f(c(X[:7]), c(X[7:12])),
    "pairwise.cosine_similarity": lambda f, c: f(c(X[:7]), c(X[7:12])),
    "pairwise.rbf_kernel": lambda f, c: f(c(X[:7]), c(X[7:12])),
}


def metric(name):
    def check():
        fn = getattr(metrics.pairwise, name.split(".")[1]) if "." in name else \
            getattr(metrics, name)
        got, ref = run(lambda conv: METRICS[name](fn, conv))
        if name.startswith("pairwise") or name == "confusion_matrix":
            assert isinstance(got, em.Tensor), type(got)
        close(got, ref, rtol=1e-7, atol=1e-12)
    return check


CASES = {"lda-svd": lda("svd"), "pca-full": pca("full"), "pca-randomized": pca("randomized"),
         "pca-covariance_eigh": pca("covariance_eigh"), "ridge-svd": ridge,
         **{n: metric(n) for n in METRICS}}
results = {}
for name, check in CASES.items():
    try:
        check()
        results[name] = ["ok"]
    except NotImplementedError as e:
        results[name] = ["notimpl", str(e)]
    except Exception:
        results[name] = ["fail", traceback.format_exc()]
print("RESULTS" + json.dumps(results))
'''

# LinearDiscriminantAnalysis(solver="eigen") is NumPy-only in scikit-learn 1.9 (scipy.linalg.eigh
# and np.dot in _solve_eigen; sklearn lists only solver="svd" as Array API aware): on any
# non-NumPy namespace its predict refuses the NumPy scalings it fitted. xp.linalg.eigh is
# exercised by PCA(svd_solver="covariance_eigh") instead.
ESTIMATORS = ["lda-svd", "pca-full", "pca-randomized", "pca-covariance_eigh", "ridge-svd"]
METRICS = ["accuracy_score", "zero_one_loss", "f1_score", "precision_score", "recall_score",
           "confusion_matrix", "r2_score", "mean_squared_error", "mean_absolute_error",
           "explained_variance_score", "mean_absolute_percentage_error", "max_error",
           "pairwise.euclidean_distances", "pairwise.cosine_similarity", "pairwise.rbf_kernel"]


@pytest.fixture(scope="module")
def results():
    env = dict(os.environ, SCIPY_ARRAY_API="1")
    p = subprocess.run([sys.executable, "-W", "ignore", "-c", _SCRIPT], env=env,
                       capture_output=True, text=True, timeout=300)
    line = [s for s in p.stdout.splitlines() if s.startswith("RESULTS")]
    assert p.returncode == 0 and line, p.stdout[-3000:] + p.stderr[-3000:]
    return json.loads(line[-1][len("RESULTS"):])


@pytest.mark.parametrize("case", ESTIMATORS)
def test_estimator_on_ember_arrays_matches_numpy(results, case):
    status = results[case]
    if status[0] == "notimpl":
        # svd/qr/eigh come with the linalg branch (issue 20, ember.linalg); until then
        # ember.linalg raises NotImplementedError and the estimator waits for it
        pytest.skip(f"{case}: {status[1]}")
    assert status == ["ok"], status[-1]


@pytest.mark.parametrize("case", METRICS)
def test_metric_on_ember_arrays_matches_numpy(results, case):
    assert results[case] == ["ok"], results[case][-1]
