"""HTTP mechanisms with no Kueue policy: request bounds, delegated authentication, certificates."""
