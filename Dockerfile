# The Faultstream image: the `faultstream` command with the streaming extra, the bundled rules
# and the bundled sample recordings. compose.yaml builds it for the extractor and correlator
# services; docs/operations.md says what each command does.
#
#   docker build -t faultstream .
#   docker run --rm faultstream --help
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only what the package build needs, so that editing docs or tests does not reinstall everything.
COPY pyproject.toml setup.py ./
COPY streams ./streams
COPY extractors ./extractors
COPY correlator ./correlator
COPY sinks ./sinks
# pydantic-settings is imported by streams/settings.py (every run/worker/load command) but is not
# yet declared in pyproject.toml's dependencies, so it is named here; it is harmless once declared.
# The other versions are pinned by pyproject.toml (faust-streaming, aiokafka, hyperscan).
# gcc builds the compiled record picker (streams/normalize/_fastpick.c) and is removed again;
# without it the install still succeeds and the extractor runs the slower pure-Python picker.
# hadolint ignore=DL3008,DL3013
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libc6-dev \
    && pip install ".[stream]" "pydantic-settings>=2.14,<3" \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*

# The bundled ruleset. The wheel does not ship rules/ (only the Python packages), while
# extractors/loader.py looks for the bundled rules next to the installed packages
# (<site-packages>/rules): a link there makes "bundled" work for every command, including
# `rules check` and `backtest`. Use your own rules with FAULTSTREAM_RULES_DIR or --rules.
COPY rules ./rules
RUN ln -s /app/rules "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')/rules" \
    && faultstream rules check

# The sample recordings, so that `faultstream load tests/golden/recordings/*.jsonl` works from
# the working directory /app (see compose.yaml).
COPY tests/golden/recordings ./tests/golden/recordings

# The correlator (faust) writes its data directory, <app id>-data, into the working directory.
RUN useradd --create-home --uid 10001 faultstream && chown faultstream /app
USER 10001

ENTRYPOINT ["faultstream"]
CMD ["--help"]
