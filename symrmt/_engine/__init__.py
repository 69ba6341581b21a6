"""Internals of the trace engine (the public face is :mod:`symrmt.engine`)."""
