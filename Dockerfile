# Atlas lesson for a classroom: the web app plus the CPU-only torch confirmation, non-root.
#
#   docker build -t atlas-lesson .
#   docker run -p 8000:8000 -v atlas-data:/data atlas-lesson
#
# BASE is Debian 12 (bookworm) slim, whose python3 is 3.11: the public image by default.
# scripts/verify-image builds the same file system locally with debootstrap (no registry there)
# and passes it with --build-arg BASE=localhost/atlas-base:bookworm.
ARG BASE=docker.io/library/debian:bookworm-slim

FROM ${BASE} AS build
# torch comes only from an index or folder that holds the CPU build, never PyPI's CUDA build.
ARG TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu
ARG TORCH_FIND_LINKS=
# Everything else: PyPI, or a mirror (EXTRA_INDEX_URL may add a local file:// index).
ARG INDEX_URL=https://pypi.org/simple
ARG EXTRA_INDEX_URL=
SHELL ["/bin/sh", "-eu", "-c"]
# Debian packages follow the release (bookworm's python3 is 3.11); exact versions would break
# the build whenever a security update replaces them.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates python3 python3-venv \
 && rm -rf /var/lib/apt/lists/*
# pip trusts the system CA store (a base may add its own CAs to /usr/local/share/ca-certificates).
ENV PATH=/opt/venv/bin:$PATH \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python3 -m venv /opt/venv
# Same pin as the `torch` extra in pyproject.toml (scripts/verify-image checks they agree). torch
# alone (--no-deps) from the CPU index; its small dependencies come below, pinned, with the app's.
# C++ headers, CMake files, test binaries and test libraries are for building extensions and
# testing torch itself; the confirmation never uses them (bench/README.md says what it saves).
# torch is pinned; hadolint misreads the find-links expansion as an unpinned package.
# hadolint ignore=DL3013
RUN pip install --no-deps --index-url "$TORCH_INDEX_URL" \
        ${TORCH_FIND_LINKS:+--find-links "$TORCH_FIND_LINKS"} "torch==2.13.0" \
 && torch_dir="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/torch" \
 && rm -rf "$torch_dir/include" "$torch_dir/share" "$torch_dir/test" \
 && find "$torch_dir/bin" -mindepth 1 ! -name torch_shm_manager -exec rm -rf {} + \
 && find "$torch_dir/lib" \( -name '*_test.so' -o -name 'libaoti_custom_ops.so' \
        -o -name 'libbackend_with_compiler.so' -o -name '*.a' \) -delete
# Every version comes from requirements/constraints.txt (`make lock`); the app runs from /app
# (its templates and data sit beside the package), so only its dependencies go into the venv,
# read from pyproject.toml, with torch's (torch itself is already there and satisfies the pin).
# The test suites that numpy, sympy (torch's), networkx and mpmath ship are never imported.
COPY pyproject.toml requirements/constraints.txt /src/
RUN python3 -c 'import tomllib; print(*tomllib.load(open("/src/pyproject.toml", "rb"))["project"]["dependencies"], sep="\n")' \
        > /src/requirements.txt \
 && pip install --index-url "$INDEX_URL" ${EXTRA_INDEX_URL:+--extra-index-url "$EXTRA_INDEX_URL"} \
        -c /src/constraints.txt -r /src/requirements.txt "torch==2.13.0" \
 && python3 -c 'import importlib.metadata as m; assert m.version("torch").startswith("2.13.0")' \
 && site="$(python3 -c 'import sysconfig; print(sysconfig.get_path("purelib"))')" \
 && for package in numpy sympy networkx mpmath; do \
        find "$site/$package" -type d -name tests -prune -exec rm -rf {} +; \
    done

FROM ${BASE} AS runtime
SHELL ["/bin/sh", "-eu", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --user-group --home-dir /app --no-create-home \
        --shell /usr/sbin/nologin atlas
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
COPY lesson_data ./lesson_data
COPY static ./static
COPY templates ./templates
COPY scripts/docker-entrypoint ./scripts/docker-entrypoint
COPY migrations ./migrations
COPY app ./app
# Byte-compile now: the root file system may be read-only at run time. /data holds the live
# classes' database and the generated signing key: private to the app's user, and a volume, so
# it outlives the container (and stays writable under --read-only).
RUN python3 -m compileall -q app migrations \
 && mkdir -m 0700 /data \
 && chown 10001:10001 /data
# WEB_CONCURRENCY is uvicorn's own default for --workers. HOME and the torch caches point at
# /tmp so a read-only root file system with a tmpfs on /tmp is enough.
ENV PATH=/opt/venv/bin:$PATH \
    PYTHONPATH=/app \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    WEB_CONCURRENCY=2 \
    ATLAS_DATA_DIR=/data \
    HOME=/tmp
USER 10001:10001
VOLUME /data
EXPOSE 8000
HEALTHCHECK --interval=5s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python3", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/healthz', timeout=2).status != 200)"]
# tini is PID 1: it forwards SIGTERM to uvicorn and reaps any exited confirmation worker.
ENTRYPOINT ["/usr/bin/tini", "--", "/app/scripts/docker-entrypoint"]
