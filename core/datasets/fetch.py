"""Download an ``https://`` dataset without letting the URL reach internal hosts (SSRF).

Policy, applied to the URL a job names *and to every redirect hop*:

* only ``https``, no credentials in the URL;
* the host is resolved and **every** address must be public: private (10/8, 172.16/12,
  192.168/16, fc00::/7), loopback, link-local (169.254/16 - cloud metadata - and fe80::/10),
  shared (100.64/10), multicast, reserved and unspecified addresses are refused, as are IPv6
  forms carrying such an IPv4 address (mapped, 6to4, Teredo; Python counts NAT64 as non-global);
* the request then connects to the vetted address itself (TLS still verifies the host name via
  SNI), so a second, different DNS answer cannot redirect it ("DNS rebinding");
* redirects are followed by hand, at most ``max_redirects`` of them, each re-checked;
* the body is streamed to disk with a byte cap, and hashed on the way.

The service checks the URL at submission (:func:`check_https_url`, for an early 422) and the
worker calls :func:`fetch_https` into the upload directory before handing the local file to
``metro.datasets.load_dataset`` (DNS may have changed in between, hence the second check).
"""

from __future__ import annotations

import hashlib
import ipaddress
import os
import socket
import tempfile
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

from core.errors import FetchError, PayloadTooLargeError, UnsafeURLError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: ``(host, port) -> addresses``; tests inject one so that no real DNS or traffic is needed.
Resolver = Callable[[str, int], list[str]]

_CHUNK = 1024 * 1024


def system_resolver(host: str, port: int) -> list[str]:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise UnsafeURLError(f"the host {host!r} does not resolve") from exc
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def is_public_address(address: IPAddress) -> bool:
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return is_public_address(address.ipv4_mapped)
        # 6to4 and Teredo addresses carry an IPv4 address that a relay may deliver to.
        embedded = address.sixtofour or (address.teredo[1] if address.teredo else None)
        if embedded is not None and not is_public_address(embedded):
            return False
    return address.is_global and not (
        address.is_private
        or address.is_loopback
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
    )


@dataclass(frozen=True)
class CheckedURL:
    url: str
    host: str
    port: int
    addresses: tuple[IPAddress, ...]


def check_https_url(url: str, resolver: Resolver = system_resolver) -> CheckedURL:
    """The URL and its vetted addresses, or UnsafeURLError saying why it is refused."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() != "https":
        raise UnsafeURLError("only https:// URLs can be fetched")
    if parts.username is not None or parts.password is not None:
        raise UnsafeURLError("URLs with credentials are not accepted")
    host = parts.hostname
    if not host:
        raise UnsafeURLError("the URL has no host")
    try:
        port = parts.port or 443
    except ValueError:
        raise UnsafeURLError("the URL has an invalid port") from None
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    raw = [str(literal)] if literal is not None else resolver(host, port)
    if not raw:
        raise UnsafeURLError(f"the host {host!r} does not resolve")
    addresses = tuple(ipaddress.ip_address(a.split("%", 1)[0]) for a in raw)
    if not all(is_public_address(a) for a in addresses):
        # Do not echo the address: which internal address a name has is itself information.
        raise UnsafeURLError(
            f"the host {host!r} resolves to a private, loopback, link-local or reserved address"
        )
    return CheckedURL(url=url, host=host, port=port, addresses=addresses)


@dataclass(frozen=True)
class FetchedFile:
    path: Path
    size_bytes: int
    sha256: str
    final_url: str


def fetch_https(
    url: str,
    destination: Path,
    *,
    max_bytes: int,
    timeout: float = 30.0,
    max_redirects: int = 5,
    resolver: Resolver = system_resolver,
    transport: httpx.BaseTransport | None = None,
) -> FetchedFile:
    """Download ``url`` to ``destination`` under the policy in the module docstring."""
    current = url
    for _hop in range(max_redirects + 1):
        checked = check_https_url(current, resolver)
        with httpx.Client(
            transport=transport,
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,  # an environment proxy would connect to the name, not the vetted IP
        ) as client:
            request = _pinned_request(client, checked)
            try:
                response = client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise FetchError(
                    f"could not download {checked.host}: {type(exc).__name__}"
                ) from None
            try:
                if response.is_redirect:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchError("a redirect without a Location header")
                    current = urllib.parse.urljoin(current, location)
                    continue
                if response.status_code != 200:
                    raise FetchError(f"the server answered HTTP {response.status_code}")
                return _save(response, destination, max_bytes, current)
            finally:
                response.close()
    raise UnsafeURLError(f"more than {max_redirects} redirects")


def _pinned_request(client: httpx.Client, checked: CheckedURL) -> httpx.Request:
    parts = urllib.parse.urlsplit(checked.url)
    address = checked.addresses[0]
    netloc = f"[{address}]" if address.version == 6 else str(address)
    if checked.port != 443:
        netloc += f":{checked.port}"
    pinned = urllib.parse.urlunsplit(("https", netloc, parts.path or "/", parts.query, ""))
    host_header = checked.host if checked.port == 443 else f"{checked.host}:{checked.port}"
    return client.build_request(
        "GET",
        pinned,
        headers={"Host": host_header, "Accept-Encoding": "identity"},
        extensions={"sni_hostname": checked.host},
    )


def _save(response: httpx.Response, destination: Path, max_bytes: int, url: str) -> FetchedFile:
    declared = response.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > max_bytes:
        raise PayloadTooLargeError(f"the dataset is larger than the limit of {max_bytes} bytes")
    destination.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    size = 0
    fd, tmp_name = tempfile.mkstemp(dir=destination.parent, prefix=".fetch-")
    try:
        with os.fdopen(fd, "wb") as out:
            for chunk in response.iter_bytes(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise PayloadTooLargeError(
                        f"the dataset is larger than the limit of {max_bytes} bytes"
                    )
                digest.update(chunk)
                out.write(chunk)
        os.replace(tmp_name, destination)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
    return FetchedFile(path=destination, size_bytes=size, sha256=digest.hexdigest(), final_url=url)
