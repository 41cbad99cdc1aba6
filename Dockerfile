# syntax=docker/dockerfile:1
# The kafkaops image: `kafkaops run` (the operator) and the CLI. docs/deploying.md explains it.
#
#   make image                      # ghcr.io/kafkaops/kafkaops:0.1.0
#   make image EXTRAS=fleet         # + Spark, Arrow, a Java runtime and the fleet's JVM reader
#                                   #   (kafkaops fleet / snapshot)
#
# python:3.12-slim, pinned by the digest of its multi-arch index (linux/amd64 and linux/arm64);
# refresh with `docker buildx imagetools inspect python:3.12-slim` (docs/deploying.md).
ARG PYTHON_IMAGE=python:3.12-slim@sha256:78387bc3881b8273120a12ebe6c1ab22b018ccc2c9adf565ae1ac9b536e184ea

# --- builder: the wheel, from the sources only --------------------------------------------------
FROM ${PYTHON_IMAGE} AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY operator/ operator/
RUN python -m pip wheel --no-deps --wheel-dir /dist .

# --- the image: the wheel installed into /opt/kafkaops, nothing else ---------------------------
FROM ${PYTHON_IMAGE}
# "" (default): the operator and the CLI; "fleet": + pyspark, pyarrow, a JRE and the fleet's JVM reader
# (compiled with a JDK that the same step removes). Nothing else.
ARG EXTRAS=""
ENV PATH=/opt/kafkaops/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# The wheel and the install script are mounted for this step only: neither stays in a layer.
# No compilers stay: every dependency is a pure-Python or manylinux wheel; the fleet's javac goes again.
RUN --mount=type=bind,from=builder,source=/dist,target=/dist \
    --mount=type=bind,source=docker/install.sh,target=/install.sh \
    sh /install.sh /opt/kafkaops /dist/kafkaops-*.whl "$EXTRAS"
# The UID/GID of manifests/deployment.yaml's securityContext (runAsUser/runAsGroup 65532).
# At runtime the root filesystem is read-only: only /tmp (an emptyDir in the Deployment) is written.
USER 65532:65532
WORKDIR /tmp
EXPOSE 8080 9090
ENTRYPOINT ["kafkaops"]
CMD ["run"]
