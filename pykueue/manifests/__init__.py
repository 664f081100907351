"""Kubernetes manifests built from pykueue's own API models, for installing pykueue on a real cluster."""
