"""Job submissions naming an https:// dataset: the host is checked at submission (the fetcher
itself is tested in tests/core/datasets/test_fetch.py)."""

from __future__ import annotations

import pytest

from tests.service.conftest import FAKE_DNS, job_body

PUBLIC = "93.184.216.34"  # a public address; nothing is ever fetched here


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("loopback.test", "127.0.0.1"),
        ("private.test", "10.0.0.7"),
        ("metadata.test", "169.254.169.254"),
    ],
)
def test_job_submission_refuses_internal_https_hosts(client, tenant, host, address):
    FAKE_DNS[host] = [address]
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": f"https://{host}/train.csv"}),
        headers=tenant.headers,
    )
    assert r.status_code == 422
    assert r.json()["errors"][0]["loc"] == ["body", "dataset", "uri"]
    assert address not in r.text


def test_job_submission_accepts_a_public_https_host(client, tenant):
    FAKE_DNS["public.test"] = [PUBLIC]
    r = client.post(
        "/v1/jobs",
        json=job_body(dataset={"uri": "https://public.test/train.csv"}),
        headers=tenant.headers,
    )
    assert r.status_code == 201, r.text
