"""RL programs written against API.md §6.4: PPO, REINFORCE (Monte Carlo and n-step TD), DQN."""
