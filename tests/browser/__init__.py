"""Browser tests: real Chromium against a live uvicorn on loopback."""
