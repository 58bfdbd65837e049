"""scikit-learn pipelines through skl2onnx (`ai.onnx.ml`), against scikit-learn itself (issue 29).

Each fitted model (small: 3 classes, 6 features, a few trees) is converted once by skl2onnx
(`zipmap=False`: labels and a probability matrix) and compiled once by `mlconv.compile`; the
compiled model runs at two batch sizes and matches `predict` exactly and `predict_proba`,
`decision_function` or `transform` within 1e-4 (float32 against scikit-learn's float64).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("skl2onnx")

from skl2onnx import to_onnx  # noqa: E402
from sklearn.cluster import KMeans  # noqa: E402
from sklearn.compose import ColumnTransformer  # noqa: E402
from sklearn.datasets import make_classification, make_regression  # noqa: E402
from sklearn.ensemble import (  # noqa: E402
    GradientBoostingClassifier,
    RandomForestClassifier,
    RandomForestRegressor,
)
from sklearn.linear_model import LogisticRegression  # noqa: E402
from sklearn.pipeline import make_pipeline  # noqa: E402
from sklearn.preprocessing import OneHotEncoder, StandardScaler  # noqa: E402
from sklearn.svm import SVC, SVR  # noqa: E402

import mlconv  # noqa: E402

BATCHES = (1, 9)


def _data(categorical: bool = False):
    x, y = make_classification(
        240, 6, n_informative=4, n_classes=3, n_clusters_per_class=1, random_state=0
    )
    x = x.astype(np.float32)
    if categorical:
        x[:, 4:] = np.random.default_rng(0).integers(0, 4, (len(x), 2))
    return x, y


def _pipeline(name):
    scaled = [("num", StandardScaler(), [0, 1, 2, 3])]
    onehot = [("cat", OneHotEncoder(handle_unknown="ignore"), [4, 5])]
    return {
        "logistic": make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
        "random_forest": RandomForestClassifier(n_estimators=6, max_depth=5, random_state=0),
        "gradient_boosting": GradientBoostingClassifier(
            n_estimators=6, max_depth=3, random_state=0
        ),
        "kmeans": KMeans(3, n_init=2, random_state=0),
        "svc": make_pipeline(StandardScaler(), SVC(probability=True, random_state=0)),
        "column_onehot": make_pipeline(
            ColumnTransformer(scaled + onehot), LogisticRegression(max_iter=500)
        ),
    }[name]


@pytest.fixture(scope="module")
def converted():
    cache = {}

    def get(name):
        if name not in cache:
            x, y = _data(categorical=name == "column_onehot")
            model = _pipeline(name).fit(x, y)
            final = model.steps[-1][1] if hasattr(model, "steps") else model
            options = None if name == "kmeans" else {id(final): {"zipmap": False}}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                proto = to_onnx(model, x[:1], options=options, target_opset={"": 17})
            cache[name] = (model, mlconv.compile(proto), x)
        return cache[name]

    return get


def _inputs(x, batch, seed):
    rng = np.random.default_rng(seed)
    return x[rng.choice(len(x), batch, replace=False)] + rng.normal(0, 0.3, (batch, 6)).astype(
        np.float32
    ) * (np.arange(6) < 4)


@pytest.mark.parametrize(
    "name", ["logistic", "random_forest", "gradient_boosting", "column_onehot", "svc"]
)
def test_classifier_matches_sklearn(converted, name):
    model, compiled, x = converted(name)
    for seed, batch in enumerate(BATCHES):
        features = _inputs(x, batch, seed)
        label, probabilities = compiled(features)
        np.testing.assert_array_equal(label, model.predict(features))
        np.testing.assert_allclose(probabilities, model.predict_proba(features), atol=1e-4)


def test_logistic_decision_function(converted):
    """Without the softmax: LinearClassifier's raw scores are `decision_function`."""
    model, _, x = converted("logistic")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        proto = to_onnx(
            model,
            x[:1],
            options={id(model.steps[-1][1]): {"zipmap": False, "raw_scores": True}},
            target_opset={"": 17},
        )
    compiled = mlconv.compile(proto)
    for seed, batch in enumerate(BATCHES):
        features = _inputs(x, batch, seed)
        _, scores = compiled(features)
        np.testing.assert_allclose(scores, model.decision_function(features), atol=1e-4)


def test_kmeans_matches_sklearn(converted):
    model, compiled, x = converted("kmeans")
    for seed, batch in enumerate(BATCHES):
        features = _inputs(x, batch, seed)
        label, distances = compiled(features)
        np.testing.assert_array_equal(label, model.predict(features))
        np.testing.assert_allclose(distances, model.transform(features), rtol=1e-4, atol=1e-4)


def test_random_forest_regressor_matches_sklearn():
    x, y = make_regression(200, 5, random_state=0)
    x = x.astype(np.float32)
    model = RandomForestRegressor(n_estimators=5, max_depth=6, random_state=0).fit(x, y)
    compiled = mlconv.compile(to_onnx(model, x[:1], target_opset={"": 17}))
    for seed, batch in enumerate(BATCHES):
        features = x[np.random.default_rng(seed).choice(len(x), batch, replace=False)] + 0.01
        (got,) = compiled(features)
        np.testing.assert_allclose(got.reshape(-1), model.predict(features), rtol=1e-4, atol=1e-3)


def test_binary_classifiers_match_sklearn():
    """Two classes: skl2onnx writes one score per sample (the positive class's) for forests,
    boosting and logistic regression, and one decision value for the SVC."""
    x, y = make_classification(160, 6, n_informative=4, random_state=1)
    x = x.astype(np.float32)
    models = [
        LogisticRegression(max_iter=500),
        RandomForestClassifier(n_estimators=4, max_depth=4, random_state=0),
        GradientBoostingClassifier(n_estimators=4, max_depth=2, random_state=0),
        SVC(probability=True, random_state=0),
    ]
    for model in models:
        model.fit(x, y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            proto = to_onnx(model, x[:1], options={id(model): {"zipmap": False}})
        compiled = mlconv.compile(proto)
        for seed, batch in enumerate(BATCHES):
            features = x[np.random.default_rng(seed).choice(len(x), batch, replace=False)]
            label, probabilities = compiled(features)
            name = type(model).__name__
            np.testing.assert_array_equal(label, model.predict(features), err_msg=name)
            np.testing.assert_allclose(
                probabilities, model.predict_proba(features), atol=1e-4, err_msg=name
            )


def test_svr_matches_sklearn():
    x, y = make_regression(120, 5, noise=0.1, random_state=0)
    x = x.astype(np.float32)
    model = SVR(C=10.0).fit(x, y / 50)
    compiled = mlconv.compile(to_onnx(model, x[:1]))
    for seed, batch in enumerate(BATCHES):
        features = x[np.random.default_rng(seed).choice(len(x), batch, replace=False)] + 0.05
        (got,) = compiled(features)
        np.testing.assert_allclose(got.reshape(-1), model.predict(features), rtol=1e-4, atol=1e-4)
