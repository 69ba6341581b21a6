"""The numbers of the trace engine: Newton and the homotopy, continuation, certification, float64
batches, quadratic forms, moments and the deterministic equivalent with given matrices."""

__all__: list = []
