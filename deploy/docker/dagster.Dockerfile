# The webserver/daemon image: Dagster itself, no pipeline code. Both load the code location
# from the code server (workspace.yaml) and share deploy/dagster.yaml with it.
#
#   docker build -f deploy/docker/dagster.Dockerfile -t bench-pipeline-dagster:<version> .
#   (from the repository root; docker compose does this for you)
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The Dagster packages of pyproject.toml, with the same pins: the webserver and the daemon
# must run the same Dagster version as the code server.
RUN pip install \
    "dagster==1.13.27" \
    "dagster-webserver==1.13.27" \
    "dagster-postgres==0.29.27" \
    "sqlalchemy<2.1" \
    "psycopg2-binary>=2.9" \
 && pip check

ARG UID=1000
RUN useradd --uid "${UID}" --create-home --shell /usr/sbin/nologin dagster \
 && mkdir -p /opt/dagster/dagster_home /opt/dagster/compute_logs \
 && chown -R dagster /opt/dagster

ENV DAGSTER_HOME=/opt/dagster/dagster_home \
    DAGSTER_COMPUTE_LOGS_DIR=/opt/dagster/compute_logs
COPY deploy/dagster.yaml /opt/dagster/dagster_home/dagster.yaml
COPY deploy/docker/workspace.yaml /opt/dagster/dagster_home/workspace.yaml

USER dagster
WORKDIR /opt/dagster/dagster_home
EXPOSE 3000
CMD ["dagster-webserver", "-h", "0.0.0.0", "-p", "3000", "-w", "/opt/dagster/dagster_home/workspace.yaml"]
