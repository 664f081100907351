"""The visibility API (``visibility.kueue.x-k8s.io``, upstream's ``pkg/visibility``), served by the
controller as an aggregated API: ``api`` answers the pending-workloads requests from the engine's read
model, ``discovery`` and ``openapi`` describe the group as upstream's server does, and ``server`` is its
own HTTPS port behind delegated authentication."""
