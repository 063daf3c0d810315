"""service.admin: what the `metro admin create-key | list-keys | revoke-key` commands call."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from core.datasets.locations import LocationPolicy
from core.db.models import ApiKey, Job, Tenant
from service.admin import create_api_key, list_api_keys, revoke_api_key
from service.security import hash_api_key


def test_key_is_returned_once_and_stored_hashed(app, client):
    name = f"acme-{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        key1 = create_api_key(session, name)
        key2 = create_api_key(session, name)  # a second key, same tenant
        tenants = session.scalars(select(Tenant).where(Tenant.name == name)).all()
        assert len(tenants) == 1
        stored = session.scalars(select(ApiKey).where(ApiKey.tenant_id == tenants[0].id)).all()
    assert key1 != key2 and key1.startswith("metro_") and len(key1) > 40
    assert {k.key_hash for k in stored} == {hash_api_key(key1), hash_api_key(key2)}
    assert all(key1 not in (k.key_hash, k.prefix) for k in stored)
    for key in (key1, key2):
        assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_blank_tenant_name_is_refused(app):
    with app.state.sessionmaker() as session, pytest.raises(ValueError):
        create_api_key(session, "   ")


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("x" * 201, "more than 200"),  # PostgreSQL refused the insert with a traceback
        ("evil\u202eotn", r"'\u202e'"),  # a right-to-left override: shown as another name
        ("a\x01b", r"'\x01'"),
        ("tab\tbed", r"'\t'"),
        ("line\u2028break", r"'\u2028'"),  # a line separator breaks a listing's line
    ],
)
def test_a_tenant_name_is_printable_text_of_at_most_200_characters(app, name, said):
    with app.state.sessionmaker() as session, pytest.raises(ValueError, match=re.escape(said)):
        create_api_key(session, name)
    with app.state.sessionmaker() as session:
        assert create_api_key(session, f"Ünïcode [{uuid.uuid4().hex[:6]}] ok").startswith("metro_")


def test_a_tenant_named_before_the_rule_still_gets_keys(app):
    name = f"old\u202e{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        session.add(Tenant(name=name))
        session.commit()
        assert create_api_key(session, name).startswith("metro_")


def test_list_and_revoke_by_prefix_or_key(app, client):
    name = f"acme-{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        keys = [create_api_key(session, name) for _ in range(2)]
        listed = list_api_keys(session, name)
        assert [k.prefix for k in listed] == [key[:12] for key in keys]
        assert all(k.tenant == name and k.revoked_at is None for k in listed)
        assert all(key not in repr(listed) for key in keys)  # the secrets are not there

        revoked = revoke_api_key(session, listed[0].prefix)
        assert revoked.id == listed[0].id and revoked.revoked_at is not None
        assert revoke_api_key(session, keys[1]).id == listed[1].id  # by the full key
        again = revoke_api_key(session, keys[1])  # idempotent: the first revocation stands
        assert again.revoked_at == list_api_keys(session, name)[1].revoked_at
    for key in keys:
        r = client.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"})
        assert r.status_code == 401


def test_revoke_refuses_unknown_and_ambiguous_names(app, client):
    name = f"acme-{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        key = create_api_key(session, name)
        with pytest.raises(ValueError, match="no API key matches"):
            revoke_api_key(session, "metro_nothing")
        with pytest.raises(ValueError, match="no API key matches"):
            revoke_api_key(session, key[:8])  # shorter than a listed prefix: not a name
        with pytest.raises(ValueError, match="give the key"):
            revoke_api_key(session, "  ")
        # Two keys with the same listed prefix (forced: 6 random characters rarely collide).
        other = create_api_key(session, name)
        row = session.scalars(select(ApiKey).where(ApiKey.key_hash == hash_api_key(other))).one()
        row.prefix = key[:12]
        session.commit()
        with pytest.raises(ValueError, match="2 API keys share the prefix"):
            revoke_api_key(session, key[:12])
    assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"}).status_code == 200


def test_admin_commands_end_to_end(tmp_path, monkeypatch):
    """create-key, list-keys and revoke-key as an operator runs them, on a fresh SQLite file."""
    from typer.testing import CliRunner

    from cli.main import app as cli
    from core.config import get_settings

    monkeypatch.setenv("METRO_DATABASE_URL", f"sqlite:///{tmp_path / 'metro.db'}")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        # Before the migration: one line saying what to run, not SQLAlchemy's traceback.
        early = runner.invoke(cli, ["admin", "create-key", "--tenant", "ops"])
        assert early.exit_code == 1, early.output
        assert " ".join(early.stderr.split()) == (
            "error: the database has no schema yet: run `metro migrate` (`metro serve` "
            "migrates first)"
        ), early.stderr
        assert runner.invoke(cli, ["migrate"]).exit_code == 0
        created = runner.invoke(cli, ["admin", "create-key", "--tenant", "ops"])
        assert created.exit_code == 0, created.output
        key = created.stdout.strip()  # the key alone on stdout
        assert key.startswith("metro_") and len(created.stdout.splitlines()) == 1
        # The tenant's id, on stderr and in the listing, is what {tenant} in METRO_DATA_ROOTS
        # becomes: the folder name an operator creates for the tenant's file:// datasets.
        with Session(create_engine(f"sqlite:///{tmp_path / 'metro.db'}")) as session:
            owner = session.scalars(select(Tenant.id).where(Tenant.name == "ops")).one()
        shown = created.stderr.strip().removeprefix("tenant ops: id ")
        folder = tmp_path / "data" / shown
        folder.mkdir(parents=True)
        (folder / "rows.csv").write_text("a,y\n1,0\n")
        policy = LocationPolicy(
            data_roots=(str(tmp_path / "data" / "{tenant}"),), uri_prefixes=(),
            reserved_dirs=(), reserved_prefixes=(),
        )  # fmt: skip
        real, _ = policy.local_file(owner, "file://rows.csv", str(folder / "rows.csv"))
        assert real == str((folder / "rows.csv").resolve())
        listed = runner.invoke(cli, ["admin", "list-keys", "--tenant", "ops"])
        assert listed.exit_code == 0 and key[:12] in listed.output and key not in listed.output
        assert shown in listed.stdout, listed.stdout
        revoked = runner.invoke(cli, ["admin", "revoke-key", key[:12]])
        assert revoked.exit_code == 0 and f"revoked {key[:12]}" in revoked.output
        # Again: said as what it is, not as a new revocation.
        again = runner.invoke(cli, ["admin", "revoke-key", key[:12]])
        assert again.exit_code == 0 and "was already revoked, at " in again.output, again.output
        missing = runner.invoke(cli, ["admin", "revoke-key", "metro_nothing"])
        assert missing.exit_code == 1 and "no API key matches" in missing.output
        # A name that reads as markup ("[/]" closed a tag rich never opened): listing every
        # tenant's keys and revoking its key failed after the revocation.
        odd = runner.invoke(cli, ["admin", "create-key", "--tenant", "[/]"])
        assert odd.exit_code == 0, odd.output
        listed = runner.invoke(cli, ["admin", "list-keys"])
        assert listed.exit_code == 0 and "[/]" in listed.stdout, listed.output
        revoked = runner.invoke(cli, ["admin", "revoke-key", odd.stdout.strip()[:12]])
        assert revoked.exit_code == 0 and "of tenant [/]" in revoked.output, revoked.output
        refused = runner.invoke(cli, ["admin", "create-key", "--tenant", "a\x01b"])
        assert refused.exit_code == 1 and "control or format character" in refused.stderr
        # Every command's one-line error prints the name as text ("[/]" was a traceback).
        pruned = runner.invoke(
            cli, ["admin", "prune-jobs", "--older-than", "1", "--tenant", "[/x]"]
        )
        assert pruned.exit_code == 1, pruned.output
        assert "no tenant is named '[/x]'" in pruned.stderr, pruned.stderr
        # Off-boarding asks first; a dry run and --yes do not. Where the stores' files are not
        # (a host without their volumes) it refuses, where each removal found nothing and it
        # said the tenant was deleted.
        far = runner.invoke(cli, ["admin", "delete-tenant", "--tenant", "[/]", "--yes"])
        assert far.exit_code == 1 and "is not on this machine" in far.stderr, far.output
        for name in ("uploads", "artifacts"):
            (tmp_path / name).mkdir()
        monkeypatch.setenv("METRO_UPLOAD_DIR", str(tmp_path / "uploads"))
        monkeypatch.setenv("METRO_ARTIFACTS_URI", str(tmp_path / "artifacts"))
        monkeypatch.setenv("METRO_API_KEY_CACHE_SECONDS", "0")
        get_settings.cache_clear()
        dry = runner.invoke(cli, ["admin", "delete-tenant", "--tenant", "[/]", "--dry-run"])
        assert dry.exit_code == 0 and "would delete tenant [/] (" in dry.stdout, dry.output
        kept = runner.invoke(cli, ["admin", "delete-tenant", "--tenant", "[/]"], input="n\n")
        assert kept.exit_code == 1 and "nothing deleted" in kept.stderr, kept.output
        gone = runner.invoke(cli, ["admin", "delete-tenant", "--tenant", "[/]", "--yes"])
        assert gone.exit_code == 0 and "deleted tenant [/]" in gone.stdout, gone.output
        listed = runner.invoke(cli, ["admin", "list-keys"])
        assert "[/]" not in listed.stdout and "ops" in listed.stdout
        twice = runner.invoke(cli, ["admin", "delete-tenant", "--tenant", "[/]", "--yes"])
        assert twice.exit_code == 1 and "no tenant is named '[/]'" in twice.stderr
    finally:
        get_settings.cache_clear()


def test_migrate_says_in_one_line_what_is_wrong_with_the_database(tmp_path, monkeypatch):
    """A URL that does not parse, a database that is not there, a schema a newer version
    migrated: `metro migrate` (and `metro serve`, which migrates first) ended in tracebacks of
    70 to 160 lines; `metro admin` told to run `metro migrate` on a newer schema."""
    from sqlalchemy import text
    from typer.testing import CliRunner

    from cli.main import app as cli
    from core.config import get_settings

    runner = CliRunner()
    for url, said in [
        ("notaurl", "error: cannot reach the database (ArgumentError): check METRO_DATABASE_URL"),
        (
            "postgresql+psycopg://postgres@127.0.0.1:1/none",
            "error: cannot reach the database (OperationalError): check METRO_DATABASE_URL",
        ),
    ]:
        monkeypatch.setenv("METRO_DATABASE_URL", url)
        get_settings.cache_clear()
        done = runner.invoke(cli, ["migrate"])
        assert done.exit_code == 1 and " ".join(done.stderr.split()) == said, done.output
    database = f"sqlite:///{tmp_path / 'metro.db'}"
    monkeypatch.setenv("METRO_DATABASE_URL", database)
    get_settings.cache_clear()
    try:
        migrated = runner.invoke(cli, ["migrate"])  # which database: a .env typo went unseen
        assert migrated.exit_code == 0, migrated.output
        from core.db.migrate import current

        head = current(database)
        assert migrated.stdout == (
            f"database {database}: upgraded from revision none (a new database) to {head}\n"
        )
        again = runner.invoke(cli, ["migrate"])  # said the same either way
        assert again.stdout == (
            f"database {database}: already at the latest revision, {head}: nothing to do\n"
        ), again.stdout
        with create_engine(database).begin() as conn:
            conn.execute(text("UPDATE alembic_version SET version_num = '0099'"))
        for args in (["migrate"], ["admin", "list-keys"]):
            done = runner.invoke(cli, args)
            assert done.exit_code == 1, done.output
            assert " ".join(done.stderr.split()).startswith(
                "error: the database's schema is at revision 0099, which this version of METRO "
                "does not know: a newer version migrated it"
            ), done.stderr
    finally:
        get_settings.cache_clear()


def test_prune_jobs_deletes_old_finished_jobs_as_their_owners_delete_does(
    app, client, settings, service_dirs, make_tenant, submit, set_job, add_model
):
    """Nothing removed a job its tenant left: a deployment's tables and store grew with every
    job. Failed and cancelled ones go by default; succeeded ones (whose models may be in use)
    only when named; running ones never."""
    from datetime import timedelta

    from core.db.base import utcnow
    from core.db.models import Model
    from core.states import JobState
    from service.admin import prune_jobs

    a, b = make_tenant(), make_tenant()
    old, recent = utcnow() - timedelta(days=40), utcnow() - timedelta(days=1)
    jobs: dict[str, str] = {}
    for name, owner, state, at in [
        ("old failed", a, "failed", old), ("old cancelled", a, "cancelled", old),
        ("old succeeded", a, "succeeded", old), ("recent failed", a, "failed", recent),
        ("old failed of b", b, "failed", old), ("running", a, "running", old),
    ]:  # fmt: skip
        job_id = submit(owner)["id"]
        set_job(job_id, state=state, finished_at=at)
        files = service_dirs["artifacts"] / "jobs" / job_id / "fits"
        files.mkdir(parents=True)
        (files / "f.safetensors").write_bytes(b"fit")
        jobs[name] = job_id
    model = add_model(a)
    with app.state.sessionmaker() as session:
        session.get(Model, uuid.UUID(model["id"])).job_id = uuid.UUID(jobs["old succeeded"])
        session.commit()

    def prune(**kwargs):
        with app.state.sessionmaker() as session:
            found = prune_jobs(
                session, finished_before=utcnow() - timedelta(days=30),
                artifacts_uri=settings.artifacts_uri, **kwargs,
            )  # fmt: skip
        return {str(j.id): j for j in found}

    def there(name: str) -> bool:
        r = client.get(f"/v1/jobs/{jobs[name]}", headers=(b if "of b" in name else a).headers)
        files = (service_dirs["artifacts"] / "jobs" / jobs[name]).exists()
        assert (r.status_code == 200) == files, name  # rows and files go together
        return files

    dry = prune(tenant_name=a.name, dry_run=True)
    assert set(dry) == {jobs["old failed"], jobs["old cancelled"]}
    assert all(there(name) for name in jobs)
    assert set(prune(tenant_name=a.name)) == set(dry)
    assert [name for name in jobs if not there(name)] == ["old failed", "old cancelled"]
    assert set(prune()) == {jobs["old failed of b"]}  # every tenant's
    succeeded = prune(states=[JobState.SUCCEEDED])
    assert (
        set(succeeded) == {jobs["old succeeded"]} and succeeded[jobs["old succeeded"]].models == 1
    )
    assert client.get(f"/v1/models/{model['id']}", headers=a.headers).status_code == 404
    assert [name for name in jobs if there(name)] == ["recent failed", "running"]
    with pytest.raises(ValueError, match="not running"):
        prune(states=[JobState.RUNNING])
    # A misspelt tenant in a cron line pruned nothing and said so as a success.
    with pytest.raises(ValueError, match="no tenant is named 'nobody-at-all'"):
        prune(tenant_name="nobody-at-all", dry_run=True)


def test_delete_tenant_removes_all_of_one_tenant_and_nothing_of_another(
    app, client, settings, service_dirs, make_tenant, submit, set_job, add_model
):
    """Off-boarding: a tenant that leaves takes its keys, jobs, models, datasets and stored
    bytes with it. A job its worker is still stopping keeps it (and what that job reads) until
    the command runs again; another tenant's same bytes, rows and files stay whole."""
    from core.datasets.storage import UploadStore
    from core.db.models import Dataset, Job, Model, StoredObject
    from service.admin import delete_tenant, tenant_id
    from tests.service.conftest import upload

    a, b = make_tenant(), make_tenant()
    csv = b"a,b,y\n1.0,2.0,1\n3.0,4.0,0\n5.0,6.0,1\n"
    ds = {}
    for name, owner, filename in [("a1", a, "x.csv"), ("a2", a, "y.csv"), ("b", b, "x.csv")]:
        r = upload(client, owner, csv, filename)  # a's two share their stored bytes
        assert r.status_code == 201, r.text
        ds[name] = r.json()
    queued = submit(a, dataset={"uri": ds["a1"]["uri"]})["id"]
    running = submit(a, dataset={"uri": ds["a2"]["uri"]})["id"]
    set_job(running, state="running")
    done = submit(a)["id"]
    set_job(done, state="succeeded")
    b_job = submit(b, dataset={"uri": ds["b"]["uri"]})["id"]
    for job_id in (done, b_job):
        (service_dirs["artifacts"] / "jobs" / job_id).mkdir(parents=True)
        (service_dirs["artifacts"] / "jobs" / job_id / "f.bin").write_bytes(b"fit")
    loose, b_model = add_model(a), add_model(b)  # a model no job of a's names any more

    def run(dry_run=False):
        with app.state.sessionmaker() as session:
            return delete_tenant(
                session, a.name, artifacts_uri=settings.artifacts_uri,
                remove_bytes=UploadStore.remove, dry_run=dry_run,
            )  # fmt: skip

    def left(owner):
        with app.state.sessionmaker() as session:
            return {
                table.__name__: session.scalar(
                    select(func.count()).select_from(table).where(table.tenant_id == owner.id)
                )
                for table in (ApiKey, Job, Model, Dataset, StoredObject)
            }

    before = left(a)
    dry = run(dry_run=True)
    assert (dry.keys_revoked, dry.jobs_cancelled, dry.jobs_deleted) == (1, 2, 2)
    assert (dry.models_deleted, dry.datasets_deleted, dry.still_running) == (1, 1, 1)
    assert not dry.removed and left(a) == before  # a dry run changes nothing

    first = run()  # the running job is asked to stop: it and the dataset it reads stay
    assert (first.keys_revoked, first.jobs_cancelled, first.still_running) == (1, 2, 1)
    assert (first.jobs_deleted, first.models_deleted, first.datasets_deleted) == (2, 1, 1)
    assert not first.removed
    with app.state.sessionmaker() as session:
        assert session.scalars(select(ApiKey.revoked_at).where(ApiKey.tenant_id == a.id)).all()[0]
        assert session.get(Job, uuid.UUID(running)).state == "cancelling"
        assert session.get(Job, uuid.UUID(queued)) is None
    assert left(a)["Dataset"] == 1 and left(a)["StoredObject"] == 1
    assert not (service_dirs["artifacts"] / "jobs" / done).exists()
    assert not loose["dir"].exists()

    set_job(running, state="cancelled")  # its worker stopped
    # An earlier delete that removed a dataset's row but could not remove its bytes left their
    # row without a dataset: it kept the tenant for ever ("added data while it was deleted").
    with app.state.sessionmaker() as session:
        [(sha, location)] = session.execute(
            select(Dataset.sha256, Dataset.storage_path).where(Dataset.tenant_id == a.id)
        ).all()

    orphan = service_dirs["uploads"] / str(a.id) / ("0" * 64 + ".csv")
    orphan.write_bytes(b"left behind")
    with app.state.sessionmaker() as session:
        session.add(StoredObject(
            tenant_id=a.id, location=str(orphan), sha256="0" * 64, size_bytes=11,
        ))  # fmt: skip
        session.commit()
    second = run()
    assert second.removed and (second.jobs_deleted, second.datasets_deleted) == (1, 1)
    assert left(a) == {"ApiKey": 0, "Job": 0, "Model": 0, "Dataset": 0, "StoredObject": 0}
    assert not orphan.exists() and not Path(location).exists() and sha
    assert not (service_dirs["uploads"] / str(a.id)).exists() or not any(
        (service_dirs["uploads"] / str(a.id)).iterdir()
    )
    with app.state.sessionmaker() as session:
        assert tenant_id(session, a.name) is None  # its name is free
    with pytest.raises(ValueError, match="no tenant is named"):
        run()

    # b: untouched, its bytes (the same as a's) included
    assert left(b) == {"ApiKey": 1, "Job": 1, "Model": 1, "Dataset": 1, "StoredObject": 1}
    got = client.get(f"/v1/datasets/{ds['b']['id']}", headers=b.headers)
    assert got.status_code == 200
    assert client.get(f"/v1/models/{b_model['id']}", headers=b.headers).status_code == 200
    assert (service_dirs["artifacts"] / "jobs" / b_job / "f.bin").read_bytes() == b"fit"
    assert any((service_dirs["uploads"] / str(b.id)).iterdir())


def test_each_admin_change_is_on_record_with_who_did_it(
    app, client, settings, service_dirs, make_tenant, submit, set_job
):
    """An off-boarding left nothing saying who deleted the tenant, when, or what went: each
    `metro admin` change writes an audit record, which outlives the tenant it names."""
    from datetime import timedelta

    from core.db.base import utcnow
    from core.db.models import AdminAction
    from service.admin import audit_log, delete_tenant, prune_jobs

    name = f"audited-{uuid.uuid4().hex[:6]}"
    with app.state.sessionmaker() as session:
        key = create_api_key(session, name, operator="alice@ops-1")
        revoke_api_key(session, key[:12], operator="bob@ops-2")
        revoke_api_key(session, key, operator="bob@ops-2")  # changes nothing: no record
        owner = session.scalars(select(Tenant).where(Tenant.name == name)).one()
        mine = audit_log(session, tenant_name=name)
    assert [(e.action, e.operator) for e in mine] == [
        (AdminAction.REVOKE_KEY, "bob@ops-2"), (AdminAction.CREATE_KEY, "alice@ops-1"),
    ]  # fmt: skip
    assert all(e.detail == {"prefix": key[:12]} and e.tenant_id == owner.id for e in mine)
    assert all(key not in repr(e) for e in mine)  # the secret is not kept

    tenant = make_tenant()
    failed = submit(tenant)["id"]
    set_job(failed, state="failed", finished_at=utcnow() - timedelta(days=9))
    with app.state.sessionmaker() as session:
        pruned = prune_jobs(
            session, finished_before=utcnow() - timedelta(days=1), tenant_name=tenant.name,
            artifacts_uri=settings.artifacts_uri, operator="carol@cron",
        )  # fmt: skip
        assert [str(j.id) for j in pruned] == [failed]
        nothing = prune_jobs(
            session, finished_before=utcnow() - timedelta(days=1), tenant_name=tenant.name,
            artifacts_uri=settings.artifacts_uri, operator="carol@cron",
        )  # fmt: skip
        assert nothing == []  # a run that found nothing to delete writes nothing
        record, begun, created = audit_log(session, tenant_name=tenant.name)
    assert created.action == AdminAction.CREATE_KEY and created.operator is None  # make_tenant's
    assert {record.action, begun.action} == {AdminAction.PRUNE_JOBS}
    assert record.operator == begun.operator == "carol@cron"
    assert [begun.detail["phase"], record.detail["phase"]] == ["started", "finished"]
    assert record.detail["jobs"] == begun.detail["jobs"] == 1
    assert record.detail["job_ids"] == begun.detail["job_ids"] == [failed]
    assert record.detail["models"] == 0 and "models" not in begun.detail  # counted as they go
    assert record.detail["states"] == begun.detail["states"] == ["cancelled", "failed"]

    with app.state.sessionmaker() as session:
        dry = delete_tenant(
            session, tenant.name, artifacts_uri=settings.artifacts_uri,
            remove_bytes=lambda location: None, dry_run=True, operator="dave@ops-3",
        )  # fmt: skip
        assert dry.removed and len(audit_log(session, tenant_name=tenant.name)) == 3  # dry: none
        done = delete_tenant(
            session, tenant.name, artifacts_uri=settings.artifacts_uri,
            remove_bytes=lambda location: None, operator="dave@ops-3",
        )  # fmt: skip
        assert done.removed
        assert session.scalars(select(Tenant).where(Tenant.name == tenant.name)).first() is None
        finished, started, _, _, _ = audit_log(session, tenant_name=tenant.name)
        newest = audit_log(session, limit=2)
    assert [started.detail["phase"], finished.detail["phase"]] == ["started", "finished"]
    assert {started.action, finished.action} == {AdminAction.DELETE_TENANT}
    assert finished.operator == "dave@ops-3" and finished.detail["removed"] is True
    assert finished.detail["keys_revoked"] == started.detail["keys_revoked"] == 1
    assert [e.detail.get("phase") for e in newest] == ["finished", "started"]
    with app.state.sessionmaker() as session, pytest.raises(ValueError, match="at least 1"):
        audit_log(session, limit=0)


def test_a_prune_cut_short_keeps_the_jobs_it_deleted_on_record(
    app, settings, make_tenant, submit, set_job, monkeypatch
):
    """Each job's delete commits on its own: when the store refuses the second job's files,
    the first job (and the second's rows) are gone, and the run's record must say so."""
    from datetime import timedelta

    import service.admin as admin
    from core.db.base import utcnow
    from core.db.models import AdminAction

    tenant = make_tenant()
    jobs = []
    for days in (9, 8, 7):
        job_id = submit(tenant)["id"]
        set_job(job_id, state="failed", finished_at=utcnow() - timedelta(days=days))
        jobs.append(job_id)
    removed: list[str] = []

    def refusing(uri: str, where: str) -> None:
        if removed:
            raise PermissionError(f"the store refused {where}")
        removed.append(where)

    monkeypatch.setattr(admin, "remove_tree", refusing)
    with app.state.sessionmaker() as session:
        with pytest.raises(PermissionError):
            admin.prune_jobs(
                session, finished_before=utcnow() - timedelta(days=1), tenant_name=tenant.name,
                artifacts_uri=settings.artifacts_uri, operator="carol@cron",
            )  # fmt: skip
        left = {str(i) for i in session.scalars(select(Job.id).where(Job.tenant_id == tenant.id))}
        record = admin.audit_log(session, tenant_name=tenant.name, limit=1)[0]
    assert left == {jobs[2]}  # the first two jobs' rows are gone
    assert record.action == AdminAction.PRUNE_JOBS and record.operator == "carol@cron"
    assert record.detail["job_ids"] == jobs[:2] and record.detail["jobs"] == 2
    assert "PermissionError" in record.detail["interrupted"]
    assert record.detail["phase"] == "finished"


def test_a_prune_killed_part_way_has_begun_on_record(
    app, settings, make_tenant, submit, set_job, monkeypatch
):
    """A run killed with SIGKILL writes no end record: its "started" record, committed before
    the first job goes, is all that says jobs were deleted, and by whom. Seen here from another
    session at the moment the first job is deleted (the kill itself cannot be caught); a dry
    run writes nothing."""
    from datetime import timedelta

    import service.admin as admin
    from core.db.base import utcnow
    from core.db.models import AdminAction

    tenant = make_tenant()
    jobs = []
    for days in (9, 8):
        job_id = submit(tenant)["id"]
        set_job(job_id, state="failed", finished_at=utcnow() - timedelta(days=days))
        jobs.append(job_id)
    seen: list[list[admin.AuditEntry]] = []
    deleting = admin.delete_job

    def watched(session: Any, owner: Any, job_id: Any) -> Any:
        if not seen:
            with app.state.sessionmaker() as other:
                seen.append(admin.audit_log(other, tenant_name=tenant.name))
        return deleting(session, owner, job_id)

    monkeypatch.setattr(admin, "delete_job", watched)
    with app.state.sessionmaker() as session:
        dry = admin.prune_jobs(
            session, finished_before=utcnow() - timedelta(days=1), tenant_name=tenant.name,
            artifacts_uri=settings.artifacts_uri, operator="carol@cron", dry_run=True,
        )  # fmt: skip
        assert [str(j.id) for j in dry] == jobs
        assert [e.action for e in admin.audit_log(session, tenant_name=tenant.name)] == [
            AdminAction.CREATE_KEY
        ]  # make_tenant's only
        admin.prune_jobs(
            session, finished_before=utcnow() - timedelta(days=1), tenant_name=tenant.name,
            artifacts_uri=settings.artifacts_uri, operator="carol@cron",
        )  # fmt: skip
    (before_any,) = seen
    started = before_any[0]
    assert started.action == AdminAction.PRUNE_JOBS and started.operator == "carol@cron"
    assert started.detail["phase"] == "started" and started.detail["job_ids"] == jobs
    assert started.detail["jobs"] == 2


def test_audit_log_from_the_command_line_names_the_operator(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from cli.main import app as cli
    from core.config import get_settings

    monkeypatch.setenv("METRO_DATABASE_URL", f"sqlite:///{tmp_path / 'metro.db'}")
    monkeypatch.setenv("SUDO_USER", "erin")
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        assert runner.invoke(cli, ["migrate"]).exit_code == 0
        made = runner.invoke(
            cli, ["admin", "create-key", "--tenant", "[b]ank", "--expires-in", "30"]
        )
        assert made.exit_code == 0 and "; the key expires 20" in made.stderr, made.output
        key = made.stdout.strip()
        for days in ("0", "-1", "nan"):
            refused = runner.invoke(
                cli, ["admin", "create-key", "--tenant", "x", "--expires-in", days]
            )
            assert refused.exit_code != 0 and "--expires-in" in refused.output, refused.output
        listed = runner.invoke(cli, ["admin", "list-keys", "--tenant", "[b]ank"])
        assert "expires" in listed.stdout and listed.stdout.count(" 20") >= 2, listed.stdout
        assert runner.invoke(cli, ["admin", "create-key", "--tenant", "other"]).exit_code == 0
        assert runner.invoke(cli, ["admin", "revoke-key", key[:12]]).exit_code == 0
        shown = runner.invoke(cli, ["admin", "audit-log", "--tenant", "[b]ank"])
        assert shown.exit_code == 0, shown.output
        rows = [line for line in shown.stdout.splitlines() if "-key" in line]
        assert [("revoke-key" in r, "create-key" in r) for r in rows] == [
            (True, False), (False, True),
        ]  # fmt: skip
        assert all("(sudo by erin)@" in r and "[b]ank" in r and key[:12] in r for r in rows)
        assert key not in shown.stdout
        every = runner.invoke(cli, ["admin", "audit-log", "--limit", "2"])
        assert every.exit_code == 0 and "other" in every.stdout and "[b]ank" in every.stdout
        bad = runner.invoke(cli, ["admin", "audit-log", "--limit", "0"])
        assert bad.exit_code == 2
    finally:
        get_settings.cache_clear()


def test_a_key_given_a_life_is_refused_once_it_has_expired(app, client, monkeypatch):
    """Keys lived until revoked, so one forgotten in a client stayed good for years: a key can
    now be given an expiry, after which it is refused as a revoked one is."""
    from datetime import UTC, datetime, timedelta

    from core.db.base import utcnow
    from service.admin import audit_log

    name = f"expiring-{uuid.uuid4().hex[:6]}"
    soon = utcnow() + timedelta(days=30)
    with app.state.sessionmaker() as session:
        key = create_api_key(session, name, expires_at=soon)
        forever = create_api_key(session, name)
        listed = {k.prefix: k for k in list_api_keys(session, name)}
        records = {e.detail["prefix"]: e.detail for e in audit_log(session, tenant_name=name)}
    assert listed[key[:12]].expires_at == soon and listed[forever[:12]].expires_at is None
    assert records[key[:12]]["expires_at"] == soon.isoformat()
    assert "expires_at" not in records[forever[:12]]
    for k in (key, forever):
        assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {k}"}).status_code == 200

    # Its time comes: refused at once, though this process verified (and cached) it just now.
    later = soon + timedelta(seconds=1)
    monkeypatch.setattr("service.crud.tenants.utcnow", lambda: later)
    monkeypatch.setattr("service.api.caches.utcnow", lambda: later)
    r = client.get("/v1/jobs", headers={"Authorization": f"Bearer {key}"})
    assert r.status_code == 401 and r.json()["detail"] == "the API key is not valid", r.text
    assert client.get("/v1/jobs", headers={"Authorization": f"Bearer {forever}"}).status_code == 200

    monkeypatch.undo()
    with app.state.sessionmaker() as session:
        for when in (utcnow() - timedelta(minutes=1), datetime(2099, 1, 1)):  # past; no zone
            with pytest.raises(ValueError, match="a time to come, with its time zone"):
                create_api_key(session, name, expires_at=when)
        assert len(list_api_keys(session, name)) == 2  # nothing made by the refusals
    assert datetime(2099, 1, 1, tzinfo=UTC) > soon


def test_list_keys_says_which_keys_have_expired(tmp_path, monkeypatch):
    """An expired key is refused as a revoked one is, but its revoked column is empty: the
    listing showed only its expiry time, so telling a live key from a dead one meant comparing
    that time (in UTC) with the clock."""
    from datetime import timedelta

    from sqlalchemy import update
    from typer.testing import CliRunner

    from cli.main import app as cli
    from core.config import get_settings
    from core.db.base import utcnow

    url = f"sqlite:///{tmp_path / 'metro.db'}"
    monkeypatch.setenv("METRO_DATABASE_URL", url)
    get_settings.cache_clear()
    try:
        runner = CliRunner()
        assert runner.invoke(cli, ["migrate"]).exit_code == 0
        made = [
            runner.invoke(cli, ["admin", "create-key", "--tenant", "ops", "--expires-in", "30"])
            for _ in range(2)
        ]
        assert all(m.exit_code == 0 for m in made), [m.output for m in made]
        dead, live = (m.stdout.strip() for m in made)
        with Session(create_engine(url)) as session:
            session.execute(
                update(ApiKey)
                .where(ApiKey.key_hash == hash_api_key(dead))
                .values(expires_at=utcnow() - timedelta(hours=1))
            )
            session.commit()
        listed = runner.invoke(cli, ["admin", "list-keys", "--tenant", "ops"])
        assert listed.exit_code == 0, listed.output
        [dead_row] = [line for line in listed.stdout.splitlines() if dead[:12] in line]
        [live_row] = [line for line in listed.stdout.splitlines() if live[:12] in line]
        assert "(expired)" in dead_row and "(expired)" not in live_row, listed.stdout
    finally:
        get_settings.cache_clear()
