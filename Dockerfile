# dpsurv: differentially private survival analysis (Streamlit app over the dpsurv_core package).
#   docker build -t dpsurv . && docker run --rm -v dpsurv-ledger:/data -p 8501:8501 dpsurv   ->  http://localhost:8501
# The privacy ledger (every release and the budget it spent) lives on the volume at /data, so it outlives the container.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Debian's chromium draws the PNG/SVG figure downloads (kaleido) and prints the PDF report (Playwright).
RUN apt-get update && apt-get install -y --no-install-recommends chromium \
    && rm -rf /var/lib/apt/lists/*
ENV DPSURV_CHROMIUM=/usr/bin/chromium

# Dependencies first, so code changes do not reinstall them.
COPY requirements.txt requirements-pdf.txt ./
RUN pip install --no-cache-dir -r requirements.txt -r requirements-pdf.txt

COPY .streamlit/ ./.streamlit/
COPY pyproject.toml ./
COPY dpsurv_core/ ./dpsurv_core/
COPY dpsurv_app/ ./dpsurv_app/

# Run unprivileged. Uploads stay in the session's memory: the app writes nothing to disk but the ledger.
RUN useradd --create-home --uid 10001 dpsurv
# The ledger on a volume (named with -v dpsurv-ledger:/data): docker run --rm keeps the budget, a new image reads it.
RUN mkdir /data && chown dpsurv:dpsurv /data
ENV DPSURV_LEDGER=/data/ledger.sqlite3
VOLUME /data
USER dpsurv

EXPOSE 8501

HEALTHCHECK --interval=30s --timeout=5s --start-period=40s --retries=3 \
    CMD ["python", "-c", "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status == 200 else 1)"]

# Published beyond the container, so sign-in must be configured (mount .streamlit/secrets.toml with an [auth]
# section, docs/deployment.md): without it the check exits 2 with one sentence before the server starts.
CMD ["sh", "-c", "python -m dpsurv_app.serving 0.0.0.0 && exec python -m streamlit run dpsurv_app/app.py --server.port=8501 --server.address=0.0.0.0 --server.headless=true --browser.gatherUsageStats=false"]
