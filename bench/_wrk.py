"""Run wrk for a bounded time and read its figures back as numbers."""

import json
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# A slider's value as the browser sends it (JavaScript's number to string, the shortest
# decimal): "18", "0.5" and "-3.7", not "18.0" and "0.50". ``x`` rounded to ``places`` first.
SLIDER_VALUE_LUA = r"""
function slider_value(x, places)
  local text = string.format("%." .. places .. "f", x):gsub("0+$", ""):gsub("%.$", "")
  if text == "-0" then
    return "0"
  end
  return text
end
"""

# wrk counts only status >= 400 as errors; the Lua below counts every non-2xx answer itself and
# reports all figures as one JSON line, so nothing is parsed from wrk's human-readable text.
REPORT_LUA = r"""
local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  non2xx = 0
end

function response(status, headers, body)
  if status < 200 or status > 299 then
    non2xx = non2xx + 1
  end
end

function done(summary, latency, requests)
  local bad = 0
  for _, thread in ipairs(threads) do
    bad = bad + thread:get("non2xx")
  end
  local e = summary.errors
  io.write(string.format(
    'WRK_JSON {"requests": %d, "duration_us": %d, "non_2xx": %d, "connect": %d, "read": %d,'
    .. ' "write": %d, "timeout": %d, "p50_us": %d, "p99_us": %d, "max_us": %d}\n',
    summary.requests, summary.duration, bad, e.connect, e.read, e.write, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


@dataclass(frozen=True)
class WrkResult:
    """One wrk run: request count, elapsed time, errors and latency percentiles."""

    requests: int
    seconds: float
    non_2xx: int
    socket_errors: int
    p50_ms: float
    p99_ms: float
    max_ms: float

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0

    @property
    def errors(self) -> int:
        return self.non_2xx + self.socket_errors


def wrk_available() -> bool:
    return shutil.which("wrk") is not None


def run_wrk(
    url: str,
    *,
    connections: int,
    seconds: float,
    threads: int = 1,
    headers: dict[str, str] | None = None,
    request_timeout: int = 5,
    request_lua: str = "",
) -> WrkResult:
    """Load ``url`` with wrk for ``seconds``; the whole run is killed if it overruns by 30 s.

    ``request_lua`` may define wrk's ``request()`` to vary each request (the headers given here
    still apply through ``wrk.format``).
    """
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "report.lua"
        script.write_text(REPORT_LUA + request_lua)
        command = [
            "wrk",
            f"--threads={threads}",
            f"--connections={connections}",
            f"--duration={max(1, round(seconds))}s",
            f"--timeout={request_timeout}s",
            f"--script={script}",
        ]
        for name, value in (headers or {}).items():
            command += ["--header", f"{name}: {value}"]
        command.append(url)
        completed = subprocess.run(
            command, capture_output=True, text=True, timeout=seconds + 30, check=True
        )
    for line in completed.stdout.splitlines():
        if line.startswith("WRK_JSON "):
            data = json.loads(line.removeprefix("WRK_JSON "))
            break
    else:
        raise RuntimeError(f"wrk printed no report:\n{completed.stdout}\n{completed.stderr}")
    return WrkResult(
        requests=data["requests"],
        seconds=data["duration_us"] / 1e6,
        non_2xx=data["non_2xx"],
        socket_errors=data["connect"] + data["read"] + data["write"] + data["timeout"],
        p50_ms=data["p50_us"] / 1e3,
        p99_ms=data["p99_us"] / 1e3,
        max_ms=data["max_us"] / 1e3,
    )
