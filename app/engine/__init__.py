"""The lesson's arithmetic: gradient weighting and the ring all-reduce cost model.

Exact fractions and plain Python decide the reductions and the SGD paths; NumPy sums items and
scores losses; the results are pydantic models (``results``) the JSON API serialises as they are.

Nothing here imports the web layer or torch; every public function checks its own input and
raises ``EngineError`` naming the request field it concerns.
"""

from app.engine.accumulation import accumulate
from app.engine.errors import EngineError
from app.engine.gradient import from_items, from_means
from app.engine.results import AccumulationResult, Form, GradientResult, Trajectory
from app.engine.ring import COUNT_PAYLOAD_BYTES, RingCost, ring_allreduce
from app.engine.trajectory import MAX_STEPS, trajectory

__all__ = [
    "COUNT_PAYLOAD_BYTES",
    "MAX_STEPS",
    "AccumulationResult",
    "EngineError",
    "Form",
    "GradientResult",
    "RingCost",
    "Trajectory",
    "accumulate",
    "from_items",
    "from_means",
    "ring_allreduce",
    "trajectory",
]
