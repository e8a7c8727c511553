"""The lab's numbers alone, in process: what the written-out lines, figures and verdict cost.

Every drag prints a new state's figures, verdict and worked lines (``app.lab.view.lab_view`` and
``lab_details``; the lines alone: ``app.lab.worked.lines``). This times those calls on random
states, in alternated rounds, and reports the median over rounds of the mean CPU time per state
(the process's own: a shared machine's neighbours count less), in microseconds:

- **sliders**: states as the lab's sliders make them (``bench.serving``'s draw: counts 0 to 64,
  means in tenths, η in hundredths, w in halves);
- **typed**: states a student types: 2 to 8 ranks, counts and means with up to 4 decimals,
  some means equal up to the last digit (lines that need more than 6 digits).

No floor: the engine's own ``from_means`` on the same states is printed beside, for scale.

    python -m bench.worked [--states 2000] [--rounds 5]
"""

import argparse
import random
import statistics
import time
from collections.abc import Callable

from app.engine import GradientResult, from_means
from app.lab.state import GradientRequest
from app.lab.view import lab_details, lab_view
from app.lab.worked import lines

State = tuple[list[float], list[float], float, float]


def slider_state(rng: random.Random) -> State:
    ranks = rng.randint(2, 8)
    counts = [float(rng.randint(1 if r == 0 else 0, 64)) for r in range(ranks)]
    means = [rng.randint(-100, 100) / 10 for _ in range(ranks)]
    return counts, means, rng.randint(1, 200) / 100, rng.randint(-40, 40) / 2


def typed_state(rng: random.Random) -> State:
    ranks = rng.randint(2, 8)
    counts = [round(rng.uniform(0.5, 500), rng.randint(0, 2)) for _ in range(ranks)]
    base = round(rng.uniform(-20, 20), 4)
    means = [
        base + rng.choice([0, 1e-4, -1e-4])
        if rng.random() < 0.5
        else round(rng.uniform(-20, 20), 4)
        for _ in range(ranks)
    ]
    return counts, means, round(rng.uniform(0.001, 2), 3), round(rng.uniform(-50, 50), 3)


def prepared(states: list[State]) -> list[tuple[GradientResult, GradientRequest]]:
    return [
        (
            from_means(counts, means, eta=eta, w=w),
            GradientRequest(counts=counts, means=means, eta=eta, w=w),
        )
        for counts, means, eta, w in states
    ]


Pairs = list[tuple[GradientResult, GradientRequest]]


def run_engine(states: list[State], _: Pairs) -> None:
    for counts, means, eta, w in states:
        from_means(counts, means, eta=eta, w=w)


def run_lines(_: list[State], pairs: Pairs) -> None:
    for result, _state in pairs:
        lines(result)


def run_view(_: list[State], pairs: Pairs) -> None:
    for result, _state in pairs:
        lab_view(result)


def run_details(_: list[State], pairs: Pairs) -> None:
    for result, state in pairs:
        lab_details(result, state)


RUNS: dict[str, Callable[[list[State], Pairs], None]] = {
    "engine": run_engine,
    "lines": run_lines,
    "lab_view": run_view,
    "lab_details": run_details,
}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.worked", description=__doc__)
    parser.add_argument("--states", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    rng = random.Random(30)
    kinds = {
        "sliders": [slider_state(rng) for _ in range(args.states)],
        "typed": [typed_state(rng) for _ in range(args.states)],
    }
    print(f"{'states':8}" + "".join(f" {name + ' µs':>14}" for name in RUNS))
    for kind, states in kinds.items():
        pairs = prepared(states)
        times: dict[str, list[float]] = {name: [] for name in RUNS}
        for _ in range(args.rounds):
            for name, run in RUNS.items():
                started = time.process_time()
                run(states, pairs)
                times[name].append((time.process_time() - started) / len(states) * 1e6)
        print(f"{kind:8}" + "".join(f" {statistics.median(times[n]):14.1f}" for n in RUNS))


if __name__ == "__main__":
    main()
