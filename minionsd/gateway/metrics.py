"""The gateway's Prometheus metrics (`GET /metrics`, read scope), with prometheus_client.

One registry per gateway app (no module-level collectors): requests by endpoint, method and
status, latency histograms by endpoint and method, refusals by reason, rate-limited requests,
and the daemon's `status` counters fetched when scraped. Labels never hold a token: a token
appears as its name at most, and only in no label at all here.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

CONTENT_TYPE = CONTENT_TYPE_LATEST
_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class GatewayMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter("minions_gateway_requests", "HTTP requests answered",
                                ("endpoint", "method", "status"), registry=self.registry)
        self.latency = Histogram("minions_gateway_request_seconds",
                                 "Time to answer a request", ("endpoint", "method"),
                                 buckets=_BUCKETS, registry=self.registry)
        self.refused = Counter("minions_gateway_refused", "Requests refused before the daemon",
                               ("reason",), registry=self.registry)
        self.rate_limited = Counter("minions_gateway_rate_limited",
                                    "Requests refused with 429", registry=self.registry)
        self.daemon_up = Gauge("minions_daemon_up", "1 when the daemon answered status",
                               registry=self.registry)
        self.daemon = Gauge("minions_daemon_status", "The daemon's status counters",
                            ("counter",), registry=self.registry)

    def observe(self, endpoint: str, method: str, status: int, seconds: float) -> None:
        self.requests.labels(endpoint, method, str(status)).inc()
        self.latency.labels(endpoint, method).observe(seconds)

    def refuse(self, reason: str) -> None:
        self.refused.labels(reason).inc()
        if reason == "rate":
            self.rate_limited.inc()

    def render(self, status: dict[str, Any] | None) -> bytes:
        """The text exposition, with the daemon's counters from `status` (None: down)."""
        self.daemon_up.set(0 if status is None else 1)
        for name, value in _status_counters(status or {}):
            self.daemon.labels(name).set(value)
        return generate_latest(self.registry)


def _status_counters(status: dict[str, Any]) -> list[tuple[str, float]]:
    out: list[tuple[str, float]] = []
    for group in ("inbox", "records", "consolidation"):
        for key, value in (status.get(group) or {}).items():
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.append((f"{group}_{key}", float(value)))
    if isinstance(status.get("uptime_s"), int | float):
        out.append(("uptime_s", float(status["uptime_s"])))
    return out
