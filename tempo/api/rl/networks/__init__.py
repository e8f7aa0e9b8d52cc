"""RL networks: `model_builder.ModelBuilder` builds `network.Network`s."""
