"""Evaluator: compile -> run -> validate -> time, on the local GPU."""
