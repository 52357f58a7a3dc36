# The `tinyagent` command in a container, for `tinyagent serve` (see compose.yaml and the
# README's "Deploying"). Two stages: build on Debian 12 with the toolchain llama.cpp needs,
# run on Debian 12 slim.
FROM rust:1-bookworm AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends cmake clang libclang-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p tinyagent-cli \
 && cp target/release/tinyagent /usr/local/bin/tinyagent

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /home/tinyagent --create-home tinyagent
COPY --from=build /usr/local/bin/tinyagent /usr/local/bin/tinyagent
USER tinyagent
WORKDIR /home/tinyagent
EXPOSE 8080
ENTRYPOINT ["tinyagent"]
CMD ["serve", "--listen", "0.0.0.0:8080"]
