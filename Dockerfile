# twin exporter image: serves the bundled quickstart scenario live on :9808 (see docker-compose.yml).
#   docker build -t twin . && docker run --rm -p 127.0.0.1:9808:9808 twin
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY twin ./twin
COPY scenarios ./scenarios
RUN pip install . && useradd --system --no-create-home --home-dir /app twin

USER twin
EXPOSE 9808
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s \
  CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:9808/healthz', timeout=2)"]
# Exec form: twin is PID 1 and gets SIGTERM from `docker stop` (clean stop, exit 0).
CMD ["twin", "serve", "scenarios/quickstart.yaml", "--host", "0.0.0.0", "--loop"]
