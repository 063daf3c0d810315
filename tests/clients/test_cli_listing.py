"""``metro jobs``, ``metro datasets``, ``metro models`` and ``metro delete``, run as a person runs
them against the live server, as a tenant of their own (so the lists hold only this test's)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

from service.admin import create_api_key
from tests.clients.conftest import Live, write_training_csv
from tests.clients.test_cli import assert_one_line_error, metro


def _own_tenant(live: Live) -> dict[str, str]:
    with live.cluster.app.state.sessionmaker() as session:
        key = create_api_key(session, f"lists-{uuid.uuid4().hex[:8]}")
    return {"METRO_API_KEY": key}


def test_list_what_a_tenant_has_and_delete_an_upload(live: Live, tmp_path: Path) -> None:
    mine = _own_tenant(live)
    for command, noun in (
        ("jobs", "no jobs"),
        ("datasets", "no datasets"),
        ("models", "no models"),
    ):
        empty = metro(live, command, env=mine)
        assert (empty.returncode, empty.stdout, empty.stderr.strip()) == (0, "", noun)

    train = write_training_csv(tmp_path / "train.csv", seed=3)
    uploaded = metro(live, "upload", str(train), "--label-column", "y", env=mine)
    assert uploaded.returncode == 0, uploaded.stderr
    uri = uploaded.stdout.strip()
    listed = metro(live, "datasets", env=mine)
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if uri in line]
    assert "train.csv" in row and " 240 " in row and " 5 " in row and " y " in row

    submitted = metro(
        live, "submit", "--dataset", uri, "--metric", "f1", "--n-lambdas", "3",
        "--max-iter", "20", "--cv", "2", env=mine,
    )  # fmt: skip
    assert submitted.returncode == 0, submitted.stderr  # --cv N builds a job (it used not to)
    job_id = submitted.stdout.strip()

    watched = metro(live, "watch", job_id, "--interval", "0.2", "--timeout", "90", env=mine)
    assert watched.returncode == 0, watched.stdout + watched.stderr
    jobs = metro(live, "jobs", "--state", "succeeded", env=mine)
    [row] = jobs.stdout.splitlines()[1:]  # under the header, this tenant's one job
    job = json.loads(metro(live, "jobs", "--json", env=mine).stdout)
    assert job["id"] == job_id and job["spec"]["search"]["cv"] == 2
    trained = f"{job['best_lambda']:.4g}"
    assert row.split()[:4] == [job_id, "succeeded", "100%", "F1"] and trained in row and uri in row
    assert metro(live, "jobs", "--state", "failed", env=mine).stderr.strip() == (
        "no jobs in state failed"
    )
    models = metro(live, "models", "--job", job_id, env=mine)
    [row] = models.stdout.splitlines()[1:]
    # The same trained λ as the job's and `metro watch`'s: one number, one meaning.
    assert row.split()[:3] == [row.split()[0], job_id, "F1"] and trained in row
    [choice] = job["choices"]
    assert row.split()[4] == f"{choice['tuned_threshold']:.4g}"  # the dashboard's "Threshold"
    assert f"trained λ {trained}" in watched.stdout

    # Another tenant sees none of it, and cannot delete it (the same answer as a missing one).
    assert uri not in metro(live, "datasets").stdout
    assert job_id not in metro(live, "jobs", "--limit", "200").stdout
    assert_one_line_error(metro(live, "delete", uri), "404")

    # An id: a job's, then a model's (another tenant's: as missing).
    model_id = row.split()[0]
    assert_one_line_error(metro(live, "delete", job_id), "no job, model or dataset")
    deleted = metro(live, "delete", model_id, env=mine)
    assert deleted.stderr.strip() == f"deleted model {model_id}", deleted.stderr
    assert metro(live, "models", env=mine).stderr.strip() == "no models"
    deleted = metro(live, "delete", job_id, env=mine)
    assert deleted.stderr.strip() == f"deleted job {job_id}", deleted.stderr
    assert metro(live, "jobs", env=mine).stderr.strip() == "no jobs"
    assert_one_line_error(metro(live, "delete", job_id, env=mine), "no job, model or dataset")

    gone = metro(live, "delete", uri, env=mine)
    assert gone.returncode == 0 and gone.stderr.strip() == f"deleted {uri}", gone.stderr
    assert metro(live, "datasets", env=mine).stderr.strip() == "no datasets"
    assert_one_line_error(metro(live, "delete", uri, env=mine), "404")
    assert_one_line_error(metro(live, "jobs", "--state", "done", env=mine), "--state 'done'")


def test_a_listing_is_never_cut_to_a_narrow_terminal(monkeypatch) -> None:
    """Fitted to 80 columns (a pipe, a small window, the README tour's `metro jobs`), rich cut
    states and numbers short ("succ…", "-0.8…") and folded URIs over several lines."""
    import datetime
    import uuid
    from types import SimpleNamespace

    from metro_cli import listing
    from rich.console import Console

    now = datetime.datetime.now(datetime.UTC)
    info = {"name": "f1", "display_name": "F1 (macro)", "greater_is_better": True}
    jobs = [
        SimpleNamespace(
            id=uuid.uuid4(),
            state=state,
            progress=progress,
            best_lambda=lam,
            spec={"metric": {"preset": "f1"}, "metric_info": info},
            failure_reason=None,
            dataset_uri=f"dataset://{uuid.uuid4()}",
            created_at=now,
        )
        for state, progress, lam in [("succeeded", 1.0, -0.8333333), ("running", 0.45, None)]
    ]
    console = Console(width=80, record=True, color_system=None)
    monkeypatch.setattr(listing, "console", console)
    listing.print_whole(listing.jobs_table(jobs))
    lines = [line.rstrip() for line in console.export_text().splitlines()]
    assert "…" not in "".join(lines)
    assert len(lines) == 3  # the header and a line per job
    assert "succeeded" in lines[1] and "-0.8333" in lines[1] and jobs[0].dataset_uri in lines[1]
    assert console.width == 80  # given back
