"""Prometheus metrics. Each app instance owns its registry, so several apps in one process (the
tests build many) do not collide on metric names."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

# The methods a request is counted under by name; any other is "OTHER". A label takes its
# values from the request, and a client (with no key: a 405 is answered before the key check)
# sending made-up methods made a new series for each, never freed: 5,000 of them, 10.6 MB of
# /metrics.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "metro_http_requests_total",
            "HTTP requests by method, route template and status",
            ["method", "route", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "metro_http_request_duration_seconds",
            "HTTP request latency by route template",
            ["method", "route"],
            registry=self.registry,
        )
        self.predictions = Counter(
            "metro_predicted_rows_total",
            "Rows scored by the predict endpoint",
            registry=self.registry,
        )
        self.model_loads = Counter(
            "metro_model_loads_total",
            "Models loaded from the artifact store (cache misses)",
            registry=self.registry,
        )

    def observe_request(self, method: str, route: str, status: int, seconds: float) -> None:
        method = method if method in KNOWN_METHODS else "OTHER"
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
