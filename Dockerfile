# syntax=docker/dockerfile:1
#
# One image for every role of the METRO service: the API (`metro serve`), the workers
# (`metro worker`), the one-shot schema migration (`metro migrate`) and the admin commands. The
# entry point is the `metro` command; docker-compose.yml picks the subcommand per service.
#
#   docker build -t metro .                              # CPU PyTorch (the default)
#   docker build -t metro --build-arg TORCH_VARIANT=cu128 .   # CUDA PyTorch, for GPU workers
#
# TORCH_VARIANT names a wheel index under https://download.pytorch.org/whl/ (cpu, cu126,
# cu128, ...): use one that publishes the pinned TORCH_VERSION. CUDA wheels carry their own CUDA
# runtime, so the same slim base image serves both; the host needs only the NVIDIA driver and
# the NVIDIA container toolkit. A CUDA image also runs on machines without a GPU, on the CPU.
#
# (Not built by the test suite: the CI machines have no Docker engine. tests/test_deployment.py
# checks this file and docker-compose.yml statically against the code.)

ARG PYTHON_VERSION=3.11

# ------------------------------------------------------------------------------ build stage
FROM python:${PYTHON_VERSION}-slim AS build

ARG TORCH_VARIANT=cpu
ARG TORCH_VERSION=2.13.0

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/venv
ENV PATH=/opt/venv/bin:$PATH

# PyTorch first, from the index the build argument chooses; the project's own `torch==`
# requirement is then already met (a local version such as 2.13.0+cu128 satisfies ==2.13.0).
RUN pip install --upgrade pip \
 && pip install --index-url "https://download.pytorch.org/whl/${TORCH_VARIANT}" \
        "torch==${TORCH_VERSION}"

# The project is installed in place (editable) from /app: `metro migrate` reads alembic.ini and
# migrations/ from the source tree, and the dashboard serves its files from service/dashboard/.
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY migrations ./migrations
COPY metro ./metro
COPY core ./core
COPY service ./service
COPY worker ./worker
COPY cli ./cli
# The generated client and the `metro` command (metro_cli: submit, watch, result, download,
# predict, upload, cancel), which is the client package's; the project adds serve, worker,
# migrate and admin to it (the metro.cli entry point), so the image's `metro` has them all.
COPY clients/python ./clients/python
RUN pip install -e . ./clients/python \
 && python -c "import torch, metro_client, metro_cli.app, cli.main, service.main; print('torch', torch.__version__)" \
 && metro serve --help > /dev/null

# ------------------------------------------------------------------------------ runtime stage
FROM python:${PYTHON_VERSION}-slim AS runtime

ARG TORCH_VARIANT=cpu
LABEL org.opencontainers.image.title="METRO training service" \
      org.opencontainers.image.description="Train binary classifiers that optimize the metric you report" \
      org.opencontainers.image.licenses="Apache-2.0" \
      io.metro.torch-variant="${TORCH_VARIANT}"

ENV PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    METRO_ARTIFACTS_URI=/var/lib/metro/artifacts \
    METRO_UPLOAD_DIR=/var/lib/metro/uploads

# A fixed, unprivileged user. The state directories exist in the image, owned by it, so that
# named volumes mounted there start out writable by it too.
RUN groupadd --system --gid 10001 metro \
 && useradd --system --uid 10001 --gid metro --home-dir /var/lib/metro --shell /usr/sbin/nologin metro \
 && mkdir -p /var/lib/metro/artifacts /var/lib/metro/uploads /var/lib/metro/data \
    /var/lib/metro/compile-cache \
 && chown -R metro:metro /var/lib/metro

COPY --from=build /opt/venv /opt/venv
COPY --from=build /app /app

USER metro:metro
# The working directory is where the embedded defaults keep their state (./var: SQLite and the
# SQLite-backed broker) when no METRO_DATABASE_URL / METRO_BROKER_URL is set.
WORKDIR /var/lib/metro

EXPOSE 8000

ENTRYPOINT ["metro"]
# Without arguments: the whole service in one container on the embedded defaults (SQLite under
# /var/lib/metro/var and a worker beside the API). docker-compose.yml runs the parts separately.
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
