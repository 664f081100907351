# The pykueue controller image: `docker build -t pykueue:0.1.0 .` (the chart's default image).
# A slim Python pinned to one patch release and Debian release, and by digest (a tag can be pushed
# again; a digest names one image for good), the package installed with pip into a virtualenv (no dev
# or test extras), run as an unprivileged user with no shell needed. The build stage has a C compiler,
# so setup.py's hook compiles the engine with mypyc (the final stage has none). Another base:
# --build-arg PYTHON_IMAGE=python:X.Y.Z-slim-RELEASE@sha256:DIGEST.
ARG PYTHON_IMAGE=python:3.11.11-slim-bookworm@sha256:081075da77b2b55c23c088251026fb69a7b2bf92471e491ff5fd75c192fd38e5

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml setup.py ./
COPY pykueue ./pykueue
# Compiled to bytecode here: the pod's root filesystem is read-only, so Python cannot cache it later.
RUN python -m venv /opt/pykueue \
 && /opt/pykueue/bin/pip install . \
 && /opt/pykueue/bin/pykueue --help >/dev/null \
 && /opt/pykueue/bin/pykueue --version | grep -q "(compiled engine)"

FROM ${PYTHON_IMAGE}
LABEL org.opencontainers.image.title="pykueue" \
      org.opencontainers.image.description="Kueue's job queueing and quota admission in Python: the controller"
COPY --from=build /opt/pykueue /opt/pykueue
ENV PATH=/opt/pykueue/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp
# What runs has no shell, package manager or pip (as the image built from Debian's packages, whose
# list this extends: pykueue/devcluster/image.py STRIPPED): a process that gets code execution in the
# container finds no tool to fetch or install more. Exec form: the shell is among what goes.
RUN ["/usr/bin/rm", "-rf", "/usr/bin/sh", \
     "/usr/bin/dash", \
     "/usr/bin/bash", \
     "/usr/bin/rbash", \
     "/usr/bin/dpkg", \
     "/usr/bin/dpkg-deb", \
     "/usr/bin/dpkg-divert", \
     "/usr/bin/dpkg-query", \
     "/usr/bin/dpkg-split", \
     "/usr/bin/dpkg-statoverride", \
     "/usr/bin/dpkg-trigger", \
     "/usr/bin/dpkg-maintscript-helper", \
     "/usr/bin/dpkg-realpath", \
     "/usr/bin/update-alternatives", \
     "/usr/bin/apt", \
     "/usr/bin/apt-get", \
     "/usr/share/python-wheels", \
     "/usr/bin/apt-cache", \
     "/usr/bin/apt-config", \
     "/usr/bin/apt-mark", \
     "/usr/bin/apt-key", \
     "/usr/local/bin/pip", \
     "/usr/local/bin/pip3", \
     "/usr/local/bin/pip3.11", \
     "/usr/local/lib/python3.11/site-packages/pip", \
     "/opt/pykueue/bin/pip", \
     "/opt/pykueue/bin/pip3", \
     "/opt/pykueue/bin/pip3.11", \
     "/opt/pykueue/lib/python3.11/site-packages/pip"]
# 65532: the conventional "nonroot" uid/gid (distroless); the chart runs the pod as it too.
USER 65532:65532
ENTRYPOINT ["pykueue"]
CMD ["controller"]
