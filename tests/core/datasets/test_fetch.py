"""The https:// dataset fetcher refuses internal addresses, before any connection is made."""

from __future__ import annotations

import hashlib

import httpx
import pytest

from core.datasets.fetch import check_https_url, fetch_https
from core.errors import PayloadTooLargeError, UnsafeURLError

PUBLIC = "93.184.216.34"  # only ever "reached" through a mock transport


def resolver(table):
    def resolve(host, port):
        if host not in table:
            raise UnsafeURLError(f"the host {host!r} does not resolve")
        return table[host]

    return resolve


def no_network(request):  # a transport that fails the test if anything is sent
    raise AssertionError(f"unexpected request to {request.url}")


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fc00::1",
        "::ffff:127.0.0.1",
        "64:ff9b::a00:1",
        "2002:a00:1::1",
        "224.0.0.1",
    ],
)
def test_internal_addresses_are_refused_before_connecting(tmp_path, address):
    dns = resolver({"data.example": [address]})
    with pytest.raises(UnsafeURLError, match="private, loopback, link-local or reserved"):
        fetch_https(
            "https://data.example/x.csv",
            tmp_path / "x.csv",
            max_bytes=1000,
            resolver=dns,
            transport=httpx.MockTransport(no_network),
        )


def test_one_internal_address_among_public_ones_is_refused():
    with pytest.raises(UnsafeURLError):
        check_https_url(
            "https://mixed.example/x.csv", resolver({"mixed.example": [PUBLIC, "10.0.0.1"]})
        )


@pytest.mark.parametrize(
    "url",
    [
        "http://data.example/x.csv",
        "https://user:pw@data.example/x.csv",
        "https:///x.csv",
        "https://127.0.0.1/x.csv",
        "https://[::1]/x.csv",
        "https://169.254.169.254/latest/meta-data",
    ],
)
def test_bad_urls(url):
    with pytest.raises(UnsafeURLError):
        check_https_url(url, resolver({"data.example": [PUBLIC]}))


def test_redirect_to_an_internal_host_is_refused(tmp_path):
    dns = resolver({"public.example": [PUBLIC], "internal.example": ["10.0.0.5"]})
    seen = []

    def handler(request):
        seen.append(str(request.url))
        return httpx.Response(302, headers={"Location": "https://internal.example/secret.csv"})

    with pytest.raises(UnsafeURLError):
        fetch_https(
            "https://public.example/x.csv",
            tmp_path / "x.csv",
            max_bytes=1000,
            resolver=dns,
            transport=httpx.MockTransport(handler),
        )
    assert seen == [f"https://{PUBLIC}/x.csv"]  # the hop to 10.0.0.5 was never made
    assert not (tmp_path / "x.csv").exists()


def test_fetch_pins_the_vetted_address_and_keeps_the_host_name(tmp_path):
    body = b"a,y\n1,0\n"
    dns = resolver({"public.example": [PUBLIC], "cdn.example": [PUBLIC]})
    requests = []

    def handler(request):
        requests.append(request)
        if request.headers["host"] == "public.example":
            return httpx.Response(301, headers={"Location": "https://cdn.example/data.csv"})
        return httpx.Response(200, content=body)

    got = fetch_https(
        "https://public.example/x.csv",
        tmp_path / "x.csv",
        max_bytes=1000,
        resolver=dns,
        transport=httpx.MockTransport(handler),
    )
    assert got.sha256 == hashlib.sha256(body).hexdigest() and got.size_bytes == len(body)
    assert got.final_url == "https://cdn.example/data.csv"
    assert (tmp_path / "x.csv").read_bytes() == body
    assert [r.url.host for r in requests] == [PUBLIC, PUBLIC]
    assert [r.extensions["sni_hostname"] for r in requests] == ["public.example", "cdn.example"]


def test_redirect_loops_and_size_cap(tmp_path):
    dns = resolver({"public.example": [PUBLIC]})
    loop = httpx.MockTransport(lambda r: httpx.Response(302, headers={"Location": "/again"}))
    with pytest.raises(UnsafeURLError, match="redirects"):
        fetch_https(
            "https://public.example/x.csv",
            tmp_path / "a.csv",
            max_bytes=10,
            resolver=dns,
            transport=loop,
            max_redirects=3,
        )
    big = httpx.MockTransport(lambda r: httpx.Response(200, content=b"x" * 100))
    with pytest.raises(PayloadTooLargeError):
        fetch_https(
            "https://public.example/x.csv",
            tmp_path / "b.csv",
            max_bytes=10,
            resolver=dns,
            transport=big,
        )
    assert list(tmp_path.iterdir()) == []
