"""The web server's plumbing: the uvicorn protocol and listeners, request limits, security
headers, signing keys and the templates' environment. Nothing here knows the lesson or the lab."""
