"""The app factory: ``create_app(settings)`` for tests and the CLI, ``service.main:app`` for
uvicorn. Building the app creates an engine (no connection yet) and runs no migration."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from core.config import Settings, get_settings
from core.datasets.fetch import system_resolver
from core.datasets.uploads import remove_stale_staged, staging_dir
from core.db.session import make_engine, make_sessionmaker
from service.api.caches import ModelRefCache, PrincipalCache
from service.api.middleware import (
    BodySizeLimitMiddleware,
    HeadAsGetMiddleware,
    HeaderSizeLimitMiddleware,
    MetricsMiddleware,
    MultipartEndMiddleware,
    RequireKeyMiddleware,
    SecurityHeadersMiddleware,
)
from service.api.openapi import install_openapi, operation_id
from service.api.problems import install_problem_handlers
from service.api.routes import dashboard, datasets, health, jobs, models, root
from service.api.throttle import AuthFailureThrottle
from service.inference import ModelCache
from service.observability import Metrics
from service.readiness import prepare

# The API's version, in the OpenAPI document and so in the generated client's (`metro --version`):
# the minor number moves when answers or requests gain fields (1.1: an upload's label_columns,
# ignore_columns and warnings; 1.2: search.multiclass, and a result's and a manifest's
# multiclass; a multinomial job's choices have a null trained_lambda and shift: a 1.1 client
# reads them, but describes its classes as searched), the major when one is taken away or
# changes its meaning; the patch number when only statuses or headers do (1.2.1: a model
# download's 304 for an If-None-Match naming its ETag, /metrics' 401 with METRO_METRICS_TOKEN,
# Cache-Control and Vary on every answer to a key). 1.3: metric.average "micro",
# search.guard_confidence, a choice's strategy, and a manifest's search saying the one that ran
# (a 1.2 client refuses a job whose average is "micro", a value its check does not know).
# 1.4: a binary result's labels and a prediction's positive_label (which class the metric
# counted), a manifest's data_sha256. 1.4.1: a 429 with Retry-After on every operation taking a
# key, for a client address that sent too many keys that are not valid. 1.5: a manifest's
# feature_ranges and a prediction's out_of_range (the columns of its rows outside them), a
# result's validation_in_sample (its validation row scored on rows the model was refitted on).
# 1.6: a choice's warning code constraint_uncertain (and offsets_not_tuned, added after 1.5.0
# without a bump): a 1.5 client refuses a result carrying one, a value its check does not know.
API_VERSION = "1.6.0"

_TAGS = [
    {"name": "jobs", "description": "Submit training jobs and read their progress and results"},
    {"name": "datasets", "description": "Upload data to train on"},
    {"name": "models", "description": "Trained models: manifest, download and prediction"},
    {"name": "health", "description": "Liveness, readiness and metrics"},
]


def create_app(settings: Settings | None = None) -> FastAPI:
    settings = settings or get_settings()
    engine = make_engine(settings.database_url, **_pool_options(settings))

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The pool that runs sync routes and dependencies (anyio's default limiter, 40).
        anyio.to_thread.current_default_thread_limiter().total_tokens = settings.api_threads
        # What a killed API process was receiving: nothing else removes it.
        remove_stale_staged(staging_dir(settings))
        # In a thread: it reads files and imports modules (service.readiness.prepare).
        await anyio.to_thread.run_sync(prepare, settings.effective_broker_url)
        yield
        engine.dispose()

    # FastAPIOffline is FastAPI with /docs and /redoc self-hosted, as FastAPI's guide to
    # self-hosting the docs' assets does it: Swagger UI and ReDoc come from the package
    # (mounted under /static-offline-docs) rather than a CDN, so the pages work offline.
    app = FastAPIOffline(
        title="METRO training service",
        version=API_VERSION,
        description="Train binary classifiers that optimize the ratio metric you report "
        "(F-beta, Jaccard, ...). Authenticate with `Authorization: Bearer <api key>`; "
        "errors are RFC 9457 problem+json.",
        openapi_tags=_TAGS,
        generate_unique_id_function=operation_id,
        lifespan=lifespan,
        # No spec validator badge: it would send the document's address to a third party.
        swagger_ui_parameters={"validatorUrl": None},
    )
    app.state.settings = settings
    app.state.engine = engine
    app.state.sessionmaker = make_sessionmaker(engine)
    # Same pool, no transaction: single-row reads of the GET routes (service.crud.reads).
    app.state.read_engine = engine.execution_options(isolation_level="AUTOCOMMIT")
    app.state.model_cache = ModelCache(settings.model_cache_size)
    app.state.model_refs = ModelRefCache(
        settings.model_cache_size * 64, ttl_seconds=settings.model_ref_cache_seconds
    )
    app.state.principal_cache = PrincipalCache(
        maxsize=settings.api_key_cache_size, ttl_seconds=settings.api_key_cache_seconds
    )
    # Wrong API keys per client address (service.api.throttle); tests set its timer.
    app.state.auth_failures = AuthFailureThrottle.from_settings(settings)
    app.state.metrics = Metrics()
    # How https:// dataset hosts are resolved for the SSRF check; tests swap in a fake.
    app.state.resolver = system_resolver

    install_problem_handlers(app)
    for router in (
        jobs.router,
        datasets.router,
        models.router,
        health.router,
        dashboard.router,
        root.router,
    ):
        app.include_router(router)
    # Added last = outermost: an oversized header section is refused before anything looks at
    # the request, an anonymous request before its body is read, the body limit applies before
    # anything else reads it, and the metrics see every response, the 400s, 401s, 413s and
    # 429s included, each with the security headers.
    app.add_middleware(HeadAsGetMiddleware)  # innermost: the rest see the HEAD it was
    app.add_middleware(MultipartEndMiddleware)
    app.add_middleware(BodySizeLimitMiddleware, settings=settings)
    app.add_middleware(RequireKeyMiddleware, settings=settings, throttle=app.state.auth_failures)
    app.add_middleware(HeaderSizeLimitMiddleware, settings=settings)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(MetricsMiddleware, metrics=app.state.metrics)
    install_openapi(app)
    return app


def _pool_options(settings: Settings) -> dict[str, Any]:
    if settings.database_url.startswith("sqlite"):
        return {}  # SQLite's own pool classes take none of these
    return {
        "pool_size": settings.database_pool_size,
        "max_overflow": settings.database_max_overflow,
        "pool_timeout": settings.database_pool_timeout_seconds,
    }


_app: FastAPI | None = None


def __getattr__(name: str) -> Any:
    """``service.main:app`` for uvicorn, built on first access rather than at import, so that
    importing this module (tests, the CLI) has no side effect."""
    global _app
    if name == "app":
        if _app is None:
            _app = create_app()
        return _app
    raise AttributeError(name)
