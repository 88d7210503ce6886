# callgate proxy as a container: docker build -t callgate . ; then
# docker run -p 8787:8787 callgate --upstream http://host.docker.internal:11434
# (or mount a TOML file of its flags and pass --config /etc/callgate/proxy.toml).
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install '.[proxy]'
RUN useradd --create-home --uid 10001 --shell /usr/sbin/nologin callgate

USER callgate
EXPOSE 8787
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(urllib.request.urlopen('http://127.0.0.1:8787/healthz', timeout=4).status != 200)"]
ENTRYPOINT ["callgate", "proxy", "--host", "0.0.0.0", "--port", "8787"]
CMD ["--help"]
