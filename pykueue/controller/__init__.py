"""`pykueue controller`: the engine driven by a real Kubernetes API server."""
