"""A class dragging sliders: 60 students, each a random walk of lab states, against 2 workers.

Each of wrk's 60 connections is a student (one thread, 60 walks taken in turn): every request
moves one slider of that student's lab one slider step (a count by up to 3, a mean by up to 0.5,
η by up to 0.05, w by up to 1; now and then P by one rank, as the form sends it: ``P`` and the
old ranks) and asks for the results pane, as htmx does on every input event. Between two steps
a student pauses 40 to 93 ms (wrk's ``delay()``), so a student sends about 15 of them a second
while answers are quick, and the class about 900. Beside them go what lab.js asks for: the
pictures (number line, SGD paths) at a gesture's first step, then every third step (its 200 ms
at this pace) and once for the state the gesture reached; the details below the pane once for
that state, as the inputs pause. A gesture is 4 to 20 steps. These go out on the next request
slot, after a pause of at most 5 ms. The app runs as in the image: 2 uvicorn
workers, the confirmation pool started and idle. Its floor, in the same run and paired run by run
(floor, app, floor, app …): the same 60 students against a bare endpoint answering fixed bytes.
Throughput, p50 and p99 are given as ratios to the floor; any non-2xx answer fails the run.

    python -m bench.drag                          # as in bench/README.md
    python -m bench.drag --seconds 10 --pairs 1   # a quick look
    python -m bench.drag --app-dir /tmp/old       # another checkout's app (same venv)
"""

import json
import sys
from collections.abc import Sequence

from bench._wrk import SLIDER_VALUE_LUA
from bench.load import (
    CHARTS,
    DETAILS,
    PANE,
    RESULTS,
    Target,
    measure,
    paired_runs_parser,
    ready_to_run,
)

STUDENTS = 60
WORKERS = 2

WALK_LUA = (
    SLIDER_VALUE_LUA
    + """
math.randomseed(os.time())
local STUDENTS = __STUDENTS__
local students = {}
local turn = 0

local function clamp(x, low, high)
  if x < low then return low elseif x > high then return high end
  return x
end

local function new_student()
  local s = {counts = {}, means = {}, eta = math.random(1, 200) / 100,
             w = math.random(-40, 40) / 2}
  for r = 1, math.random(2, 8) do
    s.counts[r] = math.random(r == 1 and 1 or 0, 64)
    s.means[r] = math.random(-100, 100) / 10
  end
  return s
end

-- One slider step; returns the P the form sends (the new P, with the old ranks, when P moves).
local function step(s)
  local p = #s.counts
  local roll = math.random()
  if roll < 0.05 then
    if (p == 8 or math.random() < 0.5) and p > 2 then
      table.remove(s.counts); table.remove(s.means); return p - 1, p
    end
    table.insert(s.counts, 4); table.insert(s.means, 2); return p + 1, p
  end
  local r = math.random(1, p)
  if roll < 0.45 then
    s.counts[r] = clamp(s.counts[r] + math.random(-3, 3), r == 1 and 1 or 0, 64)
  elseif roll < 0.85 then
    s.means[r] = clamp(s.means[r] + math.random(-5, 5) / 10, -10, 10)
  elseif roll < 0.93 then
    s.eta = clamp(s.eta + math.random(-5, 5) / 100, 0.01, 2)
  else
    s.w = clamp(s.w + math.random(-2, 2) / 2, -20, 20)
  end
  return p, p
end

-- The pictures' and the details' requests: the same headers as the pane's (wrk.headers, as
-- the run gives them: gzip asked for as a browser does) but another HX-Target.
local function follow_headers(target)
  local headers = {}
  for name, value in pairs(wrk.headers) do
    headers[name] = value
  end
  headers["HX-Target"] = target
  return headers
end

-- What the page asks for beside the panes, sent on the next request slot after a short pause:
-- lab.js asks for the pictures at a gesture's first step and then at most every 200 ms (about
-- every third step at one step every 40-93 ms), and once more after its last step; the details
-- once the inputs pause.
local CHARTS_EVERY = 3
local follows = {}

local function follow(path, target)
  follows[#follows + 1] = wrk.format(nil, path, follow_headers(target))
end

local function state_query(s, p)
  local parts = {"P=" .. p}
  for r = 1, p do
    parts[#parts + 1] = "counts=" .. s.counts[r]
  end
  for r = 1, p do
    parts[#parts + 1] = "means=" .. slider_value(s.means[r], 1)
  end
  parts[#parts + 1] = "eta=" .. slider_value(s.eta, 2)
  parts[#parts + 1] = "w=" .. slider_value(s.w, 1)
  return "/lab?" .. table.concat(parts, "&")
end

function request()
  if #follows > 0 then
    return table.remove(follows, 1)
  end
  turn = turn % STUDENTS + 1
  local s = students[turn]
  if s == nil then
    s = new_student()
    students[turn] = s
  end
  -- A gesture is 4 to 20 slider steps; when it ends the inputs pause, the pictures ask for
  -- the state the gesture reached (unless its last step asked already) and so do the details.
  if s.left == nil then
    s.left = math.random(4, 20)
    s.since = CHARTS_EVERY - 1
  elseif s.left == 0 then
    s.left = nil
    local reached = state_query(s, #s.counts)
    follow(reached, "lab-details")
    if s.since > 0 then
      return wrk.format(nil, reached, follow_headers("lab-charts"))
    end
    return table.remove(follows, 1)
  end
  s.left = s.left - 1
  local sent_p, old_p = step(s)
  local parts = {"P=" .. sent_p}
  for r = 1, math.min(old_p, #s.counts) do
    parts[#parts + 1] = "counts=" .. s.counts[r]
  end
  for r = 1, math.min(old_p, #s.means) do
    parts[#parts + 1] = "means=" .. slider_value(s.means[r], 1)
  end
  parts[#parts + 1] = "eta=" .. slider_value(s.eta, 2)
  parts[#parts + 1] = "w=" .. slider_value(s.w, 1)
  local path = "/lab?" .. table.concat(parts, "&")
  s.since = s.since + 1
  if s.since >= CHARTS_EVERY then
    s.since = 0
    follow(path, "lab-charts")
  end
  return wrk.format(nil, path)
end

-- A student pauses 40 to 93 ms between input events; a request the page sends beside them
-- goes out (nearly) at once.
function delay()
  if #follows > 0 then
    return math.random(0, 5)
  end
  return math.random(40, 93)
end
""".replace("__STUDENTS__", str(STUDENTS))
)

CLASS = Target(
    "class dragging",
    "/lab?counts=2,6&means=1,3&eta=0.1&w=10",
    PANE,
    STUDENTS,
    WALK_LUA,
    also=(
        (CHARTS, "/lab?counts=2,6&means=1,3&eta=0.1&w=10"),
        (DETAILS, "/lab?counts=2,6&means=1,3&eta=0.1&w=10"),
    ),
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = paired_runs_parser("python -m bench.drag", "A class dragging sliders.", 20.0)
    args = parser.parse_args(argv)
    if not ready_to_run(args):
        return 2
    (row,) = measure(WORKERS, args.seconds, args.pairs, args.app_dir, (CLASS,))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "drag.json").write_text(json.dumps(row.summary() | {"app_dir": str(args.app_dir)}))
    if row.errors:
        print(f"ERRORS: {row.errors} non-2xx answers or socket errors")
    return 1 if row.errors else 0


if __name__ == "__main__":
    sys.exit(main())
