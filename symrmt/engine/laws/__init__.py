"""The laws of the trace engine's matrices and vectors: one module per law (its keyword in the grammar,
its arguments and scaling, how it builds its node from the language's leaves, and the sampler of a random
leaf), and the registry the declarations, the simulation and the command line's help consult."""

__all__: list = []
