from __future__ import annotations

import numpy as np
import pytest
from sklearn.datasets import load_wine, make_multilabel_classification
from sklearn.metrics import f1_score
from sklearn.model_selection import StratifiedKFold

from metro import get_metric
from metro.multiclass_baselines import OvRThresholdClassifier, PlainLogistic, TunedArgmaxLogistic
from metro.thresholds import best_threshold


def test_ovr_threshold_multiclass_tunes_one_threshold_per_class_on_its_folds():
    X, y = load_wine(return_X_y=True)
    clf = OvRThresholdClassifier(random_state=0).fit(X, y)
    assert clf.thresholds_.shape == (3,)
    # class 1's threshold is the best F1 threshold on its pooled out-of-fold scores
    t = (y == 1).astype(int)
    oof = np.empty(t.size)
    for train, held in StratifiedKFold(5, shuffle=True, random_state=0).split(X, t):
        from metro.multiclass_baselines import _logistic

        oof[held] = _logistic().fit(X[train], t[train]).decision_function(X[held])
    assert clf.thresholds_[1] == pytest.approx(best_threshold(get_metric("f1"), oof, t)[0])
    margins = clf.decision_function(X)
    assert np.array_equal(clf.predict(X), np.argmax(margins, axis=1))
    assert f1_score(y, clf.predict(X), average="macro") > 0.9


def test_multilabel_baselines():
    X, Y = make_multilabel_classification(n_samples=150, n_features=5, n_classes=3, random_state=0)
    ovr = OvRThresholdClassifier(random_state=0).fit(X, Y)
    P = ovr.predict(X)
    assert P.shape == Y.shape and np.array_equal(P, (ovr.decision_function(X) >= 0).astype(int))
    assert PlainLogistic().fit(X, Y).predict(X).shape == Y.shape
    with pytest.raises(ValueError, match="multi-class y"):
        TunedArgmaxLogistic().fit(X, Y)


def test_tuned_argmax_is_no_worse_out_of_fold_than_plain_argmax():
    X, y = load_wine(return_X_y=True)
    tuned = TunedArgmaxLogistic(random_state=0).fit(X, y)
    assert tuned.offsets_.shape == (3,)
    assert tuned.predict(X).shape == (178,)
    assert PlainLogistic().fit(X, y).predict(X).shape == (178,)
    with pytest.raises(ValueError, match="not supported"):
        TunedArgmaxLogistic(average="samples").fit(X, y)
