"""Environment sets by name (`gym`, `trivial`, custom): see `env_registry.EnvRegistry`."""
