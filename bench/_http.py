"""The SSL context every httpx client of the benchmarks and the tests is given (``verify=TLS``).

httpx builds a new verifying SSL context for each client it makes, certifi's bundle loaded
(about 20 ms of CPU), plain-HTTP clients included, and each ``httpx.get`` makes a client. The
servers here answer plain HTTP on loopback, so no context is ever used; but a readiness poll
every 50 ms, or a class of students each with a client of their own, built one again and again:
about 2,000 in one ``make test``, 45 s of CPU in its test processes alone. This one, httpx's
own default, is built once a process; ``tests/test_architecture.py`` checks that every client
is given it.
"""

import httpx

# httpx's own default, built by httpx's own function (certifi's bundle, or SSL_CERT_FILE / _DIR).
TLS = httpx.create_ssl_context()
