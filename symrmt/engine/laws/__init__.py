"""The laws of the trace engine's matrices: one module per law (its keyword, scaling, pencil
contribution, sampler and binding), and the registry the other modules consult."""

__all__: list = []
