"""Compatibility names of the trace engine's first layout; the engine lives in
:mod:`symrmt.symbolic` (``engine_nodes``, ``engine_model``, ``engine_tree``, ``linearize``,
``blockfp``, ``engine_plan``, ``pencil_check``) and :mod:`symrmt.numeric` (``trace_solver``,
``trace_certify``); its public face is :mod:`symrmt.engine`."""
