"""Pydantic models of the API objects, used only at the boundary: parse, validate, then convert once."""
