"""The API boundary: reads Kueue, core and config manifests, validates them as the real API does, and
converts them once into the engine's dataclasses."""

from pykueue.api.inputs import Inputs, Problem
from pykueue.api.loader import load_documents, load_paths

__all__ = ["Inputs", "Problem", "load_documents", "load_paths"]
