"""Writes a deterministic service log of an orders platform: one day of routine traffic with a few incidents.

    python -m benchmarks.devset.make_log OUT_FILE [--seed 11] [--lines 250]

The log looks like what a small web shop's backend writes: an ISO timestamp, a level, a component, a request
id and a message. Most lines are routine (requests served, cache hits, scheduled jobs, health checks). A few
distinctive events sit at fixed fractions of the file, and the questions in questions.jsonl ask about them:
the start-up version and configuration, a cache warm-up, a card-processor outage in the payment service with
an error code, an operator's configuration change, the payment service's restart, a disk warning, the nightly
reconciliation, and a shutdown. Routine lines never repeat those events' numbers or codes.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from .generated import events_by_line, generator_main, write_lines

START = datetime(2024, 11, 14, 6, 0, 0)
HOST = "shop-prod-03"
DAY_MS = 18 * 3600 * 1000  # the log covers about eighteen hours

# (fraction of the file, [(level, component, message), ...]) -- the distinctive events.
EVENTS: list[tuple[float, list[tuple[str, str, str]]]] = [
    (
        0.0,
        [
            ("INFO", "supervisor", "starting orders-platform v3.14.2 on host shop-prod-03 (pid 1207)"),
            (
                "INFO",
                "config",
                "config loaded from /etc/orders/platform.toml: max_connections=250 pool_timeout=30s "
                "region=eu-west-2 currency=EUR",
            ),
            ("INFO", "db", "connection pool ready: 250 slots, primary=pg-orders-1, replica=pg-orders-2"),
        ],
    ),
    (
        0.06,
        [
            ("INFO", "catalog-cache", "cache warm-up started (source=catalog-db, batch=500)"),
            ("INFO", "catalog-cache", "cache warm-up finished: loaded 18432 SKUs in 41.7s"),
        ],
    ),
    (
        0.22,
        [
            ("INFO", "scheduler", "job price-sync started (supplier feed: alderbrook-wholesale)"),
            ("INFO", "scheduler", "job price-sync finished: 2291 prices updated, 14 unchanged rejects"),
        ],
    ),
    (
        0.40,
        [
            (
                "ERROR",
                "payment-service",
                "PAY-4097 upstream card processor timeout after 8000ms (processor=northwind-pay, attempt=1/3)",
            ),
            (
                "ERROR",
                "payment-service",
                "PAY-4097 upstream card processor timeout after 8000ms (processor=northwind-pay, attempt=2/3)",
            ),
            (
                "ERROR",
                "payment-service",
                "PAY-4097 upstream card processor timeout after 8000ms (processor=northwind-pay, attempt=3/3)",
            ),
            ("WARN", "payment-service", "circuit breaker OPEN for processor northwind-pay (failures=3 window=60s)"),
            ("WARN", "api-gateway", "POST /v2/checkout returned 503 to 37 clients while the breaker was open"),
        ],
    ),
    (
        0.48,
        [
            (
                "INFO",
                "config",
                "config reload requested by operator j.keller: retry_backoff_ms 200 -> 850, breaker_window 60s -> 120s",
            ),
            ("INFO", "config", "config reload applied (2 keys changed, 0 rejected)"),
        ],
    ),
    (
        0.55,
        [
            ("ERROR", "payment-service", "health check failed 5 times in a row (last error: PAY-4097)"),
            ("WARN", "supervisor", "restarting payment-service (reason: failed health checks, last error PAY-4097)"),
            ("INFO", "supervisor", "payment-service stopped (exit code 143)"),
            ("INFO", "payment-service", "payment-service started: pid 48213, version 2.7.1"),
            ("INFO", "payment-service", "circuit breaker CLOSED for processor northwind-pay"),
        ],
    ),
    (
        0.70,
        [
            ("WARN", "disk-monitor", "disk usage 91% on /var/lib/orders (threshold 85%)"),
            ("INFO", "disk-monitor", "rotated and compressed 6 archives in /var/lib/orders/exports"),
        ],
    ),
    (
        0.86,
        [
            ("INFO", "scheduler", "job nightly-reconcile started"),
            ("INFO", "scheduler", "job nightly-reconcile finished: 12877 orders reconciled, 3 mismatches"),
            ("WARN", "reconcile", "mismatch on order ORD-99172: charged 48.90 EUR, invoiced 84.90 EUR"),
        ],
    ),
    (
        1.0,  # the last lines
        [
            ("INFO", "supervisor", "shutdown requested by systemd (SIGTERM)"),
            ("INFO", "api-gateway", "stopped accepting connections; drained 42 in-flight requests"),
            ("INFO", "supervisor", "orders-platform stopped cleanly after {uptime} uptime"),
        ],
    ),
]

PATHS = [
    ("GET", "/v2/products"),
    ("GET", "/v2/products/{sku}"),
    ("GET", "/v2/cart"),
    ("POST", "/v2/cart/items"),
    ("DELETE", "/v2/cart/items/{sku}"),
    ("GET", "/v2/orders/{order}"),
    ("GET", "/v2/search"),
    ("POST", "/v2/checkout"),
    ("GET", "/healthz"),
]


def _routine(rng: random.Random, degraded: bool) -> tuple[str, str, str]:
    """One ordinary line; `degraded` (during the payment outage) makes checkouts slower."""
    kind = rng.random()
    sku = f"SKU-{rng.randint(10000, 17999)}"
    order = f"ORD-{rng.randint(60000, 98999)}"
    if kind < 0.55:
        method, path = rng.choice(PATHS)
        path = path.format(sku=sku, order=order)
        status = rng.choices([200, 200, 200, 201, 204, 304, 404], k=1)[0]
        if method == "POST" and path == "/v2/checkout":
            status = 201
        ms = rng.randint(4, 180) if not (degraded and "checkout" in path) else rng.randint(900, 2400)
        return "INFO", "api-gateway", f"{method} {path} {status} {ms}ms"
    if kind < 0.65:
        hit = rng.random() < 0.9
        return "DEBUG", "catalog-cache", f"{'hit' if hit else 'miss'} {sku}"
    if kind < 0.75:
        amount = f"{rng.randint(5, 240)}.{rng.randint(0, 99):02d}"
        return "INFO", "payment-service", f"payment authorized for {order}: {amount} EUR (processor=northwind-pay)"
    if kind < 0.82:
        return "INFO", "inventory", f"reserved {rng.randint(1, 4)} x {sku} for {order}"
    if kind < 0.88:
        return "DEBUG", "db", f"pool stats: active={rng.randint(3, 60)} idle={rng.randint(20, 120)} waiting=0"
    if kind < 0.93:
        user = f"u{rng.randint(100000, 999999)}"
        return "INFO", "auth", f"session refreshed for {user} (ttl=3600s)"
    if kind < 0.97:
        return "INFO", "mailer", f"sent order confirmation for {order} (queue depth {rng.randint(0, 9)})"
    took, length = rng.randint(1200, 2900), rng.randint(3, 40)
    return "WARN", "api-gateway", f"slow request GET /v2/search took {took}ms (q length {length})"


def log_lines(seed: int = 11, lines: int = 250) -> list[str]:
    rng = random.Random(seed)
    events = events_by_line(EVENTS, lines)
    out: list[str] = []
    clock = START
    outage = (int(0.40 * lines), int(0.55 * lines))
    index = 0
    while len(out) < lines:
        group = events.get(index)
        entries = group if group is not None else [_routine(rng, outage[0] <= index < outage[1])]
        for level, component, message in entries:
            clock += timedelta(milliseconds=rng.randint(40, 2 * DAY_MS // lines))
            request = f"req-{rng.getrandbits(32):08x}"
            stamp = clock.strftime("%Y-%m-%dT%H:%M:%S.") + f"{clock.microsecond // 1000:03d}Z"
            hours, minutes = divmod(int((clock - START).total_seconds()) // 60, 60)
            message = message.replace("{uptime}", f"{hours}h {minutes:02d}m")
            out.append(f"{stamp} {level:<5} [{component}] {HOST} {request} {message}")
        index += len(entries)
    return out


def write_log(path: Path, seed: int = 11, lines: int = 250) -> Path:
    return write_lines(path, log_lines(seed, lines))


if __name__ == "__main__":
    generator_main(__doc__, write_log, "orders-platform.log", seed=11, lines=250)
