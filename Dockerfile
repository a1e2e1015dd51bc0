# kvgate's container image: built from this tree in a Debian 12 stage, then
# the Debian package (scripts/build-deb.sh) installed into debian:12-slim, run
# as a non-root user. No registry is reachable from kvgate's own test
# machines, so this file is not built by the tests (the package it installs
# is: tests/integration/install_package.sh). Build it where Docker runs:
#
#   docker build --build-arg KVG_COMMIT=$(git rev-parse --short=12 HEAD) -t kvgate:0.1.0 .
#   docker run --rm -p 8080:8080 kvgate:0.1.0      # fronts 4 simulated engines
#
# The context has no .git (.dockerignore), so the commit comes as an
# argument; without it `kvgate --version` says the commit is unknown.

FROM debian:12 AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential pkg-config make dpkg-dev libuv1-dev node-llhttp libssl-dev \
      libxxhash-dev libpcre2-dev libzmq3-dev libmsgpack-dev libhiredis-dev libcjson-dev \
      libyaml-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG KVG_COMMIT=
RUN KVG_COMMIT="$KVG_COMMIT" OUT=/out bash scripts/build-deb.sh

FROM debian:12-slim
COPY --from=build /out/ /tmp/deb/
# The package's dependencies come from Debian's archive; its unit is unused
# here (no systemd in a container): the entrypoint is the binary.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends /tmp/deb/kvgate_*.deb \
 && rm -rf /var/lib/apt/lists/* /tmp/deb \
 && useradd --system --uid 10001 --user-group --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin kvgate
USER 10001:10001
EXPOSE 8080
# Listening on every interface, as a container must; mount a config over
# /etc/kvgate/kvgate.yaml (or pass flags) to name the engines and the keys.
ENTRYPOINT ["/usr/bin/kvgate"]
CMD ["serve", "--config", "/etc/kvgate/kvgate.yaml", "--host", "0.0.0.0"]
