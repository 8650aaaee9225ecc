"""Applications on top of the agents: `battlesnake`, the Battlesnake HTTP server.

    python -m jaxgames.serve.battlesnake --port 8000 --agent heuristic
"""
