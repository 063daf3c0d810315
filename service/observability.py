"""Prometheus metrics. Each app instance owns its registry, so several apps in one process (the
tests build many) do not collide on metric names."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest


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
        self.requests.labels(method, route, str(status)).inc()
        self.latency.labels(method, route).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
