# The user-code image: bench_pipeline and its dependencies, serving the code location over gRPC.
# Runs started by the daemon execute here too (DefaultRunLauncher in compose; on Kubernetes the
# same image runs every run pod and, with the k8s_job_executor, every step pod).
#
#   docker build -f deploy/docker/user_code.Dockerfile -t bench-pipeline-code:<version> .
#   (from the repository root; docker compose does this for you)
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

# The dependencies of pyproject.toml [project] dependencies, with the same pins
# (bench_pipeline_tests/deploy/test_deploy_files.py fails when the two differ).
RUN pip install \
    "dagster==1.13.27" \
    "dagster-webserver==1.13.27" \
    "dagster-pandera==0.29.27" \
    "dagster-postgres==0.29.27" \
    "sqlalchemy<2.1" \
    "psycopg2-binary>=2.9" \
    "pandas>=2.2,<3" \
    "pandera>=0.35,<0.40" \
    "pyarrow>=15" \
    "orjson>=3.10" \
    "jinja2>=3.1" \
    "langfuse>=5.0,<6" \
    "tabulate>=0.9" \
    "universal_pathlib>=0.2"

# Only for Kubernetes: K8sRunLauncher/k8s_job_executor, S3 compute logs, s3:// and gs://
# storage (BENCH_STORAGE_BASE=s3://... or gs://...). Same Dagster integration family (0.29.27);
# fsspec, s3fs and gcsfs of one release, and an aiobotocore and boto3 that share a botocore
# release (pyproject.toml, extra k8s: without them pip walks back through boto3's releases).
RUN pip install \
    "dagster-k8s==0.29.27" \
    "dagster-aws==0.29.27" \
    "fsspec==2026.7.0" \
    "s3fs==2026.7.0" \
    "gcsfs==2026.7.0" \
    "aiobotocore==3.10.0" \
    "boto3==1.43.117"

ARG UID=1000
RUN useradd --uid "${UID}" --create-home --shell /usr/sbin/nologin dagster \
 && mkdir -p /opt/dagster/dagster_home /opt/dagster/compute_logs /opt/dagster/app /data/runs /data/reports /data/storage \
 && chown -R dagster /opt/dagster /data

WORKDIR /opt/dagster/app
COPY pyproject.toml ./
COPY bench_pipeline ./bench_pipeline
# The package itself; its dependencies are all above (pip check proves nothing is missing).
RUN pip install --no-deps . && pip check

ENV DAGSTER_HOME=/opt/dagster/dagster_home \
    DAGSTER_COMPUTE_LOGS_DIR=/opt/dagster/compute_logs \
    BENCH_RUNS_ROOT=/data/runs \
    BENCH_OUTPUT_ROOT=/data/reports \
    BENCH_STORAGE_BASE=/data/storage
COPY deploy/dagster.yaml /opt/dagster/dagster_home/dagster.yaml

USER dagster
EXPOSE 4000
# `dagster code-server start` can reload the definitions from the UI without a restart.
CMD ["dagster", "code-server", "start", "-h", "0.0.0.0", "-p", "4000", "-m", "bench_pipeline.definitions", "--location-name", "bench_pipeline"]
