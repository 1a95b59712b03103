"""How an operation runs: phases, the runner, sessions, scripts' calls.

Knows nothing of any operation; every operation and shared phase stands on
it."""
