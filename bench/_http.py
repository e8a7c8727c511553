"""The SSL context every httpx client of the benchmarks and the tests is given (``verify=TLS``).

httpx builds a new verifying SSL context for each client it makes, certifi's bundle loaded
(about 20 ms of CPU), plain-HTTP clients included, and each ``httpx.get`` makes a client. The
servers here answer plain HTTP on loopback, so no context is ever used; but a readiness poll
every 50 ms, or a class of students each with a client of their own, built one again and again:
about 2,000 in one ``make test``, 45 s of CPU in its test processes alone. This one, as
verifying as httpx's own, is built once a process; ``tests/test_architecture.py`` checks that
every client is given it.
"""

import ssl

import certifi

TLS = ssl.create_default_context(cafile=certifi.where())
