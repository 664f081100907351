"""What the controller shows of itself: Prometheus metrics and the health and metrics servers."""
