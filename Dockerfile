# The image for both the API (`loo serve`) and the workers (`loo worker`).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY ledger ./ledger
COPY workers ./workers
COPY schemas ./schemas
RUN pip install . && useradd --create-home loo

USER loo
# Without DATABASE_URL the embedded default is ./loo.db: keep it in the user's home.
WORKDIR /home/loo
EXPOSE 8000
CMD ["loo", "serve", "--host", "0.0.0.0", "--port", "8000"]
