"""POST /v1/jobs refuses, with a 422 naming the field and the limit, every spec that a worker
could not honour: each parameter past the library's bounds, non-finite numbers, and a job past
the operator's budgets (spec size, model parameters, work) on what is known of its data."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.service.conftest import job_body, upload


def _errors(r: Any) -> list[dict[str, Any]]:
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["type"].endswith("/validation") and body["title"] == "Invalid job"
    return list(body["errors"])


def _nothing_created(client: Any, tenant: Any) -> None:
    assert client.get("/v1/jobs", headers=tenant.headers).json()["items"] == []


# -- what the operator's probe found accepted, then failing or never ending on the worker --------


@pytest.mark.parametrize(
    ("overrides", "loc", "limit"),
    [
        ({"training": {"seed": 2**70}}, ["body", "training", "seed"], "4294967295"),
        ({"search": {"lambda_min": -1e308}}, ["body", "search", "lambda_min"], "-1000000"),
        ({"search": {"lambda_max": 1e308}}, ["body", "search", "lambda_max"], "1000000"),
        (
            {"model": {"kind": "mlp", "hidden": [1, 1_000_000]}},
            ["body", "model", "hidden", 1],
            "less than or equal to 65536",
        ),
        ({"training": {"lr": 1e308}}, ["body", "training", "lr"], "less than or equal to 1000000"),
        (
            {"training": {"optimizer": "sgd", "epochs": 10**9}},
            ["body", "training", "epochs"],
            "less than or equal to 10000",
        ),
        # The probe's 1e9 is a float where an integer belongs: refused as such (strict types).
        (
            {"training": {"optimizer": "sgd", "epochs": 1e9}},
            ["body", "training", "epochs"],
            "valid integer",
        ),
        ({"training": {"max_iter": 10**9}}, ["body", "training", "max_iter"], "100000"),
        (
            {"model": {"kind": "cnn3", "channels": [32, 64, 1_000_000]}},
            ["body", "model", "channels", 2],
            "less than or equal to 4096",
        ),
        # a list's entry is named by its index
        (
            {"search": {"multipliers": [0, 1e300]}},
            ["body", "search", "multipliers", 1],
            "1000000",
        ),
        ({"surrogate": {"name": "sigmoid", "k": 1e300}}, ["body", "surrogate", "k"], "1000000"),
        (
            {"metric": {"alpha": [1e300, 0, 0, 0], "beta": [0, 0, 0, 1]}},
            ["body", "metric", "alpha"],
            "1e+12",
        ),
    ],
)
def test_a_parameter_past_its_bound_is_422_naming_field_and_limit(
    client, tenant, overrides, loc, limit
):
    r = client.post("/v1/jobs", json=job_body(**overrides), headers=tenant.headers)
    [error] = _errors(r)
    assert error["loc"] == loc
    assert limit in error["msg"]
    _nothing_created(client, tenant)


def test_both_lambdas_of_the_probe_are_refused(client, tenant):
    body = job_body(search={"lambda_min": -1e308, "lambda_max": 1e308})
    errors = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert [e["loc"] for e in errors] == [
        ["body", "search", "lambda_min"],
        ["body", "search", "lambda_max"],
    ]
    assert "-1000000" in errors[0]["msg"] and "1000000" in errors[1]["msg"]


def test_a_100000_layer_mlp_is_refused_by_the_schema(client, tenant):
    # The spec that was stored as 300 KB: refused while it is parsed (the library's bound,
    # metro.models.MAX_HIDDEN_LAYERS, is the schema's max_length).
    body = job_body(model={"kind": "mlp", "hidden": [1] * 100_000})
    errors = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert errors[0]["loc"] == ["body", "model", "hidden"]
    assert errors[0]["type"] == "too_long" and "32" in errors[0]["msg"]
    _nothing_created(client, tenant)


def test_the_schema_takes_its_bounds_from_the_library(client):
    from metro.experiment import MAX_REPEATS
    from metro.models import CNN3_LAYERS, MAX_HIDDEN_LAYERS
    from metro.search.config import MAX_MULTIPLIERS, MAX_REFINE_TEMPERATURES

    schemas = client.get("/openapi.json").json()["components"]["schemas"]

    def max_items(schema: str, field: str) -> int:
        prop = schemas[schema]["properties"][field]
        if prop.get("type") == "array":  # a list the library always has (no null)
            return int(prop["maxItems"])
        return next(s["maxItems"] for s in prop["anyOf"] if s.get("type") == "array")

    assert max_items("ModelIn", "hidden") == MAX_HIDDEN_LAYERS
    assert max_items("ModelIn", "channels") == CNN3_LAYERS
    assert max_items("SearchIn", "multipliers") == MAX_MULTIPLIERS
    assert max_items("SearchIn", "refine_temperatures") == MAX_REFINE_TEMPERATURES
    assert schemas["JobCreate"]["properties"]["repeats"]["maximum"] == MAX_REPEATS


S3_URI = "s3://bucket/path/train.parquet"  # an object: nothing reads it at submission


@pytest.fixture
def s3_allowed(settings, monkeypatch):
    monkeypatch.setattr(settings, "data_uri_prefixes", ["s3://bucket/path/"])


def test_a_non_finite_number_anywhere_is_refused(client, tenant, s3_allowed):
    # JSON's 1e999 parses as inf; the label of an object is checked by nobody before a worker
    # reads it, so it reached the database's JSON column, which refuses infinity.
    raw = json.dumps(job_body(dataset={"uri": S3_URI, "positive_label": 0.5}))
    raw = raw.replace("0.5", "1e999")
    r = client.post(
        "/v1/jobs",
        content=raw,
        headers={**tenant.headers, "Content-Type": "application/json"},
    )
    [error] = _errors(r)
    assert error["loc"] == ["body", "dataset", "positive_label"]
    assert error["msg"] == "must be a finite number"
    _nothing_created(client, tenant)


@pytest.mark.parametrize(
    ("section", "loc"),
    [
        ({"surrogate": {"name": "sigmoid", "k": 0.5}}, ["body", "surrogate", "k"]),
        ({"metric": {"preset": "f_beta", "beta": 0.5}}, ["body", "metric", "beta"]),
        ({"training": {"epochs": 0.5}}, ["body", "training", "epochs"]),
    ],
)
def test_an_integer_past_float64_is_a_422_not_an_overflow(client, tenant, section, loc):
    # float() of a 400-digit integer raises OverflowError, which no validator expected.
    raw = json.dumps(job_body(**section)).replace("0.5", "1" + "0" * 400)
    r = client.post(
        "/v1/jobs", content=raw, headers={**tenant.headers, "Content-Type": "application/json"}
    )
    [error] = _errors(r)
    # refused by the library's check ("finite"), by the schema's bound of a bounded integer, or
    # by its type where a float64 cannot hold the number
    assert error["loc"] == loc
    assert any(words in error["msg"] for words in ("finite", "less than or equal to", "number"))


# -- the operator's budgets ---------------------------------------------------------------------


def test_the_spec_size_limit_both_ways(client, tenant, settings, monkeypatch, s3_allowed):
    small = client.post("/v1/jobs", json=job_body(), headers=tenant.headers)
    assert small.status_code == 201, small.text
    stored = len(json.dumps(small.json()["spec"], separators=(",", ":")).encode())
    monkeypatch.setattr(settings, "max_job_spec_bytes", stored)
    again = client.post("/v1/jobs", json=job_body(repeats=2), headers=tenant.headers)
    assert again.status_code == 201, again.text  # the same size: within
    # Longer than the first by the label's 255 characters, the most the schema takes.
    big = job_body(dataset={"uri": S3_URI, "positive_label": "m" * 255})
    [error] = _errors(client.post("/v1/jobs", json=big, headers=tenant.headers))
    assert error["loc"] == ["body"]
    assert f"more than this server's limit of {stored:,} (max_job_spec_bytes)" in error["msg"]


def test_the_parameter_budget_both_ways(client, tenant, settings, monkeypatch):
    body = job_body(model={"kind": "mlp", "hidden": [64]}, training={"epochs": 2})
    parameters = 30 * 64 + 64 + 64 + 1  # breast_cancer has 30 features
    monkeypatch.setattr(settings, "max_model_parameters", parameters)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_model_parameters", parameters - 1)
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert error["loc"] == ["body", "model", "hidden"]
    assert f"{parameters:,} parameters" in error["msg"]
    assert f"{parameters - 1:,} (max_model_parameters)" in error["msg"]


def test_the_work_budget_both_ways(client, tenant, settings, monkeypatch):
    # breast_cancer: 569 rows, 30 features; a linear model (31 parameters) fitted by L-BFGS
    # for at most 200 iterations; 21 lambdas on 5 folds plus the refit; 3 repeats.
    body = job_body(repeats=3)
    work = 31 * 569 * 200 * (21 * 5 + 1) * 3
    monkeypatch.setattr(settings, "max_job_work", work)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_job_work", work - 1)
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert error["loc"] == ["body"]
    assert "max_job_work" in error["msg"] and "x 3 repeats" in error["msg"]
    assert "training.max_iter" in error["msg"] and "repeats" in error["msg"]


def test_an_uploads_recorded_size_is_what_the_budgets_judge(client, tenant, settings, monkeypatch):
    rows = "\n".join(f"{i},{i % 7},{i % 3},{i % 2}" for i in range(200))
    up = upload(client, tenant, f"a,b,c,y\n{rows}\n".encode(), "t.csv", "text/csv")
    assert up.status_code == 201, up.text
    body = job_body(
        dataset={"uri": up.json()["uri"], "label_column": "y"},
        model={"kind": "mlp", "hidden": [64]},
        training={"epochs": 5},
    )
    parameters = 3 * 64 + 64 + 64 + 1  # three feature columns: the label is not one
    monkeypatch.setattr(settings, "max_model_parameters", parameters)
    work = parameters * 200 * 5 * (21 * 5 + 1)
    monkeypatch.setattr(settings, "max_job_work", work)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_job_work", work - 1)
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert f"{parameters:,} parameters x 200 rows x 5 epochs x 106 models" in error["msg"]


def test_a_multilabel_uploads_features_are_its_columns_less_every_label_column(
    client, tenant, settings, monkeypatch
):
    rows = "\n".join(f"{i},{i % 7},{i % 2},{(i // 2) % 2},{(i // 3) % 2}" for i in range(60))
    up = upload(client, tenant, f"x1,x2,a,b,c\n{rows}\n".encode(), "m.csv", "text/csv")
    assert up.status_code == 201, up.text
    body = job_body(
        metric={"preset": "f1", "average": "macro"},
        dataset={"uri": up.json()["uri"], "label_columns": ["a", "b", "c"]},
        model={"kind": "mlp", "hidden": [8]},
    )
    parameters = 2 * 8 + 8 + 8 + 1  # two feature columns: none of the three labels is one
    monkeypatch.setattr(settings, "max_model_parameters", parameters)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_model_parameters", parameters - 1)
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert f"the model has {parameters:,} parameters" in error["msg"]


@pytest.mark.parametrize("data", ["label_columns", "upload", "builtin"])
def test_an_averaged_jobs_work_counts_its_classes_or_labels_at_submission(
    client, tenant, settings, monkeypatch, data
):
    """An averaged job runs one search per class or label, which only the worker counted: a job
    10 times over the limit was accepted (201) and then failed. The API knows them for label
    columns, an upload received with its label column, and a built-in set."""
    if data == "builtin":
        dataset, rows, features, targets = {"uri": "builtin://digits"}, 1797, 64, 10
    else:
        lines = "\n".join(
            f"{i},{i % 7},{i % 2},{(i // 2) % 2},{(i // 3) % 2},{i % 4}" for i in range(60)
        )
        form = {"label_column": "y"} if data == "upload" else {}
        up = upload(
            client, tenant, f"x1,x2,a,b,c,y\n{lines}\n".encode(), "m.csv", "text/csv", **form
        )
        assert up.status_code == 201, up.text
        if data == "upload":  # four classes in y, recorded at upload; a, b, c are features here
            dataset = {"uri": up.json()["uri"], "label_column": "y"}
            rows, features, targets = 60, 5, 4
        else:
            dataset = {"uri": up.json()["uri"], "label_columns": ["a", "b", "c"]}
            rows, features, targets = 60, 3, 3
    body = job_body(metric={"preset": "f1", "average": "macro"}, dataset=dataset)
    work = (features + 1) * rows * 200 * (21 * 5 + 1) * targets  # linear, L-BFGS, 5-fold grid
    monkeypatch.setattr(settings, "max_job_work", work)
    r = client.post("/v1/jobs", json=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_job_work", work - 1)
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert f"x {targets} classes or labels" in error["msg"], error
    assert "average over fewer classes or labels" in error["msg"]


def test_data_of_unknown_size_is_judged_by_a_lower_bound_of_its_parameters(
    client, tenant, settings, monkeypatch, s3_allowed
):
    # An object the API cannot size: its work is the worker's to check (worker.runner), yet a
    # model too large whatever its input is refused now.
    monkeypatch.setattr(settings, "max_job_work", 1.0)
    r = client.post("/v1/jobs", json=job_body(dataset={"uri": S3_URI}), headers=tenant.headers)
    assert r.status_code == 201, r.text
    monkeypatch.setattr(settings, "max_model_parameters", 1_000_000)
    body = job_body(dataset={"uri": S3_URI}, model={"kind": "mlp", "hidden": [2048, 2048]})
    [error] = _errors(client.post("/v1/jobs", json=body, headers=tenant.headers))
    assert error["loc"] == ["body", "model", "hidden"]
    at_least = (1 * 2048 + 2048) + (2048 * 2048 + 2048) + (2048 + 1)  # one input column
    assert f"at least {at_least:,} parameters" in error["msg"]


def test_the_default_budgets_take_every_documented_job(client, tenant):
    # The README's and api.md's examples: a linear grid with every baseline and 3 repeats, and
    # an mlp on SGD (the paper's cnn3 on 10,000 images is checked in tests/core).
    every = job_body(repeats=3, baselines=["erm", "koyejo1", "koyejo2", "parambath"])
    assert client.post("/v1/jobs", json=every, headers=tenant.headers).status_code == 201
    net = job_body(model={"kind": "mlp", "hidden": [256, 256]}, training={"epochs": 100})
    assert client.post("/v1/jobs", json=net, headers=tenant.headers).status_code == 201
