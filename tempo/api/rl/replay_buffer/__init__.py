"""Replay buffers as program ops: `replay_buffer.ReplayBuffer`."""
