"""Job reconciling over the integration registry: the GenericJob reconciler, owners, group owners."""
