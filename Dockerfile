# aioseq with its command line and the example services, for docker-compose.yml:
#   docker compose up          (DynamoDB Local, `aioseq demo` against it, the orders service)
#   docker build -t aioseq . && docker run --rm aioseq aioseq --help
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONUNBUFFERED=1

WORKDIR /app
COPY pyproject.toml README.md ./
COPY aioseq ./aioseq
# The library and the example services' extras (FastAPI, uvicorn); no test server.
RUN pip install '.[examples]'
COPY examples ./examples

USER nobody
CMD ["aioseq", "demo"]
