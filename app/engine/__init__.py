"""Pure NumPy arithmetic of the lesson: gradient weighting and the ring all-reduce cost model.

Nothing here imports the web layer or torch; every public function checks its own input and
raises ``EngineError`` naming the request field it concerns.
"""

from app.engine.accumulation import AccumulationResult, accumulate
from app.engine.errors import EngineError
from app.engine.gradient import GradientResult, from_items, from_means
from app.engine.ring import COUNT_PAYLOAD_BYTES, RingCost, ring_allreduce
from app.engine.trajectory import MAX_STEPS, Trajectory, trajectory

__all__ = [
    "COUNT_PAYLOAD_BYTES",
    "MAX_STEPS",
    "AccumulationResult",
    "EngineError",
    "GradientResult",
    "RingCost",
    "Trajectory",
    "accumulate",
    "from_items",
    "from_means",
    "ring_allreduce",
    "trajectory",
]
